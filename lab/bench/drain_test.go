package bench

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/lab/testenv"
)

// sleeper stays open for d, as a lingering resource workflow does.
func sleeper(ctx workflow.Context, d time.Duration) error {
	return workflow.Sleep(ctx, d)
}

// drain waits for every workflow of the run's task queue to close, and
// says so only when they did: a workflow still open when the limit runs
// out leaves the run undrained, and one that closes in time is waited for.
func TestDrainWaitsForTheRunsWorkflowsToClose(t *testing.T) {
	srv := testenv.NewTemporal(t)
	c := testenv.TemporalClient(t, srv.Address)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	poll := drainPoll
	drainPoll = 200 * time.Millisecond
	t.Cleanup(func() { drainPoll = poll })

	queue := "drain-" + runID()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(sleeper)
	require.NoError(t, w.Start())
	defer w.Stop()
	start := func(id string, d time.Duration) {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, sleeper, d)
		require.NoError(t, err)
	}
	// Another queue's workflow is not the run's: it never holds the drain.
	other := "drain-other-" + runID()
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: other, TaskQueue: other}, sleeper, time.Hour)
	require.NoError(t, err)
	defer func() { _ = c.TerminateWorkflow(context.Background(), other, "", "test over") }()

	start("long", time.Hour)
	waitRunning(t, ctx, c, queue, 1)
	d, err := drain(ctx, c, queue, StartCPU(os.Getpid()), time.Second, 100*time.Millisecond, io.Discard)
	require.NoError(t, err)
	require.False(t, d.closed, "a workflow is still open")
	require.GreaterOrEqual(t, d.seconds, 1.0)
	require.NoError(t, c.TerminateWorkflow(ctx, "long", "", "test"))

	start("short", 3*time.Second)
	waitRunning(t, ctx, c, queue, 1)
	d, err = drain(ctx, c, queue, StartCPU(os.Getpid()), time.Minute, 100*time.Millisecond, io.Discard)
	require.NoError(t, err)
	require.True(t, d.closed)
	require.Greater(t, d.seconds, 1.0, "waited for the short workflow to close")
	require.GreaterOrEqual(t, d.ms, 0.0)
}

// waitRunning waits until visibility shows n running workflows on queue.
func waitRunning(t *testing.T, ctx context.Context, c client.Client, queue string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := c.CountWorkflow(ctx, countRunning(queue))
		return err == nil && resp.GetCount() == n
	}, time.Minute, 100*time.Millisecond)
}

// The floor starts one FloorWorkflow per resource with the resource
// workflow's ID and search attributes, waits for every one to close, and
// measures up to the last close: each history is the six events of a run
// that takes its signal and completes in its first workflow task.
func TestFloorClosesOneWorkflowPerResourceWithTheResourceWorkflowsOptions(t *testing.T) {
	srv := testenv.NewTemporal(t)
	env := &Env{taddr: srv.Address, o: EnvOptions{TemporalAddress: srv.Address}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := Load{Name: "floor", Resources: 30, PerResource: 1, Kind: KindInvoice}
	r, err := RunOnce(ctx, env, DesignFloor, l, E2ESuite{Senders: 4, HistorySample: 5, Drain: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 30, r.Events)
	require.Greater(t, r.EventsPerSec, 0.0)
	require.Greater(t, r.Seconds, 0.0)
	require.Equal(t, 5, r.SampledWorkflows)
	require.InDelta(t, 6.0, r.HistoryPerEvent, 0.01, "%v", r.HistoryByType)
	require.Equal(t, 1.0, r.HistoryByType["WorkflowExecutionCompleted"])
	require.True(t, r.Drained)

	c := testenv.TemporalClient(t, srv.Address)
	resp, err := c.CountWorkflow(ctx, countQuery(`ResourceKind = 'invoice' AND ExecutionStatus = 'Completed'`))
	require.NoError(t, err)
	require.EqualValues(t, 30, resp.GetCount(), "the runs carry the resource workflow's search attributes")

	_, err = RunOnce(ctx, env, DesignFloor, Load{Name: "bursts", Resources: 2, PerResource: 3}, E2ESuite{})
	require.ErrorContains(t, err, "one event per resource")
}
