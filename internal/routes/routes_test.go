package routes_test

import (
	"testing"

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
