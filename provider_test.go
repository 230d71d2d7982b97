package hookinbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/providertest"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

// impostor takes another provider's name.
type impostor struct {
	providertest.Handshaker
	name string
}

func (p impostor) Name() string { return p.name }

// A team's program builds its App wherever it needs one (each test of the
// team's module does): registering its provider again, the same one, is
// no mistake; another provider under a taken name is.
func TestWithProviderRegistersATeamsProviderOncePerProcess(t *testing.T) {
	t.Parallel()
	for range 2 {
		app := hookinbox.New(hookinbox.WithProvider(providertest.Handshaker{}))
		require.NoError(t, app.Err(), "the same provider, registered by a second App of the program")
		app.HandleFunc(providertest.HandshakerName, "thing.happened", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{}, nil
		})
		require.NoError(t, app.Err(), "its events can be handled")
	}
	p, ok := providers.Lookup(providertest.HandshakerName)
	require.True(t, ok)
	require.Equal(t, providertest.Handshaker{}, p)

	require.ErrorContains(t, hookinbox.New(hookinbox.WithProvider(impostor{name: providertest.HandshakerName})).Err(), "already registered")
	require.ErrorContains(t, hookinbox.New(hookinbox.WithProvider(impostor{name: "stripe"})).Err(), "already registered")
	require.NoError(t, hookinbox.New(hookinbox.WithProvider(stripe.Provider{})).Err(), "a built-in one is already there, the same")
	require.ErrorContains(t, hookinbox.New(hookinbox.WithProvider(nil)).Err(), "needs a name")
}

// A team's provider's handshake goes through the harness as through the
// intake: answered, stored as nothing.
func TestATeamsProvidersHandshakeThroughTheHarness(t *testing.T) {
	t.Parallel()
	app := hookinbox.New(hookinbox.WithProvider(providertest.Handshaker{}))
	h := hookintest.New(t, app)
	ctx := context.Background()
	const secret = "handshake-secret-0123456789"
	h.AddEndpoint(ctx, hookintest.Endpoint{Slug: "hs", Provider: providertest.HandshakerName, Secret: secret, Account: "team_1", Workspace: "ws_1"})
	d := h.Deliver(ctx, "hs", secret, nil, []byte(`{"type":"handshake","challenge":"c-1"}`))
	require.Equal(t, "replied", d.Outcome)
	require.Equal(t, "c-1", string(d.Reply))
	require.Equal(t, hookintype.EventKey{}, d.Key)
	var n int
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox`).Scan(&n))
	require.Zero(t, n)
}
