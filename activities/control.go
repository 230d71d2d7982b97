package activities

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
)

// ControlActivities are the activities of the control task queue, called
// by the scheduled workflows: SweepInbox, SweepOutbox, ListScopes,
// BeginPass, RetentionStep and EvaluateNotifications. Register them with
// worker.RegisterActivity on that queue only.
type ControlActivities struct {
	Sweeps    ports.Sweeps
	Passes    ports.Passes
	Retention ports.Retention
	// Notifications evaluates the notification rules; Schedules says how
	// the schedules' latest runs ended (nil: the schedule_failed trigger
	// is not evaluated).
	Notifications ports.Notifications
	Schedules     ports.ScheduleRuns
	Doorbell      keys.Doorbell
	// Pace bounds SweepInbox's rings in flight (starter.Pacer: a window
	// that follows the calls' latency). Nil: one ring at a time.
	Pace Pacer
	// Backlog, when set, is how many workflow tasks wait on the resource
	// task queue (starter.Resources.Backlog): SweepInbox holds back while
	// it is at SweepInput.MaxBacklog or more.
	Backlog func(ctx context.Context) (int64, error)
	// StartIfIdle, when set, starts the resource's workflow unless a run
	// is going (starter.Resources.StartIfIdle), and reports whether it
	// started one: SweepInbox probes the resources whose due rows its
	// backoff holds with it. Nil: those rows wait for their next ring.
	StartIfIdle func(ctx context.Context, r keys.Resource) (started bool, err error)
	Metrics     *metrics.Metrics
	Logger      *slog.Logger
}

// Pacer bounds calls in flight: Acquire waits for room, Release returns it
// with the call's latency and error (starter.Pacer).
type Pacer interface {
	Acquire(ctx context.Context) error
	Release(latency time.Duration, err error)
}

// SweepInput configures SweepInbox.
type SweepInput struct {
	OlderThan time.Duration `json:"older_than"`
	// Limit is the resources of one page (default 1000).
	Limit int `json:"limit"`
	// Budget, when positive, lets one sweep go on to the next page while
	// the last one was full, until Budget has passed since it began. Under
	// a backlog (a hand-off queue that overflowed, Temporal back after an
	// outage) the sweeper then rings as fast as the server answers rather
	// than Limit resources per run. 0: one page.
	Budget time.Duration `json:"budget,omitempty"`
	// MaxBacklog, when positive, holds the sweep back while Temporal
	// already holds this many workflow tasks for the workers (Backlog):
	// under a backlog most rows pending past OlderThan have their doorbell
	// there, waiting, and a second ring would cost the server a signal or
	// a workflow task more for each. What the queue holds is worked off
	// first; the rows whose doorbell was lost are rung as it drains, a
	// page at a time, so the sweeper follows what the workers complete.
	MaxBacklog int `json:"max_backlog,omitempty"`
	// ProbeEvery: rows the per-row backoff holds back (rung before, their
	// next ring still far) are probed once their last ring or probe is
	// older than this (default DefaultProbeEvery): their workflow is
	// started if none runs, so a due row whose workflow is gone is rung
	// within ProbeEvery plus one sweep interval, whatever its sweep count,
	// while a busy workflow holding its rows is not rung again.
	ProbeEvery time.Duration `json:"probe_every,omitempty"`
}

// DefaultProbeEvery is SweepInput.ProbeEvery's default: with the sweeper's
// 30 s interval, a due row whose workflow is gone is rung within a minute.
const DefaultProbeEvery = 30 * time.Second

// backlogPoll is how often a sweep held back asks for the backlog again.
var backlogPoll = 5 * time.Second

// trendsResample is how often a sweep held back samples the console's
// trends again: a sweep held back for its whole budget (90 s) would
// otherwise leave a minute or two without a sample, and the pending chart
// blank, just while a backlog is what an operator is looking at.
var trendsResample = 30 * time.Second

// SweepResult counts what a sweep did.
type SweepResult struct {
	Stale     int `json:"stale"`
	Signalled int `json:"signalled"`
	Failed    int `json:"failed"`
	// Probed: resources whose due rows the backoff held, probed;
	// Started: those of them with no run going, whose workflow the probe
	// started (a ring); ProbeFailed: probes that got no answer.
	Probed      int `json:"probed,omitempty"`
	Started     int `json:"started,omitempty"`
	ProbeFailed int `json:"probe_failed,omitempty"`
	// HeldBack: the sweep ended waiting for Temporal's backlog to drain.
	HeldBack bool `json:"held_back,omitempty"`
}

// SweepInbox signals the workflows of resources whose pending rows have
// been due for longer than OlderThan (SPEC R16), a page of Limit resources
// at a time (more pages within Budget), with up to Pace's window of rings
// in flight, while Temporal's backlog is under MaxBacklog. It first
// records the minute's sample of the console's trends, and again every
// trendsResample while it goes on: a sample that fails is logged, and the
// sweep goes on (its doorbells matter more than a chart's point).
func (a *ControlActivities) SweepInbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	start := time.Now()
	log := logger(ctx, a.Logger)
	var sampled time.Time
	sample := func() {
		sampled = time.Now()
		if err := a.Sweeps.SampleTrends(ctx); err != nil {
			log.Warn("sweeper could not sample the console's trends", "error", err.Error())
		}
	}
	sample()
	var res SweepResult
	for {
		if time.Since(sampled) >= trendsResample {
			sample()
		}
		if n, held := a.heldBack(ctx, in.MaxBacklog); held {
			if in.Budget <= 0 || time.Since(start)+backlogPoll >= in.Budget {
				res.HeldBack = true
				log.Info("sweeper held back: Temporal already holds work for the workers", "backlog", n, "max_backlog", in.MaxBacklog)
				break
			}
			activity.RecordHeartbeat(ctx, res.Signalled+res.Failed)
			select {
			case <-ctx.Done():
			case <-time.After(backlogPoll):
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		stale, err := a.Sweeps.StalePending(ctx, in.OlderThan, limit)
		if err != nil {
			if res.Stale > 0 {
				// What was rung stays rung; the next sweep goes on.
				log.Warn("sweeper stopped paging", "stale", res.Stale, "error", err.Error())
				break
			}
			return SweepResult{}, err
		}
		res.Stale += len(stale)
		a.ring(ctx, stale, &res)
		if len(stale) < limit || in.Budget <= 0 || time.Since(start) >= in.Budget || ctx.Err() != nil {
			break
		}
	}
	if !res.HeldBack && ctx.Err() == nil {
		a.probeHeld(ctx, in, limit, &res)
	}
	if res.Stale > 0 || res.Started > 0 {
		log.Info("sweeper re-signalled stale resources", "stale", res.Stale, "signalled", res.Signalled, "failed", res.Failed,
			"probed", res.Probed, "started", res.Started)
	}
	if res.Failed > 0 && res.Signalled == 0 {
		return res, fmt.Errorf("sweeper signalled none of %d stale resources", res.Stale)
	}
	return res, nil
}

// heldBack reports whether Temporal's backlog is at max or more (and the
// backlog). Without a Backlog, a max, or an answer, the sweep goes on.
func (a *ControlActivities) heldBack(ctx context.Context, maxBacklog int) (int64, bool) {
	if a.Backlog == nil || maxBacklog <= 0 {
		return 0, false
	}
	n, err := a.Backlog(ctx)
	if err != nil {
		logger(ctx, a.Logger).Warn("sweeper could not read Temporal's backlog; sweeping", "error", err.Error())
		return 0, false
	}
	return n, n >= int64(maxBacklog)
}

// probeHeld probes one page of the resources whose due rows the per-row
// backoff holds (SweepInput.ProbeEvery): each one's workflow is started if
// no run is going (a.StartIfIdle). A probe that fails is logged and counted;
// the next sweep probes again.
func (a *ControlActivities) probeHeld(ctx context.Context, in SweepInput, limit int, res *SweepResult) {
	if a.StartIfIdle == nil {
		return
	}
	log := logger(ctx, a.Logger)
	every := in.ProbeEvery
	if every <= 0 {
		every = DefaultProbeEvery
	}
	held, err := a.Sweeps.HeldPending(ctx, in.OlderThan, every, limit)
	if err != nil {
		log.Warn("sweeper could not list the rows its backoff holds", "error", err.Error())
		return
	}
	var mu sync.Mutex
	a.paced(ctx, held, func(r keys.Resource) error {
		started, err := a.StartIfIdle(ctx, r)
		mu.Lock()
		defer mu.Unlock()
		res.Probed++
		switch {
		case err != nil:
			res.ProbeFailed++
			log.Warn("sweeper could not probe", "resource", r.String(), "error", err.Error())
		case started:
			res.Started++
			if a.Metrics != nil {
				a.Metrics.SweepResignals.Inc()
			}
			log.Info("sweeper started the workflow of a resource with due rows and no run going", "resource", r.String())
		}
		activity.RecordHeartbeat(ctx, res.Signalled+res.Failed+res.Probed)
		return err
	})
}

// ring rings the resources of one sweep page, up to a.Pace's window at a
// time, counting into res and heartbeating the rings done so far.
func (a *ControlActivities) ring(ctx context.Context, stale []keys.Resource, res *SweepResult) {
	log := logger(ctx, a.Logger)
	var mu sync.Mutex
	a.paced(ctx, stale, func(r keys.Resource) error {
		err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, "sweeper")
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed++
			log.Warn("sweeper could not signal", "resource", r.String(), "error", err.Error())
		} else {
			res.Signalled++
			if a.Metrics != nil {
				a.Metrics.SweepResignals.Inc()
			}
		}
		activity.RecordHeartbeat(ctx, res.Signalled+res.Failed)
		return err
	})
}

// paced calls call for each resource, up to a.Pace's window at a time (one
// at a time without a Pace), telling the pacer each call's latency and
// error. It stops early when the context ends: what is left goes to a
// later sweep.
func (a *ControlActivities) paced(ctx context.Context, rs []keys.Resource, call func(keys.Resource) error) {
	var wg sync.WaitGroup
	one := func(r keys.Resource) {
		begin := time.Now()
		err := call(r)
		if a.Pace != nil {
			a.Pace.Release(time.Since(begin), err)
		}
	}
	for _, r := range rs {
		if a.Pace == nil {
			one(r)
			continue
		}
		if err := a.Pace.Acquire(ctx); err != nil {
			break // the activity ends; the rest is for a later sweep
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(r)
		}()
	}
	wg.Wait()
}

// SweepOutbox rings the workflows of resources whose outbox rows have been
// unsent for longer than OlderThan (a terminated or reset workflow left
// them): their next pass sends them through SendOutbox.
func (a *ControlActivities) SweepOutbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	stale, err := a.Sweeps.StaleOutbox(ctx, in.OlderThan, limit)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Stale: len(stale)}
	for i, rk := range stale {
		r, err := keys.ParseResource(rk)
		if err == nil {
			err = a.Doorbell.Ring(ctx, r, keys.SignalEvent, "outbox sweeper")
		}
		if err != nil {
			res.Failed++
			logger(ctx, a.Logger).Warn("outbox sweeper could not signal", "resource", rk, "error", err.Error())
			continue
		}
		res.Signalled++
		if a.Metrics != nil {
			a.Metrics.SweepResignals.Inc()
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	return res, nil
}
