package starter

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
)

// Handoff is the intake's bounded, coalescing queue of doorbells. Notify
// never blocks: the sender's answer does not wait on Temporal. A doorbell
// for a resource that already has one queued is coalesced (the queued one is
// sent after this event's commit, so the workflow will see it). When the
// queue is full or a signal fails, the event is still safe in the inbox and
// the sweeper rings again later; both are logged and counted.
type Handoff struct {
	signaler keys.Doorbell
	timeout  time.Duration
	workers  int
	metrics  *metrics.Metrics
	log      *slog.Logger
	pace     *Pacer

	queue  chan item
	mu     sync.Mutex
	queued map[keys.Resource]struct{}

	// A full queue is logged at most once per dropLogEvery, with the count
	// since the last line: a burst past the queue's capacity is one
	// warning a second, not one per delivery.
	dropLog    rate.Sometimes
	dropsSince atomic.Int64

	// While Temporal fails (down, unreachable, refusing), the workers
	// pause between sends: resumeAt is when the next may go, after a
	// backoff that doubles from failBackoffMin to failBackoffMax and is
	// reset by a success. The doorbells wait in the queue meanwhile (and
	// coalesce there), instead of each failing at once: a down Temporal
	// costs the intake neither CPU nor a log line per delivery. The
	// failures are logged at most once per dropLogEvery, with their count.
	outage    sync.Mutex
	backoff   time.Duration
	resumeAt  time.Time
	failLog   rate.Sometimes
	failSince atomic.Int64
}

// dropLogEvery spaces the "queue full" and "hand-off failed" warnings.
const dropLogEvery = time.Second

// The hand-off's pause after a failed send, doubling while sends fail.
const (
	failBackoffMin = 50 * time.Millisecond
	failBackoffMax = 5 * time.Second
)

type item struct {
	r   keys.Resource
	key keys.Event
}

// HandoffOptions size the queue.
type HandoffOptions struct {
	Capacity int
	Workers  int
	Timeout  time.Duration
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// Pacer, when set, bounds the calls in flight to its window (at most
	// Workers): the hand-off follows what Temporal absorbs. Nil: every
	// worker sends as soon as a doorbell is queued.
	Pacer *Pacer
}

// NewHandoff builds the queue; Run sends.
func NewHandoff(s keys.Doorbell, o HandoffOptions) *Handoff {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	return &Handoff{
		signaler: s, timeout: o.Timeout, workers: max(1, o.Workers), metrics: o.Metrics, log: o.Logger, pace: o.Pacer,
		queue: make(chan item, max(1, o.Capacity)), queued: map[keys.Resource]struct{}{},
		dropLog: rate.Sometimes{Interval: dropLogEvery}, failLog: rate.Sometimes{Interval: dropLogEvery},
	}
}

// Notify queues a doorbell for r after e was committed.
func (h *Handoff) Notify(r keys.Resource, e keys.Event) {
	h.mu.Lock()
	if _, ok := h.queued[r]; ok {
		h.mu.Unlock()
		h.metrics.HandoffSignals.WithLabelValues("coalesced").Inc()
		return
	}
	select {
	case h.queue <- item{r, e}:
		h.queued[r] = struct{}{}
		h.mu.Unlock()
		h.metrics.HandoffQueueSize.Inc()
	default:
		h.mu.Unlock()
		h.metrics.HandoffSignals.WithLabelValues("dropped").Inc()
		h.dropped(r, e)
	}
}

// dropped logs a doorbell the full queue refused, rate-limited.
func (h *Handoff) dropped(r keys.Resource, e keys.Event) {
	h.dropsSince.Add(1)
	h.dropLog.Do(func() {
		h.log.Warn("hand-off queue full; the sweeper will deliver the events", "dropped", h.dropsSince.Swap(0),
			"event_key", e.String(), "resource", r.String())
	})
}

// Run sends queued doorbells until ctx ends. What is still queued then is
// left to the sweeper (the rows are committed).
func (h *Handoff) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range h.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Room in the window first, then a doorbell: while the
				// window is full, doorbells wait in the queue, where those
				// of one resource coalesce.
				if h.waitOutage(ctx) != nil {
					return
				}
				if h.pace != nil && h.pace.Acquire(ctx) != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case it := <-h.queue:
					start := time.Now()
					err := h.send(ctx, it)
					if h.pace != nil {
						h.pace.Release(time.Since(start), err)
						h.metrics.HandoffWindow.Set(float64(h.pace.Window()))
					}
				}
			}
		}()
	}
	wg.Wait()
}

func (h *Handoff) send(ctx context.Context, it item) error {
	// Unmark before sending: an event committed from now on needs a
	// doorbell of its own, since this one may reach the workflow first.
	h.mu.Lock()
	delete(h.queued, it.r)
	h.mu.Unlock()
	h.metrics.HandoffQueueSize.Dec()

	sctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if err := h.signaler.Ring(sctx, it.r, keys.SignalEvent, it.key.String()); err != nil {
		h.metrics.HandoffSignals.WithLabelValues("failed").Inc()
		pause := h.failed()
		h.failSince.Add(1)
		h.failLog.Do(func() {
			id := keys.ResourceWorkflowID(it.r)
			if w, ok := h.signaler.(interface{ WorkflowID(keys.Resource) string }); ok {
				id = w.WorkflowID(it.r) // after the deployment's prefix
			}
			h.log.Warn("hand-off failed; the sweeper will deliver the events", "failed", h.failSince.Swap(0),
				"event_key", it.key.String(), "workflow_id", id, "pause", pause.String(), "error", err.Error())
		})
		return err
	}
	h.outage.Lock()
	h.backoff = 0
	h.outage.Unlock()
	h.metrics.HandoffSignals.WithLabelValues("sent").Inc()
	return nil
}

// failed notes a failed send: the next waits for the doubled backoff.
func (h *Handoff) failed() time.Duration {
	h.outage.Lock()
	defer h.outage.Unlock()
	h.backoff = min(max(2*h.backoff, failBackoffMin), failBackoffMax)
	h.resumeAt = time.Now().Add(h.backoff)
	return h.backoff
}

// waitOutage waits until the pause after a failed send is over.
func (h *Handoff) waitOutage(ctx context.Context) error {
	for {
		h.outage.Lock()
		wait := time.Until(h.resumeAt)
		h.outage.Unlock()
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Len is the number of queued doorbells.
func (h *Handoff) Len() int { return len(h.queue) }
