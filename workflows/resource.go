package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// Defaults applied when the input leaves a setting at zero.
const (
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultMaxEventsPerRun = 500
	DefaultRetryBudget     = 10
	DefaultRetryInitial    = time.Second
	DefaultRetryMax        = 5 * time.Minute
	DefaultActivityTimeout = 30 * time.Second
	DefaultOutboxBudget    = 8
	// pendingBatch is how many rows one load returns.
	pendingBatch = 100
	// recentKeys bounds the carried set of recently handled event keys.
	recentKeys = 64
)

func withDefaults(s keys.Settings) keys.Settings {
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.MaxEventsPerRun <= 0 {
		s.MaxEventsPerRun = DefaultMaxEventsPerRun
	}
	if s.RetryBudget <= 0 {
		s.RetryBudget = DefaultRetryBudget
	}
	if s.RetryInitial <= 0 {
		s.RetryInitial = DefaultRetryInitial
	}
	if s.RetryMax < s.RetryInitial {
		s.RetryMax = max(DefaultRetryMax, s.RetryInitial)
	}
	if s.ActivityTimeout <= 0 {
		s.ActivityTimeout = DefaultActivityTimeout
	}
	if s.OutboxBudget <= 0 {
		s.OutboxBudget = DefaultOutboxBudget
	}
	return s
}

// ResourceResult is returned when the workflow completes after an idle period.
type ResourceResult struct {
	Handled int `json:"handled"`
}

// SAExhaustedEvents counts a resource's events that ended exhausted or
// failed; upserted on the workflow so operators find them in the UI with
// `ExhaustedEvents > 0` (registered with the other search attributes).
var SAExhaustedEvents = temporal.NewSearchAttributeKeyInt64(keys.SearchAttributeExhaustedEvents)

// The nil receivers whose method values name the activities, one per task
// queue: each struct is registered only on its own queue, so a call must
// run there (the workflow's own queue, or the TaskQueue of its options).
var (
	// onResource: the resource queue, where ResourceWorkflow runs.
	onResource *activities.ResourceActivities
	// onControl: the control queue, where the scheduled workflows run.
	onControl *activities.ControlActivities
	// onProvider: the rate-limited provider queue (PassSettings.ProviderTaskQueue).
	onProvider *activities.ProviderActivities
)

// ResourceWorkflow serializes the work of one resource. Woken by a signal
// (or started), it loads the resource's due pending inbox rows, oldest first,
// and handles them one at a time (an effect that wakes waiting rows of the
// resource makes it load again at once); it continues-as-new when Temporal
// suggests it or after MaxEventsPerRun events, and completes after
// IdleTimeout with nothing to do. Before either it drains the signal channels without
// blocking, so no doorbell is lost.
func ResourceWorkflow(ctx workflow.Context, in keys.ResourceInput) (ResourceResult, error) {
	r := &resource{in: in, s: withDefaults(in.Settings), carry: in.Carry, inflight: map[int64]bool{}}
	return r.run(ctx)
}

type resource struct {
	in      keys.ResourceInput
	s       keys.Settings
	carry   keys.Carry
	thisRun int
	nextDue *time.Time
	last    string
	// inflight holds outbox rows being sent by workflow goroutines.
	inflight map[int64]bool
	// lastLoad and lastMore describe the last look at the inbox.
	lastLoad int
	lastMore bool
	// dbWaits counts the consecutive handling attempts that found the
	// database away (the wait before the next pass grows with it).
	dbWaits int

	eventCh     workflow.ReceiveChannel
	reconcileCh workflow.ReceiveChannel
}

func (r *resource) run(ctx workflow.Context) (ResourceResult, error) {
	r.eventCh = workflow.GetSignalChannel(ctx, keys.SignalEvent)
	r.reconcileCh = workflow.GetSignalChannel(ctx, keys.SignalReconcile)
	r.details(ctx)
	if r.carry.Unhandled > 0 {
		r.markUnhandled(ctx)
	}

	// Every run starts with a pass: it was started or continued for a reason.
	wake := true
	for {
		if r.drain(ctx) {
			wake = true
		}
		if !wake && len(r.carry.Reconcile) > 0 && servesQueuedReconcile(ctx) {
			// A pass drained a reconcile request while it worked: serve it
			// now rather than idle past it.
			wake = true
		}
		if r.full(ctx) {
			// The next run starts with a pass, so pending work and the
			// doorbells drained here carry over. Sends in flight finish
			// first; nothing blocks after the drain.
			if err := r.awaitSends(ctx); err != nil {
				return ResourceResult{}, err
			}
			r.drain(ctx)
			r.carry.Runs++
			return ResourceResult{}, workflow.NewContinueAsNewError(ctx, ResourceWorkflow,
				keys.ResourceInput{Resource: r.in.Resource, Settings: r.in.Settings, Carry: r.carry})
		}
		if wake {
			wake = false
			if err := r.pass(ctx); err != nil {
				return ResourceResult{}, err
			}
			continue // the pass may have taken long: look at the channels again
		}

		if r.s.Idle == keys.IdleComplete && r.nextDue == nil {
			// Drained, nothing due later: complete now instead of idling
			// (a kind that rarely gets a second event; its next doorbell
			// starts a new run). Sends finish first, and a doorbell that
			// came meanwhile is served: nothing blocks after the drain.
			if err := r.awaitSends(ctx); err != nil {
				return ResourceResult{}, err
			}
			if r.drain(ctx) {
				wake = true
				continue
			}
			return ResourceResult{Handled: r.carry.Handled}, nil
		}
		wait, due := r.s.IdleTimeout, false
		if r.nextDue != nil {
			if d := r.nextDue.Sub(workflow.Now(ctx)); d < wait {
				wait, due = max(d, time.Second), true
			}
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, wait)
		fired := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(r.eventCh, func(c workflow.ReceiveChannel, _ bool) {
			var key string
			c.Receive(ctx, &key)
			wake = true
		})
		sel.AddReceive(r.reconcileCh, func(c workflow.ReceiveChannel, _ bool) {
			var reason string
			c.Receive(ctx, &reason)
			r.carry.Reconcile = append(r.carry.Reconcile, reason)
			wake = true
		})
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		sel.Select(ctx)
		cancel()
		if !fired {
			continue
		}
		if due {
			wake = true
			continue
		}
		// Idle: complete unless a doorbell is waiting (after sends finish).
		if err := r.awaitSends(ctx); err != nil {
			return ResourceResult{}, err
		}
		if r.drain(ctx) {
			wake = true
			continue
		}
		return ResourceResult{Handled: r.carry.Handled}, nil
	}
}

// servesQueuedReconcile reports whether this run serves a reconcile request
// that a pass queued (runs recorded before the fix idled past it). It is
// asked only when such a request waits, so ordinary runs record no marker.
func servesQueuedReconcile(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "serve-queued-reconcile", workflow.DefaultVersion, 1) == 1
}

// full reports whether this run should continue as new: enough events
// handled, or Temporal suggests it (history size or length).
func (r *resource) full(ctx workflow.Context) bool {
	return r.thisRun >= r.s.MaxEventsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// drain empties both signal channels without blocking and reports whether
// anything was there.
func (r *resource) drain(ctx workflow.Context) bool {
	got := false
	for {
		var key string
		if !r.eventCh.ReceiveAsync(&key) {
			break
		}
		got = true
	}
	for {
		var reason string
		if !r.reconcileCh.ReceiveAsync(&reason) {
			break
		}
		r.carry.Reconcile = append(r.carry.Reconcile, reason)
		got = true
	}
	return got
}

// bookkeepingPatience is how long the bookkeeping local activities (load
// the pending rows, record an unhandled row or a failed send) keep retrying.
// Without it the SDK ends a local activity's retries at its start-to-close
// timeout, so a PostgreSQL outage of more than 15 s failed every workflow
// that was mid-pass and lost its carry. An outage of any length is ridden
// out with capped backoff (retries past the local retry threshold become
// timers in the history).
const bookkeepingPatience = 365 * 24 * time.Hour

func localOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    15 * time.Second,
		ScheduleToCloseTimeout: bookkeepingPatience,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		},
	})
}

// pass handles every due pending row of the resource, oldest first.
func (r *resource) pass(ctx workflow.Context) error {
	if len(r.carry.Reconcile) > 0 {
		if err := r.reconcile(ctx); err != nil {
			return err
		}
	}
	// seen holds each row handled in this pass, with the number of wakes
	// before it was: a row still pending after its attempt waits for its
	// next_attempt_at, unless an effect woke rows of the resource since.
	seen := map[string]int{}
	wakes := 0
	for {
		var batch keys.PendingBatch
		err := workflow.ExecuteLocalActivity(localOptions(ctx), onResource.LoadPending,
			activities.LoadPendingInput{Resource: r.in.Resource, Limit: pendingBatch}).Get(ctx, &batch)
		if err != nil {
			return fmt.Errorf("load pending rows: %w", err)
		}
		r.nextDue = batch.NextDue
		r.lastLoad, r.lastMore = len(batch.Events), batch.More
		for _, id := range batch.Outbox {
			r.send(ctx, id, "") // left unsent by an earlier run, or due again
		}
		progressed, woke := false, false
		for _, ev := range batch.Events {
			k := ev.Key.String()
			if at, ok := seen[k]; ok && at == wakes {
				continue // still pending after its attempt: wait for next_attempt_at
			}
			seen[k] = wakes
			progressed = true
			res, err := r.handle(ctx, ev)
			if errors.Is(err, errDatabaseAway) {
				// The row stays pending with its budget intact: look again
				// after a capped backoff (the next pass's load itself rides
				// out the rest of the outage).
				t := workflow.Now(ctx).Add(databaseWait(r.s, r.dbWaits))
				r.dbWaits++
				r.nextDue = &t
				r.last = fmt.Sprintf("%s: waiting for the database", ev.Key)
				r.details(ctx)
				return nil
			}
			var limited *rateLimitedError
			if errors.As(err, &limited) {
				// A provider's spent rate limit: no attempt counted, and
				// the row stays first (a later row must not pass it).
				// Come back to it when the limit resets.
				t := workflow.Now(ctx).Add(limited.wait)
				r.nextDue = &t
				r.last = fmt.Sprintf("%s: rate limited at the provider for %s", ev.Key, limited.wait.Round(time.Second))
				r.details(ctx)
				return nil
			}
			if err != nil {
				return err
			}
			for _, c := range res.Completed {
				// Completed by this effect's commit (the events a coalesced
				// forward covered): no activity to find each one done.
				seen[c] = wakes
			}
			if r.full(ctx) {
				// Hand the rest to the next run; it starts with a pass.
				r.details(ctx)
				return nil
			}
			if res.Woke && loadsAfterWake(ctx) {
				// The effect's commit made rows of this resource due now
				// (credit notes waiting for this grant): load again at
				// once, so they run next, in this run, in id order.
				wakes++
				woke = true
				break
			}
		}
		if woke {
			r.drain(ctx)
			continue
		}
		if !batch.More || !progressed {
			if !progressed && len(batch.Events) > 0 {
				// Rows stayed due and pending after handling (their
				// bookkeeping failed): look again shortly, not in a loop.
				t := workflow.Now(ctx).Add(r.s.RetryInitial)
				r.nextDue = &t
			}
			r.details(ctx)
			return nil
		}
		r.drain(ctx) // keep the signal buffer short on long passes
	}
}

// reconcile serves the queued reconcile requests with one ReconcileResource
// activity (requests arriving together collapse into one fetch). It runs in
// the resource's own workflow, between events, so reconciliation and webhooks
// never race. A reconciliation that fails for good is logged and shown; the
// next scheduled run tries again.
func (r *resource) reconcile(ctx workflow.Context) error {
	reasons := r.carry.Reconcile
	r.carry.Reconcile = nil
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: r.s.ActivityTimeout,
		Summary:             "reconcile " + keys.MarkdownText(r.in.Resource.String()),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: r.s.RetryInitial, BackoffCoefficient: 2, MaximumInterval: r.s.RetryMax,
			MaximumAttempts: int32(r.s.RetryBudget),
		},
	})
	var out activities.ReconcileOutcome
	err := workflow.ExecuteActivity(actx, onResource.ReconcileResource, activities.ReconcileInput{Resource: r.in.Resource, Reasons: reasons}).Get(ctx, &out)
	if err != nil {
		r.last = "reconcile failed: " + lastError(err)
		workflow.GetLogger(ctx).Warn("reconcile failed", "resource", r.in.Resource.String(), "error", lastError(err))
	} else {
		r.last = "reconciled: " + out.Note
	}
	r.details(ctx)
	return nil
}

// loadsAfterWake reports whether this run loads again after an effect
// woke rows of its resource (runs recorded before the change completed
// without looking, and left the woken rows to the sweeper). It is asked
// only when a wake happened, so other runs record no marker.
func loadsAfterWake(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "load-after-wake", workflow.DefaultVersion, 1) == 1
}

// handle runs one event through HandleEvent with its retry policy, then
// records failed or exhausted rows.
func (r *resource) handle(ctx workflow.Context, ev keys.PendingEvent) (activities.HandleResult, error) {
	budget := r.s.RetryBudget
	if ev.Budget > 0 {
		budget = ev.Budget // the route's own (hookinbox.RetryBudget)
	}
	remaining := int32(max(1, budget-ev.Attempts))
	// The activity returns the next delay itself (full jitter); these bound
	// the attempts and stand in if it could not say.
	retry := &temporal.RetryPolicy{
		InitialInterval:        r.s.RetryInitial,
		BackoffCoefficient:     2,
		MaximumInterval:        r.s.RetryMax,
		MaximumAttempts:        remaining,
		NonRetryableErrorTypes: []string{activities.ErrDatabaseUnavailable},
	}
	in := activities.HandleInput{Key: ev.Key, PriorAttempts: ev.Attempts, Traceparent: ev.Traceparent}
	var fut workflow.Future
	hctx := withDelivery(ctx, ev.Traceparent)
	local := r.s.Handling == keys.HandlingLocal
	if r.s.Handling == "" {
		// An input from before Handling: runs started before local handling
		// existed keep regular activities. The version marker and the
		// search attribute upsert it records cost two history events per
		// run, which is why new runs say their handling in their input.
		local = workflow.GetVersion(ctx, "local-handling", workflow.DefaultVersion, 1) == 1 && !r.s.ActivityHandling
	}
	if !local {
		fut = workflow.ExecuteActivity(workflow.WithActivityOptions(hctx, workflow.ActivityOptions{
			StartToCloseTimeout: r.s.ActivityTimeout, Summary: keys.MarkdownText(ev.Key.String()), RetryPolicy: retry,
		}), onResource.HandleEvent, in)
	} else {
		// A local activity: one MarkerRecorded event, and consecutive rows
		// of a pass in the same workflow task, instead of six events per
		// row. Backoffs longer than a workflow task become timers.
		// Its schedule-to-close would default to one attempt's timeout:
		// give it room for the whole budget (attempts and backoffs).
		fut = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(hctx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    r.s.ActivityTimeout,
			ScheduleToCloseTimeout: time.Duration(remaining) * (r.s.ActivityTimeout + r.s.RetryMax),
			Summary:                keys.MarkdownText(ev.Key.String()), RetryPolicy: retry,
		}), onResource.HandleEvent, in)
	}
	var res activities.HandleResult
	err := fut.Get(ctx, &res)
	if _, away := databaseAway(err); away {
		return res, errDatabaseAway
	}
	if wait, limited := rateLimited(err); limited {
		return res, &rateLimitedError{wait: wait}
	}
	r.dbWaits = 0
	r.thisRun++
	r.carry.Handled++
	r.remember(ev.Key.String())
	if err == nil {
		r.last = fmt.Sprintf("%s → %s", ev.Key, res.Status)
		if res.RetryAt != nil && (r.nextDue == nil || res.RetryAt.Before(*r.nextDue)) {
			// Left pending (no handler in this worker): look again when due.
			due := *res.RetryAt
			r.nextDue = &due
		}
		for _, id := range res.Outbox {
			r.send(ctx, id, ev.Traceparent) // right after the commit that created them, in its delivery's trace
		}
		return res, nil
	}
	status, final := keys.StatusExhausted, lastError(err)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		status = keys.StatusFailed
	}
	r.last = fmt.Sprintf("%s → %s", ev.Key, status)
	workflow.GetLogger(ctx).Warn("event not handled", "event_key", ev.Key.String(), "status", status, "error", final)
	r.carry.Unhandled++
	r.markUnhandled(ctx)
	return activities.HandleResult{}, workflow.ExecuteLocalActivity(localOptions(ctx), onResource.MarkUnhandled,
		activities.MarkUnhandledInput{Key: ev.Key, Status: status, LastError: final}).Get(ctx, nil)
}

// markUnhandled publishes the count of exhausted or failed events.
func (r *resource) markUnhandled(ctx workflow.Context) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, SAExhaustedEvents.ValueSet(int64(r.carry.Unhandled))); err != nil {
		workflow.GetLogger(ctx).Warn("could not upsert ExhaustedEvents", "error", err.Error())
	}
}

// send dispatches one outbox row with SendOutbox in a workflow goroutine,
// so a slow or down destination delays only that effect, not the
// resource's next events. A row already being sent is not sent twice.
//
// tp is the traceparent of the delivery whose effect made the row ("" when
// unknown): the send's spans join that delivery's trace.
func (r *resource) send(ctx workflow.Context, id int64, tp string) {
	if r.inflight[id] {
		return
	}
	r.inflight[id] = true
	workflow.Go(withDelivery(ctx, tp), func(gctx workflow.Context) {
		defer delete(r.inflight, id)
		// spent counts the attempts that got past the database; attempts
		// that found it away wait for it and do not count.
		spent := 0
		var err error
		retry := true
		if r.s.Send == keys.SendLocalFirst {
			// The first attempt as a local activity: one marker, usually in
			// the workflow task that handled the event. A failed attempt
			// leaves the rest of the budget to regular activities, which
			// show the failing send as pending in the UI.
			err = r.sendLocal(gctx, id, tp)
			if err == nil {
				return
			}
			if _, away := databaseAway(err); !away {
				spent = 1
				var appErr *temporal.ApplicationError
				retry = r.s.OutboxBudget > 1 && (!errors.As(err, &appErr) || !appErr.NonRetryable())
			}
		}
		for waits := 0; retry; waits++ {
			actx := workflow.WithActivityOptions(gctx, workflow.ActivityOptions{
				StartToCloseTimeout: r.s.ActivityTimeout,
				Summary:             fmt.Sprintf("send outbox #%d", id),
				RetryPolicy: &temporal.RetryPolicy{
					InitialInterval: r.s.RetryInitial, BackoffCoefficient: 2, MaximumInterval: r.s.RetryMax,
					MaximumAttempts:        int32(max(1, r.s.OutboxBudget-spent)),
					NonRetryableErrorTypes: []string{activities.ErrDatabaseUnavailable},
				},
			})
			var res activities.SendResult
			err = workflow.ExecuteActivity(actx, onResource.SendOutbox, activities.SendInput{ID: id, Traceparent: tp}).Get(gctx, &res)
			attempt, away := databaseAway(err)
			if !away {
				break
			}
			spent += max(0, attempt-1)
			if serr := workflow.Sleep(gctx, databaseWait(r.s, waits)); serr != nil {
				return
			}
		}
		if err == nil {
			return
		}
		msg := lastError(err)
		workflow.GetLogger(gctx).Warn("outbox row not sent", "outbox_id", id, "error", msg)
		if ferr := workflow.ExecuteLocalActivity(localOptions(gctx), onResource.FailOutbox,
			activities.FailOutboxInput{ID: id, LastError: msg}).Get(gctx, nil); ferr != nil {
			workflow.GetLogger(gctx).Error("could not mark outbox row failed", "outbox_id", id, "error", ferr.Error())
		}
	})
}

// sendLocal makes one attempt at sending outbox row id as a local activity.
func (r *resource) sendLocal(ctx workflow.Context, id int64, tp string) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: r.s.ActivityTimeout,
		Summary:             fmt.Sprintf("send outbox #%d", id),
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res activities.SendResult
	return workflow.ExecuteLocalActivity(lctx, onResource.SendOutbox, activities.SendInput{ID: id, Traceparent: tp}).Get(ctx, &res)
}

// rateLimitedError: handling an event met a provider's spent rate limit
// (activities.ErrRateLimited); the pass stops and the row is looked at
// again after wait.
type rateLimitedError struct{ wait time.Duration }

func (e *rateLimitedError) Error() string { return "rate limited for " + e.wait.String() }

// rateLimited reports whether an activity failed with
// activities.ErrRateLimited, and the wait its details hold (a minute when
// they cannot be read).
func rateLimited(err error) (time.Duration, bool) {
	var appErr *temporal.ApplicationError
	if err == nil || !errors.As(err, &appErr) || appErr.Type() != activities.ErrRateLimited {
		return 0, false
	}
	var wait time.Duration
	if !appErr.HasDetails() || appErr.Details(&wait) != nil || wait <= 0 {
		wait = time.Minute
	}
	return wait, true
}

// errDatabaseAway: handling an event found the database away; the pass
// stops and the row is looked at again after databaseWait.
var errDatabaseAway = errors.New("database unavailable")

// databaseAway reports whether an activity failed because the database was
// away (activities.ErrDatabaseUnavailable), and the attempt that found it.
func databaseAway(err error) (attempt int, away bool) {
	var appErr *temporal.ApplicationError
	if err == nil || !errors.As(err, &appErr) || appErr.Type() != activities.ErrDatabaseUnavailable {
		return 0, false
	}
	var n int32
	if appErr.HasDetails() && appErr.Details(&n) == nil {
		attempt = int(n)
	}
	return attempt, true
}

// maxDatabaseWait caps the wait between two looks at a database that is away.
const maxDatabaseWait = 30 * time.Second

// databaseWait is the wait after the waits-th consecutive attempt that
// found the database away: doubling from RetryInitial, capped.
func databaseWait(s keys.Settings, waits int) time.Duration {
	d := max(s.RetryInitial, time.Second)
	for range min(waits, 16) {
		d *= 2
	}
	return min(d, maxDatabaseWait)
}

// awaitSends waits for the outbox sends in flight.
func (r *resource) awaitSends(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return len(r.inflight) == 0 })
}

// lastError is the innermost message of an activity failure.
func lastError(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out: " + timeout.Error()
	}
	return err.Error()
}

func (r *resource) remember(k string) {
	r.carry.Recent = append(r.carry.Recent, k)
	if n := len(r.carry.Recent); n > recentKeys {
		r.carry.Recent = r.carry.Recent[n-recentKeys:]
	}
}

// details sets the Temporal UI's current details for the operator. The UI
// renders them as Markdown, and the resource's parts, its events' keys and
// the errors that quote them come from the sender: each is escaped.
func (r *resource) details(ctx workflow.Context) {
	md := keys.MarkdownText
	res := r.in.Resource
	d := fmt.Sprintf("**%s %s** (%s, %s, %s)\n\nhandled: %d (this run %d, run #%d)",
		md(res.Kind), md(res.ID), md(res.Provider), md(res.Account), md(res.Environment), r.carry.Handled, r.thisRun, r.carry.Runs+1)
	more := ""
	if r.lastMore {
		more = "+"
	}
	d += fmt.Sprintf("\n\npending when last loaded: %d%s; outbox sends in flight: %d", r.lastLoad, more, len(r.inflight))
	if r.last != "" {
		d += "\n\nlast: " + md(r.last)
	}
	if r.nextDue != nil {
		d += "\n\nnext retry due: " + r.nextDue.UTC().Format(time.RFC3339)
	}
	workflow.SetCurrentDetails(ctx, d)
}
