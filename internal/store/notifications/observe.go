package notifications

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Count is what a trigger observes of one subject: how many items, the
// newest one (an id; for pending rows the oldest pending_since), and the
// workspace when all of them are one workspace's.
type Count struct {
	Subject   string
	Count     int64
	Mark      int64
	Workspace string
	// Oldest is the oldest pending_since (pending rows only).
	Oldest time.Time
	// Held counts the rows held for review (outbox rows only).
	Held int64
}

// Scope narrows what a trigger observes: one workspace's items, one
// endpoint's ("" is every one).
type Scope struct {
	Workspace string
	Endpoint  string
}

func collect(rows pgx.Rows, err error, what string) ([]Count, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Count, error) {
		var c Count
		var oldest *time.Time
		err := r.Scan(&c.Subject, &c.Count, &c.Mark, &c.Workspace, &oldest, &c.Held)
		c.Oldest = deref(oldest)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// FailedEvents counts the inbox rows that ended failed or exhausted (and
// were not replayed since), by endpoint.
func FailedEvents(ctx context.Context, db store.DB, s Scope) ([]Count, error) {
	rows, err := db.Query(ctx, `
		SELECT endpoint_slug, count(*), max(id),
		       CASE WHEN count(DISTINCT workspace_id) = 1 THEN min(workspace_id) ELSE '' END, NULL::timestamptz, 0::bigint
		  FROM webhook_inbox
		 WHERE status IN ('failed', 'exhausted') AND ($1 = '' OR workspace_id = $1) AND ($2 = '' OR endpoint_slug = $2)
		 GROUP BY endpoint_slug ORDER BY endpoint_slug`, s.Workspace, s.Endpoint)
	return collect(rows, err, "failed events")
}

// OpenQuarantine counts the open quarantine entries, by endpoint; an
// entry's workspace is its account's link on the endpoint (an entry of an
// unknown account has none, so a workspace's rule never sees it).
func OpenQuarantine(ctx context.Context, db store.DB, s Scope) ([]Count, error) {
	rows, err := db.Query(ctx, `
		SELECT q.endpoint_slug, count(*), max(q.id),
		       coalesce(CASE WHEN count(DISTINCT l.workspace_id) = 1 AND count(l.workspace_id) = count(*) THEN min(l.workspace_id) END, ''),
		       NULL::timestamptz, 0::bigint
		  FROM inbox_quarantine q
		  LEFT JOIN account_links l ON l.endpoint_slug = q.endpoint_slug AND l.account = q.source_account
		 WHERE q.resolved_at IS NULL AND ($1 = '' OR l.workspace_id = $1) AND ($2 = '' OR q.endpoint_slug = $2)
		 GROUP BY q.endpoint_slug ORDER BY q.endpoint_slug`, s.Workspace, s.Endpoint)
	return collect(rows, err, "open quarantine")
}

// RecentDivergences counts the reconciliation divergences detected after
// since, by endpoint: a divergence's endpoint is the first (by slug) of
// its provider and environment linking its account, and its workspace
// that link's. Divergences of an account no endpoint links are not counted.
func RecentDivergences(ctx context.Context, db store.DB, s Scope, since time.Time) ([]Count, error) {
	rows, err := db.Query(ctx, `
		SELECT m.endpoint_slug, count(*), max(d.id),
		       CASE WHEN count(DISTINCT m.workspace_id) = 1 THEN min(m.workspace_id) ELSE '' END, NULL::timestamptz, 0::bigint
		  FROM reconcile_divergences d
		  JOIN LATERAL (
		        SELECT l.endpoint_slug, l.workspace_id FROM account_links l JOIN endpoints e ON e.slug = l.endpoint_slug
		         WHERE l.account = d.source_account AND e.provider = d.provider AND e.environment = d.environment
		         ORDER BY l.endpoint_slug LIMIT 1) m ON true
		 WHERE d.detected_at > $3 AND ($1 = '' OR m.workspace_id = $1) AND ($2 = '' OR m.endpoint_slug = $2)
		 GROUP BY m.endpoint_slug ORDER BY m.endpoint_slug`, s.Workspace, s.Endpoint, since)
	return collect(rows, err, "recent divergences")
}

// StuckOutbox counts the outbox rows held for review, or uncertain (an
// attempt's outcome unknown: it failed so, or its deadline passed with the
// worker gone), by workspace. Notices' own rows are left out: a held
// notice never notifies of itself.
func StuckOutbox(ctx context.Context, db store.DB, s Scope, now time.Time) ([]Count, error) {
	rows, err := db.Query(ctx, `
		SELECT workspace_id, count(*), max(id), workspace_id, NULL::timestamptz,
		       count(*) FILTER (WHERE status = 'held_for_review')
		  FROM outbox
		 WHERE status IN ('held_for_review', 'uncertain') AND class <> $3
		   AND (status = 'held_for_review' OR last_error IS NOT NULL OR next_attempt_at < $2)
		   AND ($1 = '' OR workspace_id = $1)
		 GROUP BY workspace_id ORDER BY workspace_id`, s.Workspace, now, notify.ClassNotification)
	return collect(rows, err, "stuck outbox")
}

// PendingEvents counts the pending inbox rows by endpoint, with the oldest
// one's pending_since (when it last became pending, as the backlog gauge).
func PendingEvents(ctx context.Context, db store.DB, s Scope) ([]Count, error) {
	rows, err := db.Query(ctx, `
		SELECT endpoint_slug, count(*), 0::bigint,
		       CASE WHEN count(DISTINCT workspace_id) = 1 THEN min(workspace_id) ELSE '' END,
		       min(coalesce(pending_since, received_at)), 0::bigint
		  FROM webhook_inbox
		 WHERE status = 'pending' AND ($1 = '' OR workspace_id = $1) AND ($2 = '' OR endpoint_slug = $2)
		 GROUP BY endpoint_slug ORDER BY endpoint_slug`, s.Workspace, s.Endpoint)
	return collect(rows, err, "pending events")
}
