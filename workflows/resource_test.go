package workflows

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

var res = keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "subscription", ID: "sub_1"}

func pending(ids ...string) keys.PendingBatch {
	var b keys.PendingBatch
	for i, id := range ids {
		b.Events = append(b.Events, keys.PendingEvent{ID: int64(i + 1), EventType: "customer.subscription.updated",
			Key: keys.Event{Provider: res.Provider, Account: res.Account, Environment: res.Environment, EventID: id}})
	}
	return b
}

type fixture struct {
	env     *testsuite.TestWorkflowEnvironment
	handled []string
	marked  []activities.MarkUnhandledInput
}

func setup(t *testing.T) *fixture {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	f := &fixture{env: s.NewTestWorkflowEnvironment()}
	f.env.RegisterWorkflow(ResourceWorkflow)
	f.env.OnActivity(onResource.MarkUnhandled, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.MarkUnhandledInput) error {
			f.marked = append(f.marked, in)
			return nil
		}).Maybe()
	return f
}

// handleOK makes HandleEvent succeed, recording the order of calls.
func (f *fixture) handleOK() {
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			f.handled = append(f.handled, in.Key.EventID)
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
}

func input(s keys.Settings) keys.ResourceInput { return keys.ResourceInput{Resource: res, Settings: s} }

func TestHandlesPendingRowsInOrderThenCompletesWhenIdle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1", "evt_2", "evt_3"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.handleOK()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute}))
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_1", "evt_2", "evt_3"}, f.handled)
	var out ResourceResult
	require.NoError(t, f.env.GetWorkflowResult(&out))
	require.Equal(t, 3, out.Handled)
}

// The input's Handling decides how HandleEvent runs; an input from before
// the field (empty) takes local handling through its version marker.
func TestHandlingModeDecidesLocalOrRegularActivity(t *testing.T) {
	t.Parallel()
	for handling, wantLocal := range map[string]bool{keys.HandlingLocal: true, keys.HandlingActivity: false, "": true} {
		t.Run("handling="+handling, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1", "evt_2"), nil).Once()
			f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
			f.handleOK()
			var local, regular int
			f.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []interface{}) {
				if info.ActivityType.Name == "HandleEvent" {
					local++
				}
			})
			f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == "HandleEvent" {
					regular++
				}
			})
			f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, Handling: handling}))
			require.NoError(t, f.env.GetWorkflowError())
			require.Equal(t, []string{"evt_1", "evt_2"}, f.handled)
			if wantLocal {
				require.Equal(t, [2]int{2, 0}, [2]int{local, regular}, "local, regular HandleEvent runs")
			} else {
				require.Equal(t, [2]int{0, 2}, [2]int{local, regular}, "local, regular HandleEvent runs")
			}
		})
	}
}

func TestDoorbellDuringIdleTriggersAnotherPass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_2"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.handleOK()
	f.env.RegisterDelayedCallback(func() { f.env.SignalWorkflow(keys.SignalEvent, "stripe/acct_1/test/evt_2") }, 30*time.Second)
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_1", "evt_2"}, f.handled)
}

func TestRetryableFailuresExhaustTheBudgetThenMoveOn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	batch := pending("evt_bad", "evt_next")
	batch.Events[0].Attempts = 1 // one attempt made by an earlier run
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(batch, nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	calls := 0
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			if in.Key.EventID == "evt_bad" {
				calls++
				return activities.HandleResult{}, temporal.NewApplicationError("provider unavailable", "HandlerError")
			}
			f.handled = append(f.handled, in.Key.EventID)
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, RetryBudget: 4,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, 3, calls, "budget 4 minus the attempt already made")
	require.Len(t, f.marked, 1)
	require.Equal(t, keys.StatusExhausted, f.marked[0].Status)
	require.Contains(t, f.marked[0].LastError, "provider unavailable")
	require.Equal(t, []string{"evt_next"}, f.handled, "the next event is handled after the exhausted one")
}

func TestValidationFailureIsRecordedFailedAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_invalid"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	calls := 0
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ activities.HandleInput) (activities.HandleResult, error) {
			calls++
			return activities.HandleResult{}, temporal.NewNonRetryableApplicationError("invoice belongs to another workspace", "InvalidEvent", errors.New("x"))
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, 1, calls)
	require.Len(t, f.marked, 1)
	require.Equal(t, keys.StatusFailed, f.marked[0].Status)
}

func TestContinuesAsNewAfterMaxEventsCarryingState(t *testing.T) {
	t.Parallel()
	f := setup(t)
	batch := pending("e1", "e2", "e3", "e4", "e5")
	batch.More = true
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(batch, nil)
	f.handleOK()
	f.env.ExecuteWorkflow(ResourceWorkflow, keys.ResourceInput{Resource: res, Settings: keys.Settings{MaxEventsPerRun: 2},
		Carry: keys.Carry{Handled: 10, Runs: 4}})
	require.True(t, f.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, f.env.GetWorkflowError(), &can)
	require.Equal(t, []string{"e1", "e2"}, f.handled, "stops at the run's budget")
	var next keys.ResourceInput
	require.NoError(t, converterFrom(t).FromPayloads(can.Input, &next))
	require.Equal(t, res, next.Resource)
	require.Equal(t, 12, next.Carry.Handled)
	require.Equal(t, 5, next.Carry.Runs)
	require.Equal(t, []string{
		keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: "e1"}.String(),
		keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: "e2"}.String(),
	}, next.Carry.Recent)
}

func TestWaitsForTheNextDueRetryBeforeIdling(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var due time.Time
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ activities.LoadPendingInput) (keys.PendingBatch, error) {
			due = f.env.Now().Add(5 * time.Minute)
			return keys.PendingBatch{NextDue: &due}, nil
		}).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_later"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.handleOK()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Hour}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_later"}, f.handled)
}

func TestRowsThatStayDueAreNotLoopedOn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// The same row keeps coming back due (its bookkeeping failed): it is
	// handled once per pass, and the next look waits, not a hot loop.
	loads := 0
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ activities.LoadPendingInput) (keys.PendingBatch, error) {
			loads++
			if loads > 4 {
				return keys.PendingBatch{}, nil
			}
			b := pending("evt_stuck")
			b.More = true
			return b, nil
		})
	f.handleOK()
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Minute, RetryInitial: time.Second}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_stuck", "evt_stuck"}, f.handled)
	require.Equal(t, 5, loads)
}

func TestReconcileRequestsCollapseIntoOneActivityBeforeEvents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var order []string
	var reasons []string
	f.env.OnActivity(onResource.ReconcileResource, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileInput) (activities.ReconcileOutcome, error) {
			order = append(order, "reconcile")
			reasons = append(reasons, in.Reasons...)
			return activities.ReconcileOutcome{Note: "in sync"}, nil
		})
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_1"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			order = append(order, in.Key.EventID)
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.RegisterDelayedCallback(func() {
		f.env.SignalWorkflow(keys.SignalReconcile, "schedule run 7")
		f.env.SignalWorkflow(keys.SignalReconcile, "operator: ticket 42")
		f.env.SignalWorkflow(keys.SignalEvent, "evt_1")
	}, time.Minute)
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: 5 * time.Minute}))
	require.NoError(t, f.env.GetWorkflowError())
	// Every request is served, the first before the event signalled with it;
	// requests waiting together share one activity.
	require.Equal(t, []string{"schedule run 7", "operator: ticket 42"}, reasons)
	require.Equal(t, "reconcile", order[0])
	require.Contains(t, order, "evt_1")
	require.LessOrEqual(t, len(order), 3)
}

// A row left pending because the worker has no handler for its type comes
// back after its RetryAt: the workflow wakes for it then (not in a loop,
// and not only after idling out and a sweep).
func TestARowLeftPendingWithoutAHandlerIsLookedAtAgainWhenDue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_nh"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(pending("evt_nh"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	var at []time.Time
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			f.handled = append(f.handled, in.Key.EventID)
			at = append(at, f.env.Now())
			if len(at) == 1 {
				due := f.env.Now().Add(3 * time.Minute)
				return activities.HandleResult{Status: keys.StatusPending, Note: "no handler", RetryAt: &due}, nil
			}
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Hour}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_nh", "evt_nh"}, f.handled)
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 3*time.Minute)
	require.Less(t, at[1].Sub(at[0]), 4*time.Minute, "woken when due, not after idling an hour")
	require.Empty(t, f.marked, "neither failed nor exhausted")
}

// Clients start the resource workflow by name (keys.ResourceWorkflowType),
// so the intake and the console never link this package: the name must be
// the one the worker registers, the function's.
func TestResourceWorkflowTypeIsTheRegisteredName(t *testing.T) {
	t.Parallel()
	name := runtime.FuncForPC(reflect.ValueOf(ResourceWorkflow).Pointer()).Name()
	require.Equal(t, keys.ResourceWorkflowType, name[strings.LastIndex(name, ".")+1:])
	require.Equal(t, keys.SearchAttributeExhaustedEvents, SAExhaustedEvents.GetName())
}

// A credit note handled before its invoice's grant waits; the grant's
// commit wakes it (HandleResult.Woke), and the run loads again before it
// completes: the credit note is done in the run that granted the invoice,
// not at a sweeper's ring after the run is gone (issue 36).
func TestARowWokenByAnEffectRunsInTheRunThatWokeIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	invoice := keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}
	batch := func(ids ...string) keys.PendingBatch {
		var b keys.PendingBatch
		for i, id := range ids {
			b.Events = append(b.Events, keys.PendingEvent{ID: int64(i + 1),
				Key: keys.Event{Provider: invoice.Provider, Account: invoice.Account, Environment: invoice.Environment, EventID: id}})
		}
		return b
	}
	// The credit note, its void and the backfilled invoice.paid, in id order.
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(batch("evt_cn", "evt_void", "evt_paid"), nil).Once()
	// What the grant's commit made due again.
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(batch("evt_cn", "evt_void"), nil).Once()
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	granted := false
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			f.handled = append(f.handled, in.Key.EventID)
			switch {
			case in.Key.EventID == "evt_paid":
				granted = true
				return activities.HandleResult{Status: keys.StatusDone, Note: "granted 100 credits", Woke: true}, nil
			case !granted:
				return activities.HandleResult{Status: keys.StatusPending, Note: "waiting for the invoice's grant"}, nil
			}
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, keys.ResourceInput{Resource: invoice, Settings: keys.Settings{Idle: keys.IdleComplete}})
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_cn", "evt_void", "evt_paid", "evt_cn", "evt_void"}, f.handled,
		"the woken rows ran again after the grant, in this run")
	var out ResourceResult
	require.NoError(t, f.env.GetWorkflowResult(&out))
	require.Equal(t, 5, out.Handled)
	f.env.AssertExpectations(t)
}

// A row whose handler met a provider's spent rate limit stops the pass: no
// later row of the resource passes it (each resource's order holds), no
// attempt is counted, and the workflow comes back to it when the limit
// resets (issue 33; the coalescing soak found a later issues event
// forwarded before a rate-limited earlier one when the row was deferred).
func TestARateLimitedRowIsNotPassedAndIsTriedAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	f := setup(t)
	batch := func(ids ...string) keys.PendingBatch {
		var b keys.PendingBatch
		for i, id := range ids {
			b.Events = append(b.Events, keys.PendingEvent{ID: int64(i + 1),
				Key: keys.Event{Provider: "github", Account: "7", Environment: "live", EventID: id}})
		}
		return b
	}
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(batch("evt_a", "evt_b"), nil).Times(2)
	f.env.OnActivity(onResource.LoadPending, mock.Anything, mock.Anything).Return(keys.PendingBatch{}, nil)
	var at []time.Time
	limited := false
	f.env.OnActivity(onResource.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			f.handled = append(f.handled, in.Key.EventID)
			at = append(at, f.env.Now())
			if in.Key.EventID == "evt_a" && !limited {
				limited = true
				return activities.HandleResult{}, temporal.NewApplicationErrorWithOptions("rate limited", activities.ErrRateLimited,
					temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{2 * time.Minute}})
			}
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	f.env.ExecuteWorkflow(ResourceWorkflow, input(keys.Settings{IdleTimeout: time.Hour}))
	require.NoError(t, f.env.GetWorkflowError())
	require.Equal(t, []string{"evt_a", "evt_a", "evt_b"}, f.handled, "evt_b never before evt_a")
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 2*time.Minute, "back when the limit resets")
	require.Less(t, at[1].Sub(at[0]), 3*time.Minute, "not after idling an hour")
	require.Empty(t, f.marked, "neither failed nor exhausted")
}
