package engine_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
)

// TestEventsRoutesSkipsAndIgnores drives the resource activities' inbox
// port on a real database: an event runs its route's handler, a final row is
// skipped, a handler may complete a row as ignored, a type without a
// handler instance stays pending, a handler's permanent error keeps its
// route, and Stop reports the route.
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
	ev := &engine.Events{Store: st, Routes: routestest.Builtin(), Handlers: engine.Set{
		routestest.Credits: engine.HandlerFunc(func(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
			e := c.Event
			calls++
			if c.Route.Name != routestest.Credits {
				return engine.Outcome{}, errors.New("the call names another route: " + c.Route.Name)
			}
			if e.Key.EventID == "evt_ignored" {
				return engine.InPendingTx(ctx, st, e.Key, func(_ pgx.Tx, _ *inbox.StoredEvent) (engine.Outcome, error) {
					return engine.Outcome{Status: keys.StatusIgnored, Note: "a test-mode invoice of no one's"}, nil
				})
			}
			if e.Key.EventID == "evt_bad" {
				return engine.Outcome{}, fault.Permanent(errors.New("invoice belongs to another workspace"))
			}
			return engine.InPendingTx(ctx, st, e.Key, func(_ pgx.Tx, _ *inbox.StoredEvent) (engine.Outcome, error) {
				return engine.Outcome{Note: "granted", BusinessKey: "bk"}, nil
			})
		}),
	}}

	ok := insert("evt_ok", "invoice.paid")
	h, err := ev.Handle(ctx, ok)
	require.NoError(t, err)
	require.Equal(t, "invoice.paid", h.EventType)
	require.WithinDuration(t, time.Now(), h.ReceivedAt, time.Minute, "what the effect latency is measured from")
	h.EventType, h.ReceivedAt = "", time.Time{}
	require.Equal(t, ports.Handled{Route: routestest.Credits, Status: keys.StatusDone, Note: "granted", BusinessKey: "bk"}, h)
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
	require.Equal(t, routestest.Subscriptions, h.Route)
	require.Contains(t, h.Note, "no handler registered")
	row, err := inbox.GetInboxEvent(ctx, st.Pool, sub)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, row.Status)
	require.Nil(t, row.ProcessedAt)

	ignored := insert("evt_ignored", "invoice.paid")
	h, err = ev.Handle(ctx, ignored)
	require.NoError(t, err)
	require.Equal(t, keys.StatusIgnored, h.Status)
	row, err = inbox.GetInboxEvent(ctx, st.Pool, ignored)
	require.NoError(t, err)
	require.Equal(t, keys.StatusIgnored, row.Status, "the handler's ignored is the row's")
	require.NotNil(t, row.ProcessedAt)

	bad := insert("evt_bad", "invoice.paid")
	h, err = ev.Handle(ctx, bad)
	require.True(t, fault.IsPermanent(err))
	require.Equal(t, routestest.Credits, h.Route, "the route is known for the metrics even on failure")

	h, err = ev.Handle(ctx, keys.Event{Provider: "stripe", Account: "acct_ev", Environment: "test", EventID: "evt_none"})
	require.NoError(t, err)
	require.True(t, h.Missing, "an event not in the inbox is reported missing, not as an error a provider's 404 could be mistaken for")

	changed, route, err := ev.Stop(ctx, bad, keys.StatusFailed, "invoice belongs to another workspace")
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, routestest.Credits, route)
	changed, _, err = ev.Stop(ctx, ok, keys.StatusExhausted, "late")
	require.NoError(t, err)
	require.False(t, changed, "a completed row is left alone")
	row, err = inbox.GetInboxEvent(ctx, st.Pool, ok)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, row.Status)
}

// A route's own retry budget reaches the workflow with each pending row,
// and a handler that waits for another fact leaves its row pending with a
// growing backoff until its route's wait limit, then fails like any error.
func TestRouteBudgetsAndWaits(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	var tb routes.Table
	require.NoError(t, tb.Add(routes.Route{Name: "early", Provider: "stripe", Type: "credit_note.created", Budget: 3}))
	require.NoError(t, tb.Add(routes.Route{Name: "plain", Provider: "stripe", Type: "invoice.paid"}))
	now := time.Now()
	ev := &engine.Events{Store: st, Routes: &tb, WaitInitial: time.Minute, WaitMax: time.Hour,
		WaitLimits: map[string]time.Duration{"early": 2 * time.Hour}, Now: func() time.Time { return now },
		Handlers: engine.Set{"early": engine.HandlerFunc(func(context.Context, *engine.Call) (engine.Outcome, error) {
			return engine.Outcome{BusinessKey: "bk"}, fault.Wait("waiting for the grant", errors.New("no grant yet"))
		})}}
	r := keys.Resource{Provider: "stripe", Account: "acct_w", Environment: "test", Kind: "invoice", ID: "in_w"}
	for _, e := range []struct{ id, typ string }{{"evt_cn", "credit_note.created"}, {"evt_paid", "invoice.paid"}} {
		body := []byte(`{"id":"` + e.id + `"}`)
		sum := sha256.Sum256(body)
		_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{
			Key:          keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: e.id},
			EndpointSlug: "ep", WorkspaceID: "ws", EventType: e.typ, ResourceKind: r.Kind, ResourceID: r.ID, Payload: body, BodySHA256: sum[:]})
		require.NoError(t, err)
	}
	b, err := ev.LoadPending(ctx, r, 10)
	require.NoError(t, err)
	budgets := map[string]int{}
	for _, p := range b.Events {
		budgets[p.Key.EventID] = p.Budget
	}
	require.Equal(t, map[string]int{"evt_cn": 3, "evt_paid": 0}, budgets, "0: the workflow's own budget")

	k := keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: "evt_cn"}
	for attempt, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		h, err := ev.Handle(ctx, k)
		require.NoError(t, err, "a wait is not a failure")
		require.Equal(t, keys.StatusPending, h.Status)
		require.Equal(t, "bk", h.BusinessKey)
		require.Contains(t, h.Note, "waiting for the grant: no grant yet")
		row, err := inbox.GetInboxEvent(ctx, st.Pool, k)
		require.NoError(t, err)
		require.Equal(t, keys.StatusPending, row.Status)
		require.Equal(t, attempt+1, row.Attempts)
		require.WithinDuration(t, now.Add(want), row.NextAttemptAt, time.Second, "backoff %d", attempt)
	}
	now = now.Add(3 * time.Hour) // past the route's limit
	_, err = ev.Handle(ctx, k)
	require.Error(t, err)
	require.ErrorContains(t, err, "waited longer than 2h0m0s")
	require.False(t, fault.IsPermanent(err), "retried: it ends exhausted if the fact never comes")
}

// A handler that meets a provider's spent rate limit (GitHub's 403 with no
// requests remaining, a 429 with Retry-After) leaves its row pending and
// due, says how long the limit lasts (the workflow waits that long before
// the row, which no later row passes), and counts no attempt: a budget of
// one attempt survives any number of them. A rate limit with no reset, and any other retryable
// error, is an ordinary failed attempt.
func TestARateLimitWaitsForItsResetWithoutSpendingAnAttempt(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	var tb routes.Table
	require.NoError(t, tb.Add(routes.Route{Name: "issues", Provider: "github", Type: "issues.opened", Budget: 1}))
	now := time.Now()
	var answer error
	ev := &engine.Events{Store: st, Routes: &tb, Now: func() time.Time { return now },
		Handlers: engine.Set{"issues": engine.HandlerFunc(func(context.Context, *engine.Call) (engine.Outcome, error) {
			return engine.Outcome{}, answer
		})}}
	k := keys.Event{Provider: "github", Account: "7", Environment: "live", EventID: "guid-1"}
	body := []byte(`{"action":"opened"}`)
	sum := sha256.Sum256(body)
	_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws",
		EventType: "issues.opened", ResourceKind: "issue", ResourceID: "acme/widgets#12", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)

	primary := &providers.Error{Op: "fetch issue acme/widgets#12", Kind: providers.ErrRetryable, StatusCode: 403, Code: "rate_limit",
		Message: "API rate limit exceeded for installation ID 7.", RetryAfter: 40 * time.Minute, HasRetryAfter: true}
	tooMany := &providers.Error{Op: "fetch issue acme/widgets#12", Kind: providers.ErrRetryable, StatusCode: 429,
		RetryAfter: 3 * time.Hour, HasRetryAfter: true}
	for _, tt := range []struct {
		err  error
		wait time.Duration
	}{{primary, 40 * time.Minute}, {fmt.Errorf("the team's handler: %w", tooMany), time.Hour}} {
		answer = tt.err
		h, err := ev.Handle(ctx, k)
		require.NoError(t, err, "a rate limit is not a failure")
		require.Equal(t, keys.StatusPending, h.Status)
		require.Equal(t, "issues", h.Route)
		require.GreaterOrEqual(t, h.RateLimitedFor, tt.wait, "not asked before the reset (capped at an hour)")
		require.Less(t, h.RateLimitedFor, tt.wait+31*time.Second, "a little jitter past it")
		require.Contains(t, h.Note, "rate limited: waiting ")
		row, err := inbox.GetInboxEvent(ctx, st.Pool, k)
		require.NoError(t, err)
		require.Equal(t, keys.StatusPending, row.Status)
		require.Zero(t, row.Attempts, "no attempt counted")
		require.Equal(t, h.Note, row.LastError)
		require.False(t, row.NextAttemptAt.After(now.Add(time.Second)),
			"still due: a later row of the resource must not pass it (its workflow waits instead)")
	}

	// A rate limit that says no reset, and a plain 503: ordinary errors.
	for _, err := range []error{
		&providers.Error{Op: "fetch issue", Kind: providers.ErrRetryable, StatusCode: 429},
		&providers.Error{Op: "fetch issue", Kind: providers.ErrRetryable, StatusCode: 503, RetryAfter: time.Minute, HasRetryAfter: true},
	} {
		answer = err
		_, herr := ev.Handle(ctx, k)
		require.Error(t, herr, "%v", err)
		require.True(t, fault.IsRetryable(herr))
	}
}
