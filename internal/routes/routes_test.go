package routes_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/routes"
)

func TestExactBeatsPrefixAndLongerPrefixBeatsShorter(t *testing.T) {
	t.Parallel()
	var tb routes.Table
	require.NoError(t, tb.Add(routes.Route{Name: "subs", Provider: "stripe", Type: "customer.subscription.*"}))
	require.NoError(t, tb.Add(routes.Route{Name: "customers", Provider: "stripe", Type: "customer.*"}))
	require.NoError(t, tb.Add(routes.Route{Name: "deleted", Provider: "stripe", Type: "customer.subscription.deleted"}))

	for _, tt := range []struct{ typ, want string }{
		{"customer.subscription.deleted", "deleted"},
		{"customer.subscription.updated", "subs"},
		{"customer.created", "customers"},
	} {
		r, ok := tb.Route("stripe", tt.typ)
		require.True(t, ok, tt.typ)
		require.Equal(t, tt.want, r.Name, tt.typ)
	}
	_, ok := tb.Route("stripe", "invoice.paid")
	require.False(t, ok)
	_, ok = tb.Route("github", "customer.created")
	require.False(t, ok, "routes are per provider")
	require.Equal(t, []string{"customer.subscription.deleted"}, tb.ExactTypes("stripe"))
	require.Len(t, tb.Routes(), 3)
}

func TestAddRefusesConflictsAndBadRoutes(t *testing.T) {
	t.Parallel()
	var tb routes.Table
	require.NoError(t, tb.Add(routes.Route{Name: "credits", Provider: "stripe", Type: "invoice.paid"}))
	require.ErrorIs(t, tb.Add(routes.Route{Name: "other", Provider: "stripe", Type: "invoice.paid"}), routes.ErrConflict)
	require.NoError(t, tb.Add(routes.Route{Name: "all", Provider: "stripe", Type: "invoice.*"}))
	require.ErrorIs(t, tb.Add(routes.Route{Name: "all2", Provider: "stripe", Type: "invoice.*"}), routes.ErrConflict)
	require.ErrorContains(t, tb.Add(routes.Route{Name: "x", Provider: "stripe", Type: "in*voice"}), "may only end")
	require.ErrorContains(t, tb.Add(routes.Route{Provider: "stripe", Type: "a"}), "required")
	require.ErrorContains(t, tb.Add(routes.Route{Name: "n", Provider: "stripe", Type: "b", Budget: -1}), "budget")
	require.ErrorContains(t, tb.Add(routes.Route{Name: "n", Provider: "stripe", Type: "c", Resource: &routes.ResourceRule{Kind: "invoice"}}), "id path")
	var nilTable *routes.Table
	_, ok := nilTable.Route("stripe", "invoice.paid")
	require.False(t, ok, "a nil table routes nothing")
}

func TestLayeredDynamicRoutesYieldToHandlersUnlessTheyReplaceThem(t *testing.T) {
	t.Parallel()
	var static routes.Table
	require.NoError(t, static.Add(routes.Route{Name: "credits", Provider: "stripe", Type: "invoice.paid"}))
	require.NoError(t, static.Add(routes.Route{Name: "subs", Provider: "stripe", Type: "customer.subscription.*"}))
	now := time.Unix(1e9, 0)
	loads := 0
	dyn := []routes.Route{
		{Name: "charges", Provider: "stripe", Type: "charge.*", Forward: true},
		{Name: "shadow", Provider: "stripe", Type: "invoice.paid", Forward: true},
		{Name: "takeover", Provider: "stripe", Type: "customer.subscription.deleted", Forward: true, Replaces: true},
	}
	l := &routes.Layered{Static: &static, TTL: time.Minute, Now: func() time.Time { return now },
		Load: func(context.Context) ([]routes.Route, error) { loads++; return dyn, nil }}
	for _, tt := range []struct{ typ, want string }{
		{"charge.refunded", "charges"},
		{"invoice.paid", "credits"}, // a handler wins over a forward that does not replace it
		{"customer.subscription.deleted", "takeover"},
		{"customer.subscription.updated", "subs"},
	} {
		r, ok := l.Route("stripe", tt.typ)
		require.True(t, ok, tt.typ)
		require.Equal(t, tt.want, r.Name, tt.typ)
	}
	_, ok := l.Route("stripe", "payout.paid")
	require.False(t, ok)
	require.Equal(t, 1, loads, "one load per TTL")

	dyn = dyn[:0]
	now = now.Add(30 * time.Second)
	_, ok = l.Route("stripe", "charge.refunded")
	require.True(t, ok, "still cached")
	now = now.Add(31 * time.Second)
	_, ok = l.Route("stripe", "charge.refunded")
	require.False(t, ok, "reloaded after the TTL: the route is gone")
	require.Equal(t, 2, loads)

	failing := &routes.Layered{Static: &static, Load: func(context.Context) ([]routes.Route, error) { return nil, errors.New("db away") }}
	r, ok := failing.Route("stripe", "invoice.paid")
	require.True(t, ok, "no dynamic table: the static one alone")
	require.Equal(t, "credits", r.Name)
}

func TestOverlapsFindsEveryRouteATypeOrPrefixWouldShadow(t *testing.T) {
	t.Parallel()
	var tb routes.Table
	require.NoError(t, tb.Add(routes.Route{Name: "credits", Provider: "stripe", Type: "invoice.paid"}))
	require.NoError(t, tb.Add(routes.Route{Name: "subs", Provider: "stripe", Type: "customer.subscription.*"}))
	names := func(rs []routes.Route) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	require.Equal(t, []string{"credits"}, names(tb.Overlaps("stripe", "invoice.paid")))
	require.Equal(t, []string{"credits"}, names(tb.Overlaps("stripe", "invoice.*")))
	require.Equal(t, []string{"subs"}, names(tb.Overlaps("stripe", "customer.subscription.deleted")))
	require.Equal(t, []string{"subs"}, names(tb.Overlaps("stripe", "customer.*")))
	require.Empty(t, tb.Overlaps("stripe", "charge.refunded"))
	require.Empty(t, tb.Overlaps("github", "invoice.paid"))
}

// With OnMiss, a lookup that finds no forward route (or a paused one)
// reloads a table that old at once, so a route just added or enabled
// routes its next event; a hit, or a type the static table takes, never
// reloads. Each reload tells Applied about the routes that began to apply
// within AppliedWindow, before its table routes anything.
func TestLayeredReloadsOnAMissAndTellsAppliedOfYoungRoutes(t *testing.T) {
	t.Parallel()
	var static routes.Table
	require.NoError(t, static.Add(routes.Route{Name: "credits", Provider: "stripe", Type: "invoice.paid"}))
	now := time.Unix(1e9, 0)
	loads := 0
	var dyn []routes.Route
	var mu sync.Mutex // Applied runs again 2 s after each reload, on a timer
	var applied [][]string
	calls := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(applied)
	}
	l := &routes.Layered{Static: &static, TTL: 10 * time.Second, OnMiss: time.Second, Now: func() time.Time { return now },
		Load: func(context.Context) ([]routes.Route, error) { loads++; return dyn, nil },
		Applied: func(_ context.Context, young []routes.Route) {
			var names []string
			for _, r := range young {
				names = append(names, r.Name)
			}
			mu.Lock()
			applied = append(applied, names)
			mu.Unlock()
		}}
	_, ok := l.Route("stripe", "charge.refunded")
	require.False(t, ok)
	require.Equal(t, 1, loads)

	dyn = []routes.Route{
		{Name: "charges", Provider: "stripe", Type: "charge.*", Forward: true, Since: now, Age: 0},
		{Name: "old", Provider: "stripe", Type: "payout.*", Forward: true, Since: now.Add(-time.Hour), Age: time.Hour},
	}
	now = now.Add(500 * time.Millisecond)
	_, ok = l.Route("stripe", "charge.refunded")
	require.False(t, ok, "a miss within OnMiss of the last load does not reload")
	require.Equal(t, 1, loads)
	now = now.Add(500 * time.Millisecond)
	r, ok := l.Route("stripe", "charge.refunded")
	require.True(t, ok, "a miss a second after the load reloads and finds the new route")
	require.Equal(t, "charges", r.Name)
	require.Equal(t, 2, loads)
	require.Equal(t, []string{"charges"}, calls()[0], "only the young route is applied")

	now = now.Add(5 * time.Second)
	_, ok = l.Route("stripe", "charge.refunded")
	require.True(t, ok)
	_, ok = l.Route("stripe", "invoice.paid")
	require.True(t, ok)
	require.Equal(t, 2, loads, "hits and static types never reload before the TTL")

	dyn[0].Paused = true
	now = now.Add(10 * time.Second)
	r, _ = l.Route("stripe", "charge.refunded")
	require.True(t, r.Paused)
	require.Equal(t, 3, loads)
	dyn[0].Paused = false
	now = now.Add(time.Second)
	r, _ = l.Route("stripe", "charge.refunded")
	require.False(t, r.Paused, "a paused route reloads on lookup: enabled, it routes at once")
	require.Equal(t, 4, loads)
	require.GreaterOrEqual(t, len(calls()), 3, "every reload while the route is young tells Applied again")
	require.Eventually(t, func() bool { return len(calls()) >= 6 }, 10*time.Second, 50*time.Millisecond,
		"and each reload tells it once more a little later, with no request to reload")

	plain := &routes.Layered{Static: &static, TTL: 10 * time.Second, Now: func() time.Time { return now },
		Load: func(context.Context) ([]routes.Route, error) { loads++; return nil, nil }}
	before := loads
	for range 3 {
		now = now.Add(2 * time.Second)
		plain.Route("stripe", "charge.refunded")
	}
	require.Equal(t, before+1, loads, "without OnMiss, a miss waits for the TTL")
}
