package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// OutboxRow is one outbound effect.
type OutboxRow struct {
	ID            int64           `json:"id"`
	OperationKey  string          `json:"operation_key"`
	Class         string          `json:"class"`
	Kind          string          `json:"kind"`
	Destination   string          `json:"destination"`
	WorkspaceID   string          `json:"workspace_id"`
	ResourceKey   string          `json:"resource_key"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Status        string          `json:"status"`
	Policy        string          `json:"policy,omitempty"`
	Attempts      int             `json:"attempts"`
	LastError     string          `json:"last_error,omitempty"`
	NextAttemptAt time.Time       `json:"next_attempt_at"`
	RemoteID      string          `json:"remote_id,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	SentAt        *time.Time      `json:"sent_at,omitempty"`
}

const outboxColumns = `id, operation_key, class, kind, destination, workspace_id, resource_key, payload, status,
	coalesce(policy, ''), attempts, coalesce(last_error, ''), next_attempt_at, coalesce(remote_id, ''), created_at, sent_at`

func scanOutbox(row pgx.Row) (*OutboxRow, error) {
	var o OutboxRow
	err := row.Scan(&o.ID, &o.OperationKey, &o.Class, &o.Kind, &o.Destination, &o.WorkspaceID, &o.ResourceKey,
		&o.Payload, &o.Status, &o.Policy, &o.Attempts, &o.LastError, &o.NextAttemptAt, &o.RemoteID, &o.CreatedAt, &o.SentAt)
	if err != nil {
		return nil, store.Interpret(err)
	}
	return &o, nil
}

// GetOutbox reads one outbox row.
func GetOutbox(ctx context.Context, db store.DB, id int64) (*OutboxRow, error) {
	o, err := scanOutbox(db.QueryRow(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("outbox %d: %w", id, err)
	}
	return o, nil
}

// noPayload is outboxColumns without the payload (a role that may not
// read it: the operator, the console).
var noPayload = strings.Replace(outboxColumns, "resource_key, payload,", "resource_key, NULL::jsonb,", 1)

// GetOutboxRow reads one outbox row without its payload.
func GetOutboxRow(ctx context.Context, db store.DB, id int64) (*OutboxRow, error) {
	o, err := scanOutbox(db.QueryRow(ctx, `SELECT `+noPayload+` FROM outbox WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("outbox %d: %w", id, err)
	}
	return o, nil
}

// GetOutboxPayload reads one outbox row's payload (a role that may read
// it: the worker, a member of RolePayloadReader).
func GetOutboxPayload(ctx context.Context, db store.DB, id int64) (json.RawMessage, error) {
	var p json.RawMessage
	if err := db.QueryRow(ctx, `SELECT payload FROM outbox WHERE id = $1`, id).Scan(&p); err != nil {
		return nil, fmt.Errorf("outbox %d payload: %w", id, store.Interpret(err))
	}
	return p, nil
}

// ListOutbox lists outbox rows, newest first, optionally of one status,
// without their payloads (the operator's role may read outbox.payload only as
// a member of RolePayloadReader; GetOutbox reads one row whole).
func ListOutbox(ctx context.Context, db store.DB, status string, limit int) ([]*OutboxRow, error) {
	rows, err := db.Query(ctx, `SELECT `+noPayload+` FROM outbox WHERE ($1 = '' OR status = $1) ORDER BY id DESC LIMIT $2`, status, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*OutboxRow
	for rows.Next() {
		o, err := scanOutbox(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// BeginOutboxAttempt records, before sending, that an attempt is being made
// under policy: the row becomes uncertain (if the process dies now, the next
// attempt knows the destination may have acted) and counts the attempt. It
// reports false when the row is no longer sendable.
func BeginOutboxAttempt(ctx context.Context, db store.DB, id int64, policy string, next time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE outbox SET status = 'uncertain', attempts = attempts + 1, policy = $2, next_attempt_at = $3
		 WHERE id = $1 AND status IN ('pending', 'uncertain')`, id, policy, next)
	if err != nil {
		return false, fmt.Errorf("begin outbox attempt %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// MarkOutboxSent records delivery.
func MarkOutboxSent(ctx context.Context, db store.DB, id int64, remoteID, note string) error {
	_, err := db.Exec(ctx, `
		UPDATE outbox SET status = 'sent', sent_at = now(), remote_id = NULLIF($2, ''), last_error = NULLIF($3, '')
		 WHERE id = $1 AND status IN ('pending', 'uncertain', 'held_for_review')`, id, remoteID, note)
	if err != nil {
		return fmt.Errorf("mark outbox %d sent: %w", id, err)
	}
	return nil
}

// OutboxAttemptFailed records a failed attempt: status pending when the
// destination certainly did not act, uncertain when it may have.
func OutboxAttemptFailed(ctx context.Context, db store.DB, id int64, status, lastErr string, next time.Time) error {
	if status != keys.OutboxPending && status != keys.OutboxUncertain {
		return fmt.Errorf("outbox %d: attempt failure status %q", id, status)
	}
	_, err := db.Exec(ctx, `
		UPDATE outbox SET status = $2, last_error = $3, next_attempt_at = $4
		 WHERE id = $1 AND status IN ('pending', 'uncertain')`, id, status, lastErr, next)
	if err != nil {
		return fmt.Errorf("record outbox %d failure: %w", id, err)
	}
	return nil
}

// StopOutbox ends automatic sending of a row: failed, or held for an
// operator's review. It reports whether the row changed.
func StopOutbox(ctx context.Context, db store.DB, id int64, status, note string) (bool, error) {
	if status != keys.OutboxFailed && status != keys.OutboxHeld {
		return false, fmt.Errorf("outbox %d: stop status %q", id, status)
	}
	tag, err := db.Exec(ctx, `
		UPDATE outbox SET status = $2, last_error = $3 WHERE id = $1 AND status IN ('pending', 'uncertain')`, id, status, note)
	if err != nil {
		return false, fmt.Errorf("stop outbox %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseOutbox puts a held or failed row back to be sent: an operator
// decided (after checking the destination) that sending again is right. It
// goes out as a plain pending row, not through the uncertain policy again.
func ReleaseOutbox(ctx context.Context, db store.DB, id int64) (*OutboxRow, error) {
	o, err := scanOutbox(db.QueryRow(ctx, `
		UPDATE outbox SET status = 'pending', next_attempt_at = now(), policy = 'released_by_operator'
		 WHERE id = $1 AND status IN ('held_for_review', 'failed')
		RETURNING `+noPayload, id))
	if err != nil {
		return nil, fmt.Errorf("release outbox %d (only held_for_review or failed rows): %w", id, err)
	}
	return o, nil
}

// UnsentOutbox lists a resource's outbox rows due to be (re)sent.
func UnsentOutbox(ctx context.Context, db store.DB, resourceKey string, limit int) ([]int64, error) {
	rows, err := db.Query(ctx, `
		SELECT id FROM outbox
		 WHERE resource_key = $1 AND status IN ('pending', 'uncertain') AND next_attempt_at <= now()
		 ORDER BY id LIMIT $2`, resourceKey, limit)
	if err != nil {
		return nil, fmt.Errorf("unsent outbox of %s: %w", resourceKey, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// StaleOutboxResources lists resources with outbox rows unsent for longer
// than olderThan (their workflow was terminated or reset) and pushes those
// rows' next_attempt_at to now: the sweeper rings each at most once per
// olderThan.
func StaleOutboxResources(ctx context.Context, db store.DB, olderThan time.Duration, limit int) ([]string, error) {
	rows, err := db.Query(ctx, `
		WITH stale AS (
			SELECT resource_key, min(next_attempt_at) AS oldest FROM outbox
			 WHERE status IN ('pending', 'uncertain') AND next_attempt_at < now() - make_interval(secs => $1)
			 GROUP BY resource_key ORDER BY oldest LIMIT $2
		), bumped AS (
			UPDATE outbox o SET next_attempt_at = now() FROM stale s
			 WHERE o.resource_key = s.resource_key AND o.status IN ('pending', 'uncertain')
			   AND o.next_attempt_at < now() - make_interval(secs => $1)
		)
		SELECT resource_key FROM stale ORDER BY oldest`, olderThan.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("stale outbox: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
