package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// A run whose idle policy is IdleComplete completes as soon as its pass
// leaves nothing to do: no idle timer. Lingering runs (the policy empty,
// as in inputs from before it, or IdleLinger) wait IdleTimeout.
func TestIdlePolicyCompletesADrainedRunAtOnceOrLingers(t *testing.T) {
	t.Parallel()
	for idle, wantLinger := range map[string]bool{keys.IdleComplete: false, keys.IdleLinger: true, "": true} {
		t.Run("idle="+idle, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
			f.handleOK()
			start := f.env.Now()
			f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Hour, Idle: idle}))
			require.True(t, f.env.IsWorkflowCompleted())
			require.NoError(t, f.env.GetWorkflowError())
			require.Equal(t, []string{"evt_1"}, f.handled)
			lingered := f.env.Now().Sub(start) >= time.Hour
			require.Equal(t, wantLinger, lingered, "waited the idle timeout")
		})
	}
}

// A drained IdleComplete run still serves a retry that is due later: it
// completes only with nothing due.
func TestIdleCompleteWaitsForADueRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	due := f.env.Now().Add(5 * time.Minute)
	b := pending("evt_1")
	b.Events = nil
	b.NextDue = &due
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(b, nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.handleOK()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Hour, Idle: keys.IdleComplete}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_1"}, f.handled)
}

// With Send = SendLocalFirst the first attempt at an outbox row is a local
// activity; when it fails, the rest of the budget runs as regular
// activities. Without it (inputs from before), every attempt is regular.
func TestOutboxSendLocalFirstThenRegularActivities(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		send          string
		failFirst     bool
		local, remote int
	}{
		{"local first, delivered", keys.SendLocalFirst, false, 1, 0},
		{"local first, failed then regular", keys.SendLocalFirst, true, 1, 1},
		{"regular only (old inputs)", "", false, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
			f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(activities.HandleResult{Status: keys.StatusDone, Outbox: []int64{7}}, nil)
			calls := 0
			f.env.OnActivity(onResource.SendOutbox, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.SendInput) (activities.SendResult, error) {
					calls++
					if tt.failFirst && calls == 1 {
						return activities.SendResult{}, temporal.NewApplicationError("smtp: 451 try later", "OutboundError")
					}
					return activities.SendResult{Status: keys.OutboxSent}, nil
				})
			var local, remote int
			f.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []interface{}) {
				if info.ActivityType.Name == "SendOutbox" {
					local++
				}
			})
			f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == "SendOutbox" {
					remote++
				}
			})
			f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, Idle: keys.IdleComplete, Send: tt.send}))
			require.True(t, f.env.IsWorkflowCompleted())
			require.NoError(t, f.env.GetWorkflowError())
			require.Equal(t, [2]int{tt.local, tt.remote}, [2]int{local, remote}, "local, regular SendOutbox runs")
		})
	}
}

// A local first attempt that fails for good is not retried: the row is
// marked failed at once.
func TestOutboxSendLocalFirstPermanentFailureIsFailedAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(activities.HandleResult{Status: keys.StatusDone, Outbox: []int64{7}}, nil)
	calls := 0
	f.env.OnActivity(onResource.SendOutbox, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.SendInput) (activities.SendResult, error) {
			calls++
			return activities.SendResult{}, temporal.NewNonRetryableApplicationError("bad address", "InvalidOutbox", nil)
		})
	var fails []activities.FailOutboxInput
	f.env.OnActivity(onResource.FailOutbox, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FailOutboxInput) error {
			fails = append(fails, in)
			return nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, Send: keys.SendLocalFirst}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, 1, calls)
	require.Len(t, fails, 1)
	require.Contains(t, fails[0].LastError, "bad address")
}
