package bench

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/workflows"
)

// NaiveInput starts a NaiveWorkflow.
type NaiveInput struct {
	Resource keys.Resource `json:"resource"`
	Settings keys.Settings `json:"settings"`
}

// a names the activities (method values on a nil receiver).
var a *activities.ResourceActivities

// NaiveWorkflow is the design hookinbox is compared with: one workflow per
// resource (so events of a resource are still serialized), one
// SignalWithStart per event carrying its key, and one regular activity per
// signal (HandleEvent, the same business transaction hookinbox runs). No
// coalescing, no reading of the inbox: the signal is the work item. It
// waits on an idle timer only when no signal is buffered, drains before
// completing, and retries like hookinbox. It is deliberately the shape most
// Temporal tutorials suggest, not a straw man.
func NaiveWorkflow(ctx workflow.Context, in NaiveInput) error {
	ch := workflow.GetSignalChannel(ctx, keys.SignalEvent)
	idle := in.Settings.IdleTimeout
	if idle <= 0 {
		idle = workflows.DefaultIdleTimeout
	}
	timeout := in.Settings.ActivityTimeout
	if timeout <= 0 {
		timeout = workflows.DefaultActivityTimeout
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Minute, MaximumAttempts: 10},
	})
	for handled := 0; ; handled++ {
		var key string
		if !ch.ReceiveAsync(&key) {
			timerCtx, cancel := workflow.WithCancel(ctx)
			timer := workflow.NewTimer(timerCtx, idle)
			got := false
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &key); got = true })
			sel.AddFuture(timer, func(workflow.Future) {})
			sel.Select(ctx)
			cancel()
			if !got && !ch.ReceiveAsync(&key) {
				return nil // idle, nothing buffered
			}
		}
		k, err := keys.ParseEvent(key)
		if err != nil {
			workflow.GetLogger(ctx).Warn("bad event key", "key", key)
			continue
		}
		var res activities.HandleResult
		if err := workflow.ExecuteActivity(actx, a.HandleEvent, activities.HandleInput{Key: k}).Get(ctx, &res); err != nil {
			workflow.GetLogger(ctx).Warn("event not handled", "event_key", key, "error", err.Error())
		}
		for _, id := range res.Outbox { // an email: one more activity
			if err := workflow.ExecuteActivity(actx, a.SendOutbox, activities.SendInput{ID: id}).Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("outbox row not sent", "outbox_id", id, "error", err.Error())
			}
		}
		if handled > 0 && handled%workflows.DefaultMaxEventsPerRun == 0 {
			// Keep the history bounded like hookinbox does; carry nothing
			// but what is still buffered (re-signalled to the new run by
			// nobody: drain and handle before continuing).
			for ch.ReceiveAsync(&key) {
				if k, err := keys.ParseEvent(key); err == nil {
					_ = workflow.ExecuteActivity(actx, a.HandleEvent, activities.HandleInput{Key: k}).Get(ctx, &res)
				}
			}
			return workflow.NewContinueAsNewError(ctx, NaiveWorkflow, in)
		}
	}
}

// NaiveWorkflowID is the naive design's workflow id of a resource.
func NaiveWorkflowID(r keys.Resource) string { return "naive/" + r.String() }

// naiveHandoff sends one SignalWithStart per committed event, never
// coalescing, from the same number of goroutines as hookinbox's hand-off
// (so the acknowledgement does not wait on Temporal either).
type naiveHandoff struct {
	c        client.Client
	queue    string
	settings keys.Settings
	workers  int
	timeout  time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	cond    *sync.Cond
	pending []naiveItem
	closed  bool
	sent    int64
	failed  int64
}

type naiveItem struct {
	r keys.Resource
	e keys.Event
}

func newNaiveHandoff(c client.Client, queue string, s keys.Settings, workers int, timeout time.Duration, log *slog.Logger) *naiveHandoff {
	h := &naiveHandoff{c: c, queue: queue, settings: s, workers: max(1, workers), timeout: timeout, log: log}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// Notify queues a SignalWithStart for the event (unbounded: the naive
// design has no coalescing and no sweeper to fall back on).
func (h *naiveHandoff) Notify(r keys.Resource, e keys.Event) {
	h.mu.Lock()
	h.pending = append(h.pending, naiveItem{r, e})
	h.mu.Unlock()
	h.cond.Signal()
}

// Run sends until ctx ends.
func (h *naiveHandoff) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		h.cond.Broadcast()
	}()
	var wg sync.WaitGroup
	for range h.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				h.mu.Lock()
				for len(h.pending) == 0 && !h.closed {
					h.cond.Wait()
				}
				if h.closed {
					h.mu.Unlock()
					return
				}
				it := h.pending[0]
				h.pending = h.pending[1:]
				h.mu.Unlock()
				h.send(ctx, it)
			}
		}()
	}
	wg.Wait()
}

func (h *naiveHandoff) send(ctx context.Context, it naiveItem) {
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, h.timeout)
		_, err := h.c.SignalWithStartWorkflow(sctx, NaiveWorkflowID(it.r), keys.SignalEvent, it.e.String(),
			client.StartWorkflowOptions{ID: NaiveWorkflowID(it.r), TaskQueue: h.queue}, NaiveWorkflow,
			NaiveInput{Resource: it.r, Settings: h.settings})
		cancel()
		h.mu.Lock()
		if err == nil {
			h.sent++
		} else {
			h.failed++
		}
		h.mu.Unlock()
		if err == nil || ctx.Err() != nil || attempt >= 20 {
			if err != nil {
				h.log.Warn("naive hand-off failed", "event_key", it.e.String(), "error", err.Error())
			}
			return
		}
		time.Sleep(100 * time.Millisecond) // no sweeper here: retry the signal itself
	}
}
