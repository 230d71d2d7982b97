package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/lab/bench"
)

var acts *activities.ResourceActivities

// The naive design is only a fair baseline if it does what it claims: one
// HandleEvent activity per signal, in signal order, then completes when idle.
func TestNaiveWorkflowRunsOneActivityPerSignal(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(bench.NaiveWorkflow)
	var handled []string
	env.OnActivity(acts.HandleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.HandleInput) (activities.HandleResult, error) {
			handled = append(handled, in.Key.EventID)
			return activities.HandleResult{Status: keys.StatusDone}, nil
		})
	r := keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "subscription", ID: "sub_1"}
	for i, id := range []string{"evt_1", "evt_2", "evt_3"} {
		k := keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: id}
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(keys.SignalEvent, k.String()) }, time.Duration(i)*time.Millisecond)
	}
	// A later signal, after a pause shorter than the idle timeout.
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(keys.SignalEvent, keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: "evt_4"}.String())
	}, 30*time.Second)
	env.ExecuteWorkflow(bench.NaiveWorkflow, bench.NaiveInput{Resource: r, Settings: keys.Settings{IdleTimeout: time.Minute}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"evt_1", "evt_2", "evt_3", "evt_4"}, handled)
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var l bench.Latencies
	for i := 1; i <= 100; i++ {
		l.Add(time.Duration(i) * time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, l.Percentile(50))
	require.Equal(t, 99*time.Millisecond, l.Percentile(99))
	require.Equal(t, 100*time.Millisecond, l.Percentile(100))
	require.Equal(t, 100, l.Count())
}
