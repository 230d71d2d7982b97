package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// RedactedOutboxPayload replaces the payload of a redacted outbox row (the
// column is NOT NULL).
const RedactedOutboxPayload = `{"redacted": true}`

// RedactSentOutboxPayloads replaces, in at most limit outbox rows sent more
// than olderThan ago, the payload (email address, subject, feedback text)
// with RedactedOutboxPayload and an email destination with RedactedEmail.
// The operation key, class, kind, status, remote id, attempts and times
// stay, so the intent is still deduplicated by its operation key. Unsent
// rows (pending, uncertain, held for review, failed) are not touched: they
// may still be sent or reviewed.
func RedactSentOutboxPayloads(ctx context.Context, db store.DB, olderThan time.Duration, limit int) (int64, error) {
	if olderThan <= 0 || limit <= 0 {
		return 0, fmt.Errorf("redact outbox payloads: window %s and batch %d must be positive", olderThan, limit)
	}
	tag, err := db.Exec(ctx, `
		WITH batch AS (
			SELECT id FROM outbox
			 WHERE status = 'sent' AND payload <> $3::jsonb
			   AND coalesce(sent_at, created_at) < now() - make_interval(secs => $1)
			 ORDER BY id
			 LIMIT $2
			 FOR UPDATE SKIP LOCKED
		)
		UPDATE outbox o SET payload = $3::jsonb,
		       destination = CASE WHEN o.destination LIKE '%@%' THEN $4 ELSE o.destination END
		  FROM batch WHERE o.id = batch.id`,
		olderThan.Seconds(), limit, RedactedOutboxPayload, records.RedactedEmail)
	if err != nil {
		return 0, fmt.Errorf("redact outbox payloads: %w", err)
	}
	return tag.RowsAffected(), nil
}
