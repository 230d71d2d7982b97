package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
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

// floorAttempts bounds the tries of one SignalWithStart (a server shedding
// load answers resource-exhausted; the next try waits).
const floorAttempts = 10

// runFloor signals-with-start one FloorWorkflow per resource from
// s.Senders goroutines and measures from the first call to the last
// close (the runs' close times, read back from Temporal).
func runFloor(ctx context.Context, env *Env, l Load, s E2ESuite) (E2EResult, error) {
	res := E2EResult{Load: l.Name, Resources: l.Resources, PerResource: l.PerResource, Events: l.Events(), Design: DesignFloor,
		Engine: env.Engine(), Kind: l.kind(), LoadAverage: LoadAverage()}
	if l.PerResource != 1 {
		return res, fmt.Errorf("%s runs loads of one event per resource only", DesignFloor)
	}
	taddr, err := env.Temporal(ctx)
	if err != nil {
		return res, err
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: taddr, Logger: tlog.NewStructuredLogger(benchLogger())})
	if err != nil {
		return res, err
	}
	defer c.Close()
	if err := starter.EnsureSearchAttributes(ctx, c, "default"); err != nil {
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
			for {
				i := next.Add(1) - 1
				if i >= int64(l.Resources) {
					return
				}
				r := resourceOf(l.kind(), "in_"+run+"_"+strconv.FormatInt(i, 10))
				if err := floorRing(ctx, c, rs, r); err != nil {
					errs <- err
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
	res.AckPerSec = float64(l.Resources) / sent.Seconds()
	last, err := waitClosed(ctx, c, queue, l.Resources)
	if err != nil {
		mem.Stop()
		return res, err
	}
	res.MachineBusy, res.TemporalCores = cpu.Stop()
	res.PeakHeapMiB, res.PeakRSSMiB = mem.Stop()
	res.TemporalMsPerEvent = float64(processCPU(env.TemporalPID())-cpu.p0) * 10 / float64(l.Resources)
	if s.Drain > 0 {
		// Every run has closed: nothing is left to drain.
		res.Drained, res.DrainLimitSeconds, res.TemporalMsPerEventDrained = true, s.Drain.Seconds(), res.TemporalMsPerEvent
	}
	res.Seconds = last.Sub(first).Seconds()
	res.EventsPerSec = float64(l.Resources) / res.Seconds
	res.SignalsPerEvent = 1

	byType := map[string]int{}
	total, sample := 0, min(l.Resources, max(1, s.HistorySample))
	step := max(1, l.Resources/sample)
	for i := 0; i < l.Resources && res.SampledWorkflows < sample; i += step {
		r := resourceOf(l.kind(), "in_"+run+"_"+strconv.Itoa(i))
		n, err := historyOf(ctx, c, keys.ResourceWorkflowID(r), byType)
		if err != nil {
			return res, err
		}
		total += n
		res.SampledWorkflows++
	}
	res.HistoryPerEvent = float64(total) / float64(res.SampledWorkflows)
	res.HistoryByType = map[string]float64{}
	for k, v := range byType {
		res.HistoryByType[k] = float64(v) / float64(res.SampledWorkflows)
	}
	return res, nil
}

// floorRing rings r's FloorWorkflow with the resource workflow's options.
func floorRing(ctx context.Context, c client.Client, rs *starter.Resources, r keys.Resource) error {
	var err error
	for attempt := range floorAttempts {
		_, err = c.SignalWithStartWorkflow(ctx, keys.ResourceWorkflowID(r), keys.SignalEvent, "evt", rs.StartOptions(r),
			FloorWorkflow, keys.ResourceInput{Resource: r})
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("signal-with-start %s: %w", keys.ResourceWorkflowID(r), err)
}

// waitClosed waits until n workflows on queue have completed and returns
// the latest close time among them.
func waitClosed(ctx context.Context, c client.Client, queue string, n int) (time.Time, error) {
	q := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Completed'", queue)
	for {
		resp, err := c.CountWorkflow(ctx, countQuery(q))
		if err != nil {
			return time.Time{}, err
		}
		if resp.GetCount() >= int64(n) {
			break
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %d closed workflows, %d so far: %w", n, resp.GetCount(), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	var last time.Time
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, listQuery(q, token))
		if err != nil {
			return time.Time{}, err
		}
		for _, e := range page.GetExecutions() {
			if t := e.GetCloseTime().AsTime(); t.After(last) {
				last = t
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return last, nil
		}
	}
}

func countQuery(q string) *workflowservice.CountWorkflowExecutionsRequest {
	return &workflowservice.CountWorkflowExecutionsRequest{Query: q}
}

func listQuery(q string, token []byte) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1000, NextPageToken: token}
}
