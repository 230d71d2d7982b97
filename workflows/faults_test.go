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
	f.env.OnActivity(a.LoadPending, mock.Anything, mock.Anything).Return(first, nil).Once()
	f.env.OnActivity(a.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_last"), nil).Once()
	f.env.OnActivity(a.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.env.OnActivity(a.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			if in.Key.EventID == ids[pendingBatch/2] {
				f.env.SignalWorkflow(keys.SignalReconcile, "mid-pass request")
			}
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	var reasons []string
	f.env.OnActivity(a.ReconcileResource, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileInput) (activities.ReconcileOutcome, error) {
			reasons = append(reasons, in.Reasons...)
			return activities.ReconcileOutcome{Note: "in sync"}, nil
		}).Maybe()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute}))
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"mid-pass request"}, reasons)
}
