package hookintest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// TestSignIsWhatEachProviderVerifies: Sign signs through the provider's own
// Signer, so each built-in provider's verifier accepts what it makes, and
// an unknown provider is refused.
func TestSignIsWhatEachProviderVerifies(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		keys.ProviderStripe:   "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m",
		keys.ProviderGitHub:   "c2VjcmV0LWZvci1naXRodWItMjQtYnl0ZXMhIQ",
		keys.ProviderStandard: "whsec_c3RhbmRhcmQtc2VjcmV0LW9uZS0zMi1ieXRlcyEhISE=",
		keys.ProviderShopify:  "shpss_0123456789abcdef0123456789abcdef",
	}
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`)
	at := time.Now()
	for name, secret := range secrets {
		h := http.Header{"Content-Type": {"application/json"}, "Webhook-Id": {"msg_1"}}
		require.NoError(t, hookintest.Sign(name, secret, h, body, at), name)
		p, ok := providers.Lookup(name)
		require.True(t, ok)
		v, err := p.Verifier([]keys.Secret{{ID: 9, Value: secret}}).Verify(h, body, 5*time.Minute, at)
		require.NoError(t, err, name)
		require.EqualValues(t, 9, v.SecretID)
	}
	require.ErrorContains(t, hookintest.Sign(keys.ProviderStandard, secrets[keys.ProviderStandard], http.Header{}, body, at), "webhook-id")
	require.EqualError(t, hookintest.Sign("paypal", "x", http.Header{}, body, at), `hookintest cannot sign for provider "paypal"`)
}
