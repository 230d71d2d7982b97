package starter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func setupPacer(t *testing.T, minCalls, maxCalls int) (*Pacer, *clock) {
	t.Helper()
	c := &clock{t: time.Unix(1e9, 0)}
	p := NewPacer(minCalls, maxCalls, 100*time.Millisecond)
	p.now = c.now
	return p, c
}

// call acquires and releases once with the given latency and error.
func call(t *testing.T, p *Pacer, lat time.Duration, err error) {
	t.Helper()
	require.NoError(t, p.Acquire(context.Background()))
	p.Release(lat, err)
}

func TestPacerGrowsAdditivelyOnFastAnswersUpToMax(t *testing.T) {
	t.Parallel()
	p, _ := setupPacer(t, 1, 4)
	require.Equal(t, 1, p.Window())
	call(t, p, 10*time.Millisecond, nil)
	require.Equal(t, 2, p.Window(), "one window of fast answers adds one call")
	call(t, p, 10*time.Millisecond, nil)
	call(t, p, 10*time.Millisecond, nil)
	require.Equal(t, 2, p.Window(), "two answers at a window of 2 are not yet a step (2.5, 2.9)")
	call(t, p, 10*time.Millisecond, nil)
	require.Equal(t, 3, p.Window())
	for range 100 {
		call(t, p, 10*time.Millisecond, nil)
	}
	require.Equal(t, 4, p.Window(), "capped at Max")
}

// One slow answer among fast ones is noise on a busy machine, not
// congestion: the smoothed latency stays under Target.
func TestPacerIgnoresALoneSlowAnswer(t *testing.T) {
	t.Parallel()
	p, _ := setupPacer(t, 1, 16)
	for range 200 {
		call(t, p, 10*time.Millisecond, nil)
	}
	call(t, p, 300*time.Millisecond, nil)
	require.Equal(t, 16, p.Window())
	require.Less(t, p.Latency(), 100*time.Millisecond)
}

func TestPacerHalvesOnSlowAnswersOrErrorsOncePerTarget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		lat  time.Duration
		err  error
	}{
		{"slow answers", 2 * time.Second, nil},
		{"error", 5 * time.Millisecond, errors.New("resource exhausted")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, c := setupPacer(t, 1, 16)
			for range 200 {
				call(t, p, time.Millisecond, nil)
			}
			require.Equal(t, 16, p.Window())
			call(t, p, tt.lat, tt.err)
			require.Equal(t, 8, p.Window())
			call(t, p, tt.lat, tt.err)
			require.Equal(t, 8, p.Window(), "a second congestion signal within Target counts once")
			c.t = c.t.Add(100 * time.Millisecond)
			call(t, p, tt.lat, tt.err)
			require.Equal(t, 4, p.Window())
			for range 10 {
				c.t = c.t.Add(time.Second)
				call(t, p, tt.lat, tt.err)
			}
			require.Equal(t, 1, p.Window(), "never below Min")
		})
	}
}

func TestPacerAcquireWaitsForRoomOrContext(t *testing.T) {
	t.Parallel()
	p, _ := setupPacer(t, 1, 1)
	require.NoError(t, p.Acquire(context.Background()))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Acquire(ctx), context.DeadlineExceeded, "the window is full")

	got := make(chan error, 1)
	go func() { got <- p.Acquire(context.Background()) }()
	select {
	case <-got:
		t.Fatal("acquired past a full window")
	case <-time.After(20 * time.Millisecond):
	}
	p.Release(time.Millisecond, nil)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("release did not wake the waiter")
	}
}

// concurrencySignaler records the most calls it saw in flight at once.
type concurrencySignaler struct {
	inflight, peak atomic.Int64
	delay          time.Duration
	err            error
	mu             sync.Mutex
	n              int
}

func (s *concurrencySignaler) Ring(ctx context.Context, _ keys.Resource, _, _ string) error {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return s.err
}

func (s *concurrencySignaler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// gatedSignaler holds every call until the test lets it answer.
type gatedSignaler struct {
	inflight, peak, answered atomic.Int64
	gate                     chan struct{} // a receive lets one call answer; closed, all
}

func (s *gatedSignaler) Ring(ctx context.Context, _ keys.Resource, _, _ string) error {
	n := s.inflight.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-s.gate:
	case <-ctx.Done():
	}
	s.inflight.Add(-1)
	s.answered.Add(1)
	return nil
}

// A burst through a paced hand-off against a server slower than the
// target never has more calls in flight than the window allows, however
// many workers there are, and every doorbell is still sent.
func TestPacedHandoffKeepsABurstInsideTheWindow(t *testing.T) {
	t.Parallel()
	// A sleep is never shorter than asked: each 30 ms answer is over the
	// 10 ms target, so the window never leaves 1.
	s := &concurrencySignaler{delay: 30 * time.Millisecond}
	p := NewPacer(1, 3, 10*time.Millisecond)
	h := NewHandoff(s, HandoffOptions{Capacity: 100, Workers: 8, Timeout: time.Second, Metrics: metrics.New(), Pacer: p})
	for i := range 10 {
		h.Notify(res(string(rune('a'+i))), ev("e"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	require.Eventually(t, func() bool { return s.count() == 10 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(1), s.peak.Load(), "slow answers keep the window at its minimum")
}

// The same burst on a fast server opens the window up to its maximum, and
// no further. The server answers only when the test lets it: each step
// waits until the workers have filled the window (as many calls in flight
// as it allows), then lets one call answer, until three are in flight at
// once. No answer takes near the minute of target, whatever the machine.
func TestPacedHandoffOpensTheWindowToMaxOnFastAnswers(t *testing.T) {
	t.Parallel()
	fast := &gatedSignaler{gate: make(chan struct{})}
	p := NewPacer(1, 3, time.Minute)
	h := NewHandoff(fast, HandoffOptions{Capacity: 1000, Workers: 8, Timeout: time.Minute, Metrics: metrics.New(), Pacer: p})
	const burst = 300
	for i := range burst {
		h.Notify(res("r"+string(rune(i))), ev("e"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)

	full := func() bool { return fast.inflight.Load() == int64(p.Window()) }
	for fast.peak.Load() < 3 {
		require.Eventually(t, full, 10*time.Second, time.Millisecond, "the workers fill the window (%d)", p.Window())
		if fast.peak.Load() >= 3 {
			break
		}
		answered := fast.answered.Load()
		require.Less(t, answered, int64(burst), "the window never reached 3 calls")
		fast.gate <- struct{}{}
		require.Eventually(t, func() bool { return fast.answered.Load() > answered }, 10*time.Second, time.Millisecond)
	}
	require.Equal(t, 3, p.Window())
	close(fast.gate) // the rest answer at once
	require.Eventually(t, func() bool { return fast.answered.Load() == burst }, 10*time.Second, time.Millisecond)
	require.Equal(t, int64(3), fast.peak.Load(), "the window opened to Max and never past it")
	require.Equal(t, 3, p.Window())
}
