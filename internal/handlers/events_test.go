package handlers_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/handlers"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestForRoutesTheHandledTypesOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider, eventType string
		route               string
	}{
		{keys.ProviderStripe, "invoice.paid", handlers.RouteCredits},
		{keys.ProviderStripe, "customer.subscription.deleted", handlers.RouteSubscriptions},
		{keys.ProviderStandard, "feedback.created", handlers.RouteFeedbackAlerts},
		{keys.ProviderStripe, "charge.refunded", ""},
		{keys.ProviderStandard, "invoice.paid", ""},
		{keys.ProviderGitHub, "push", ""},
	}
	for _, tt := range tests {
		r, ok := handlers.For(tt.provider, tt.eventType)
		require.Equal(t, tt.route != "", ok, "%s %s", tt.provider, tt.eventType)
		require.Equal(t, tt.route, r.Name, "%s %s", tt.provider, tt.eventType)
	}
}

// TestEventsRoutesSkipsAndIgnores drives the resource activities' inbox
// port on a real database: an event runs its route's handler, a final row is
// skipped, a type without a handler instance stays pending, a
// handler's permanent error keeps its route, and Stop reports the route.
func TestEventsRoutesSkipsAndIgnores(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	insert := func(id, typ string) keys.Event {
		body := []byte(`{"id":"` + id + `"}`)
		sum := sha256.Sum256(body)
		k := keys.Event{Provider: "stripe", Account: "acct_ev", Environment: "test", EventID: id}
		_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws",
			EventType: typ, ResourceKind: "invoice", ResourceID: "in_" + id, Payload: body, BodySHA256: sum[:]})
		require.NoError(t, err)
		return k
	}
	var calls int
	ev := &handlers.Events{Store: st, Handlers: handlers.Set{
		handlers.RouteCredits: handlers.HandlerFunc(func(ctx context.Context, e *inbox.StoredEvent) (handlers.Outcome, error) {
			calls++
			if e.Key.EventID == "evt_bad" {
				return handlers.Outcome{}, fault.Permanent(errors.New("invoice belongs to another workspace"))
			}
			return handlers.InPendingTx(ctx, st, e.Key, func(_ pgx.Tx, _ *inbox.StoredEvent) (handlers.Outcome, error) {
				return handlers.Outcome{Note: "granted", BusinessKey: "bk"}, nil
			})
		}),
	}}

	ok := insert("evt_ok", "invoice.paid")
	h, err := ev.Handle(ctx, ok)
	require.NoError(t, err)
	require.Equal(t, "invoice.paid", h.EventType)
	require.WithinDuration(t, time.Now(), h.ReceivedAt, time.Minute, "what the effect latency is measured from")
	h.EventType, h.ReceivedAt = "", time.Time{}
	require.Equal(t, ports.Handled{Route: handlers.RouteCredits, Status: keys.StatusDone, Note: "granted", BusinessKey: "bk"}, h)
	h, err = ev.Handle(ctx, ok)
	require.NoError(t, err)
	require.True(t, h.Skipped)
	require.Equal(t, keys.StatusDone, h.Status)
	require.Equal(t, 1, calls, "a final row is not handled again")

	// Routed (the intake decided a handler takes it), but this worker has
	// no instance (a rollback, an intake deployed ahead of the workers):
	// never ignored, the row stays pending for a worker that has one.
	sub := insert("evt_sub", "customer.subscription.updated")
	h, err = ev.Handle(ctx, sub)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, h.Status)
	require.Equal(t, handlers.RouteSubscriptions, h.Route)
	require.Contains(t, h.Note, "no handler registered")
	row, err := inbox.GetInboxEvent(ctx, st.Pool, sub)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, row.Status)
	require.Nil(t, row.ProcessedAt)

	bad := insert("evt_bad", "invoice.paid")
	h, err = ev.Handle(ctx, bad)
	require.True(t, fault.IsPermanent(err))
	require.Equal(t, handlers.RouteCredits, h.Route, "the route is known for the metrics even on failure")

	h, err = ev.Handle(ctx, keys.Event{Provider: "stripe", Account: "acct_ev", Environment: "test", EventID: "evt_none"})
	require.NoError(t, err)
	require.True(t, h.Missing, "an event not in the inbox is reported missing, not as an error a provider's 404 could be mistaken for")

	changed, route, err := ev.Stop(ctx, bad, keys.StatusFailed, "invoice belongs to another workspace")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, handlers.RouteCredits, route)
	changed, _, err = ev.Stop(ctx, ok, keys.StatusExhausted, "late")
	require.NoError(t, err)
	require.False(t, changed, "a completed row is left alone")
	row, err = inbox.GetInboxEvent(ctx, st.Pool, ok)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, row.Status)
}
