package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// The sweeper holds back on Temporal's backlog (starter.Resources.Backlog):
// on the real server, doorbells rung on a queue no worker polls are
// counted as waiting workflow tasks, and an empty queue counts none.
func TestBacklogCountsTheDoorbellsNoWorkerHasTaken(t *testing.T) {
	t.Parallel()
	c := testenv.TemporalClient(t, testenv.TemporalAddress(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := &starter.Resources{Client: c, TaskQueue: "hookinbox-test-backlog-" + fmt.Sprint(time.Now().UnixNano())}
	n, err := rs.Backlog(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	for i := range 5 {
		r := keys.Resource{Provider: "stripe", Account: "acct_backlog", Environment: "test", Kind: "invoice", ID: fmt.Sprintf("in_%d_%s", i, rs.TaskQueue)}
		require.NoError(t, rs.Ring(ctx, r, keys.SignalEvent, "evt"))
	}
	eventually(t, time.Minute, "the five first workflow tasks to be counted", func() bool {
		n, err = rs.Backlog(ctx)
		return err == nil && n >= 5
	})
	require.EqualValues(t, 5, n)
}
