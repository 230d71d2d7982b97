package all_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all"
)

func TestEveryBuiltInProviderIsRegistered(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{keys.ProviderStripe, keys.ProviderGitHub, keys.ProviderStandard, keys.ProviderShopify}, providers.Names())
	require.Equal(t, "stripe, github, standard or shopify", providers.OneOf())
	_, ok := providers.Lookup("paypal")
	require.False(t, ok)
	require.ErrorIs(t, providers.ValidateSecret("paypal", "x"), providers.ErrUnknown)
}

// TestNoProviderKeepsASignature: a quarantine entry never holds a
// signature header, whichever provider its endpoint names.
func TestNoProviderKeepsASignature(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	for _, name := range []string{"Stripe-Signature", "X-Hub-Signature-256", "X-Hub-Signature", "Webhook-Signature",
		"X-Shopify-Hmac-Sha256", "Authorization", "Content-Type", "X-GitHub-Event", "Webhook-Id", "X-Shopify-Topic"} {
		h.Set(name, "v")
	}
	want := map[string][]string{
		keys.ProviderStripe:   {"Content-Type"},
		keys.ProviderGitHub:   {"Content-Type", "X-Github-Event"},
		keys.ProviderStandard: {"Content-Type", "Webhook-Id"},
		keys.ProviderShopify:  {"Content-Type", "X-Shopify-Topic"},
	}
	for _, name := range providers.Names() {
		p, _ := providers.Lookup(name)
		var got []string
		for k := range providers.KeptHeaders(p, h) {
			got = append(got, k)
		}
		require.ElementsMatch(t, want[name], got, name)
	}
}

func TestSecretChecks(t *testing.T) {
	t.Parallel()
	for _, name := range providers.Names() {
		require.Error(t, providers.ValidateSecret(name, "  "), name)
	}
	require.Error(t, providers.ValidateSecret(keys.ProviderStandard, "not-whsec"))
	require.NoError(t, providers.ValidateSecret(keys.ProviderStandard, "whsec_c3RhbmRhcmQtc2VjcmV0LW9uZS0zMi1ieXRlcyEhISE="))
	require.NoError(t, providers.ValidateSecret(keys.ProviderStripe, "whsec_anything"))
}

func TestOnlyStripeHasAnAPIClient(t *testing.T) {
	t.Parallel()
	for _, name := range providers.Names() {
		p, _ := providers.Lookup(name)
		c, err := providers.NewClient(p, providers.ClientConfig{APIKey: "sk_test", BaseURL: "http://127.0.0.1:1"})
		if name == keys.ProviderStripe {
			require.NoError(t, err)
			require.NotNil(t, c)
			continue
		}
		require.ErrorIs(t, err, providers.ErrNoClient, name)
		require.EqualError(t, err, "no API client for provider "+name)
	}
}
