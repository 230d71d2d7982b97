package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// This file holds the retention statements (SPEC R21). Each touches at most
// limit rows, so a large backlog is worked off in short statements that
// never hold many locks; rows locked by someone else are skipped and taken
// by a later batch. Business records (credit_grants, feedback_alerts,
// subscription_projection, outbox) are never touched here.

// RedactInboxPayloads sets the payload of at most limit finished (done or
// ignored) inbox rows received and processed more than olderThan ago to NULL;
// the body hash stays. Failed, exhausted and pending rows keep their payload
// (they may be replayed). It returns how many rows it redacted.
func RedactInboxPayloads(ctx context.Context, db DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("redact payloads: window %s and batch %d must be positive", olderThan, limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT id FROM webhook_inbox
			 WHERE status IN ('done', 'ignored') AND payload IS NOT NULL
			   AND received_at < now() - make_interval(secs => $1)
			   AND coalesce(processed_at, received_at) < now() - make_interval(secs => $1)
			 ORDER BY received_at
			 LIMIT $2
			 FOR UPDATE SKIP LOCKED
		)
		UPDATE webhook_inbox w SET payload = NULL FROM batch WHERE w.id = batch.id`,
		olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("redact payloads: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteExpiredInboxRows deletes at most limit finished (done or ignored)
// inbox rows received and processed more than olderThan ago. olderThan below
// MinDedupRetention is refused: a key still inside a sender's retry window
// is never removed. Failed, exhausted and pending rows are never deleted.
func DeleteExpiredInboxRows(ctx context.Context, db DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan < keys.MinDedupRetention {
		return 0, fmt.Errorf("delete inbox rows: %s is inside the dedup window (at least %s)", olderThan, keys.MinDedupRetention)
	}
	if limit <= 0 {
		return 0, fmt.Errorf("delete inbox rows: batch %d must be positive", limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT id FROM webhook_inbox
			 WHERE status IN ('done', 'ignored')
			   AND received_at < now() - make_interval(secs => $1)
			   AND coalesce(processed_at, received_at) < now() - make_interval(secs => $1)
			 ORDER BY received_at
			 LIMIT $2
			 FOR UPDATE SKIP LOCKED
		)
		DELETE FROM webhook_inbox w USING batch WHERE w.id = batch.id`,
		olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete inbox rows: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteResolvedQuarantine deletes at most limit quarantine entries resolved
// more than olderThan ago. Open entries are never deleted.
func DeleteResolvedQuarantine(ctx context.Context, db DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("delete quarantine: window %s and batch %d must be positive", olderThan, limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT id FROM inbox_quarantine
			 WHERE resolved_at IS NOT NULL AND resolved_at < now() - make_interval(secs => $1)
			 ORDER BY resolved_at
			 LIMIT $2
			 FOR UPDATE SKIP LOCKED
		)
		DELETE FROM inbox_quarantine q USING batch WHERE q.id = batch.id`,
		olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete quarantine: %w", err)
	}
	return tag.RowsAffected(), nil
}
