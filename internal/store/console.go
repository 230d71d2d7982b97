package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// This file holds the statements of the operator console and API (issue
// #15): API tokens, replay jobs, the lineage of an effect, endpoint updates
// and the listings only the console needs.

// ErrConflict is returned when a row with the same unique name exists.
var ErrConflict = errors.New("already exists")

// API token roles, least to most privileged (not database roles: those are
// the Role* constants in roles.go).
const (
	TokenViewer   = "viewer"
	TokenOperator = "operator"
	TokenAdmin    = "admin"
)

// APIToken is a bearer token's record; the token itself is never stored.
type APIToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

const tokenColumns = `id, name, role, created_by, created_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (*APIToken, error) {
	var t APIToken
	if err := row.Scan(&t.ID, &t.Name, &t.Role, &t.CreatedBy, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt); err != nil {
		return nil, interpret(err)
	}
	return &t, nil
}

// InsertAPIToken records a token by the SHA-256 of its value.
func InsertAPIToken(ctx context.Context, db DB, name, role, createdBy string, sha256 []byte) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		INSERT INTO api_tokens (name, role, created_by, token_sha256) VALUES ($1, $2, $3, $4)
		RETURNING `+tokenColumns, name, role, createdBy, sha256))
	if IsUniqueViolation(err) {
		return nil, fmt.Errorf("token %q: %w (names are kept after revocation; pick another)", name, ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("insert token %q: %w", name, err)
	}
	return t, nil
}

// ListAPITokens lists every token, revoked ones too, by name.
func ListAPITokens(ctx context.Context, db DB) ([]APIToken, error) {
	rows, err := db.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return appendRows([]APIToken{}, rows, byValue(scanToken))
}

// RevokeAPIToken revokes the token called name; revoking twice is an error.
func RevokeAPIToken(ctx context.Context, db DB, name string) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL
		RETURNING `+tokenColumns, name))
	if err != nil {
		return nil, fmt.Errorf("revoke token %q (unknown or already revoked): %w", name, err)
	}
	return t, nil
}

// LookupAPIToken finds the unrevoked token whose SHA-256 is sha256, and
// records its use (at most once a minute, so reads stay cheap).
func LookupAPIToken(ctx context.Context, db DB, sha256 []byte) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE token_sha256 = $1 AND revoked_at IS NULL`, sha256))
	if err != nil {
		return nil, err
	}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) > time.Minute {
		if _, err := db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, t.ID); err != nil {
			return nil, fmt.Errorf("token use: %w", err)
		}
	}
	return t, nil
}

// Replay job statuses.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobDone      = "done"
	JobCancelled = "cancelled"
	JobFailed    = "failed"
)

// ReplaySelection is what a replay job replays: the rows an inbox filter
// matches, or a list of event keys.
type ReplaySelection struct {
	Filter *InboxFilter `json:"filter,omitempty"`
	Keys   []string     `json:"keys,omitempty"`
}

// ReplayJob is a persisted bulk replay and its progress.
type ReplayJob struct {
	ID              int64           `json:"id"`
	CreatedBy       string          `json:"created_by"`
	Reason          string          `json:"reason"`
	Selection       ReplaySelection `json:"selection"`
	Description     string          `json:"description"`
	Force           bool            `json:"force"`
	MaxEvents       int             `json:"max_events"`
	UptoInboxID     int64           `json:"upto_inbox_id"`
	Status          string          `json:"status"`
	Total           int             `json:"total"`
	Processed       int             `json:"processed"`
	Replayed        int             `json:"replayed"`
	Refused         int             `json:"refused"`
	Errors          int             `json:"errors"`
	Signaled        int             `json:"signaled"`
	LastInboxID     int64           `json:"last_inbox_id"`
	CancelRequested bool            `json:"cancel_requested"`
	LastError       string          `json:"last_error,omitempty"`
	SignalError     string          `json:"signal_error,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// Finished reports whether the job will not change any more.
func (j *ReplayJob) Finished() bool {
	return j.Status == JobDone || j.Status == JobCancelled || j.Status == JobFailed
}

const jobColumns = `id, created_by, reason, selection, description, force, max_events, upto_inbox_id, status, total,
	processed, replayed, refused, errors, signaled, last_inbox_id, cancel_requested, coalesce(last_error, ''),
	coalesce(signal_error, ''), created_at, started_at, finished_at, updated_at`

func scanJob(row pgx.Row) (*ReplayJob, error) {
	var j ReplayJob
	var sel []byte
	err := row.Scan(&j.ID, &j.CreatedBy, &j.Reason, &sel, &j.Description, &j.Force, &j.MaxEvents, &j.UptoInboxID,
		&j.Status, &j.Total, &j.Processed, &j.Replayed, &j.Refused, &j.Errors, &j.Signaled, &j.LastInboxID,
		&j.CancelRequested, &j.LastError, &j.SignalError, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.UpdatedAt)
	if err != nil {
		return nil, interpret(err)
	}
	if err := json.Unmarshal(sel, &j.Selection); err != nil {
		return nil, fmt.Errorf("replay job %d selection: %w", j.ID, err)
	}
	return &j, nil
}

// InsertReplayJob records a queued job. A filter selection only ever sees
// the rows that exist now (upto_inbox_id) and counts them as its total.
func (s *Store) InsertReplayJob(ctx context.Context, j *ReplayJob) (*ReplayJob, error) {
	sel, err := json.Marshal(j.Selection)
	if err != nil {
		return nil, err
	}
	var out *ReplayJob
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		var upto int64
		total := len(j.Selection.Keys)
		if f := j.Selection.Filter; f != nil {
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM webhook_inbox`).Scan(&upto); err != nil {
				return err
			}
			n, err := CountInboxForJob(ctx, tx, *f, 0, upto, j.MaxEvents)
			if err != nil {
				return err
			}
			total = n
		}
		total = min(total, j.MaxEvents)
		out, err = scanJob(tx.QueryRow(ctx, `
			INSERT INTO replay_jobs (created_by, reason, selection, description, force, max_events, upto_inbox_id, total)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			RETURNING `+jobColumns, j.CreatedBy, j.Reason, sel, j.Description, j.Force, j.MaxEvents, upto, total))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert replay job: %w", err)
	}
	return out, nil
}

// GetReplayJob reads one job.
func GetReplayJob(ctx context.Context, db DB, id int64) (*ReplayJob, error) {
	j, err := scanJob(db.QueryRow(ctx, `SELECT `+jobColumns+` FROM replay_jobs WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("replay job %d: %w", id, err)
	}
	return j, nil
}

// ListReplayJobs lists the newest jobs first.
func ListReplayJobs(ctx context.Context, db DB, limit int) ([]ReplayJob, error) {
	rows, err := db.Query(ctx, `SELECT `+jobColumns+` FROM replay_jobs ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list replay jobs: %w", err)
	}
	return appendRows([]ReplayJob{}, rows, byValue(scanJob))
}

// ClaimReplayJob takes the oldest queued job, or a running one whose runner
// stopped beating for staleAfter, and marks it running. id > 0 claims that
// job only. It returns ErrNotFound when there is nothing to claim.
func ClaimReplayJob(ctx context.Context, db DB, id int64, staleAfter time.Duration) (*ReplayJob, error) {
	return scanJob(db.QueryRow(ctx, `
		UPDATE replay_jobs SET status = 'running', started_at = coalesce(started_at, now()), updated_at = now()
		 WHERE id = (SELECT id FROM replay_jobs
		              WHERE ($1 = 0 OR id = $1)
		                AND (status = 'queued' OR (status = 'running' AND updated_at < now() - make_interval(secs => $2)))
		              ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+jobColumns, id, staleAfter.Seconds()))
}

// JobProgress is what one step of a job adds.
type JobProgress struct {
	Processed, Replayed, Refused, Errors, Signaled int
	LastInboxID                                    int64
	LastError, SignalError                         string
}

// AdvanceReplayJob adds p to a running job's counters (its heartbeat too)
// and reports whether an operator asked to cancel it.
func AdvanceReplayJob(ctx context.Context, db DB, id int64, p JobProgress) (cancel bool, err error) {
	err = db.QueryRow(ctx, `
		UPDATE replay_jobs SET processed = processed + $2, replayed = replayed + $3, refused = refused + $4,
		       errors = errors + $5, signaled = signaled + $6, last_inbox_id = greatest(last_inbox_id, $7),
		       last_error = coalesce(NULLIF($8, ''), last_error), signal_error = coalesce(NULLIF($9, ''), signal_error),
		       updated_at = now()
		 WHERE id = $1 AND status = 'running'
		RETURNING cancel_requested`, id, p.Processed, p.Replayed, p.Refused, p.Errors, p.Signaled, p.LastInboxID,
		p.LastError, p.SignalError).Scan(&cancel)
	if err != nil {
		return false, fmt.Errorf("advance replay job %d: %w", id, interpret(err))
	}
	return cancel, nil
}

// FinishReplayJob ends a running job with status (done, cancelled, failed).
func FinishReplayJob(ctx context.Context, db DB, id int64, status, lastErr string) (*ReplayJob, error) {
	j, err := scanJob(db.QueryRow(ctx, `
		UPDATE replay_jobs SET status = $2, finished_at = now(), updated_at = now(),
		       last_error = coalesce(NULLIF($3, ''), last_error)
		 WHERE id = $1 AND status = 'running'
		RETURNING `+jobColumns, id, status, lastErr))
	if err != nil {
		return nil, fmt.Errorf("finish replay job %d: %w", id, err)
	}
	return j, nil
}

// CancelReplayJob cancels a queued job at once and asks a running one to
// stop after its current event. A finished job is returned unchanged.
func CancelReplayJob(ctx context.Context, db DB, id int64) (*ReplayJob, error) {
	j, err := scanJob(db.QueryRow(ctx, `
		UPDATE replay_jobs SET cancel_requested = true, updated_at = CASE WHEN status = 'queued' THEN now() ELSE updated_at END,
		       status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
		       finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
		 WHERE id = $1 AND status IN ('queued', 'running')
		RETURNING `+jobColumns, id))
	if errors.Is(err, ErrNotFound) {
		return GetReplayJob(ctx, db, id)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel replay job %d: %w", id, err)
	}
	return j, nil
}

// jobWindow restricts a filter to inbox ids in (after, upto].
func jobWindow(after, upto int64) func(arg func(any) string) string {
	return func(arg func(any) string) string {
		return "id > " + arg(after) + " AND id <= " + arg(upto)
	}
}

// CountInboxForJob counts the rows f matches with ids in (after, upto], up
// to max.
func CountInboxForJob(ctx context.Context, db DB, f InboxFilter, after, upto int64, max int) (int, error) {
	return countInbox(ctx, db, f, max, jobWindow(after, upto))
}

// NextInboxForJob lists at most limit rows f matches with ids in
// (after, upto], by id.
func NextInboxForJob(ctx context.Context, db DB, f InboxFilter, after, upto int64, limit int) ([]InboxSummary, error) {
	f.Before = nil
	where, args := f.where(jobWindow(after, upto))
	args = append(args, limit)
	rows, err := db.Query(ctx, `SELECT `+inboxSummaryColumns+` FROM webhook_inbox`+where+
		` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("next inbox rows: %w", err)
	}
	return appendRows(nil, rows, scanSummary)
}

// CountInbox counts the rows f matches (up to max, to stay cheap).
func CountInbox(ctx context.Context, db DB, f InboxFilter, max int) (int, error) {
	return countInbox(ctx, db, f, max)
}

// countInbox counts the rows f and extra match, up to max.
func countInbox(ctx context.Context, db DB, f InboxFilter, max int, extra ...func(arg func(any) string) string) (int, error) {
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
}

// ResourceLineage lists every delivery of resource r: its inbox rows (live,
// or kept after deletion) and the quarantine entries sharing their event
// keys (conflicting duplicates), oldest first.
func ResourceLineage(ctx context.Context, db DB, r keys.Resource) ([]LineageEvent, error) {
	rows, err := db.Query(ctx, `
		WITH ev AS (
			SELECT 'inbox' AS source, id AS source_id, provider, source_account, environment, event_id, endpoint_slug,
			       workspace_id, event_type, resource_kind, resource_id, body_sha256, origin, status, attempts,
			       coalesce(last_error, '') AS last_error, coalesce(note, '') AS note, '' AS qreason, '' AS resolution,
			       received_at, processed_at, payload IS NULL AS redacted, false AS deleted
			  FROM webhook_inbox
			 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
			UNION ALL
			SELECT 'inbox', source_id, provider, source_account, environment, event_id, endpoint_slug,
			       coalesce(workspace_id, ''), coalesce(event_type, ''), coalesce(resource_kind, ''), coalesce(resource_id, ''),
			       body_sha256, coalesce(origin, ''), coalesce(status, ''), coalesce(attempts, 0), coalesce(last_error, ''),
			       coalesce(note, ''), '', '', received_at, processed_at, payload_redacted_at IS NOT NULL, true
			  FROM event_lineage
			 WHERE source = 'inbox' AND deleted_at IS NOT NULL
			   AND provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
		), q AS (
			SELECT 'quarantine' AS source, id AS source_id, provider, coalesce(source_account, ''), coalesce(environment, ''),
			       coalesce(event_id, ''), endpoint_slug, '', '', '', '', body_sha256, '',
			       CASE WHEN resolved_at IS NULL THEN 'open' ELSE 'resolved' END, 0, detail, '', reason,
			       coalesce(resolution, ''), received_at, resolved_at, payload IS NULL, false
			  FROM inbox_quarantine
			 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id IN (SELECT event_id FROM ev)
			UNION ALL
			SELECT 'quarantine', source_id, provider, coalesce(source_account, ''), coalesce(environment, ''),
			       coalesce(event_id, ''), endpoint_slug, '', '', '', '', body_sha256, '', 'resolved', 0, '', '',
			       coalesce(quarantine_reason, ''), coalesce(resolution, ''), received_at, processed_at, true, true
			  FROM event_lineage
			 WHERE source = 'quarantine' AND provider = $1 AND source_account = $2 AND environment = $3
			   AND event_id IN (SELECT event_id FROM ev)
		)
		SELECT * FROM ev UNION ALL SELECT * FROM q ORDER BY received_at, source_id`,
		r.Provider, r.Account, r.Environment, r.Kind, r.ID)
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", r, err)
	}
	return appendRows([]LineageEvent{}, rows, func(row pgx.Row) (e LineageEvent, err error) {
		err = row.Scan(&e.Source, &e.SourceID, &e.Key.Provider, &e.Key.Account, &e.Key.Environment, &e.Key.EventID,
			&e.EndpointSlug, &e.WorkspaceID, &e.EventType, &e.ResourceKind, &e.ResourceID, &e.BodySHA256, &e.Origin,
			&e.Status, &e.Attempts, &e.LastError, &e.Note, &e.QuarantineReason, &e.Resolution, &e.ReceivedAt,
			&e.ProcessedAt, &e.PayloadRedacted, &e.Deleted)
		return e, err
	})
}

// FindLineageEvent returns what event_lineage kept of a deleted inbox row.
func FindLineageEvent(ctx context.Context, db DB, k keys.Event) (*LineageEvent, error) {
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
		return nil, fmt.Errorf("lineage of event %s: %w", k, interpret(err))
	}
	e.PayloadRedacted = true
	return &e, nil
}

const grantColumns = `id, provider, source_account, environment, invoice_id, operation, workspace_id, credits,
	amount_paid, currency, event_key, created_at`

func scanGrant(row pgx.Row) (g CreditGrant, err error) {
	err = row.Scan(&g.ID, &g.Provider, &g.Account, &g.Environment, &g.InvoiceID, &g.Operation, &g.WorkspaceID,
		&g.Credits, &g.AmountPaid, &g.Currency, &g.EventKey, &g.CreatedAt)
	return g, interpret(err)
}

// FindCreditGrants finds grants by id (id > 0) or by invoice id, optionally
// narrowed to a provider, account and environment, at most 20.
func FindCreditGrants(ctx context.Context, db DB, id int64, provider, account, env, invoice string) ([]CreditGrant, error) {
	rows, err := db.Query(ctx, `SELECT `+grantColumns+` FROM credit_grants
		WHERE ($1 = 0 OR id = $1) AND ($2 = '' OR provider = $2) AND ($3 = '' OR source_account = $3)
		  AND ($4 = '' OR environment = $4) AND ($5 = '' OR invoice_id = $5)
		ORDER BY id LIMIT 20`, id, provider, account, env, invoice)
	if err != nil {
		return nil, fmt.Errorf("find credit grants: %w", err)
	}
	return appendRows(nil, rows, scanGrant)
}

// StoredFeedbackAlert is a feedback_alerts row.
type StoredFeedbackAlert struct {
	FeedbackAlert
	ID        int64
	CreatedAt time.Time
}

// FindFeedbackAlerts finds alerts by id (id > 0) or feedback id, at most 20.
func FindFeedbackAlerts(ctx context.Context, db DB, id int64, provider, project, env, feedbackID string) ([]StoredFeedbackAlert, error) {
	rows, err := db.Query(ctx, `
		SELECT id, provider, project, environment, feedback_id, operation, workspace_id, event_key, created_at
		  FROM feedback_alerts
		 WHERE ($1 = 0 OR id = $1) AND ($2 = '' OR provider = $2) AND ($3 = '' OR project = $3)
		   AND ($4 = '' OR environment = $4) AND ($5 = '' OR feedback_id = $5)
		 ORDER BY id LIMIT 20`, id, provider, project, env, feedbackID)
	if err != nil {
		return nil, fmt.Errorf("find feedback alerts: %w", err)
	}
	return appendRows(nil, rows, func(row pgx.Row) (a StoredFeedbackAlert, err error) {
		err = row.Scan(&a.ID, &a.Provider, &a.Project, &a.Environment, &a.FeedbackID, &a.Operation, &a.WorkspaceID,
			&a.EventKey, &a.CreatedAt)
		return a, err
	})
}

// FindProjections finds subscription projections by subscription id,
// optionally narrowed to a provider, account and environment, at most 20.
func FindProjections(ctx context.Context, db DB, provider, account, env, id string) ([]keys.Resource, error) {
	rows, err := db.Query(ctx, `
		SELECT provider, source_account, environment, resource_id FROM subscription_projection
		 WHERE ($1 = '' OR provider = $1) AND ($2 = '' OR source_account = $2) AND ($3 = '' OR environment = $3)
		   AND resource_id = $4
		 ORDER BY provider, source_account, environment LIMIT 20`, provider, account, env, id)
	if err != nil {
		return nil, fmt.Errorf("find subscriptions: %w", err)
	}
	return appendRows(nil, rows, func(row pgx.Row) (keys.Resource, error) {
		r := keys.Resource{Kind: "subscription"}
		err := row.Scan(&r.Provider, &r.Account, &r.Environment, &r.ID)
		return r, err
	})
}

// FindOutboxByOperation reads the outbox row of an operation key.
func FindOutboxByOperation(ctx context.Context, db DB, operationKey string) (*OutboxRow, error) {
	o, err := scanOutbox(db.QueryRow(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE operation_key = $1`, operationKey))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w", operationKey, err)
	}
	return o, nil
}

// ResourceOutbox lists the outbox rows a resource's workflow dispatches.
func ResourceOutbox(ctx context.Context, db DB, r keys.Resource) ([]*OutboxRow, error) {
	rows, err := db.Query(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE resource_key = $1 ORDER BY id LIMIT 200`, r.String())
	if err != nil {
		return nil, fmt.Errorf("outbox of %s: %w", r, err)
	}
	return appendRows([]*OutboxRow{}, rows, scanOutbox)
}

// StoredDivergence is one reconcile_divergences row.
type StoredDivergence struct {
	Field         string    `json:"field"`
	LocalValue    string    `json:"local_value,omitempty"`
	ProviderValue string    `json:"provider_value,omitempty"`
	Corrected     bool      `json:"corrected"`
	DetectedBy    string    `json:"detected_by"`
	DetectedAt    time.Time `json:"detected_at"`
}

// ResourceDivergences lists what reconciliation found on a resource, oldest first.
func ResourceDivergences(ctx context.Context, db DB, r keys.Resource) ([]StoredDivergence, error) {
	rows, err := db.Query(ctx, `
		SELECT field, coalesce(local_value, ''), coalesce(provider_value, ''), corrected, detected_by, detected_at
		  FROM reconcile_divergences
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
		 ORDER BY detected_at, id LIMIT 200`, r.Provider, r.Account, r.Environment, r.Kind, r.ID)
	if err != nil {
		return nil, fmt.Errorf("divergences of %s: %w", r, err)
	}
	return appendRows([]StoredDivergence{}, rows, func(row pgx.Row) (d StoredDivergence, err error) {
		err = row.Scan(&d.Field, &d.LocalValue, &d.ProviderValue, &d.Corrected, &d.DetectedBy, &d.DetectedAt)
		return d, err
	})
}

// ListOperatorActionsFor returns the audit entries whose target or event
// key is any of refs, oldest first, at most limit.
func ListOperatorActionsFor(ctx context.Context, db DB, refs []string, limit int) ([]OperatorAction, error) {
	return queryActions(ctx, db, `
		SELECT id, at, actor, action, target, coalesce(event_key, ''), reason, details
		  FROM operator_actions
		 WHERE target = ANY($1::text[]) OR event_key = ANY($1::text[])
		 ORDER BY at, id LIMIT $2`, refs, limit)
}

// RecentOperatorActions returns the newest audit entries first, optionally
// only those by actor or of action.
func RecentOperatorActions(ctx context.Context, db DB, actor, action string, limit int) ([]OperatorAction, error) {
	return queryActions(ctx, db, `
		SELECT id, at, actor, action, target, coalesce(event_key, ''), reason, details
		  FROM operator_actions
		 WHERE ($1 = '' OR actor = $1) AND ($2 = '' OR action = $2)
		 ORDER BY at DESC, id DESC LIMIT $3`, actor, action, limit)
}

func queryActions(ctx context.Context, db DB, sql string, args ...any) ([]OperatorAction, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("operator actions: %w", err)
	}
	return appendRows([]OperatorAction{}, rows, scanAction)
}

// EndpointUpdate changes an endpoint's fields; nil fields stay. An empty
// string clears an optional field (account, API base URL, API key).
type EndpointUpdate struct {
	Account    *string
	APIBaseURL *string
	APIKey     *string
	Settings   *keys.EndpointSettings
}

// UpdateEndpoint applies u to the endpoint slug, a new API key sealed with
// kr (needed only when u sets one).
func UpdateEndpoint(ctx context.Context, db DB, kr *secretbox.Keyring, slug string, u EndpointUpdate) error {
	var settings []byte
	if u.Settings != nil {
		var err error
		if settings, err = json.Marshal(u.Settings); err != nil {
			return err
		}
	}
	var apiSealed []byte
	var apiKeyID *string
	if u.APIKey != nil && *u.APIKey != "" {
		if kr == nil {
			return secretbox.ErrNoKey
		}
		b, id, err := kr.Seal([]byte(*u.APIKey), apiKeyContext(slug))
		if err != nil {
			return err
		}
		apiSealed, apiKeyID = b, &id
	}
	// The plain api_key column is nulled whenever the key changes: only the
	// sealed value is ever written.
	tag, err := db.Exec(ctx, `
		UPDATE endpoints SET
		       account = CASE WHEN $2 THEN NULLIF($3, '') ELSE account END,
		       api_base_url = CASE WHEN $4 THEN NULLIF($5, '') ELSE api_base_url END,
		       api_key = CASE WHEN $6 THEN NULL ELSE api_key END,
		       api_key_sealed = CASE WHEN $6 THEN $7 ELSE api_key_sealed END,
		       api_key_key_id = CASE WHEN $6 THEN $8 ELSE api_key_key_id END,
		       settings = coalesce($9::jsonb, settings)
		 WHERE slug = $1`, slug, u.Account != nil, deref(u.Account), u.APIBaseURL != nil, deref(u.APIBaseURL),
		u.APIKey != nil, apiSealed, apiKeyID, settings)
	if err != nil {
		return fmt.Errorf("update endpoint %q: %w", slug, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, ErrNotFound)
	}
	return nil
}

// WorkspaceSummary is a workspace as listed.
type WorkspaceSummary struct {
	ID             string `json:"id"`
	CreditsBalance int64  `json:"credits_balance"`
	Email          string `json:"email,omitempty"`
	HasAccess      bool   `json:"has_access"`
	Accounts       int    `json:"linked_accounts"`
	Destinations   int    `json:"destinations"`
}

// ListWorkspaces lists workspaces by id, at most limit.
func ListWorkspaces(ctx context.Context, db DB, limit int) ([]WorkspaceSummary, error) {
	rows, err := db.Query(ctx, `
		SELECT w.id, w.credits_balance, coalesce(w.email, ''), coalesce(a.has_access, false),
		       (SELECT count(*) FROM account_links l WHERE l.workspace_id = w.id),
		       (SELECT count(*) FROM team_destinations d WHERE d.workspace_id = w.id)
		  FROM workspaces w LEFT JOIN workspace_access a ON a.workspace_id = w.id
		 ORDER BY w.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return appendRows([]WorkspaceSummary{}, rows, func(row pgx.Row) (w WorkspaceSummary, err error) {
		err = row.Scan(&w.ID, &w.CreditsBalance, &w.Email, &w.HasAccess, &w.Accounts, &w.Destinations)
		return w, err
	})
}
