package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// This file holds the retention statements (SPEC R21). Each touches at most
// limit rows, so a large backlog is worked off in short statements that
// never hold many locks; rows locked by someone else are skipped and taken
// by a later batch. Business records (credit_grants, feedback_alerts,
// subscription_projection) are never touched here; of the outbox, only the
// payload and email destination of rows sent long ago are redacted, never
// the row (operation key, status, remote id and times stay).

// RedactInboxPayloads sets the payload of at most limit settled (done,
// ignored, failed or exhausted) inbox rows received and processed more than
// olderThan ago to NULL; the keys and the body hash stay, so a redelivery is
// still a duplicate, and the lineage trigger records the redaction. Failed
// and exhausted rows are redacted too (security issue #14): a payload is not
// kept forever just because its event failed; a later replay of such a row
// is warned that its payload is gone. Pending rows keep their payload. It
// returns how many rows it redacted.
func RedactInboxPayloads(ctx context.Context, db store.DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("redact payloads: window %s and batch %d must be positive", olderThan, limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT id FROM webhook_inbox
			 WHERE status IN ('done', 'ignored', 'failed', 'exhausted') AND payload IS NOT NULL
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

// RedactResolvedQuarantinePayloads sets the payload of at most limit
// quarantine entries resolved more than olderThan ago to NULL. The entry
// (endpoint, event id, body hash, reason, resolution, times) stays, so the
// sender's retry of the same bad delivery still meets its entry, and its
// lineage is kept when the entry is deleted later. Open entries keep their
// payload: re-admitting one needs it. Whether a payload is left is read from
// inbox_quarantine_payload_size, so the worker never needs to read a
// quarantined body.
func RedactResolvedQuarantinePayloads(ctx context.Context, db store.DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("redact quarantine payloads: window %s and batch %d must be positive", olderThan, limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT q.id FROM inbox_quarantine q
			  JOIN inbox_quarantine_payload_size s ON s.id = q.id
			 WHERE q.resolved_at IS NOT NULL AND q.resolved_at < now() - make_interval(secs => $1)
			   AND s.payload_bytes IS NOT NULL
			 ORDER BY q.resolved_at
			 LIMIT $2
			 FOR UPDATE OF q SKIP LOCKED
		)
		UPDATE inbox_quarantine q SET payload = NULL FROM batch WHERE q.id = batch.id`,
		olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("redact quarantine payloads: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteExpiredInboxRows deletes at most limit finished (done or ignored)
// inbox rows received and processed more than olderThan ago. olderThan below
// MinDedupRetention is refused: a key still inside a sender's retry window
// is never removed. Failed, exhausted and pending rows are never deleted.
func DeleteExpiredInboxRows(ctx context.Context, db store.DB, olderThan time.Duration, limit int) (int64, error) {
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
func DeleteResolvedQuarantine(ctx context.Context, db store.DB, olderThan time.Duration, limit int) (int64, error) {
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
