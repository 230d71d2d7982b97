package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
)

// gateSignaler blocks every call until released and records them.
type gateSignaler struct {
	mu    sync.Mutex
	calls []keys.Resource
	gate  chan struct{}
	err   error
}

func (g *gateSignaler) Ring(ctx context.Context, r keys.Resource, _, _ string) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, r)
	return g.err
}

func (g *gateSignaler) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

func res(id string) keys.Resource {
	return keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "subscription", ID: id}
}

func ev(id string) keys.Event {
	return keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id}
}

func TestHandoffCoalescesQueuedDoorbellsAndNeverBlocks(t *testing.T) {
	t.Parallel()
	g := &gateSignaler{gate: make(chan struct{})}
	m := metrics.New()
	h := NewHandoff(g, HandoffOptions{Capacity: 2, Workers: 1, Timeout: 5 * time.Second, Metrics: m})

	// Not running yet: everything stays queued.
	done := make(chan struct{})
	go func() {
		for i := range 10 {
			h.Notify(res("sub_hot"), ev("e"+string(rune('0'+i))))
		}
		h.Notify(res("sub_b"), ev("b"))
		h.Notify(res("sub_c"), ev("c")) // queue (capacity 2) is full
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Notify blocked")
	}
	require.Equal(t, 9.0, testutil.ToFloat64(m.HandoffSignals.WithLabelValues("coalesced")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.HandoffSignals.WithLabelValues("dropped")))
	require.Equal(t, 2, h.Len())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	close(g.gate)
	require.Eventually(t, func() bool { return g.count() == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 2.0, testutil.ToFloat64(m.HandoffSignals.WithLabelValues("sent")))

	// Once sent, a new event on the same resource gets its own doorbell.
	h.Notify(res("sub_hot"), ev("later"))
	require.Eventually(t, func() bool { return g.count() == 3 }, 5*time.Second, 10*time.Millisecond)
}

func TestHandoffCountsFailures(t *testing.T) {
	t.Parallel()
	g := &gateSignaler{gate: make(chan struct{}), err: errors.New("temporal unavailable")}
	close(g.gate)
	m := metrics.New()
	h := NewHandoff(g, HandoffOptions{Capacity: 10, Workers: 2, Timeout: time.Second, Metrics: m})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	h.Notify(res("sub_1"), ev("e1"))
	h.Notify(res("sub_2"), ev("e2"))
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.HandoffSignals.WithLabelValues("failed")) == 2
	}, 5*time.Second, 10*time.Millisecond)
}

func TestResourceWorkflowIDRoundTrip(t *testing.T) {
	t.Parallel()
	r := keys.Resource{Provider: "github", Account: "42", Environment: "live", Kind: "repository", ID: "octo/hello"}
	id := keys.ResourceWorkflowID(r)
	require.Equal(t, "resource/github/42/live/repository/octo%2Fhello", id)
	back, err := keys.ResourceFromWorkflowID(id)
	require.NoError(t, err)
	require.Equal(t, r, back)
	_, err = keys.ResourceFromWorkflowID("hookinbox-sweeper")
	require.Error(t, err)
}

func TestScheduleIDIsFixedPerTaskQueue(t *testing.T) {
	t.Parallel()
	require.Equal(t, "hookinbox-sweeper", ScheduleID(ScheduleSweeper, "hookinbox"))
	require.Equal(t, "hookinbox-sweeper-tenant-b", ScheduleID(ScheduleSweeper, "tenant-b"))
}

// countingHandler counts the records logged and keeps the last one's
// "dropped" attribute.
type countingHandler struct {
	mu      sync.Mutex
	records int
	dropped int64
}

func (c *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (c *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *countingHandler) WithGroup(string) slog.Handler            { return c }
func (c *countingHandler) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "dropped" {
			c.dropped = a.Value.Int64()
		}
		return true
	})
	return nil
}

// TestAFullQueueIsLoggedOncePerSecondWithItsCount: a burst past the queue's
// capacity is one warning a second (with how many were dropped), not one
// per delivery; the metric counts every one.
func TestAFullQueueIsLoggedOncePerSecondWithItsCount(t *testing.T) {
	t.Parallel()
	logs := &countingHandler{}
	m := metrics.New()
	h := NewHandoff(&gateSignaler{gate: make(chan struct{})}, HandoffOptions{Capacity: 1, Workers: 1,
		Timeout: time.Second, Metrics: m, Logger: slog.New(logs)})
	h.Notify(res("sub_0"), ev("e0")) // fills the queue
	for i := range 1000 {
		h.Notify(res(fmt.Sprintf("sub_%d", i+1)), ev(fmt.Sprintf("e%d", i+1)))
	}
	require.Equal(t, 1000.0, testutil.ToFloat64(m.HandoffSignals.WithLabelValues("dropped")))
	logs.mu.Lock()
	require.Equal(t, 1, logs.records, "the first drop is logged at once, the rest of the second is counted")
	require.Equal(t, int64(1), logs.dropped)
	logs.mu.Unlock()

	time.Sleep(dropLogEvery + 50*time.Millisecond)
	h.Notify(res("sub_late"), ev("late"))
	logs.mu.Lock()
	defer logs.mu.Unlock()
	require.Equal(t, 2, logs.records)
	require.Equal(t, int64(1000), logs.dropped, "999 counted since the first line, and this one")
}

// switchSignaler fails every call at once while down, and counts them.
type switchSignaler struct {
	mu          sync.Mutex
	down        bool
	calls, sent int
}

func (s *switchSignaler) Ring(context.Context, keys.Resource, string, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		return errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	s.sent++
	return nil
}

func (s *switchSignaler) counts() (calls, sent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.sent
}

// TestADownTemporalPausesTheHandoffInsteadOfFailingEveryDoorbell: with
// Temporal refusing at once, a hand-off that took the next doorbell after
// each failure spent its whole queue in a few milliseconds (a call, a
// failure and a log line per delivery, on the intake's CPU). It pauses
// instead, doubling the pause; the doorbells wait queued, the failures are
// one log line a second, and once Temporal is back every queued doorbell
// is sent.
func TestADownTemporalPausesTheHandoffInsteadOfFailingEveryDoorbell(t *testing.T) {
	t.Parallel()
	sig := &switchSignaler{down: true}
	logs := &countingHandler{}
	m := metrics.New()
	h := NewHandoff(sig, HandoffOptions{Capacity: 1000, Workers: 4, Timeout: time.Second, Metrics: m, Logger: slog.New(logs)})
	for i := range 1000 {
		h.Notify(res(fmt.Sprintf("sub_%d", i)), ev(fmt.Sprintf("e%d", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	time.Sleep(time.Second)
	calls, _ := sig.counts()
	require.Positive(t, calls)
	// 4 in flight at the first failure, then one a pause: 50, 100, 200,
	// 400 ms… fewer on a slow machine, never the queue.
	require.Less(t, calls, 40, "calls to a down Temporal in one second")
	require.Greater(t, h.Len(), 900, "the doorbells wait in the queue")
	logs.mu.Lock()
	require.LessOrEqual(t, logs.records, 2, "failures are logged once a second")
	logs.mu.Unlock()

	sig.mu.Lock()
	sig.down = false
	sig.mu.Unlock()
	require.Eventually(t, func() bool {
		_, sent := sig.counts()
		return sent+int(testutil.ToFloat64(m.HandoffSignals.WithLabelValues("failed"))) == 1000
	}, 20*time.Second, 20*time.Millisecond, "every doorbell sent once Temporal is back (or failed, for the sweeper)")
}
