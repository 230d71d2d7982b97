package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// Replaying a week-old event makes it pending now: the oldest-pending age
// measures how long it has been pending (pending_since), not how old it is.
func TestOldestPendingAgeCountsFromWhenARowBecamePending(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	old := insertOpsRow(t, s, ctx, opsRow{provider: "stripe", account: "acct_1", id: "evt_old", endpoint: "e", kind: "invoice",
		resource: "in_1", status: keys.StatusDone, age: 7 * 24 * time.Hour})
	b, err := inbox.ReadBacklog(ctx, s.Pool)
	require.NoError(t, err)
	require.Zero(t, b.Pending)

	changed, err := inbox.ResetInboxEvent(ctx, s.Pool, old, keys.StatusDone)
	require.NoError(t, err)
	require.True(t, changed)
	b, err = inbox.ReadBacklog(ctx, s.Pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.Pending)
	require.Less(t, b.OldestPendingAge, time.Minute, "the replay is not a week-old backlog")

	// A row that has been pending a long time still shows its age.
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET pending_since = now() - interval '2 hours' WHERE event_id = 'evt_old'`)
	require.NoError(t, err)
	b, err = inbox.ReadBacklog(ctx, s.Pool)
	require.NoError(t, err)
	require.InDelta(t, (2 * time.Hour).Seconds(), b.OldestPendingAge.Seconds(), 60)
}
