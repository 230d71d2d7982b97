package inbox_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// agedRow inserts an inbox row with status, received and processed age ago.
func agedRow(t *testing.T, s *store.Store, id, status string, age time.Duration) keys.Event {
	t.Helper()
	ctx := context.Background()
	body := fmt.Sprintf(`{"id":%q}`, id)
	sum := sha256.Sum256([]byte(body))
	k := keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id}
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_" + id, Payload: []byte(body), BodySHA256: sum[:]})
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET status = $2, received_at = now() - make_interval(secs => $3),
		processed_at = CASE WHEN $2 <> 'pending' THEN now() - make_interval(secs => $3) END WHERE event_id = $1`,
		id, status, age.Seconds())
	require.NoError(t, err)
	return k
}

func payloadOf(t *testing.T, s *store.Store, k keys.Event) (exists, redacted bool) {
	t.Helper()
	d, err := inbox.InspectInboxEvent(context.Background(), s.Pool, k, false)
	if err != nil {
		return false, false
	}
	return true, d.PayloadRedacted
}

func TestRetentionRedactsOldSettledPayloadsAndKeepsKeysInsideTheWindow(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	const day = 24 * time.Hour
	recentDone := agedRow(t, s, "evt_recent_done", keys.StatusDone, time.Hour)
	oldDone := agedRow(t, s, "evt_old_done", keys.StatusDone, 3*day)
	oldIgnored := agedRow(t, s, "evt_old_ignored", keys.StatusIgnored, 6*day)
	edge := agedRow(t, s, "evt_edge", keys.StatusDone, 7*day-time.Minute)
	expired := agedRow(t, s, "evt_expired", keys.StatusDone, 8*day)
	oldFailed := agedRow(t, s, "evt_old_failed", keys.StatusFailed, 40*day)
	oldExhausted := agedRow(t, s, "evt_old_exhausted", keys.StatusExhausted, 40*day)
	oldPending := agedRow(t, s, "evt_old_pending", keys.StatusPending, 40*day)
	// Received long ago but only just processed (a replay): not yet old.
	replayed := agedRow(t, s, "evt_replayed", keys.StatusDone, 9*day)
	_, err := s.Pool.Exec(ctx, `UPDATE webhook_inbox SET processed_at = now() WHERE event_id = 'evt_replayed'`)
	require.NoError(t, err)

	// Redact payloads of finished rows older than 2 days, two per statement.
	var redacted int64
	for {
		n, err := inbox.RedactInboxPayloads(ctx, s.Pool, 2*day, 2)
		require.NoError(t, err)
		redacted += n
		if n < 2 {
			break
		}
	}
	require.EqualValues(t, 6, redacted, "old done, old ignored, edge, expired, old failed, old exhausted")
	for _, tt := range []struct {
		k        keys.Event
		redacted bool
	}{
		{recentDone, false}, {oldDone, true}, {oldIgnored, true}, {edge, true}, {expired, true},
		{oldFailed, true}, {oldExhausted, true}, {oldPending, false}, {replayed, false},
	} {
		exists, red := payloadOf(t, s, tt.k)
		require.True(t, exists, tt.k.EventID)
		require.Equal(t, tt.redacted, red, tt.k.EventID)
	}
	// The lineage trigger recorded each redaction, failed and exhausted rows included.
	var lineage int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM event_lineage
		WHERE source = 'inbox' AND payload_redacted_at IS NOT NULL AND deleted_at IS NULL`).Scan(&lineage))
	require.Equal(t, 6, lineage)
	var failedStatus string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status FROM event_lineage WHERE event_id = 'evt_old_exhausted'`).Scan(&failedStatus))
	require.Equal(t, keys.StatusExhausted, failedStatus)
	// A sender's redelivery of a redacted failed event (same body) is still a duplicate.
	failedBody := `{"id":"evt_old_failed"}`
	failedSum := sha256.Sum256([]byte(failedBody))
	dup, err := inbox.InsertInboxEvent(ctx, s.Pool, &inbox.InboxEvent{Key: oldFailed, EndpointSlug: "ep", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_evt_old_failed", Payload: []byte(failedBody), BodySHA256: failedSum[:]})
	require.NoError(t, err)
	require.Equal(t, inbox.Duplicate, dup.Outcome, "redelivery of a redacted event")
	var status string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status FROM webhook_inbox WHERE event_id = 'evt_old_failed'`).Scan(&status))
	require.Equal(t, keys.StatusFailed, status, "the row is left as it was")

	var hashes int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox WHERE body_sha256 IS NOT NULL`).Scan(&hashes))
	require.Equal(t, 9, hashes, "the body hash stays")

	// Deleting inside the dedup floor is refused.
	_, err = inbox.DeleteExpiredInboxRows(ctx, s.Pool, keys.MinDedupRetention-time.Second, 10)
	require.Error(t, err)

	// Delete finished rows past 7 days, one per statement.
	var deleted int64
	for {
		n, err := inbox.DeleteExpiredInboxRows(ctx, s.Pool, 7*day, 1)
		require.NoError(t, err)
		deleted += n
		if n < 1 {
			break
		}
	}
	require.EqualValues(t, 1, deleted)
	for _, tt := range []struct {
		k    keys.Event
		kept bool
	}{
		{recentDone, true}, {oldDone, true}, {oldIgnored, true}, {edge, true}, {expired, false},
		{oldFailed, true}, {oldExhausted, true}, {oldPending, true}, {replayed, true},
	} {
		exists, _ := payloadOf(t, s, tt.k)
		require.Equal(t, tt.kept, exists, tt.k.EventID)
	}

	// A key still inside the window deduplicates a sender's retry.
	again, err := inbox.InsertInboxEvent(ctx, s.Pool, &inbox.InboxEvent{Key: edge, EndpointSlug: "ep", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_evt_edge", BodySHA256: []byte("x")})
	require.NoError(t, err)
	require.NotEqual(t, inbox.Inserted, again.Outcome)
}

func TestRetentionDeletesOnlyQuarantineEntriesResolvedLongAgo(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	for i, q := range []struct {
		resolvedAgo time.Duration // 0: open
		receivedAgo time.Duration
	}{{0, 90 * 24 * time.Hour}, {time.Hour, 90 * 24 * time.Hour}, {40 * 24 * time.Hour, 50 * 24 * time.Hour}} {
		sum := sha256.Sum256([]byte{byte(i)})
		_, err := inbox.InsertQuarantine(ctx, s.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe",
			EventID: fmt.Sprintf("evt_q%d", i), Reason: inbox.ReasonMalformed, BodySHA256: sum[:]})
		require.NoError(t, err)
		_, err = s.Pool.Exec(ctx, `UPDATE inbox_quarantine SET received_at = now() - make_interval(secs => $2),
			resolved_at = CASE WHEN $3 > 0 THEN now() - make_interval(secs => $3) END, resolved_by = 'op'
			WHERE event_id = $1`, fmt.Sprintf("evt_q%d", i), q.receivedAgo.Seconds(), q.resolvedAgo.Seconds())
		require.NoError(t, err)
	}
	n, err := inbox.DeleteResolvedQuarantine(ctx, s.Pool, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var left []string
	rows, err := s.Pool.Query(ctx, `SELECT event_id FROM inbox_quarantine ORDER BY event_id`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"evt_q0", "evt_q1"}, left, "open and recently resolved entries stay")
}

// quarantined inserts a quarantine entry received receivedAgo ago and
// resolved resolvedAgo ago (0: open) and returns its event id.
func quarantined(t *testing.T, s *store.Store, id string, receivedAgo, resolvedAgo time.Duration) string {
	t.Helper()
	ctx := context.Background()
	body := []byte("not json " + id)
	sum := sha256.Sum256(body)
	_, err := inbox.InsertQuarantine(ctx, s.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe",
		EventID: id, Reason: inbox.ReasonMalformed, Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE inbox_quarantine SET received_at = now() - make_interval(secs => $2),
		resolved_at = CASE WHEN $3 > 0 THEN now() - make_interval(secs => $3) END,
		resolved_by = CASE WHEN $3 > 0 THEN 'op' END, resolution = CASE WHEN $3 > 0 THEN 'discarded' END
		WHERE event_id = $1`, id, receivedAgo.Seconds(), resolvedAgo.Seconds())
	require.NoError(t, err)
	return id
}

func TestRetentionRedactsResolvedQuarantinePayloadsAfterTheWindow(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const day = 24 * time.Hour
	open := quarantined(t, s, "evt_q_open", 90*day, 0)
	recent := quarantined(t, s, "evt_q_recent", 90*day, time.Hour)
	old1 := quarantined(t, s, "evt_q_old1", 50*day, 40*day)
	old2 := quarantined(t, s, "evt_q_old2", 50*day, 35*day)

	var redacted int64
	for {
		n, err := inbox.RedactResolvedQuarantinePayloads(ctx, s.Pool, 30*day, 1)
		require.NoError(t, err)
		redacted += n
		if n < 1 {
			break
		}
	}
	require.EqualValues(t, 2, redacted)
	for id, want := range map[string]bool{open: false, recent: false, old1: true, old2: true} {
		var isNull, hashKept bool
		var reason, resolution string
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT payload IS NULL, body_sha256 IS NOT NULL, reason, coalesce(resolution, '')
			FROM inbox_quarantine WHERE event_id = $1`, id).Scan(&isNull, &hashKept, &reason, &resolution))
		require.Equal(t, want, isNull, id)
		require.True(t, hashKept, id)
		require.Equal(t, inbox.ReasonMalformed, reason, id)
	}
	n, err := inbox.RedactResolvedQuarantinePayloads(ctx, s.Pool, 30*day, 10)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to redact")

	// The sender retrying the same bad delivery still meets its entry.
	body := []byte("not json " + old1)
	sum := sha256.Sum256(body)
	fresh, err := inbox.InsertQuarantine(ctx, s.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe",
		EventID: old1, Reason: inbox.ReasonMalformed, Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	require.False(t, fresh, "a redelivery of a redacted quarantined event is a duplicate")

	// Deleting the entry later still keeps its lineage.
	_, err = inbox.DeleteResolvedQuarantine(ctx, s.Pool, 30*day, 10)
	require.NoError(t, err)
	var lineage int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM event_lineage WHERE source = 'quarantine'
		AND event_id IN ($1, $2) AND body_sha256 IS NOT NULL`, old1, old2).Scan(&lineage))
	require.Equal(t, 2, lineage)
}

func TestRetentionRedactsSentOutboxPayloadsAfterTheWindow(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const day = 24 * time.Hour
	type row struct {
		key, status, kind, dest string
		sentAgo                 time.Duration
	}
	rows := []row{
		{"op:old_email", "sent", "email", "alice@example.com", 40 * day},
		{"op:old_hook", "sent", "webhook", "https://team.example/hook", 40 * day},
		{"op:recent", "sent", "email", "bob@example.com", time.Hour},
		{"op:pending", "pending", "email", "carol@example.com", 40 * day},
		{"op:held", "held_for_review", "email", "dave@example.com", 40 * day},
		{"op:failed", "failed", "email", "erin@example.com", 40 * day},
	}
	for _, r := range rows {
		require.NoError(t, s.Tx(ctx, func(tx pgx.Tx) error {
			_, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{OperationKey: r.key, Class: "feedback_alert", Kind: r.kind,
				Destination: r.dest, WorkspaceID: "ws_1", ResourceKey: "r",
				Payload: map[string]string{"to": r.dest, "subject": "Feedback", "message": "the app crashed, call me"}})
			return err
		}))
		_, err := s.Pool.Exec(ctx, `UPDATE outbox SET status = $2, remote_id = 'msg_' || id,
			created_at = now() - make_interval(secs => $3) - interval '1 minute',
			sent_at = CASE WHEN $2 = 'sent' THEN now() - make_interval(secs => $3) END WHERE operation_key = $1`,
			r.key, r.status, r.sentAgo.Seconds())
		require.NoError(t, err)
	}

	var redacted int64
	for {
		n, err := outbox.RedactSentOutboxPayloads(ctx, s.Pool, 30*day, 1)
		require.NoError(t, err)
		redacted += n
		if n < 1 {
			break
		}
	}
	require.EqualValues(t, 2, redacted, "the two rows sent long ago")
	for _, r := range rows {
		var payload, dest, status, remote string
		var sent bool
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT payload::text, destination, status, coalesce(remote_id, ''), sent_at IS NOT NULL
			FROM outbox WHERE operation_key = $1`, r.key).Scan(&payload, &dest, &status, &remote, &sent))
		require.Equal(t, r.status, status, r.key)
		require.NotEmpty(t, remote, r.key)
		require.Equal(t, r.status == "sent", sent, r.key)
		if r.status == "sent" && r.sentAgo > 30*day {
			require.JSONEq(t, outbox.RedactedOutboxPayload, payload, r.key)
			if r.kind == "email" {
				require.Equal(t, records.RedactedEmail, dest, r.key)
			} else {
				require.Equal(t, r.dest, dest, r.key+": a webhook URL is not personal data")
			}
			continue
		}
		require.Contains(t, payload, "call me", r.key)
		require.Equal(t, r.dest, dest, r.key)
	}

	// The intent is still deduplicated by its operation key.
	require.NoError(t, s.Tx(ctx, func(tx pgx.Tx) error {
		_, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{OperationKey: "op:old_email", Class: "feedback_alert", Kind: "email",
			Destination: "alice@example.com", WorkspaceID: "ws_1", ResourceKey: "r", Payload: map[string]string{"to": "alice@example.com"}})
		return err
	}))
	var count int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE operation_key = 'op:old_email'`).Scan(&count))
	require.Equal(t, 1, count)
	var payload string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT payload::text FROM outbox WHERE operation_key = 'op:old_email'`).Scan(&payload))
	require.JSONEq(t, outbox.RedactedOutboxPayload, payload, "the redelivered intent did not bring the payload back")
}
