package inbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// jobWindow restricts a filter to inbox ids in (after, upto].
func jobWindow(after, upto int64) func(arg func(any) string) string {
	return func(arg func(any) string) string {
		return "id > " + arg(after) + " AND id <= " + arg(upto)
	}
}

// CountInboxForJob counts the rows f matches with ids in (after, upto], up
// to max.
func CountInboxForJob(ctx context.Context, db store.DB, f InboxFilter, after, upto int64, max int) (int, error) {
	return countInbox(ctx, db, f, max, jobWindow(after, upto))
}

// NextInboxForJob lists at most limit rows f matches with ids in
// (after, upto], by id.
func NextInboxForJob(ctx context.Context, db store.DB, f InboxFilter, after, upto int64, limit int) ([]InboxSummary, error) {
	f.Before = nil
	where, args := f.where(jobWindow(after, upto))
	args = append(args, limit)
	rows, err := db.Query(ctx, `SELECT `+inboxSummaryColumns+` FROM webhook_inbox`+where+
		` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("next inbox rows: %w", err)
	}
	return store.AppendRows(nil, rows, scanSummary)
}

// CountInbox counts the rows f matches (up to max, to stay cheap).
func CountInbox(ctx context.Context, db store.DB, f InboxFilter, max int) (int, error) {
	return countInbox(ctx, db, f, max)
}

// countInbox counts the rows f and extra match, up to max.
func countInbox(ctx context.Context, db store.DB, f InboxFilter, max int, extra ...func(arg func(any) string) string) (int, error) {
	f.Before, f.Limit = nil, 0
	where, args := f.where(extra...)
	args = append(args, max)
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM webhook_inbox`+where+` LIMIT $`+strconv.Itoa(len(args))+`) s`, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count inbox: %w", err)
	}
	return n, nil
}

// LineageEvent is one delivery behind an effect: an inbox row or a
// quarantine entry, live or kept in event_lineage after retention.
type LineageEvent struct {
	// Source is "inbox" or "quarantine"; SourceID the row's id there.
	Source       string     `json:"source"`
	SourceID     int64      `json:"source_id"`
	Key          keys.Event `json:"key"`
	EndpointSlug string     `json:"endpoint"`
	WorkspaceID  string     `json:"workspace,omitempty"`
	EventType    string     `json:"event_type,omitempty"`
	ResourceKind string     `json:"resource_kind,omitempty"`
	ResourceID   string     `json:"resource_id,omitempty"`
	BodySHA256   []byte     `json:"body_sha256"`
	Origin       string     `json:"origin,omitempty"`
	// Status is the inbox status, or "open"/"resolved" for quarantine.
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	LastError        string     `json:"last_error,omitempty"`
	Note             string     `json:"note,omitempty"`
	QuarantineReason string     `json:"quarantine_reason,omitempty"`
	Resolution       string     `json:"resolution,omitempty"`
	ReceivedAt       time.Time  `json:"received_at"`
	ProcessedAt      *time.Time `json:"processed_at,omitempty"`
	PayloadRedacted  bool       `json:"payload_redacted"`
	// Deleted: retention removed the row; this is what event_lineage kept.
	Deleted bool `json:"deleted"`
	// Traceparent is the live inbox row's stored W3C traceparent ("" for
	// a quarantine entry, a lineage record, or when tracing was off).
	Traceparent string `json:"-"`
}

// ResourceLineage lists every delivery of resource r: its inbox rows (live,
// or kept after deletion) and the quarantine entries sharing their event
// keys (conflicting duplicates), oldest first. Whether a payload is left
// comes from the size views: the operator's and the console's roles read
// no payload.
func ResourceLineage(ctx context.Context, db store.DB, r keys.Resource) ([]LineageEvent, error) {
	rows, err := db.Query(ctx, `
		WITH ev AS (
			SELECT 'inbox' AS source, id AS source_id, provider, source_account, environment, event_id, endpoint_slug,
			       workspace_id, event_type, resource_kind, resource_id, body_sha256, origin, status, attempts,
			       coalesce(last_error, '') AS last_error, coalesce(note, '') AS note, '' AS qreason, '' AS resolution,
			       received_at, processed_at,
			       (SELECT s.payload_bytes IS NULL FROM webhook_inbox_payload_size s WHERE s.id = webhook_inbox.id) AS redacted,
			       false AS deleted, coalesce(traceparent, '') AS traceparent
			  FROM webhook_inbox
			 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
			UNION ALL
			SELECT 'inbox', source_id, provider, source_account, environment, event_id, endpoint_slug,
			       coalesce(workspace_id, ''), coalesce(event_type, ''), coalesce(resource_kind, ''), coalesce(resource_id, ''),
			       body_sha256, coalesce(origin, ''), coalesce(status, ''), coalesce(attempts, 0), coalesce(last_error, ''),
			       coalesce(note, ''), '', '', received_at, processed_at, payload_redacted_at IS NOT NULL, true, ''
			  FROM event_lineage
			 WHERE source = 'inbox' AND deleted_at IS NOT NULL
			   AND provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
		), q AS (
			SELECT 'quarantine' AS source, id AS source_id, provider, coalesce(source_account, ''), coalesce(environment, ''),
			       coalesce(event_id, ''), endpoint_slug, '', '', '', '', body_sha256, '',
			       CASE WHEN resolved_at IS NULL THEN 'open' ELSE 'resolved' END, 0, detail, '', reason,
			       coalesce(resolution, ''), received_at, resolved_at,
			       (SELECT s.payload_bytes IS NULL FROM inbox_quarantine_payload_size s WHERE s.id = inbox_quarantine.id), false, ''
			  FROM inbox_quarantine
			 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id IN (SELECT event_id FROM ev)
			UNION ALL
			SELECT 'quarantine', source_id, provider, coalesce(source_account, ''), coalesce(environment, ''),
			       coalesce(event_id, ''), endpoint_slug, '', '', '', '', body_sha256, '', 'resolved', 0, '', '',
			       coalesce(quarantine_reason, ''), coalesce(resolution, ''), received_at, processed_at, true, true, ''
			  FROM event_lineage
			 WHERE source = 'quarantine' AND provider = $1 AND source_account = $2 AND environment = $3
			   AND event_id IN (SELECT event_id FROM ev)
		)
		SELECT * FROM ev UNION ALL SELECT * FROM q ORDER BY received_at, source_id`,
		r.Provider, r.Account, r.Environment, r.Kind, r.ID)
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", r, err)
	}
	return store.AppendRows([]LineageEvent{}, rows, func(row pgx.Row) (e LineageEvent, err error) {
		err = row.Scan(&e.Source, &e.SourceID, &e.Key.Provider, &e.Key.Account, &e.Key.Environment, &e.Key.EventID,
			&e.EndpointSlug, &e.WorkspaceID, &e.EventType, &e.ResourceKind, &e.ResourceID, &e.BodySHA256, &e.Origin,
			&e.Status, &e.Attempts, &e.LastError, &e.Note, &e.QuarantineReason, &e.Resolution, &e.ReceivedAt,
			&e.ProcessedAt, &e.PayloadRedacted, &e.Deleted, &e.Traceparent)
		return e, err
	})
}

// FindLineageEvent returns what event_lineage kept of a deleted inbox row.
func FindLineageEvent(ctx context.Context, db store.DB, k keys.Event) (*LineageEvent, error) {
	var e LineageEvent
	e.Source, e.Deleted, e.Key = "inbox", true, k
	err := db.QueryRow(ctx, `
		SELECT source_id, endpoint_slug, coalesce(workspace_id, ''), coalesce(event_type, ''), coalesce(resource_kind, ''),
		       coalesce(resource_id, ''), body_sha256, coalesce(origin, ''), coalesce(status, ''), coalesce(attempts, 0),
		       coalesce(last_error, ''), coalesce(note, ''), received_at, processed_at
		  FROM event_lineage
		 WHERE source = 'inbox' AND deleted_at IS NOT NULL
		   AND provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		 ORDER BY source_id DESC LIMIT 1`, k.Provider, k.Account, k.Environment, k.EventID).Scan(
		&e.SourceID, &e.EndpointSlug, &e.WorkspaceID, &e.EventType, &e.ResourceKind, &e.ResourceID, &e.BodySHA256,
		&e.Origin, &e.Status, &e.Attempts, &e.LastError, &e.Note, &e.ReceivedAt, &e.ProcessedAt)
	if err != nil {
		return nil, fmt.Errorf("lineage of event %s: %w", k, store.Interpret(err))
	}
	e.PayloadRedacted = true
	return &e, nil
}
