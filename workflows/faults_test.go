package workflows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

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

// awayError is what the activities return when the database is away.
func awayError(ctx context.Context) error {
	return temporal.NewApplicationErrorWithOptions("dial tcp 127.0.0.1:5432: connect: connection refused",
		activities.ErrDatabaseUnavailable, temporal.ApplicationErrorOptions{Details: []any{activity.GetInfo(ctx).Attempt}})
}

// An event whose handling finds the database away waits for it: however
// long the outage, it is handled afterwards and never marked exhausted.
func TestAnEventWaitsOutTheDatabaseWithoutSpendingItsBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	done := false
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.LoadPendingInput) (keys.PendingBatch, error) {
			if done {
				return keys.PendingBatch{}, nil
			}
			return pending("evt_1"), nil
		})
	away := 0
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			if away < 12 {
				away++
				return activities.HandleResult{}, awayError(ctx)
			}
			done = true
			f.handled = append(f.handled, in.Key.EventID)
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, RetryBudget: 3}))
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Empty(t, f.marked, "never marked exhausted")
	require.Equal(t, []string{"evt_1"}, f.handled)
	var out ResourceResult
	require.NoError(t, f.env.GetWorkflowResult(&out))
	require.Equal(t, 1, out.Handled, "the waits are not handled events")
}

// An outbox send that finds the database away waits for it; its attempts
// then do not count, and the budget still ends a send that keeps failing
// for another reason.
func TestAnOutboxSendWaitsOutTheDatabaseWithoutSpendingItsBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(activities.HandleResult{Status: keys.StatusDone, Outbox: []int64{7}}, nil)
	calls, failed := 0, 0
	f.env.OnActivity(onResource.SendOutbox, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.SendInput) (activities.SendResult, error) {
			calls++
			if calls > 2 && calls <= 14 {
				return activities.SendResult{}, awayError(ctx)
			}
			failed++
			return activities.SendResult{}, temporal.NewApplicationError("smtp: 451 try later", "OutboundError")
		})
	var fails []activities.FailOutboxInput
	f.env.OnActivity(onResource.FailOutbox, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FailOutboxInput) error {
			fails = append(fails, in)
			return nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, OutboxBudget: 4}))
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, 4, failed, "the budget counts the attempts that reached the destination, not the waits")
	require.Len(t, fails, 1)
	require.Contains(t, fails[0].LastError, "451")
}
