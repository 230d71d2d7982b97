package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/starter"
)

// DesignFloor is not a design but the server's limit for any design with
// one workflow per resource: FloorWorkflow, started by SignalWithStart
// with the resource workflow's options (ID, search attributes, static
// summary), takes its signal and completes in its first workflow task. No
// intake, no database, no activity, no marker: what is left is what the
// Temporal server does for every resource that gets its own workflow and
// then closes (create the run, its start and close visibility records,
// dispatch and record one workflow task, close). Loads of one event per
// resource only.
const DesignFloor = "temporal-floor"

// FloorWorkflow completes as soon as it has taken its doorbell.
func FloorWorkflow(ctx workflow.Context, _ keys.ResourceInput) error {
	var key string
	workflow.GetSignalChannel(ctx, keys.SignalEvent).ReceiveAsync(&key)
	return nil
}

// runFloor signals-with-start one FloorWorkflow per resource from
// s.Senders goroutines and measures from the first call to the last
// close (the runs' close times, read back from Temporal).
func runFloor(ctx context.Context, env *Env, l Load, s E2ESuite) (E2EResult, error) {
	res := newResult(env, DesignFloor, l)
	if l.PerResource != 1 {
		return res, fmt.Errorf("%s runs loads of one event per resource only", DesignFloor)
	}
	taddr, err := env.Temporal(ctx)
	if err != nil {
		return res, err
	}
	// The product's client (its data converter and interceptors), as the
	// designs' intake and worker dial it.
	cfg := benchConfig("", taddr)
	c, err := starter.Dial(ctx, cfg, benchLogger())
	if err != nil {
		return res, err
	}
	defer c.Close()
	if err := starter.EnsureSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		return res, err
	}
	run := runID()
	queue := "bench-floor-" + run
	// The product's resource worker options (worker.New), FloorWorkflow
	// in place of ResourceWorkflow.
	w := worker.New(c, queue, worker.Options{MaxConcurrentActivityExecutionSize: 64, MaxConcurrentLocalActivityExecutionSize: 64})
	w.RegisterWorkflow(FloorWorkflow)
	if err := w.Start(); err != nil {
		return res, err
	}
	defer w.Stop()
	rs := &starter.Resources{Client: c, TaskQueue: queue}

	evs := plan(run, l, nil)
	mem := StartMemory()
	cpu := StartCPU(env.TemporalPID())
	first := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, max(1, s.Senders))
	for range max(1, s.Senders) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(evs)); i = next.Add(1) - 1 {
				// One call each: the SDK's client retries what the server
				// sheds (resource exhausted, unavailable) itself.
				r := resourceOf(l.kind(), evs[i].subID)
				if _, err := c.SignalWithStartWorkflow(ctx, keys.ResourceWorkflowID(r), keys.SignalEvent, evs[i].eventID,
					rs.StartOptions(r), FloorWorkflow, keys.ResourceInput{Resource: r}); err != nil {
					errs <- fmt.Errorf("signal-with-start %s: %w", keys.ResourceWorkflowID(r), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	sent := time.Since(first)
	close(errs)
	if err := <-errs; err != nil {
		mem.Stop()
		return res, err
	}
	res.AckPerSec = float64(len(evs)) / sent.Seconds()
	last, pollMs, err := waitClosed(ctx, c, queue, len(evs))
	if err != nil {
		mem.Stop()
		return res, err
	}
	res.EndPollMs = pollMs
	res.MachineBusy, res.TemporalCores = cpu.Stop()
	res.PeakHeapMiB, res.PeakRSSMiB = mem.Stop()
	res.TemporalMsPerEvent = cpu.ProcessMs() / float64(len(evs))
	if s.Drain > 0 {
		// Every run has closed: nothing is left to drain.
		res.Drained, res.DrainLimitSeconds, res.TemporalMsPerEventDrained = true, s.Drain.Seconds(), res.TemporalMsPerEvent
	}
	res.Seconds = last.Sub(first).Seconds()
	res.EventsPerSec = float64(len(evs)) / res.Seconds
	res.SignalsPerEvent = 1

	hist, err := countHistory(ctx, c, DesignFloor, evs, l, s.HistorySample)
	if err != nil {
		return res, fmt.Errorf("read histories: %w", err)
	}
	res.HistoryPerEvent, res.HistoryByType, res.SampledWorkflows = hist.perEvent, hist.byType, hist.workflows
	return res, nil
}

// waitClosed waits until n workflows on queue have completed and returns
// the latest close time among them, and how long its last count took the
// server to answer (ms).
func waitClosed(ctx context.Context, c client.Client, queue string, n int) (time.Time, float64, error) {
	q := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Completed'", queue)
	var took time.Duration
	for {
		t0 := time.Now()
		resp, err := c.CountWorkflow(ctx, countQuery(q))
		took = time.Since(t0)
		if err != nil {
			return time.Time{}, 0, err
		}
		if resp.GetCount() >= int64(n) {
			break
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, fmt.Errorf("waiting for %d closed workflows, %d so far: %w", n, resp.GetCount(), ctx.Err())
		case <-time.After(pollEvery(n)):
		}
	}
	var last time.Time
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, listQuery(q, token))
		if err != nil {
			return time.Time{}, 0, err
		}
		for _, e := range page.GetExecutions() {
			if t := e.GetCloseTime().AsTime(); t.After(last) {
				last = t
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return last, float64(took.Microseconds()) / 1000, nil
		}
	}
}

// pollEvery is how often the end of a run of n events is polled: often
// for a short run, rarely for a long one, so that the polling (on the
// floor a count over the run's closed workflows, which the dev server
// answers on its one SQLite connection; for a design a count over its
// inbox) does not take a share of the servers that grows with the run.
// The end is read from the close times and the rows' own times, not from
// when a poll noticed it, so the interval changes no figure.
func pollEvery(n int) time.Duration {
	return min(5*time.Second, max(250*time.Millisecond, time.Duration(n)*50*time.Microsecond))
}

func countQuery(q string) *workflowservice.CountWorkflowExecutionsRequest {
	return &workflowservice.CountWorkflowExecutionsRequest{Query: q}
}

func listQuery(q string, token []byte) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1000, NextPageToken: token}
}
