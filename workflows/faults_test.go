package workflows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// A reconcile request that arrives while a long pass (more rows than one
// load) is under way is drained by the pass's own look at the channels;
// nothing else arrives after it. The request must still be served before
// the workflow completes on idle.
func TestAReconcileRequestDrainedInsideAPassIsServed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ids := make([]string, pendingBatch)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt_%03d", i)
	}
	first := pending(ids...)
	first.More = true
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(first, nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_last"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			if in.Key.EventID == ids[pendingBatch/2] {
				f.env.SignalWorkflow(keys.SignalReconcile, "mid-pass request")
			}
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	var reasons []string
	f.env.OnActivity(onResource.ReconcileResource, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileInput) (activities.ReconcileOutcome, error) {
			reasons = append(reasons, in.Reasons...)
			return activities.ReconcileOutcome{Note: "in sync"}, nil
		}).Maybe()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute}))
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"mid-pass request"}, reasons)
}

// PostgreSQL away for longer than a local activity's start-to-close: the
// bookkeeping local activities (load the pending rows, record an unhandled
// one) keep retrying with backoff, and the workflow neither fails nor loses
// its carry.
func TestAResourceWorkflowRidesOutADatabaseOutage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	outage := 40 // failed loads: minutes of backoff at the capped interval
	loads := 0
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.LoadPendingInput) (keys.PendingBatch, error) {
			loads++
			switch {
			case loads <= outage:
				return keys.PendingBatch{}, fmt.Errorf("load pending: dial tcp: connection refused")
			case loads == outage+1:
				return pending("evt_1"), nil
			}
			return keys.PendingBatch{}, nil
		})
	f.handleOK()
	start := f.env.Now()
	f.env.ExecuteWorkflow(ResourceWorkflow, keys.ResourceInput{Resource: res,
		Settings: keys.Settings{IdleTimeout: time.Minute}, Carry: keys.Carry{Handled: 7, Runs: 2}})
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_1"}, f.handled)
	require.Greater(t, f.env.Now().Sub(start), 5*time.Minute, "the outage lasted minutes of workflow time")
	var out ResourceResult
	require.NoError(t, f.env.GetWorkflowResult(&out))
	require.Equal(t, 8, out.Handled, "the carry survived the outage")
}
