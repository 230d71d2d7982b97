package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/testenv"
)

// agedRow inserts an inbox row with status, received and processed age ago.
func agedRow(t *testing.T, s *store.Store, id, status string, age time.Duration) keys.Event {
	t.Helper()
	ctx := context.Background()
	body := fmt.Sprintf(`{"id":%q}`, id)
	sum := sha256.Sum256([]byte(body))
	k := keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id}
	_, err := store.InsertInboxEvent(ctx, s.Pool, &store.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws_1",
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
	d, err := store.InspectInboxEvent(context.Background(), s.Pool, k, false)
	if err != nil {
		return false, false
	}
	return true, d.PayloadRedacted
}

func TestRetentionRedactsOldFinishedPayloadsAndKeepsKeysInsideTheWindow(t *testing.T) {
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
		n, err := store.RedactInboxPayloads(ctx, s.Pool, 2*day, 2)
		require.NoError(t, err)
		redacted += n
		if n < 2 {
			break
		}
	}
	require.EqualValues(t, 4, redacted, "old done, old ignored, edge, expired")
	for _, tt := range []struct {
		k        keys.Event
		redacted bool
	}{
		{recentDone, false}, {oldDone, true}, {oldIgnored, true}, {edge, true}, {expired, true},
		{oldFailed, false}, {oldExhausted, false}, {oldPending, false}, {replayed, false},
	} {
		exists, red := payloadOf(t, s, tt.k)
		require.True(t, exists, tt.k.EventID)
		require.Equal(t, tt.redacted, red, tt.k.EventID)
	}
	var hashes int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox WHERE body_sha256 IS NOT NULL`).Scan(&hashes))
	require.Equal(t, 9, hashes, "the body hash stays")

	// Deleting inside the dedup floor is refused.
	_, err = store.DeleteExpiredInboxRows(ctx, s.Pool, keys.MinDedupRetention-time.Second, 10)
	require.Error(t, err)

	// Delete finished rows past 7 days, one per statement.
	var deleted int64
	for {
		n, err := store.DeleteExpiredInboxRows(ctx, s.Pool, 7*day, 1)
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
	again, err := store.InsertInboxEvent(ctx, s.Pool, &store.InboxEvent{Key: edge, EndpointSlug: "ep", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_evt_edge", BodySHA256: []byte("x")})
	require.NoError(t, err)
	require.NotEqual(t, store.Inserted, again.Outcome)
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
		_, err := store.InsertQuarantine(ctx, s.Pool, &store.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe",
			EventID: fmt.Sprintf("evt_q%d", i), Reason: store.ReasonMalformed, BodySHA256: sum[:]})
		require.NoError(t, err)
		_, err = s.Pool.Exec(ctx, `UPDATE inbox_quarantine SET received_at = now() - make_interval(secs => $2),
			resolved_at = CASE WHEN $3 > 0 THEN now() - make_interval(secs => $3) END, resolved_by = 'op'
			WHERE event_id = $1`, fmt.Sprintf("evt_q%d", i), q.receivedAgo.Seconds(), q.resolvedAgo.Seconds())
		require.NoError(t, err)
	}
	n, err := store.DeleteResolvedQuarantine(ctx, s.Pool, 30*24*time.Hour, 100)
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
