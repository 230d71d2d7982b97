package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/internal/catalog"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/providers"
)

// Handler applies the business effect of one inbox event. It runs outside
// any transaction, may call the provider's API first, and then commits its
// effect together with the inbox row's completion in ONE transaction,
// normally through InPendingTx. Return Permanent(err) for an
// event that can never succeed; any other error is retried.
type Handler interface {
	Handle(ctx context.Context, ev *store.StoredEvent) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *store.StoredEvent) (Outcome, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev *store.StoredEvent) (Outcome, error) {
	return f(ctx, ev)
}

// Outcome is what a handler did.
type Outcome struct {
	// Status the row ended in: done or ignored, or the status it already
	// had when another attempt completed it first.
	Status string
	// Note says what happened, for the row and the logs.
	Note string
	// BusinessKey names the business operation the event mapped to (a
	// grant, a projection, an alert), for the logs.
	BusinessKey string
	// Outbox lists the outbox rows the effect produced, to be sent after
	// the commit.
	Outbox []int64
}

// Reconciler compares one resource with the provider and corrects the
// local state, recording divergences.
type Reconciler interface {
	Reconcile(ctx context.Context, r keys.Resource, reason string) (ReconcileOutcome, error)
}

// Activities holds what the activities need. Its exported methods are the
// activities; register it with worker.RegisterActivity.
type Activities struct {
	Store    *store.Store
	Handlers map[string]Handler
	// Reconcilers by resource kind (e.g. "subscription").
	Reconcilers map[string]Reconciler
	Doorbell    keys.Doorbell
	// Providers gives the provider API client of an endpoint (shared with
	// the handlers, so clients are cached once).
	Providers Providers
	// Outbound resolves outbox rows to senders; Policies maps operation
	// classes to their uncertain-outcome policy (over DefaultPolicies).
	Outbound Destinations
	Policies map[string]string
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// RetryInitial and RetryMax bound the jittered backoff between attempts.
	RetryInitial time.Duration
	RetryMax     time.Duration
}

// permanentError marks an error no retry can fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so the event fails at once instead of being retried.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// LoadPendingInput names the resource whose due rows to load.
type LoadPendingInput struct {
	Resource keys.Resource `json:"resource"`
	Limit    int           `json:"limit"`
}

// LoadPending returns the resource's due pending inbox rows, oldest first,
// and its outbox rows due to be sent (a local activity: two short queries).
func (a *Activities) LoadPending(ctx context.Context, in LoadPendingInput) (keys.PendingBatch, error) {
	b, err := store.LoadPending(ctx, a.Store.Pool, in.Resource, in.Limit)
	if err != nil {
		return b, err
	}
	b.Outbox, err = store.UnsentOutbox(ctx, a.Store.Pool, in.Resource.String(), in.Limit)
	return b, err
}

// HandleInput names the event to handle.
type HandleInput struct {
	Key keys.Event `json:"key"`
	// PriorAttempts were made before this activity was scheduled (earlier
	// runs); they count against the budget and the backoff.
	PriorAttempts int `json:"prior_attempts"`
}

// HandleResult is the row's status after the attempt.
type HandleResult struct {
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
	// Skipped: the row was already final (a done or ignored row is skipped).
	Skipped bool `json:"skipped,omitempty"`
	// Outbox rows produced by the effect, sent next by the workflow.
	Outbox []int64 `json:"outbox,omitempty"`
}

// HandleEvent runs the event's business handler. A row that is no longer
// pending is skipped; a type without a registered handler is marked ignored
// with the reason. A failed attempt is recorded on the row (attempts, last
// error, next attempt) and returned with a jittered next retry delay.
func (a *Activities) HandleEvent(ctx context.Context, in HandleInput) (HandleResult, error) {
	ev, err := store.GetInboxEvent(ctx, a.Store.Pool, in.Key)
	if errors.Is(err, store.ErrNotFound) {
		return HandleResult{}, temporal.NewNonRetryableApplicationError("event is not in the inbox", "InvalidEvent", err)
	}
	if err != nil {
		return HandleResult{}, a.retry(ctx, in, "", err)
	}
	if ev.Status != keys.StatusPending {
		return HandleResult{Status: ev.Status, Skipped: true}, nil
	}
	name, _ := catalog.HandlerFor(ev.Key.Provider, ev.EventType)
	h := a.Handlers[name]
	if h == nil {
		note := fmt.Sprintf("no handler registered for %s event type %s", ev.Key.Provider, ev.EventType)
		if _, err := store.CompleteInboxEvent(ctx, a.Store.Pool, ev.Key, keys.StatusIgnored, note); err != nil {
			return HandleResult{}, a.retry(ctx, in, name, err)
		}
		a.count(name, keys.StatusIgnored)
		return HandleResult{Status: keys.StatusIgnored, Note: note}, nil
	}
	out, err := h.Handle(ctx, ev)
	if err != nil {
		if IsPermanent(err) {
			a.record(ctx, ev.Key, err, time.Now())
			a.count(name, keys.StatusFailed)
			return HandleResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidEvent", err)
		}
		return HandleResult{}, a.retry(ctx, in, name, err)
	}
	a.count(name, out.Status)
	a.log(ctx).Info("event handled", "event_key", ev.Key.String(), "business_key", out.BusinessKey, "handler", name,
		"outcome", out.Status, "note", out.Note)
	return HandleResult{Status: out.Status, Note: out.Note, Outbox: out.Outbox}, nil
}

// retry records the failed attempt and returns the error with the next
// delay: full-jitter exponential backoff from the total attempt count,
// raised to the provider's Retry-After when it gave one.
func (a *Activities) retry(ctx context.Context, in HandleInput, handler string, err error) error {
	attempt := in.PriorAttempts + int(activity.GetInfo(ctx).Attempt)
	delay := fullJitter(attempt, a.RetryInitial, a.RetryMax)
	if d, ok := providers.RetryAfter(err); ok && d > delay {
		delay = d
	}
	a.record(ctx, in.Key, err, time.Now().Add(delay))
	if a.Metrics != nil {
		a.Metrics.EventRetries.WithLabelValues(orUnknown(handler)).Inc()
	}
	a.log(ctx).Warn("event attempt failed", "event_key", in.Key.String(), "handler", handler,
		"attempt", attempt, "next_retry_in", delay.String(), "error", err.Error())
	return temporal.NewApplicationErrorWithOptions(err.Error(), "HandlerError",
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
}

// record notes a failed attempt on the row; its own failure is only logged
// (the retry policy carries on either way).
func (a *Activities) record(ctx context.Context, k keys.Event, err error, next time.Time) {
	if rerr := store.RecordInboxFailure(ctx, a.Store.Pool, k, err.Error(), next); rerr != nil {
		a.log(ctx).Error("could not record a failed attempt", "event_key", k.String(), "error", rerr.Error())
	}
}

// InPendingTx runs fn in one transaction holding the event's inbox row
// locked, only if the row is still pending, and completes the row with the
// status fn returns in the same transaction. If the row is already final
// (another attempt won), fn is not called and that status is returned: a
// retry never overwrites a completion committed elsewhere.
func InPendingTx(ctx context.Context, st *store.Store, k keys.Event, fn func(tx pgx.Tx, ev *store.StoredEvent) (Outcome, error)) (Outcome, error) {
	var out Outcome
	err := st.Tx(ctx, func(tx pgx.Tx) error {
		ev, err := store.LockInboxEvent(ctx, tx, k)
		if err != nil {
			return err
		}
		if ev.Status != keys.StatusPending {
			out = Outcome{Status: ev.Status, Note: "already " + ev.Status}
			return nil
		}
		out, err = fn(tx, ev)
		if err != nil {
			return err
		}
		if out.Status == "" {
			out.Status = keys.StatusDone
		}
		_, err = store.CompleteInboxEvent(ctx, tx, k, out.Status, out.Note)
		return err
	})
	return out, err
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
func (a *Activities) ReconcileResource(ctx context.Context, in ReconcileInput) (ReconcileOutcome, error) {
	rec := a.Reconcilers[in.Resource.Kind]
	if rec == nil {
		return ReconcileOutcome{Note: "no reconciler for kind " + in.Resource.Kind}, nil
	}
	reason := strings.Join(in.Reasons, "; ")
	out, err := rec.Reconcile(ctx, in.Resource, reason)
	if err != nil {
		if IsPermanent(err) {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidReconcile", err)
		}
		attempt := int(activity.GetInfo(ctx).Attempt)
		delay := fullJitter(attempt, a.RetryInitial, a.RetryMax)
		if d, ok := providers.RetryAfter(err); ok && d > delay {
			delay = d
		}
		return out, temporal.NewApplicationErrorWithOptions(err.Error(), "ReconcileError",
			temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
	}
	if len(out.Divergences) > 0 {
		if a.Metrics != nil {
			for _, d := range out.Divergences {
				a.Metrics.Divergences.WithLabelValues(in.Resource.Kind, d.Field).Inc()
			}
		}
		a.log(ctx).Warn("reconciliation found divergences", "resource", in.Resource.String(), "reason", reason,
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
func (a *Activities) MarkUnhandled(ctx context.Context, in MarkUnhandledInput) error {
	changed, err := store.StopInboxEvent(ctx, a.Store.Pool, in.Key, in.Status, in.LastError)
	if err != nil {
		return err
	}
	if changed {
		name := ""
		if ev, err := store.GetInboxEvent(ctx, a.Store.Pool, in.Key); err == nil {
			name, _ = catalog.HandlerFor(ev.Key.Provider, ev.EventType)
		}
		if in.Status == keys.StatusExhausted {
			a.count(name, keys.StatusExhausted)
		}
		a.log(ctx).Warn("event stopped", "event_key", in.Key.String(), "status", in.Status, "last_error", in.LastError)
	}
	return nil
}

// SweepInput configures SweepInbox.
type SweepInput struct {
	OlderThan time.Duration `json:"older_than"`
	Limit     int           `json:"limit"`
}

// SweepResult counts what a sweep did.
type SweepResult struct {
	Stale     int `json:"stale"`
	Signalled int `json:"signalled"`
	Failed    int `json:"failed"`
}

// SweepInbox signals the workflows of resources whose pending rows have
// been due for longer than OlderThan (SPEC R16).
func (a *Activities) SweepInbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	stale, err := store.StalePendingResources(ctx, a.Store.Pool, in.OlderThan, limit)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Stale: len(stale)}
	for i, r := range stale {
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, "sweeper"); err != nil {
			res.Failed++
			a.log(ctx).Warn("sweeper could not signal", "resource", r.String(), "error", err.Error())
		} else {
			res.Signalled++
			if a.Metrics != nil {
				a.Metrics.SweepResignals.Inc()
			}
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	if res.Stale > 0 {
		a.log(ctx).Info("sweeper re-signalled stale resources", "stale", res.Stale, "signalled", res.Signalled, "failed", res.Failed)
	}
	if res.Failed > 0 && res.Signalled == 0 {
		return res, fmt.Errorf("sweeper signalled none of %d stale resources", res.Stale)
	}
	return res, nil
}

func (a *Activities) count(handler, status string) {
	if a.Metrics != nil {
		a.Metrics.EventsHandled.WithLabelValues(orUnknown(handler), status).Inc()
	}
}

func (a *Activities) log(ctx context.Context) *slog.Logger {
	l := a.Logger
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
