package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// InboxEvent is an event as the intake accepts it.
type InboxEvent struct {
	Key          keys.Event
	EndpointSlug string
	WorkspaceID  string
	EventType    string
	ResourceKind string
	ResourceID   string
	// ObjectID is the object the event is about when the resource is its
	// parent (a credit note of an invoice); "" otherwise.
	ObjectID        string
	ProviderVersion *int64
	OccurredAt      *time.Time
	Payload         []byte
	BodySHA256      []byte
	SecretID        int64
	Origin          string
	// DedupBody: the provider signs neither an event id nor a timestamp
	// (GitHub, Shopify), so the same body on the same endpoint under a new
	// event id is a replay, answered as a duplicate of the row that has it.
	DedupBody bool
	// Status is pending, or ignored for types no handler takes (LastError says why).
	Status    string
	LastError string
	// Traceparent is the W3C traceparent of the intake's request span, the
	// root of the delivery's trace ("" when tracing is off): the spans of
	// the activities that handle the event start under it.
	Traceparent string
}

// Resource is the key of the event's resource.
func (e *InboxEvent) Resource() keys.Resource {
	return keys.Resource{Provider: e.Key.Provider, Account: e.Key.Account, Environment: e.Key.Environment,
		Kind: e.ResourceKind, ID: e.ResourceID}
}

// InsertOutcome says what InsertInboxEvent did.
type InsertOutcome int

const (
	// Inserted means a new row was committed.
	Inserted InsertOutcome = iota + 1
	// Duplicate means the key existed with the same body, or (Equivalent)
	// with another serialization of the same event; nothing changed.
	Duplicate
	// Conflict means the key existed with another body that is not the
	// same event; nothing changed.
	Conflict
	// BodyReplay means the event key is new but the endpoint already has the
	// same body (InboxEvent.DedupBody): a replay under a new delivery id;
	// nothing changed. ID and ExistingStatus are the row that has it.
	BodyReplay
)

func (o InsertOutcome) String() string {
	switch o {
	case Inserted:
		return "inserted"
	case Duplicate:
		return "duplicate"
	case Conflict:
		return "conflict"
	case BodyReplay:
		return "body_replay"
	}
	return "unknown"
}

// InsertResult is the outcome and, for duplicates, the existing row's state.
type InsertResult struct {
	Outcome        InsertOutcome
	ID             int64
	ExistingStatus string
	// ExistingOrigin is the existing row's origin (Duplicate, Conflict).
	ExistingOrigin string
	// Equivalent: a Duplicate whose bytes differ from the existing row's,
	// accepted as the same event because one of the two came from the
	// backfill (see sameEvent).
	Equivalent bool
}

// existingRow is what InsertInboxEvent reads of the row that holds the key.
type existingRow struct {
	hash                           []byte
	status, origin                 string
	eventType, resourceKind, resID string
	version                        *int64
	occurredAt                     *time.Time
}

// sameEvent reports whether a row that holds an event key and a newcomer
// with different bytes are one event: only when one of the two came from
// the backfill (the provider's list API serializes an event in its own
// layout and API version, unlike the webhook the sender signed), and the
// provider's identity of the event agrees: type, object kind and id, and
// the created time and version where both rows know them. Two deliveries of the sender (a webhook, a
// re-admitted one) are its own bytes, so any difference is a conflict.
func (r existingRow) sameEvent(e *InboxEvent, origin string) bool {
	if r.origin != keys.OriginBackfill && origin != keys.OriginBackfill {
		return false
	}
	return r.eventType == e.EventType && r.resourceKind == e.ResourceKind && r.resID == e.ResourceID &&
		(r.version == nil || e.ProviderVersion == nil || *r.version == *e.ProviderVersion) &&
		(r.occurredAt == nil || e.OccurredAt == nil || r.occurredAt.Equal(*e.OccurredAt))
}

// InsertInboxEvent commits one inbox row, settling races with the UNIQUE
// event key (never a prior SELECT). When the key exists it leaves the
// existing row untouched and says whether the newcomer is a Duplicate (the
// same body hash, or the same event serialized by another origin: see
// sameEvent) or a Conflict.
func InsertInboxEvent(ctx context.Context, db store.DB, e *InboxEvent) (InsertResult, error) {
	p := planInsert(e)
	var id int64
	err := db.QueryRow(ctx, insertSQL, p.args...).Scan(&id)
	switch {
	case err == nil:
		return InsertResult{Outcome: Inserted, ID: id}, nil
	case errors.Is(err, pgx.ErrNoRows):
		return p.reread(ctx, db)
	}
	return InsertResult{}, fmt.Errorf("insert inbox event %s: %w", e.Key, err)
}

// insertSQL inserts a row and returns its id, or returns no row when the
// event key, or the same body on an endpoint that dedups on it (kept in
// the inbox, or in the lineage of a row retention deleted), is there
// already: both UNIQUE indexes settle races (ON CONFLICT names neither).
// The row that won is then read with rereadSQL, a second round trip that
// only a duplicate pays; a new row, the common case, is one plain INSERT
// with one column to read back.
const insertSQL = `
		INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug,
			workspace_id, event_type, resource_kind, resource_id, provider_version, occurred_at,
			payload, body_sha256, secret_id, origin, status, last_error, note, processed_at, replay_sha256, object_id, traceparent)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULLIF($14, 0), $15, $16, NULLIF($17, ''), NULLIF($17, ''), $18, $19,
			NULLIF($20, ''), NULLIF($21, '')
		 WHERE NOT EXISTS (` + keptReplay + `)
		ON CONFLICT DO NOTHING
		RETURNING id`

// keptReplay finds, for a body that dedups ($19 not NULL), the lineage of
// a deleted row of endpoint $5 that held it: nothing is inserted (no race
// there: that row is gone), and rereadSQL finds it in event_lineage, which
// kept its hash.
const keptReplay = `SELECT 1 FROM event_lineage
			 WHERE $19::bytea IS NOT NULL AND source = 'inbox' AND endpoint_slug = $5 AND replay_sha256 = $19 AND deleted_at IS NOT NULL`

// rereadSQL reads the row that won an event key or body (wonRows): the
// event key's first, else the same body's. A new statement, it sees every
// row committed before it began, the concurrent insert's that won included.
var rereadSQL = `
			SELECT * FROM (` + strings.NewReplacer("$19", "$6").Replace(wonRows) + `) won ORDER BY replayed LIMIT 1`

// reread answers an insert that conflicted: the row that won, compared
// with the newcomer.
func (p insertPlan) reread(ctx context.Context, db store.DB) (InsertResult, error) {
	res, err := p.scan(db.QueryRow(ctx, rereadSQL, p.rereadArgs()...))
	if err != nil {
		return InsertResult{}, fmt.Errorf("insert inbox event %s: %w", p.e.Key, err)
	}
	return res, nil
}

// insertPlan is one InsertInboxEvent: the statement's arguments and what
// the answer is compared with.
type insertPlan struct {
	e         *InboxEvent
	origin    string
	replaySHA []byte
	args      []any
}

func planInsert(e *InboxEvent) insertPlan {
	origin := e.Origin
	if origin == "" {
		origin = keys.OriginWebhook
	}
	status := e.Status
	if status == "" {
		status = keys.StatusPending
	}
	var processedAt *time.Time
	if status != keys.StatusPending {
		now := time.Now()
		processedAt = &now
	}
	var replaySHA []byte
	if e.DedupBody {
		replaySHA = e.BodySHA256
	}
	return insertPlan{e: e, origin: origin, replaySHA: replaySHA, args: []any{
		e.Key.Provider, e.Key.Account, e.Key.Environment, e.Key.EventID, e.EndpointSlug,
		e.WorkspaceID, e.EventType, e.ResourceKind, e.ResourceID, e.ProviderVersion, e.OccurredAt,
		e.Payload, e.BodySHA256, e.SecretID, origin, status, e.LastError, processedAt, replaySHA, e.ObjectID, e.Traceparent,
	}}
}

func (p insertPlan) rereadArgs() []any {
	e := p.e
	return []any{e.Key.Provider, e.Key.Account, e.Key.Environment, e.Key.EventID, e.EndpointSlug, p.replaySHA}
}

// scan reads the answer of rereadSQL.
func (p insertPlan) scan(row pgx.Row) (InsertResult, error) {
	var id int64
	var inserted, replayed bool
	var x existingRow
	var existingStatus, existingOrigin, existingType, existingKind, existingResID *string
	if err := row.Scan(&id, &inserted, &x.hash, &existingStatus, &existingOrigin, &existingType, &existingKind, &existingResID, &x.version,
		&x.occurredAt, &replayed); err != nil {
		return InsertResult{}, err
	}
	if inserted {
		return InsertResult{Outcome: Inserted, ID: id}, nil
	}
	x.status, x.origin, x.eventType, x.resourceKind, x.resID = Deref(existingStatus), Deref(existingOrigin),
		Deref(existingType), Deref(existingKind), Deref(existingResID)
	if replayed {
		return InsertResult{Outcome: BodyReplay, ID: id, ExistingStatus: x.status, ExistingOrigin: x.origin}, nil
	}
	res := InsertResult{Outcome: Conflict, ID: id, ExistingStatus: x.status, ExistingOrigin: x.origin}
	switch {
	case bytes.Equal(x.hash, p.e.BodySHA256):
		res.Outcome = Duplicate
	case x.sameEvent(p.e, p.origin):
		res.Outcome, res.Equivalent = Duplicate, true
	}
	return res, nil
}

// existingColumns is what InsertInboxEvent reads of an existing row.
const existingColumns = `id, false, body_sha256, status, origin, event_type, resource_kind, resource_id, provider_version, occurred_at`

// wonRows are the rows that hold an event key ($1–$4) or, for a body that
// dedups ($19 not NULL), its body on endpoint $5 (replayed): in the inbox,
// or in the lineage of a row retention deleted.
const wonRows = `
			SELECT ` + existingColumns + `, false AS replayed FROM webhook_inbox
			 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
			UNION ALL
			SELECT ` + existingColumns + `, true FROM webhook_inbox
			 WHERE $19::bytea IS NOT NULL AND endpoint_slug = $5 AND replay_sha256 = $19
			UNION ALL
			(SELECT source_id, false, body_sha256, status, origin, event_type, resource_kind, resource_id, NULL::bigint,
			        NULL::timestamptz, true FROM event_lineage
			  WHERE $19::bytea IS NOT NULL AND source = 'inbox' AND endpoint_slug = $5 AND replay_sha256 = $19 AND deleted_at IS NOT NULL
			  ORDER BY source_id DESC LIMIT 1)`

// Deref is *s, or "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// BodySeen reports whether endpoint slug already holds body sha under an
// event id other than eventID: an inbox row that dedups on its body
// (InboxEvent.DedupBody; status is its status), the lineage of one that
// retention deleted, or an open quarantine entry
// (status "quarantined"). The intake asks before quarantining a delivery
// whose event id is unsigned, so a captured body replayed under fresh ids
// cannot fill the quarantine.
func BodySeen(ctx context.Context, db store.DB, slug string, sha []byte, eventID string) (status string, seen bool, err error) {
	err = db.QueryRow(ctx, `
		SELECT status FROM (
			SELECT status, 0 AS pri FROM webhook_inbox WHERE endpoint_slug = $1 AND replay_sha256 = $2
			UNION ALL
			SELECT status, 0 FROM event_lineage
			 WHERE source = 'inbox' AND endpoint_slug = $1 AND replay_sha256 = $2 AND deleted_at IS NOT NULL
			UNION ALL
			SELECT 'quarantined', 1 FROM inbox_quarantine
			 WHERE endpoint_slug = $1 AND body_sha256 = $2 AND resolved_at IS NULL AND event_id IS DISTINCT FROM NULLIF($3, '')
		) seen ORDER BY pri LIMIT 1`, slug, sha, eventID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("body seen on %s: %w", slug, err)
	}
	return status, true, nil
}

// Quarantine reasons (the CHECK constraint's values).
const (
	ReasonConflictingDuplicate = "conflicting_duplicate"
	ReasonUnknownAccount       = "unknown_account"
	ReasonMalformed            = "malformed"
	ReasonEnvironmentMismatch  = "environment_mismatch"
	// ReasonAccountMismatch: the delivery claims a source account that the
	// secret which verified it, or the endpoint, is not bound to.
	ReasonAccountMismatch = "account_mismatch"
)

// QuarantineEntry is a delivery set aside for investigation.
type QuarantineEntry struct {
	ID           int64
	EndpointSlug string
	Provider     string
	Account      string
	Environment  string
	EventID      string
	Reason       string
	Detail       string
	Payload      []byte
	BodySHA256   []byte
	Headers      map[string]string
	// SecretID is the secret that verified the delivery (0: unknown).
	SecretID   int64
	ReceivedAt time.Time
	ResolvedAt *time.Time
	ResolvedBy string
	Resolution string
}

// InsertQuarantine stores a delivery for investigation. The same delivery
// retried by its sender is stored once. It reports whether a row was added.
func InsertQuarantine(ctx context.Context, db store.DB, q *QuarantineEntry) (bool, error) {
	headers, err := json.Marshal(q.Headers)
	if err != nil {
		return false, err
	}
	tag, err := db.Exec(ctx, `
		INSERT INTO inbox_quarantine (endpoint_slug, provider, source_account, environment, event_id,
			reason, detail, payload, body_sha256, headers, secret_id)
		VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), NULLIF($5, ''), $6, $7, $8, $9, $10, NULLIF($11, 0))
		ON CONFLICT (endpoint_slug, event_id, body_sha256) DO NOTHING`,
		q.EndpointSlug, q.Provider, q.Account, q.Environment, q.EventID, q.Reason, q.Detail,
		q.Payload, q.BodySHA256, headers, q.SecretID)
	if err != nil {
		return false, fmt.Errorf("insert quarantine (%s): %w", q.Reason, err)
	}
	return tag.RowsAffected() == 1, nil
}

// LoadPending returns up to limit due pending rows of resource r, oldest
// first, and when the next not-yet-due row becomes due.
func LoadPending(ctx context.Context, db store.DB, r keys.Resource, limit int) (keys.PendingBatch, error) {
	rows, err := db.Query(ctx, `
		SELECT id, event_id, event_type, attempts, coalesce(traceparent, '') FROM webhook_inbox
		 WHERE provider = $1 AND source_account = $2 AND environment = $3
		   AND resource_kind = $4 AND resource_id = $5
		   AND status = 'pending' AND next_attempt_at <= now()
		 ORDER BY id
		 LIMIT $6`, r.Provider, r.Account, r.Environment, r.Kind, r.ID, limit+1)
	if err != nil {
		return keys.PendingBatch{}, fmt.Errorf("load pending of %s: %w", r, err)
	}
	var b keys.PendingBatch
	for rows.Next() {
		ev := keys.PendingEvent{Key: keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment}}
		if err := rows.Scan(&ev.ID, &ev.Key.EventID, &ev.EventType, &ev.Attempts, &ev.Traceparent); err != nil {
			rows.Close()
			return keys.PendingBatch{}, err
		}
		b.Events = append(b.Events, ev)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return keys.PendingBatch{}, err
	}
	if len(b.Events) > limit {
		b.Events, b.More = b.Events[:limit], true
	}
	var next *time.Time
	if err := db.QueryRow(ctx, `
		SELECT min(next_attempt_at) FROM webhook_inbox
		 WHERE provider = $1 AND source_account = $2 AND environment = $3
		   AND resource_kind = $4 AND resource_id = $5
		   AND status = 'pending' AND next_attempt_at > now()`,
		r.Provider, r.Account, r.Environment, r.Kind, r.ID).Scan(&next); err != nil {
		return keys.PendingBatch{}, fmt.Errorf("next due of %s: %w", r, err)
	}
	b.NextDue = next
	return b, nil
}

// StoredEvent is a full inbox row.
type StoredEvent struct {
	InboxEvent
	ID            int64
	Attempts      int
	NextAttemptAt time.Time
	ReceivedAt    time.Time
	ProcessedAt   *time.Time
}

const inboxColumns = `id, provider, source_account, environment, event_id, endpoint_slug, workspace_id,
	event_type, resource_kind, resource_id, provider_version, occurred_at, payload, body_sha256,
	coalesce(secret_id, 0), origin, status, coalesce(last_error, ''), attempts, next_attempt_at, received_at, processed_at,
	coalesce(object_id, ''), coalesce(traceparent, '')`

func scanStored(row pgx.Row) (*StoredEvent, error) {
	var e StoredEvent
	err := row.Scan(&e.ID, &e.Key.Provider, &e.Key.Account, &e.Key.Environment, &e.Key.EventID,
		&e.EndpointSlug, &e.WorkspaceID, &e.EventType, &e.ResourceKind, &e.ResourceID,
		&e.ProviderVersion, &e.OccurredAt, &e.Payload, &e.BodySHA256, &e.SecretID, &e.Origin,
		&e.Status, &e.LastError, &e.Attempts, &e.NextAttemptAt, &e.ReceivedAt, &e.ProcessedAt, &e.ObjectID, &e.Traceparent)
	if err != nil {
		return nil, store.Interpret(err)
	}
	return &e, nil
}

// GetInboxEvent reads one row.
func GetInboxEvent(ctx context.Context, db store.DB, k keys.Event) (*StoredEvent, error) {
	e, err := scanStored(db.QueryRow(ctx, `SELECT `+inboxColumns+` FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID))
	if err != nil {
		return nil, fmt.Errorf("inbox event %s: %w", k, err)
	}
	return e, nil
}

// LockInboxEvent reads one row FOR UPDATE inside tx: the handling
// transaction holds it until commit, so two attempts on one event (a
// timed-out attempt still running, say) serialize and the later one sees the
// earlier one's completion.
func LockInboxEvent(ctx context.Context, tx pgx.Tx, k keys.Event) (*StoredEvent, error) {
	e, err := scanStored(tx.QueryRow(ctx, `SELECT `+inboxColumns+` FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		FOR UPDATE`, k.Provider, k.Account, k.Environment, k.EventID))
	if err != nil {
		return nil, fmt.Errorf("lock inbox event %s: %w", k, err)
	}
	return e, nil
}

// CompleteInboxEvent moves a pending row to a final status (done or
// ignored) with a note of what handling did (for ignored rows also its
// last_error: the reason), counting the attempt. It only touches a pending row:
// a completion committed elsewhere is never overwritten. It reports whether
// the row changed.
func CompleteInboxEvent(ctx context.Context, db store.DB, k keys.Event, status, note string) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE webhook_inbox
		   SET status = $5, note = NULLIF($6, ''),
		       last_error = CASE WHEN $5 = 'ignored' THEN NULLIF($6, '') ELSE last_error END,
		       attempts = attempts + 1, processed_at = now()
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		   AND status = 'pending'`,
		k.Provider, k.Account, k.Environment, k.EventID, status, note)
	if err != nil {
		return false, fmt.Errorf("complete inbox event %s as %s: %w", k, status, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RecordInboxFailure notes a failed attempt on a pending row: attempts,
// last error and when the next attempt is due. A row completed elsewhere is
// left alone.
func RecordInboxFailure(ctx context.Context, db store.DB, k keys.Event, lastErr string, next time.Time) error {
	_, err := db.Exec(ctx, `
		UPDATE webhook_inbox
		   SET attempts = attempts + 1, last_error = $5, next_attempt_at = $6
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		   AND status = 'pending'`,
		k.Provider, k.Account, k.Environment, k.EventID, lastErr, next)
	if err != nil {
		return fmt.Errorf("record failure of %s: %w", k, err)
	}
	return nil
}

// DeferInboxEvent leaves a pending row pending with lastErr as its reason,
// due again at next, without counting an attempt: nothing was tried (no
// handler for its type in this worker). A row completed elsewhere is left
// alone. It reports whether the row changed.
func DeferInboxEvent(ctx context.Context, db store.DB, k keys.Event, lastErr string, next time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE webhook_inbox
		   SET last_error = $5, next_attempt_at = $6
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		   AND status = 'pending'`,
		k.Provider, k.Account, k.Environment, k.EventID, lastErr, next)
	if err != nil {
		return false, fmt.Errorf("defer %s: %w", k, err)
	}
	return tag.RowsAffected() == 1, nil
}

// StopInboxEvent ends retrying a pending row: failed (a validation error)
// or exhausted (the budget is spent). Attempts and the last error stay for
// the operator, who can replay it.
func StopInboxEvent(ctx context.Context, db store.DB, k keys.Event, status, lastErr string) (bool, error) {
	if status != keys.StatusFailed && status != keys.StatusExhausted {
		return false, fmt.Errorf("stop inbox event %s: status %q is not failed or exhausted", k, status)
	}
	tag, err := db.Exec(ctx, `
		UPDATE webhook_inbox
		   SET status = $5, last_error = $6, processed_at = now()
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		   AND status = 'pending'`,
		k.Provider, k.Account, k.Environment, k.EventID, status, lastErr)
	if err != nil {
		return false, fmt.Errorf("mark %s %s: %w", k, status, err)
	}
	return tag.RowsAffected() == 1, nil
}

// StalePendingResources lists resources that have pending rows due for
// longer than olderThan and not rung lately, and records the ring on those
// rows (sweeps, swept_at): the n-th ring of a row comes olderThan × 4^n
// after the one before (capped at an hour), so under a backlog a row is
// rung about once however long its workflow takes to get to it (a large
// backlog is queued, not lost). The rows stay due for their workflow. Rows
// the backoff holds are probed instead (HeldPendingResources).
func StalePendingResources(ctx context.Context, db store.DB, olderThan time.Duration, limit int) ([]keys.Resource, error) {
	rows, err := db.Query(ctx, `
		WITH eligible AS (
			SELECT id, provider, source_account, environment, resource_kind, resource_id, next_attempt_at
			  FROM webhook_inbox
			 WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1)
			   AND (swept_at IS NULL
			        OR swept_at < now() - make_interval(secs => least($1 * power(4, least(sweeps, 8)), 3600)))
		), stale AS (
			SELECT provider, source_account, environment, resource_kind, resource_id, min(next_attempt_at) AS oldest
			  FROM eligible
			 GROUP BY provider, source_account, environment, resource_kind, resource_id
			 ORDER BY oldest
			 LIMIT $2
		), rung AS (
			UPDATE webhook_inbox w SET sweeps = w.sweeps + 1, swept_at = now()
			  FROM eligible e JOIN stale s USING (provider, source_account, environment, resource_kind, resource_id)
			 WHERE w.id = e.id
		)
		SELECT provider, source_account, environment, resource_kind, resource_id FROM stale ORDER BY oldest`,
		olderThan.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("stale pending resources: %w", err)
	}
	return scanResources(rows)
}

// HeldPendingResources lists resources with pending rows due for longer
// than olderThan that StalePendingResources' backoff holds back (rung
// before, their next ring not due yet) and that were last rung or probed
// more than probeEvery ago, least recently first, and records the look on
// those rows (swept_at; sweeps, the ring count, is left as it is). The
// sweeper probes them: it starts the resource's workflow only when none is
// running, so a row the backoff holds cannot be stranded by a workflow that
// is gone, while a busy workflow that holds it is not rung again.
func HeldPendingResources(ctx context.Context, db store.DB, olderThan, probeEvery time.Duration, limit int) ([]keys.Resource, error) {
	rows, err := db.Query(ctx, `
		WITH held AS (
			SELECT id, provider, source_account, environment, resource_kind, resource_id, swept_at
			  FROM webhook_inbox
			 WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1)
			   AND swept_at >= now() - make_interval(secs => least($1 * power(4, least(sweeps, 8)), 3600))
			   AND swept_at < now() - make_interval(secs => $2)
		), probe AS (
			SELECT provider, source_account, environment, resource_kind, resource_id, min(swept_at) AS looked
			  FROM held
			 GROUP BY provider, source_account, environment, resource_kind, resource_id
			 ORDER BY looked
			 LIMIT $3
		), looked AS (
			UPDATE webhook_inbox w SET swept_at = now()
			  FROM held h JOIN probe p USING (provider, source_account, environment, resource_kind, resource_id)
			 WHERE w.id = h.id
		)
		SELECT provider, source_account, environment, resource_kind, resource_id FROM probe ORDER BY looked`,
		olderThan.Seconds(), probeEvery.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("held pending resources: %w", err)
	}
	return scanResources(rows)
}

// scanResources reads (provider, account, environment, kind, id) rows.
func scanResources(rows pgx.Rows) ([]keys.Resource, error) {
	defer rows.Close()
	var out []keys.Resource
	for rows.Next() {
		var r keys.Resource
		if err := rows.Scan(&r.Provider, &r.Account, &r.Environment, &r.Kind, &r.ID); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// WakeResource makes the resource's pending rows that wait for a later
// attempt due now, inside the transaction of an effect they wait for (a
// credit note waiting for its invoice's grant): the workflow's next load
// finds them without sitting out their backoff. It also resets the
// sweeper's backoff of the resource's pending rows (sweeps, swept_at): a
// woken row is a new piece of work, rung again after one HOOKINBOX_SWEEP_AFTER
// if nothing runs it. It returns how many rows it changed.
func WakeResource(ctx context.Context, db store.DB, r keys.Resource) (int64, error) {
	tag, err := db.Exec(ctx, `
		UPDATE webhook_inbox SET next_attempt_at = least(next_attempt_at, now()), sweeps = 0, swept_at = NULL
		 WHERE provider = $1 AND source_account = $2 AND environment = $3
		   AND resource_kind = $4 AND resource_id = $5
		   AND status = 'pending' AND (next_attempt_at > now() OR sweeps > 0)`,
		r.Provider, r.Account, r.Environment, r.Kind, r.ID)
	if err != nil {
		return 0, fmt.Errorf("wake pending rows of %s: %w", r, err)
	}
	return tag.RowsAffected(), nil
}
