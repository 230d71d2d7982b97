package subscriptions_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	account     = "acct_sim_a" // the simulator's default account
	workspace   = "ws"
	slug        = "sim"
	secret      = "whsec_subscriptions_domain_test"
	versionPath = "data.object.version"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is an App on a fresh database with a Stripe endpoint whose API
// is a simulator served over real HTTP, linked to workspace ws.
type fixture struct {
	ctx    context.Context
	h      *hookintest.Harness
	sim    *simulator.Simulator
	apiURL string
}

// setup registers the subscriptions domain; versions makes the simulator
// version its snapshots and the endpoint read them (--version-path).
func setup(t *testing.T, seed uint64, versions bool) *fixture {
	t.Helper()
	app := hookinbox.New()
	subscriptions.Register(app, quiet)
	return setupApp(t, app, seed, versions)
}

func setupApp(t *testing.T, app *hookinbox.App, seed uint64, versions bool) *fixture {
	t.Helper()
	h := hookintest.New(t, app)
	sim := simulator.New(simulator.Config{Seed: seed, Versions: versions})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	ctx := context.Background()
	ep := hookintest.Endpoint{Slug: slug, Provider: "stripe", Secret: secret,
		APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey, Account: account, Workspace: workspace}
	if versions {
		ep.VersionPath = versionPath
	}
	h.AddEndpoint(ctx, ep)
	return &fixture{ctx: ctx, h: h, sim: sim, apiURL: api.URL}
}

// deliver admits a simulator event (or any body signed for the endpoint)
// through the intake's path.
func (f *fixture) deliver(t *testing.T, body []byte) hookintype.EventKey {
	t.Helper()
	d := f.h.Deliver(f.ctx, slug, secret, nil, body)
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	require.Equal(t, hookintype.StatusPending, d.Status)
	return d.Key
}

func (f *fixture) handleDone(t *testing.T, key hookintype.EventKey) hookintest.Handled {
	t.Helper()
	out := f.h.Handle(f.ctx, key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status, out.Note)
	return out
}

// apply delivers and handles ev to done.
func (f *fixture) apply(t *testing.T, ev simulator.Event) hookintest.Handled {
	t.Helper()
	return f.handleDone(t, f.deliver(t, ev.Body))
}

func (f *fixture) projection(t *testing.T, id string) *subscriptions.Projection {
	t.Helper()
	p, err := subscriptions.Get(f.ctx, f.h.DB, "stripe", account, hookintype.Test, id)
	require.NoError(t, err)
	require.NotNil(t, p, "no projection of %s", id)
	return p
}

func (f *fixture) hasAccess(t *testing.T, ws string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT has_access FROM workspace_access WHERE workspace_id = $1`, ws).Scan(&ok))
	return ok
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.h.DB.QueryRow(f.ctx, sql, args...).Scan(&n))
	return n
}

func (f *fixture) note(t *testing.T, k hookintype.EventKey) string {
	t.Helper()
	var note *string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT note FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(&note))
	if note == nil {
		return ""
	}
	return *note
}

func subscription(id string) hookintype.Resource {
	return hookintype.Resource{Provider: "stripe", Account: account, Environment: hookintype.Test, Kind: "subscription", ID: id}
}
