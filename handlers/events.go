package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
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
	b, err := store.LoadPending(ctx, e.Store.Pool, r, limit)
	if err != nil {
		return b, err
	}
	b.Outbox, err = store.UnsentOutbox(ctx, e.Store.Pool, r.String(), limit)
	return b, err
}

// Handle runs the event's handler. A row that is no longer pending is
// skipped; a type without a route or a registered handler is marked
// ignored with the reason.
func (e *Events) Handle(ctx context.Context, k keys.Event) (ports.Handled, error) {
	ev, err := store.GetInboxEvent(ctx, e.Store.Pool, k)
	if errors.Is(err, store.ErrNotFound) {
		return ports.Handled{}, fmt.Errorf("%w: %w", ports.ErrNotFound, err)
	}
	if err != nil {
		return ports.Handled{}, err
	}
	if ev.Status != keys.StatusPending {
		return ports.Handled{Status: ev.Status, Skipped: true}, nil
	}
	route, _ := For(ev.Key.Provider, ev.EventType)
	h := e.Handlers[route.Name]
	if h == nil {
		note := fmt.Sprintf("no handler registered for %s event type %s", ev.Key.Provider, ev.EventType)
		if _, err := store.CompleteInboxEvent(ctx, e.Store.Pool, ev.Key, keys.StatusIgnored, note); err != nil {
			return ports.Handled{Route: route.Name}, err
		}
		return ports.Handled{Route: route.Name, Status: keys.StatusIgnored, Note: note}, nil
	}
	out, err := h.Handle(ctx, ev)
	return ports.Handled{Route: route.Name, Status: out.Status, Note: out.Note, BusinessKey: out.BusinessKey, Outbox: out.Outbox,
		EventType: ev.EventType, ReceivedAt: ev.ReceivedAt}, err
}

// RecordFailure notes a failed attempt on the row.
func (e *Events) RecordFailure(ctx context.Context, k keys.Event, lastErr string, next time.Time) error {
	return store.RecordInboxFailure(ctx, e.Store.Pool, k, lastErr, next)
}

// Stop records a failed or exhausted event, keeping attempts and the last
// error; a row completed elsewhere is left alone.
func (e *Events) Stop(ctx context.Context, k keys.Event, status, lastErr string) (bool, string, error) {
	changed, err := store.StopInboxEvent(ctx, e.Store.Pool, k, status, lastErr)
	if err != nil || !changed {
		return changed, "", err
	}
	route := ""
	if ev, err := store.GetInboxEvent(ctx, e.Store.Pool, k); err == nil {
		r, _ := For(ev.Key.Provider, ev.EventType)
		route = r.Name
	}
	return true, route, nil
}
