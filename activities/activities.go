package activities

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/tracing"
)

// ResourceActivities are the activities of the resource task queue, called
// by ResourceWorkflow: LoadPending, HandleEvent, MarkUnhandled,
// ReconcileResource, SendOutbox and FailOutbox. Register them with
// worker.RegisterActivity on that queue only.
type ResourceActivities struct {
	Events ports.Events
	// Reconcilers by resource kind (e.g. "subscription").
	Reconcilers map[string]ports.Reconciler
	// Outbox resolves and records outbox rows; Policies maps operation
	// classes to their uncertain-outcome policy (unknown: held for review).
	Outbox   ports.Outbox
	Policies map[string]string
	// Doorbell rings the workflows of other resources whose waiting rows
	// an effect woke (nil: the sweeper rings them).
	Doorbell keys.Doorbell
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// RetryInitial and RetryMax bound the jittered backoff between attempts.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// Tracing, when set, traces HandleEvent and SendOutbox under the
	// delivery's trace (the traceparent the intake stored with the row),
	// and the resource worker adds the Temporal SDK's tracing interceptor
	// on it (worker.New); nil: tracing off, no span.
	Tracing trace.TracerProvider
}

// ReconcileOutcome is what reconciling one resource found and did.
type ReconcileOutcome = ports.ReconcileOutcome

// LoadPendingInput names the resource whose due rows to load.
type LoadPendingInput struct {
	Resource keys.Resource `json:"resource"`
	Limit    int           `json:"limit"`
}

// LoadPending returns the resource's due pending inbox rows, oldest first,
// and its outbox rows due to be sent (a local activity: two short queries).
func (a *ResourceActivities) LoadPending(ctx context.Context, in LoadPendingInput) (keys.PendingBatch, error) {
	return a.Events.LoadPending(ctx, in.Resource, in.Limit)
}

// HandleInput names the event to handle.
type HandleInput struct {
	Key keys.Event `json:"key"`
	// PriorAttempts were made before this activity was scheduled (earlier
	// runs); they count against the budget and the backoff.
	PriorAttempts int `json:"prior_attempts"`
	// Traceparent is the row's stored W3C traceparent (keys.PendingEvent):
	// the handling span's parent. Empty in older histories and when
	// tracing was off at the intake.
	Traceparent string `json:"traceparent,omitempty"`
}

// HandleResult is the row's status after the attempt.
type HandleResult struct {
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
	// Skipped: the row was already final (a done or ignored row is skipped).
	Skipped bool `json:"skipped,omitempty"`
	// Outbox rows produced by the effect, sent next by the workflow.
	Outbox []int64 `json:"outbox,omitempty"`
	// RetryAt is set when the row was left pending (no handler in this
	// worker): it is due again then, and the workflow wakes for it.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Woke: the effect's commit made rows of this resource due now (a
	// credit note waiting for the grant this event made, Tx.Wake): the
	// workflow loads again before it completes or continues as new, so
	// they run in this run rather than at a sweeper's ring.
	Woke bool `json:"woke,omitempty"`
	// Completed are the event keys of other pending rows of the resource
	// the effect's commit completed (the events a coalesced forward
	// covered): the workflow skips them in this pass instead of running an
	// activity that would find each one done. Absent from results recorded
	// before it existed, which therefore replay as they ran.
	Completed []string `json:"completed,omitempty"`
}

// StatusNoHandler is the hookinbox_events_handled_total status of an event
// left pending because this worker has no handler for its routed type.
const StatusNoHandler = "no_handler"

// noHandlerRecheck bounds how long a row without a handler waits before it
// is looked at again: short enough that a worker with the handler picks it
// up soon after it is deployed, and that the no_handler count keeps rising
// (the alert) while the condition lasts.
const noHandlerRecheck = 5 * time.Minute

// HandleEvent runs the event's business handler. A row that is no longer
// pending is skipped. A routed type without a registered handler here is
// never ignored: the row stays pending with the reason as its last error,
// due again after a jittered delay (RetryAt; no attempt counted), logged as
// an error and counted under status no_handler. A failed attempt is
// recorded on the row (attempts, last error, next attempt) and returned
// with a jittered next retry delay; one that found the database away is
// not recorded (ErrDatabaseUnavailable: a wait).
func (a *ResourceActivities) HandleEvent(ctx context.Context, in HandleInput) (HandleResult, error) {
	if a.Tracing == nil {
		return a.handleEvent(ctx, in)
	}
	ctx, span := tracing.StartUnder(ctx, a.Tracing.Tracer(tracing.Scope), in.Traceparent, "handle event",
		trace.WithAttributes(attribute.String("hookinbox.event_key", in.Key.String()),
			attribute.Int("hookinbox.prior_attempts", in.PriorAttempts)))
	res, err := a.handleEvent(ctx, in)
	if res.Status != "" {
		span.SetAttributes(attribute.String("hookinbox.status", res.Status))
	}
	tracing.Fail(span, err)
	span.End()
	return res, err
}

func (a *ResourceActivities) handleEvent(ctx context.Context, in HandleInput) (HandleResult, error) {
	out, err := a.Events.Handle(ctx, in.Key)
	if err == nil && out.Missing {
		return HandleResult{}, temporal.NewNonRetryableApplicationError("event is not in the inbox", "InvalidEvent", nil)
	}
	if fault.IsUnavailable(err) {
		// Nothing to record (the database is what is away) and nothing
		// spent: the workflow waits and the row stays pending.
		return HandleResult{}, a.databaseAway(ctx, err, "event_key", in.Key.String())
	}
	if err != nil {
		if fault.IsPermanent(err) {
			a.record(ctx, in.Key, err, time.Now())
			a.count(out.Route, keys.StatusFailed)
			return HandleResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidEvent", err)
		}
		return HandleResult{}, a.retry(ctx, in, out.Route, err)
	}
	if out.Skipped {
		return HandleResult{Status: out.Status, Skipped: true}, nil
	}
	if out.NoHandler {
		return a.noHandler(ctx, in.Key, out)
	}
	if out.RateLimitedFor > 0 {
		// Not a failure and no attempt: the workflow stops its pass and
		// comes back to this row, still first, once the limit resets.
		logger(ctx, a.Logger).Info("event rate limited at the provider", "event_key", in.Key.String(), "handler", out.Route,
			"wait", out.RateLimitedFor.String())
		return HandleResult{}, temporal.NewApplicationErrorWithOptions(out.Note, ErrRateLimited,
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{out.RateLimitedFor}})
	}
	if out.Status == keys.StatusPending {
		// The handler chose to wait (a credit note before its invoice's
		// grant): the row holds its next attempt; the workflow moves on.
		if a.Metrics != nil {
			a.Metrics.EventRetries.WithLabelValues(orUnknown(out.Route)).Inc()
		}
		logger(ctx, a.Logger).Info("event waits", "event_key", in.Key.String(), "business_key", out.BusinessKey,
			"handler", out.Route, "note", out.Note)
		return HandleResult{Status: out.Status, Note: out.Note}, nil
	}
	if out.Status == keys.StatusDone && a.Metrics != nil && !out.ReceivedAt.IsZero() {
		// After the handler's commit: receipt to effect, whatever the
		// retries, waits and replays in between.
		a.Metrics.EffectLatency.WithLabelValues(in.Key.Provider, out.EventType).Observe(time.Since(out.ReceivedAt).Seconds())
	}
	a.count(out.Route, out.Status)
	if a.Metrics != nil {
		for _, d := range out.Divergences {
			a.Metrics.SameVersionDivergences.WithLabelValues(in.Key.Provider, d.Field).Inc()
		}
	}
	logger(ctx, a.Logger).Info("event handled", "event_key", in.Key.String(), "business_key", out.BusinessKey, "handler", out.Route,
		"outcome", out.Status, "note", out.Note)
	a.ringWoken(ctx, in.Key, out.WokeOthers)
	res := HandleResult{Status: out.Status, Note: out.Note, Outbox: out.Outbox, Woke: out.WokeOwn}
	for _, k := range out.Completed {
		res.Completed = append(res.Completed, k.String())
	}
	return res, nil
}

// ringWoken rings the workflows of the other resources whose waiting rows
// the effect of k woke, after its commit. A ring that fails is logged: the
// rows are due, and the sweeper rings their resource.
func (a *ResourceActivities) ringWoken(ctx context.Context, k keys.Event, woken []keys.Resource) {
	if a.Doorbell == nil {
		return
	}
	for _, r := range woken {
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, k.String()); err != nil {
			logger(ctx, a.Logger).Warn("could not ring a resource whose rows an effect woke; the sweeper will", "event_key", k.String(),
				"resource", r.String(), "error", err.Error())
		}
	}
}

// noHandler leaves the row pending and due again after a delay between
// half and all of min(RetryMax, noHandlerRecheck), so rows of many
// resources do not come due together and the workflow does not loop on it.
func (a *ResourceActivities) noHandler(ctx context.Context, k keys.Event, out ports.Handled) (HandleResult, error) {
	ceiling := max(min(a.RetryMax, noHandlerRecheck), a.RetryInitial, time.Second)
	delay := ceiling/2 + fullJitter(1, ceiling/2, ceiling/2)
	next := time.Now().Add(delay)
	if err := a.Events.Defer(ctx, k, out.Note, next); err != nil {
		return HandleResult{}, err
	}
	a.count(out.Route, StatusNoHandler)
	logger(ctx, a.Logger).Error("no handler registered for a routed event type: left pending", "event_key", k.String(),
		"handler", out.Route, "next_look_in", delay.Round(time.Second).String(), "note", out.Note)
	return HandleResult{Status: keys.StatusPending, Note: out.Note, RetryAt: &next}, nil
}

// retry records the failed attempt and returns the error with the next
// delay: full-jitter exponential backoff from the total attempt count,
// raised to the provider's Retry-After when it gave one.
func (a *ResourceActivities) retry(ctx context.Context, in HandleInput, handler string, err error) error {
	attempt := in.PriorAttempts + int(activity.GetInfo(ctx).Attempt)
	delay := nextDelay(attempt, a.RetryInitial, a.RetryMax, err)
	a.record(ctx, in.Key, err, time.Now().Add(delay))
	if a.Metrics != nil {
		a.Metrics.EventRetries.WithLabelValues(orUnknown(handler)).Inc()
	}
	logger(ctx, a.Logger).Warn("event attempt failed", "event_key", in.Key.String(), "handler", handler,
		"attempt", attempt, "next_retry_in", delay.String(), "error", err.Error())
	return temporal.NewApplicationErrorWithOptions(err.Error(), "HandlerError",
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
}

// databaseAway is the error of an attempt that found the database away:
// type ErrDatabaseUnavailable, the attempt number as its details, and a
// capped backoff in case the caller's retry policy predates the type.
func (a *ResourceActivities) databaseAway(ctx context.Context, err error, keyvals ...any) error {
	attempt := activity.GetInfo(ctx).Attempt
	logger(ctx, a.Logger).With(keyvals...).Warn("database unavailable; the workflow waits for it", "attempt", attempt, "error", err.Error())
	delay := fullJitter(int(attempt), a.RetryInitial, min(a.RetryMax, 30*time.Second))
	return temporal.NewApplicationErrorWithOptions(err.Error(), ErrDatabaseUnavailable,
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err, Details: []any{attempt}})
}

// record notes a failed attempt on the row; its own failure is only logged
// (the retry policy carries on either way).
func (a *ResourceActivities) record(ctx context.Context, k keys.Event, err error, next time.Time) {
	if rerr := a.Events.RecordFailure(ctx, k, err.Error(), next); rerr != nil {
		logger(ctx, a.Logger).Error("could not record a failed attempt", "event_key", k.String(), "error", rerr.Error())
	}
}

// ReconcileInput asks to reconcile one resource.
type ReconcileInput struct {
	Resource keys.Resource `json:"resource"`
	Reasons  []string      `json:"reasons"`
}

// ReconcileResource reconciles a resource with its provider (run by its own
// ResourceWorkflow, so it never races the resource's events). Kinds without
// a reconciler (invoices are facts, recovered by the facts backfill;
// feedback has no API) are reported as such.
func (a *ResourceActivities) ReconcileResource(ctx context.Context, in ReconcileInput) (ReconcileOutcome, error) {
	rec := a.Reconcilers[in.Resource.Kind]
	if rec == nil {
		return ReconcileOutcome{Note: "no reconciler for kind " + in.Resource.Kind}, nil
	}
	reason := strings.Join(in.Reasons, "; ")
	out, err := rec.Reconcile(ctx, in.Resource, reason)
	if err != nil {
		if fault.IsPermanent(err) {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidReconcile", err)
		}
		delay := nextDelay(int(activity.GetInfo(ctx).Attempt), a.RetryInitial, a.RetryMax, err)
		return out, temporal.NewApplicationErrorWithOptions(err.Error(), "ReconcileError",
			temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
	}
	if len(out.Divergences) > 0 {
		if a.Metrics != nil {
			for _, d := range out.Divergences {
				a.Metrics.Divergences.WithLabelValues(in.Resource.Kind, d.Field).Inc()
			}
		}
		logger(ctx, a.Logger).Warn("reconciliation found divergences", "resource", in.Resource.String(), "reason", reason,
			"divergences", len(out.Divergences), "note", out.Note)
	}
	return out, nil
}

// MarkUnhandledInput ends retrying an event.
type MarkUnhandledInput struct {
	Key       keys.Event `json:"key"`
	Status    string     `json:"status"`
	LastError string     `json:"last_error"`
}

// MarkUnhandled records a failed (validation) or exhausted (budget spent)
// event, keeping attempts and the last error; a row completed elsewhere is
// left alone.
func (a *ResourceActivities) MarkUnhandled(ctx context.Context, in MarkUnhandledInput) error {
	changed, route, err := a.Events.Stop(ctx, in.Key, in.Status, in.LastError)
	if err != nil {
		return err
	}
	if changed {
		if in.Status == keys.StatusExhausted {
			a.count(route, keys.StatusExhausted)
		}
		logger(ctx, a.Logger).Warn("event stopped", "event_key", in.Key.String(), "status", in.Status, "last_error", in.LastError)
	}
	return nil
}

func (a *ResourceActivities) count(handler, status string) {
	if a.Metrics != nil {
		a.Metrics.EventsHandled.WithLabelValues(orUnknown(handler), status).Inc()
	}
}

// nextDelay is the full-jitter backoff of attempt, raised to the
// provider's Retry-After when err carries one.
func nextDelay(attempt int, initial, limit time.Duration, err error) time.Duration {
	delay := fullJitter(attempt, initial, limit)
	if d, ok := fault.RetryAfter(err); ok && d > delay {
		delay = d
	}
	return delay
}

// logger is l (or the default logger) with the activity's workflow and type.
func logger(ctx context.Context, l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		l = l.With("workflow_id", info.WorkflowExecution.ID, "activity", info.ActivityType.Name)
	}
	return l
}

func orUnknown(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ErrDatabaseUnavailable is the error type of an attempt that found the
// database away (fault.IsUnavailable). It is not a failure of the work:
// the workflow lists it as non-retryable in the retry policy, waits for the
// database with capped backoff and tries again, without counting the
// attempt against the event's or the outbox row's budget. Its details hold
// the attempt number that found the database away.
const ErrDatabaseUnavailable = "DatabaseUnavailable"

// ErrRateLimited is the error type of an attempt whose handler met a
// provider's spent rate limit. It is not a failure and counts no attempt:
// the workflow stops its pass (the row stays first: its resource's order
// holds) and comes back after the wait its details hold.
const ErrRateLimited = "RateLimited"
