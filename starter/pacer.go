package starter

import (
	"context"
	"sync"
	"time"
)

// Pacer paces the hand-off to what Temporal absorbs: an AIMD window on
// the SignalWithStart calls in flight. While the calls' smoothed latency
// (an exponentially weighted mean, so one slow answer on a busy machine is
// not taken for congestion) stays within Target, every answer widens the
// window by one call per window's worth of answers (additive increase); a
// call that fails, or a smoothed latency above Target, halves it
// (multiplicative decrease, at most once per Target, so one slow spell
// counts once), down to Min. Throughput then follows the server:
// window ÷ latency. A burst queues in the hand-off (where doorbells of one
// resource coalesce) instead of in the server, whose CPU the workers
// need to process what was signalled; on one machine that CPU is also the
// intake's.
type Pacer struct {
	// Min and Max bound the window (calls in flight); Target is the
	// latency above which a call counts as congestion.
	Min, Max int
	Target   time.Duration
	// now is time.Now (tests set a clock).
	now func() time.Time

	mu       sync.Mutex
	window   float64
	inflight int
	lastCut  time.Time
	wake     chan struct{}
	// smoothed latency (0 before the first answer).
	ewma time.Duration
}

// ewmaWeight is the weight of the newest answer in the smoothed latency.
const ewmaWeight = 0.2

// NewPacer starts with a window of Min calls.
func NewPacer(minCalls, maxCalls int, target time.Duration) *Pacer {
	minCalls = max(1, minCalls)
	maxCalls = max(minCalls, maxCalls)
	return &Pacer{Min: minCalls, Max: maxCalls, Target: target, now: time.Now,
		window: float64(minCalls), wake: make(chan struct{})}
}

// Latency is the smoothed latency of the calls.
func (p *Pacer) Latency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ewma
}

// Window is the current window, in calls.
func (p *Pacer) Window() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.window)
}

// Acquire waits for room in the window (or ctx's end).
func (p *Pacer) Acquire(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.inflight < int(p.window) {
			p.inflight++
			p.mu.Unlock()
			return nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release returns the room of a call that took latency and ended with err,
// and adjusts the window.
func (p *Pacer) Release(latency time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	now := p.now()
	if p.ewma == 0 {
		p.ewma = latency
	} else {
		p.ewma += time.Duration(ewmaWeight * float64(latency-p.ewma))
	}
	if err != nil || p.ewma > p.Target {
		if now.Sub(p.lastCut) >= p.Target {
			p.window = max(float64(p.Min), p.window/2)
			p.lastCut = now
		}
	} else {
		p.window = min(float64(p.Max), p.window+1/p.window)
	}
	close(p.wake)
	p.wake = make(chan struct{})
}
