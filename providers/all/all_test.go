package all_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintype"
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
		"X-Shopify-Hmac-Sha256", "Shopify-Hmac-Sha256", "Authorization", "Content-Type", "X-GitHub-Event", "Webhook-Id",
		"X-Shopify-Topic", "Shopify-Topic"} {
		h.Set(name, "v")
	}
	want := map[string][]string{
		keys.ProviderStripe:   {"Content-Type"},
		keys.ProviderGitHub:   {"Content-Type", "X-Github-Event"},
		keys.ProviderStandard: {"Content-Type", "Webhook-Id"},
		keys.ProviderShopify:  {"Content-Type", "X-Shopify-Topic", "Shopify-Topic"},
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
}

// The attack: register a secret an attacker can guess (whsec_ alone is an
// empty HMAC key; "secret", a short word, a repeated character). Each
// provider refuses it and accepts its own real format.
func TestWeakSecretsAreRefused(t *testing.T) {
	t.Parallel()
	std := func(n int, fill byte) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = fill + byte(i%40)
		}
		return "whsec_" + base64.StdEncoding.EncodeToString(b)
	}
	tests := []struct {
		provider, secret string
		ok               bool
	}{
		{keys.ProviderStripe, "whsec_", false},
		{keys.ProviderStripe, "whsec_anything", false},
		{keys.ProviderStripe, "whsec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{keys.ProviderStripe, "Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m", false}, // no whsec_
		{keys.ProviderStripe, "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m", true},
		{keys.ProviderStripe, "whsec_" + strings.Repeat("0123456789abcdef", 4), true}, // the Stripe CLI's 64 hex
		{keys.ProviderGitHub, "gh-secret", false},
		{keys.ProviderGitHub, "0123456789abcdef0123456789abcdef", false}, // 16 bytes of hex
		{keys.ProviderGitHub, strings.Repeat("ab", 30), false},
		{keys.ProviderGitHub, "c2VjcmV0LWZvci1naXRodWItMjQtYnl0ZXMhIQ", true},
		{keys.ProviderShopify, "shpss_secret", false},
		{keys.ProviderShopify, "shpss_0123456789abcdef0123456789abcdef", true},
		{keys.ProviderShopify, "0123456789abcdef0123456789abcdef", true},
		{keys.ProviderShopify, "c2VjcmV0LWZvci1zaG9waWZ5LTI0LWJ5dGVzIQ", true},
		{keys.ProviderStandard, "whsec_", false},
		{keys.ProviderStandard, std(16, 'a'), false},
		{keys.ProviderStandard, "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32)), false}, // 32 zero bytes
		{keys.ProviderStandard, std(24, 'a'), true},
	}
	for _, tt := range tests {
		err := providers.ValidateSecret(tt.provider, tt.secret)
		if tt.ok {
			require.NoError(t, err, "%s %q", tt.provider, tt.secret)
		} else {
			require.Error(t, err, "%s %q", tt.provider, tt.secret)
		}
	}
}

func TestOnlyStripeAndGitHubHaveAnAPIClient(t *testing.T) {
	t.Parallel()
	for _, name := range providers.Names() {
		p, _ := providers.Lookup(name)
		c, err := providers.NewClient(p, providers.ClientConfig{APIKey: "sk_test", BaseURL: "http://127.0.0.1:1"})
		if name == keys.ProviderStripe || name == keys.ProviderGitHub {
			// GitHub's client fetches the current object (Event.Fetch).
			require.NoError(t, err)
			require.NotNil(t, c)
			continue
		}
		require.ErrorIs(t, err, providers.ErrNoClient, name)
		require.EqualError(t, err, "no API client for provider "+name)
	}
}

// TestEveryBuiltInProviderSignsWhatItVerifies: each built-in provider is a
// Signer (hookinbox send, hookintest and the simulator sign through it),
// what it signs verifies with the same secret, and neither another secret
// nor another body does.
func TestEveryBuiltInProviderSignsWhatItVerifies(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		keys.ProviderStripe:   "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m",
		keys.ProviderGitHub:   "c2VjcmV0LWZvci1naXRodWItMjQtYnl0ZXMhIQ",
		keys.ProviderStandard: "whsec_c3RhbmRhcmQtc2VjcmV0LW9uZS0zMi1ieXRlcyEhISE=",
		keys.ProviderShopify:  "shpss_0123456789abcdef0123456789abcdef",
	}
	other := map[string]string{
		keys.ProviderStripe:   "whsec_9pQ2rLmX4vT7sK1nB8cJ5hF3gD6aZ0wE",
		keys.ProviderGitHub:   "b3RoZXItc2VjcmV0LWZvci1naXRodWItMjQhIQ",
		keys.ProviderStandard: "whsec_b3RoZXItc3RhbmRhcmQtc2VjcmV0LTMyLWJ5dGVzISE=",
		keys.ProviderShopify:  "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",
	}
	body := []byte(`{"id":"evt_1","object":"event","type":"t","livemode":false}`)
	for _, name := range providers.Names() {
		p, _ := providers.Lookup(name)
		_, ok := p.(providers.Signer)
		require.True(t, ok, "%s is a Signer", name)
		h := http.Header{"Content-Type": {"application/json"}, "Webhook-Id": {"msg_1"}}
		now := time.Now()
		require.NoError(t, providers.Sign(p, secrets[name], h, body, now), name)
		v, err := p.Verifier([]hookintype.Secret{{ID: 1, Value: other[name]}, {ID: 2, Value: secrets[name]}}).Verify(h, body, 5*time.Minute, now)
		require.NoError(t, err, name)
		require.EqualValues(t, 2, v.SecretID, name)

		var unauth *providers.Unauthenticated
		_, err = p.Verifier([]hookintype.Secret{{ID: 1, Value: other[name]}}).Verify(h, body, 5*time.Minute, now)
		require.ErrorAs(t, err, &unauth, "%s: another secret", name)
		_, err = p.Verifier([]hookintype.Secret{{ID: 2, Value: secrets[name]}}).Verify(h, append([]byte(" "), body...), 5*time.Minute, now)
		require.ErrorAs(t, err, &unauth, "%s: another body", name)
	}
}
