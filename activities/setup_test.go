package activities_test

import (
	"context"
	"crypto/sha256"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

const account = "acct_sim_a"

// bundle is a store with a Stripe endpoint whose API is a simulator.
type bundle struct {
	ctx   context.Context
	store *store.Store
	sim   *simulator.Simulator
	provs *engine.EndpointProviders
}

// setup registers a Stripe endpoint whose API is a simulator served over
// real HTTP, linked to workspace ws.
func setup(t *testing.T, cfg simulator.Config) *bundle {
	t.Helper()
	st := testenv.Store(t)
	sim := simulator.New(cfg)
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "sim", Provider: "stripe", Environment: "test",
		Secrets: []string{"whsec_x"}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "sim", account, "ws"))
	return &bundle{ctx: ctx, store: st, sim: sim, provs: &engine.EndpointProviders{Store: st}}
}

// env is what handlers and reconcilers of the bundle's store run with.
func (b *bundle) env() engine.Env {
	return engine.Env{Store: b.store, Providers: b.provs}
}

// accept puts a simulator event in the inbox as the intake would.
func (b *bundle) accept(t *testing.T, ev simulator.Event) {
	t.Helper()
	sum := sha256.Sum256(ev.Body)
	_, err := inbox.InsertInboxEvent(b.ctx, b.store.Pool, &inbox.InboxEvent{
		Key:          keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: ev.ID},
		EndpointSlug: "sim", WorkspaceID: "ws", EventType: ev.Type, ResourceKind: ev.ResourceKind, ResourceID: ev.ResourceID,
		Payload: ev.Body, BodySHA256: sum[:],
	})
	require.NoError(t, err)
}

func (b *bundle) count(t *testing.T, sql string) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, sql).Scan(&n))
	return n
}
