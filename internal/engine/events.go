package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Events implements ports.Events on the inbox: it routes each event to its
// handler in Handlers by the route table.
type Events struct {
	Store *store.Store
	// Providers are the endpoints' API clients the handlers fetch with.
	Providers *EndpointProviders
	// Routes is the route table the intake recorded the events by.
	Routes routes.Router
	// Handlers by route name.
	Handlers Set
	// Forwarder sends the events of forward routes (routes.Route.Forward).
	Forwarder Handler
	// WaitInitial and WaitMax bound the backoff of an event that waits for
	// another fact (fault.WaitError); WaitLimits, by route name, how long
	// after receipt it may wait (0: DefaultWaitLimit). Past it the wait is
	// an ordinary retried error, which ends exhausted if the fact never comes.
	WaitInitial, WaitMax time.Duration
	WaitLimits           map[string]time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// DefaultWaitLimit is how long after receipt an event may wait for another
// fact when its route sets no limit.
const DefaultWaitLimit = 24 * time.Hour

var _ ports.Events = (*Events)(nil)

// LoadPending returns the resource's due pending inbox rows, oldest first,
// and its outbox rows due to be sent (two short queries).
func (e *Events) LoadPending(ctx context.Context, r keys.Resource, limit int) (keys.PendingBatch, error) {
	b, err := e.loadPending(ctx, r, limit)
	return b, portErr(err)
}

func (e *Events) loadPending(ctx context.Context, r keys.Resource, limit int) (keys.PendingBatch, error) {
	b, err := inbox.LoadPending(ctx, e.Store.Pool, r, limit)
	if err != nil {
		return b, err
	}
	for i := range b.Events {
		if rt, ok := e.route(r.Provider, b.Events[i].EventType); ok {
			b.Events[i].Budget = rt.Budget
		}
	}
	b.Outbox, err = outbox.UnsentOutbox(ctx, e.Store.Pool, r.String(), limit)
	return b, err
}

// Handle runs the event's handler. A row that is no longer pending is
// skipped. A type without a registered handler is left pending and reported
// NoHandler: the intake routed it (or the type had a route when it arrived),
// so a worker that has the handler must get it; ignoring it would lose it.
func (e *Events) Handle(ctx context.Context, k keys.Event) (ports.Handled, error) {
	out, err := e.handle(ctx, k)
	return out, portErr(err)
}

func (e *Events) handle(ctx context.Context, k keys.Event) (ports.Handled, error) {
	ev, err := inbox.GetInboxEvent(ctx, e.Store.Pool, k)
	if errors.Is(err, fault.ErrNotFound) {
		return ports.Handled{Missing: true}, nil
	}
	if err != nil {
		return ports.Handled{}, err
	}
	if ev.Status != keys.StatusPending {
		return ports.Handled{Status: ev.Status, Skipped: true}, nil
	}
	route, _ := e.route(ev.Key.Provider, ev.EventType)
	h := e.Handlers[route.Name]
	if route.Forward {
		h = e.Forwarder
		if route.Paused {
			note := fmt.Sprintf("forward route %s is disabled: held pending until it is enabled (hookinbox routes update %s --enable)",
				route.Name, route.Name)
			return ports.Handled{Route: route.Name, Status: keys.StatusPending, Note: note, NoHandler: true}, nil
		}
	}
	if h == nil {
		note := fmt.Sprintf("no handler registered for %s event type %s in this worker (route %q): left pending for a worker that has it",
			ev.Key.Provider, ev.EventType, route.Name)
		return ports.Handled{Route: route.Name, Status: keys.StatusPending, Note: note, NoHandler: true}, nil
	}
	provs := e.Providers
	if provs == nil {
		provs = &EndpointProviders{Store: e.Store}
	}
	out, err := h.Handle(ctx, &Call{Env: Env{Store: e.Store, Providers: provs}, Event: ev, Route: route})
	if wait, ok := fault.RateLimited(err); ok {
		return e.rateLimited(ctx, ev, route.Name, wait, err)
	}
	if w, ok := fault.AsWait(err); ok {
		bkey := out.BusinessKey
		out, err = e.wait(ctx, ev, route.Name, w)
		out.BusinessKey = bkey
	}
	hd := ports.Handled{Route: route.Name, Status: out.Status, Note: out.Note, BusinessKey: out.BusinessKey, Outbox: out.Outbox,
		Divergences: out.Divergences, EventType: ev.EventType, ReceivedAt: ev.ReceivedAt}
	hd.WokeOwn, hd.WokeOthers = splitWoken(ev.Resource(), out.Woken)
	hd.Completed = out.Completed
	return hd, err
}

// maxRateLimitWait caps how long a rate-limited event waits: a
// provider's limits reset within the hour (GitHub's every hour).
const maxRateLimitWait = time.Hour

// rateLimited reports an event whose handler met a provider's spent rate
// limit: nothing failed, and asking before the reset would only spend the
// budget again, so no attempt is counted. The row stays pending and due
// (a later row of its resource must not pass it: each resource's events
// keep their order), its last error says why it waits, and RateLimitedFor
// is the wait (plus a little jitter, so the rows of many resources do not
// all ask again in the same second): the resource's workflow stops its
// pass and comes back to this row then.
func (e *Events) rateLimited(ctx context.Context, ev *inbox.StoredEvent, route string, wait time.Duration, cause error) (ports.Handled, error) {
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	wait = min(max(wait, time.Second), maxRateLimitWait)
	wait += rand.N(min(wait/10, 30*time.Second) + time.Millisecond)
	note := fmt.Sprintf("rate limited: waiting %s for the provider's limit to reset, no attempt counted (%s)", wait.Round(time.Second), cause)
	if _, err := inbox.DeferInboxEvent(ctx, e.Store.Pool, ev.Key, note, now); err != nil {
		return ports.Handled{Route: route}, portErr(err)
	}
	return ports.Handled{Route: route, Status: keys.StatusPending, Note: note, RateLimitedFor: wait,
		EventType: ev.EventType, ReceivedAt: ev.ReceivedAt}, nil
}

// splitWoken tells the woken resources apart: own, the event's (its
// workflow, running now, loads them), and the others, each once.
func splitWoken(own keys.Resource, woken []keys.Resource) (wokeOwn bool, others []keys.Resource) {
	for _, r := range woken {
		switch {
		case r == own:
			wokeOwn = true
		case !slices.Contains(others, r):
			others = append(others, r)
		}
	}
	return wokeOwn, others
}

// RecordFailure notes a failed attempt on the row.
func (e *Events) RecordFailure(ctx context.Context, k keys.Event, lastErr string, next time.Time) error {
	return portErr(inbox.RecordInboxFailure(ctx, e.Store.Pool, k, lastErr, next))
}

// Defer leaves a pending row pending with reason, due again at next,
// without counting an attempt.
func (e *Events) Defer(ctx context.Context, k keys.Event, reason string, next time.Time) error {
	_, err := inbox.DeferInboxEvent(ctx, e.Store.Pool, k, reason, next)
	return err
}

// Stop records a failed or exhausted event, keeping attempts and the last
// error; a row completed elsewhere is left alone.
func (e *Events) Stop(ctx context.Context, k keys.Event, status, lastErr string) (bool, string, error) {
	changed, err := inbox.StopInboxEvent(ctx, e.Store.Pool, k, status, lastErr)
	if err != nil || !changed {
		return changed, "", portErr(err)
	}
	route := ""
	if ev, err := inbox.GetInboxEvent(ctx, e.Store.Pool, k); err == nil {
		r, _ := e.route(ev.Key.Provider, ev.EventType)
		route = r.Name
	}
	return true, route, nil
}

// route is the route of a provider's event type.
func (e *Events) route(provider, eventType string) (routes.Route, bool) {
	if e.Routes == nil {
		return routes.Route{}, false
	}
	// A provider may route a type as another (Stripe's thin v1.* types as
	// their snapshot type), as the intake did.
	p, _ := providers.Lookup(provider)
	return e.Routes.Route(provider, providers.RouteType(p, eventType))
}

// wait keeps an event that waits for another fact pending: the attempt is
// recorded with a backoff (the fact's own commit may wake it sooner,
// inbox.WakeResource) and the workflow moves on to the resource's next rows.
// Past the route's wait limit the wait is an ordinary retried error.
func (e *Events) wait(ctx context.Context, ev *inbox.StoredEvent, route string, w *fault.WaitError) (Outcome, error) {
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	limit := e.WaitLimits[route]
	if limit <= 0 {
		limit = DefaultWaitLimit
	}
	if now.Sub(ev.ReceivedAt) > limit {
		return Outcome{}, fmt.Errorf("waited longer than %s: %w", limit, w)
	}
	initial, maxWait := e.WaitInitial, e.WaitMax
	if initial <= 0 {
		initial = time.Second
	}
	if maxWait < initial {
		maxWait = max(initial, 5*time.Minute)
	}
	delay := maxWait
	if shift := ev.Attempts; shift < 30 {
		delay = min(initial<<shift, maxWait)
	}
	msg := w.Error()
	if err := inbox.RecordInboxFailure(ctx, e.Store.Pool, ev.Key, msg, now.Add(delay)); err != nil {
		return Outcome{}, err
	}
	return Outcome{Status: keys.StatusPending, Note: msg}, nil
}

// portErr says so when err means the database is away (fault.Unavailable),
// so the activities wait for it instead of spending an event's budget.
func portErr(err error) error {
	if store.IsUnavailable(err) {
		return fault.Unavailable(err)
	}
	return err
}
