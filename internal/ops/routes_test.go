package ops_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
)

const routeSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func chargeRoute() ops.RouteSpec {
	return ops.RouteSpec{Name: "charges", Provider: "stripe", EventType: "charge.*", URL: "https://svc.example.com/hooks?token=T0KEN",
		Secret: routeSecret, OperationKeyPath: "data.object.id"}
}

func TestAddRouteRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, mut := range map[string]func(*ops.RouteSpec){
		"bad name":                       func(s *ops.RouteSpec) { s.Name = "Charges!" },
		"unknown provider":               func(s *ops.RouteSpec) { s.Provider = "paypal" },
		"empty type":                     func(s *ops.RouteSpec) { s.EventType = "" },
		"star alone":                     func(s *ops.RouteSpec) { s.EventType = "*" },
		"star inside":                    func(s *ops.RouteSpec) { s.EventType = "charge.*.refunded" },
		"not a URL":                      func(s *ops.RouteSpec) { s.URL = "svc.example.com/hooks" },
		"ftp":                            func(s *ops.RouteSpec) { s.URL = "ftp://svc.example.com/" },
		"credentials in URL":             func(s *ops.RouteSpec) { s.URL = "https://user:pw@svc.example.com/" },
		"plain http":                     func(s *ops.RouteSpec) { s.URL = "http://svc.example.com/" },
		"loopback":                       func(s *ops.RouteSpec) { s.URL = "https://127.0.0.1:9000/" },
		"localhost":                      func(s *ops.RouteSpec) { s.URL = "https://localhost:9000/" },
		"private":                        func(s *ops.RouteSpec) { s.URL = "https://10.1.2.3/" },
		"metadata":                       func(s *ops.RouteSpec) { s.URL = "https://169.254.169.254/latest/" },
		"ipv6 loopback":                  func(s *ops.RouteSpec) { s.URL = "https://[::1]:9000/" },
		"secret not whsec":               func(s *ops.RouteSpec) { s.Secret = "hunter2" },
		"no secret":                      func(s *ops.RouteSpec) { s.Secret = "" },
		"bad operation path":             func(s *ops.RouteSpec) { s.OperationKeyPath = "data object" },
		"timeout too short":              func(s *ops.RouteSpec) { s.Timeout = time.Millisecond },
		"timeout too long":               func(s *ops.RouteSpec) { s.Timeout = time.Hour },
		"budget out of range":            func(s *ops.RouteSpec) { s.RetryBudget = 5000 },
		"negative budget":                func(s *ops.RouteSpec) { s.RetryBudget = -1 },
		"coalesce without fetch-current": func(s *ops.RouteSpec) { s.OperationKeyPath, s.Coalesce = "", true },
		"coalesce with a key path":       func(s *ops.RouteSpec) { s.FetchCurrent, s.Coalesce = true, true },
		"coalesce max of one": func(s *ops.RouteSpec) {
			s.OperationKeyPath, s.FetchCurrent, s.Coalesce, s.CoalesceMax = "", true, true, 1
		},
	} {
		s := chargeRoute()
		mut(&s)
		_, err := b.svc.AddRoute(b.ctx, alice, s, "")
		require.True(t, ops.IsInvalid(err), "%s: %v", name, err)
		require.NotContains(t, err.Error(), "T0KEN", "%s: an error never shows the URL's query", name)
	}
	_, err := b.svc.AddRoute(b.ctx, ops.Actor{}, chargeRoute(), "")
	require.True(t, ops.IsInvalid(err))
	require.Zero(t, b.count(t, `SELECT count(*) FROM forward_routes`))
	require.Empty(t, b.actions(t, "route_add"))
}

func TestAddRouteSealsTheSecretAndAuditsWithoutIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v, err := b.svc.AddRoute(b.ctx, alice, chargeRoute(), "billing service")
	require.NoError(t, err)
	require.Equal(t, "charges", v.Name)
	require.Equal(t, "10s", v.Timeout, "the default timeout")
	require.True(t, v.Enabled)
	require.Equal(t, b.st.Keys.CurrentID(), v.SecretKeyID)

	var sealed []byte
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT secret_sealed FROM forward_routes WHERE name = 'charges'`).Scan(&sealed))
	require.False(t, bytes.Contains(sealed, []byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")), "sealed at rest")
	r, err := forwards.Open(b.ctx, b.st, "charges")
	require.NoError(t, err)
	require.Equal(t, routeSecret, r.Secret, "the worker opens it")

	acts := b.actions(t, "route_add")
	require.Len(t, acts, 1)
	require.Equal(t, "route:charges", acts[0].Target)
	require.Equal(t, "billing service", acts[0].Reason)
	raw, err := json.Marshal(acts[0])
	require.NoError(t, err)
	require.NotContains(t, string(raw), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NotContains(t, string(raw), "T0KEN", "the audit names the URL's origin only")
	require.Equal(t, "https://svc.example.com", acts[0].Details["url"])

	out, err := json.Marshal(v)
	require.NoError(t, err)
	require.NotContains(t, string(out), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "a view never shows the secret")

	_, err = b.svc.AddRoute(b.ctx, alice, chargeRoute(), "")
	require.True(t, ops.IsConflict(err), "the same name twice: %v", err)
	dup := chargeRoute()
	dup.Name = "charges2"
	_, err = b.svc.AddRoute(b.ctx, alice, dup, "")
	require.True(t, ops.IsConflict(err), "the same provider and type twice: %v", err)
	require.Len(t, b.actions(t, "route_add"), 1)
}

func TestAHandlersTypeIsForwardedOnlyOnPurpose(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, typ := range []string{"invoice.paid", "invoice.*", "customer.subscription.deleted", "customer.*"} {
		s := chargeRoute()
		s.Name, s.EventType = "taker", typ
		_, err := b.svc.AddRoute(b.ctx, alice, s, "")
		require.True(t, ops.IsConflict(err), "%s: %v", typ, err)
		require.Contains(t, err.Error(), "--replace-handler", typ)
	}
	s := chargeRoute()
	s.Name, s.EventType, s.ReplaceHandler = "taker", "invoice.paid", true
	v, err := b.svc.AddRoute(b.ctx, alice, s, "our own billing")
	require.NoError(t, err)
	require.True(t, v.ReplacesHandler)
	require.Equal(t, []string{"credits"}, v.Replaces)
	require.Equal(t, []any{"credits (invoice.paid)"}, b.actions(t, "route_add")[0].Details["replaces"], "the audit says what it took over")

	// Turning the flag off again is refused the same way.
	off := false
	_, err = b.svc.UpdateRoute(b.ctx, alice, "taker", ops.RouteChange{ReplaceHandler: &off}, "")
	require.True(t, ops.IsConflict(err), "%v", err)
}

func TestForwardRoutesMayNotShadowEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.AddRoute(b.ctx, alice, chargeRoute(), "")
	require.NoError(t, err)
	exact := chargeRoute()
	exact.Name, exact.EventType = "refunds", "charge.refunded"
	_, err = b.svc.AddRoute(b.ctx, alice, exact, "")
	require.NoError(t, err, "an exact type under another route's prefix is the more specific route")
	gh := chargeRoute()
	gh.Name, gh.Provider, gh.EventType, gh.OperationKeyPath = "pushes", "github", "push", ""
	_, err = b.svc.AddRoute(b.ctx, alice, gh, "")
	require.NoError(t, err, "another provider's types are its own")
	vs, err := b.svc.ListRoutes(b.ctx)
	require.NoError(t, err)
	require.Len(t, vs, 3)
	require.Equal(t, []string{"charges", "pushes", "refunds"}, []string{vs[0].Name, vs[1].Name, vs[2].Name})
}

func TestUpdateAndRemoveRouteAreAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.AddRoute(b.ctx, alice, chargeRoute(), "")
	require.NoError(t, err)
	_, err = b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{}, "")
	require.True(t, ops.IsInvalid(err), "nothing to change")
	bad := "http://169.254.169.254/"
	_, err = b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{URL: &bad}, "")
	require.True(t, ops.IsInvalid(err))
	_, err = b.svc.UpdateRoute(b.ctx, alice, "nope", ops.RouteChange{URL: &bad}, "")
	require.True(t, ops.IsNotFound(err), "%v", err)

	url, timeout, secret, off := "http://10.0.0.7:8080/hooks", 2*time.Second, "whsec_QXNlY29uZFNlY3JldEZvclRoZVJvdXRl", false
	allow := true
	v, err := b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{URL: &url, AllowPrivate: &allow, Timeout: &timeout,
		Secret: &secret, Enabled: &off}, "moved inside")
	require.NoError(t, err)
	require.Equal(t, url, v.URL)
	require.Equal(t, "2s", v.Timeout)
	require.False(t, v.Enabled)
	r, err := forwards.Open(b.ctx, b.st, "charges")
	require.NoError(t, err)
	require.Equal(t, secret, r.Secret)
	acts := b.actions(t, "route_update")
	require.Len(t, acts, 1)
	require.ElementsMatch(t, []any{"url", "allow_private", "timeout", "secret", "enabled"}, acts[0].Details["changed"])
	raw, _ := json.Marshal(acts[0])
	require.NotContains(t, string(raw), "QXNlY29uZFNlY3JldEZvclRoZVJvdXRl")
	table, err := forwards.Table(b.ctx, b.st.Pool)
	require.NoError(t, err)
	require.Len(t, table, 1)
	require.False(t, table[0].Enabled, "a disabled route is still routed (its events held pending)")

	require.NoError(t, b.svc.RemoveRoute(b.ctx, alice, "charges", "retired"))
	require.True(t, ops.IsNotFound(b.svc.RemoveRoute(b.ctx, alice, "charges", "")))
	require.Len(t, b.actions(t, "route_remove"), 1)
}

// A coalescing route is added with --fetch-current and no key path, keeps
// its coalesce max, and an update that would pair it with a key path is
// refused.
func TestACoalescingRouteNeedsFetchCurrentAndNoKeyPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := chargeRoute()
	s.OperationKeyPath, s.FetchCurrent, s.Coalesce, s.CoalesceMax = "", true, true, 20
	v, err := b.svc.AddRoute(b.ctx, alice, s, "")
	require.NoError(t, err)
	require.True(t, v.Coalesce)
	require.Equal(t, 20, v.CoalesceMax)
	path := "data.object.id"
	_, err = b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{OperationKeyPath: &path}, "")
	require.True(t, ops.IsInvalid(err), "%v", err)
	off := false
	_, err = b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{FetchCurrent: &off}, "")
	require.True(t, ops.IsInvalid(err), "%v", err)
	v, err = b.svc.UpdateRoute(b.ctx, alice, "charges", ops.RouteChange{Coalesce: &off}, "")
	require.NoError(t, err)
	require.False(t, v.Coalesce)
}
