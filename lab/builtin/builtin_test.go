package builtin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/lab/builtin"
)

// The machinery's tests route by routestest.Builtin; the shipped binary by
// what the domains register. They must be the same table.
func TestRoutestestIsTheDomainsTable(t *testing.T) {
	t.Parallel()
	b, err := builtin.Business()
	require.NoError(t, err)
	require.Equal(t, routestest.Builtin().Routes(), b.Routes.Routes())
	for _, r := range b.Routes.Routes() {
		require.Contains(t, b.Handlers, r.Name, "every route has its handler")
	}
	require.Contains(t, b.Reconcilers, "subscription")
	require.NotNil(t, b.Projections)
}
