package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

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

const tokenColumns = `id, name, role, created_by, created_at, last_used_at, revoked_at` //nolint:gosec // column names, no credential

func scanToken(row pgx.Row) (*APIToken, error) {
	var t APIToken
	if err := row.Scan(&t.ID, &t.Name, &t.Role, &t.CreatedBy, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt); err != nil {
		return nil, store.Interpret(err)
	}
	return &t, nil
}

// InsertAPIToken records a token by the SHA-256 of its value.
func InsertAPIToken(ctx context.Context, db store.DB, name, role, createdBy string, sha256 []byte) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		INSERT INTO api_tokens (name, role, created_by, token_sha256) VALUES ($1, $2, $3, $4)
		RETURNING `+tokenColumns, name, role, createdBy, sha256))
	if store.IsUniqueViolation(err) {
		return nil, fmt.Errorf("token %q: %w (names are kept after revocation; pick another)", name, store.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("insert token %q: %w", name, err)
	}
	return t, nil
}

// ListAPITokens lists every token, revoked ones too, by name.
func ListAPITokens(ctx context.Context, db store.DB) ([]APIToken, error) {
	rows, err := db.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return store.AppendRows([]APIToken{}, rows, store.ByValue(scanToken))
}

// RevokeAPIToken revokes the token called name; revoking twice is an error.
func RevokeAPIToken(ctx context.Context, db store.DB, name string) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `
		UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL
		RETURNING `+tokenColumns, name))
	if err != nil {
		return nil, fmt.Errorf("revoke token %q (unknown or already revoked): %w", name, err)
	}
	return t, nil
}

// LookupAPIToken finds the unrevoked token whose SHA-256 is sha256, and
// records its use (at most once a minute, so reads stay cheap), through
// hookinbox_token_by_hash: the console's role may run it, never read a
// token's hash.
func LookupAPIToken(ctx context.Context, db store.DB, sha256 []byte) (*APIToken, error) {
	return scanToken(db.QueryRow(ctx, `SELECT `+tokenColumns+` FROM hookinbox_token_by_hash($1)`, sha256))
}

// StartSession records a console session by the SHA-256 of its id, for
// token tokenID, expiring after ttl (and drops the expired ones). It runs
// hookinbox_session_start, which the console's role may execute without
// reading console_sessions.
func StartSession(ctx context.Context, db store.DB, sha256 []byte, tokenID int64, ttl time.Duration) error {
	if _, err := db.Exec(ctx, `SELECT hookinbox_session_start($1, $2, $3)`, sha256, tokenID, ttl); err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	return nil
}

// SessionToken returns the token of the live session whose id hashes to
// sha256: not expired, not ended, its token not revoked.
func SessionToken(ctx context.Context, db store.DB, sha256 []byte) (*APIToken, error) {
	t, err := scanToken(db.QueryRow(ctx, `SELECT `+tokenColumns+` FROM hookinbox_session_token($1)`, sha256))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// EndSession ends the session whose id hashes to sha256; it reports
// whether there was one.
func EndSession(ctx context.Context, db store.DB, sha256 []byte) (bool, error) {
	var ended bool
	if err := db.QueryRow(ctx, `SELECT hookinbox_session_end($1)`, sha256).Scan(&ended); err != nil {
		return false, fmt.Errorf("end session: %w", err)
	}
	return ended, nil
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
	Filter *inbox.InboxFilter `json:"filter,omitempty"`
	Keys   []string           `json:"keys,omitempty"`
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
		return nil, store.Interpret(err)
	}
	if err := json.Unmarshal(sel, &j.Selection); err != nil {
		return nil, fmt.Errorf("replay job %d selection: %w", j.ID, err)
	}
	return &j, nil
}

// InsertReplayJob records a queued job. A filter selection only ever sees
// the rows that exist now (upto_inbox_id) and counts them as its total.
func InsertReplayJob(ctx context.Context, s *store.Store, j *ReplayJob) (*ReplayJob, error) {
	if f := j.Selection.Filter; f != nil && (f.Since != 0 || f.OlderThan != 0) {
		return nil, errors.New("insert replay job: its filter must be absolute (InboxFilter.Absolute): relative ages are not stored")
	}
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
			n, err := inbox.CountInboxForJob(ctx, tx, *f, 0, upto, j.MaxEvents)
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
func GetReplayJob(ctx context.Context, db store.DB, id int64) (*ReplayJob, error) {
	j, err := scanJob(db.QueryRow(ctx, `SELECT `+jobColumns+` FROM replay_jobs WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("replay job %d: %w", id, err)
	}
	return j, nil
}

// ListReplayJobs lists the newest jobs first.
func ListReplayJobs(ctx context.Context, db store.DB, limit int) ([]ReplayJob, error) {
	rows, err := db.Query(ctx, `SELECT `+jobColumns+` FROM replay_jobs ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list replay jobs: %w", err)
	}
	return store.AppendRows([]ReplayJob{}, rows, store.ByValue(scanJob))
}

// ClaimReplayJob takes the oldest queued job, or a running one whose runner
// stopped beating for staleAfter, and marks it running. id > 0 claims that
// job only. It returns ErrNotFound when there is nothing to claim.
func ClaimReplayJob(ctx context.Context, db store.DB, id int64, staleAfter time.Duration) (*ReplayJob, error) {
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
func AdvanceReplayJob(ctx context.Context, db store.DB, id int64, p JobProgress) (cancel bool, err error) {
	err = db.QueryRow(ctx, `
		UPDATE replay_jobs SET processed = processed + $2, replayed = replayed + $3, refused = refused + $4,
		       errors = errors + $5, signaled = signaled + $6, last_inbox_id = greatest(last_inbox_id, $7),
		       last_error = coalesce(NULLIF($8, ''), last_error), signal_error = coalesce(NULLIF($9, ''), signal_error),
		       updated_at = now()
		 WHERE id = $1 AND status = 'running'
		RETURNING cancel_requested`, id, p.Processed, p.Replayed, p.Refused, p.Errors, p.Signaled, p.LastInboxID,
		p.LastError, p.SignalError).Scan(&cancel)
	if err != nil {
		return false, fmt.Errorf("advance replay job %d: %w", id, store.Interpret(err))
	}
	return cancel, nil
}

// FinishReplayJob ends a running job with status (done, cancelled, failed).
func FinishReplayJob(ctx context.Context, db store.DB, id int64, status, lastErr string) (*ReplayJob, error) {
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
func CancelReplayJob(ctx context.Context, db store.DB, id int64) (*ReplayJob, error) {
	j, err := scanJob(db.QueryRow(ctx, `
		UPDATE replay_jobs SET cancel_requested = true, updated_at = CASE WHEN status = 'queued' THEN now() ELSE updated_at END,
		       status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
		       finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
		 WHERE id = $1 AND status IN ('queued', 'running')
		RETURNING `+jobColumns, id))
	if errors.Is(err, fault.ErrNotFound) {
		return GetReplayJob(ctx, db, id)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel replay job %d: %w", id, err)
	}
	return j, nil
}
