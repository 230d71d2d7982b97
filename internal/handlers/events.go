package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Events implements ports.Events on the inbox: it routes each event to its
// handler in Handlers.
type Events struct {
	Store    *store.Store
	Handlers Set
}

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
	if errors.Is(err, store.ErrNotFound) {
		return ports.Handled{}, fmt.Errorf("%w: %w", ports.ErrNotFound, err)
	}
	if err != nil {
		return ports.Handled{}, err
	}
	if ev.Status != keys.StatusPending {
		return ports.Handled{Status: ev.Status, Skipped: true}, nil
	}
	p, _ := providers.Lookup(ev.Key.Provider)
	route, _ := For(ev.Key.Provider, providers.RouteType(p, ev.EventType))
	h := e.Handlers[route.Name]
	if h == nil {
		note := fmt.Sprintf("no handler registered for %s event type %s in this worker (route %q): left pending for a worker that has it",
			ev.Key.Provider, ev.EventType, route.Name)
		return ports.Handled{Route: route.Name, Status: keys.StatusPending, Note: note, NoHandler: true}, nil
	}
	out, err := h.Handle(ctx, ev)
	return ports.Handled{Route: route.Name, Status: out.Status, Note: out.Note, BusinessKey: out.BusinessKey, Outbox: out.Outbox,
		Divergences: out.Divergences, EventType: ev.EventType, ReceivedAt: ev.ReceivedAt}, err
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
		p, _ := providers.Lookup(ev.Key.Provider)
		r, _ := For(ev.Key.Provider, providers.RouteType(p, ev.EventType))
		route = r.Name
	}
	return true, route, nil
}

// portErr says so when err means the database is away (ports.Unavailable),
// so the activities wait for it instead of spending an event's budget.
func portErr(err error) error {
	if store.IsUnavailable(err) {
		return ports.Unavailable(err)
	}
	return err
}
