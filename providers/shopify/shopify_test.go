package shopify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/shopify"
)

func verify(t *testing.T, secrets []hookintype.Secret, h http.Header, body []byte) (providers.Verified, error) {
	t.Helper()
	return shopify.Provider{}.Verifier(secrets).Verify(h, body, 5*time.Minute, time.Now())
}

// TestShopifysPublishedVector: the fixed vector of Shopify's own library
// tests. Shopify/shopify-api-js, packages/shopify-api/lib/webhooks/__tests__/validate.test.ts
// ("returns true for valid request"): body {"foo": "bar"} signed with the
// test config's apiSecretKey "test_secret_key"
// (packages/shopify-api/lib/__tests__/test-config.ts) gives the hmac
// B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=. The same test lives on in
// Shopify/shopify-app-js, packages/apps/shopify-api/lib/webhooks/__tests__/validate.test.ts.
func TestShopifysPublishedVector(t *testing.T) {
	t.Parallel()
	const (
		secret = "test_secret_key"
		body   = `{"foo": "bar"}`
		want   = "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
	)
	secrets := []hookintype.Secret{{ID: 1, Value: secret}}
	for _, name := range []string{"X-Shopify-Hmac-Sha256", "shopify-hmac-sha256"} {
		v, err := verify(t, secrets, http.Header{http.CanonicalHeaderKey(name): {want}}, []byte(body))
		require.NoError(t, err, name)
		require.EqualValues(t, 1, v.SecretID)

		_, err = verify(t, secrets, http.Header{http.CanonicalHeaderKey(name): {want}}, []byte(`{"foo": "baz"}`))
		var unauth *providers.Unauthenticated
		require.ErrorAs(t, err, &unauth, "another body")
		_, err = verify(t, []hookintype.Secret{{ID: 1, Value: "test_secret_kez"}}, http.Header{http.CanonicalHeaderKey(name): {want}}, []byte(body))
		require.ErrorAs(t, err, &unauth, "another secret")
	}

	// What Sign makes is the vector, in the classic spelling, and in the
	// Events spelling too on an Events delivery; Verify accepts both.
	for name, h := range map[string]http.Header{
		"classic": {"X-Shopify-Topic": {"orders/create"}},
		"Events":  {"Shopify-Topic": {"Product"}, "Shopify-Action": {"update"}},
	} {
		require.NoError(t, shopify.Provider{}.Sign(secret, h, []byte(body), time.Time{}), name)
		require.Equal(t, want, h.Get("X-Shopify-Hmac-Sha256"), name)
		if name == "Events" {
			require.Equal(t, want, h.Get("Shopify-Hmac-Sha256"))
		} else {
			require.Empty(t, h.Get("Shopify-Hmac-Sha256"), "a classic delivery carries the classic spelling only")
		}
		v, err := verify(t, secrets, h, []byte(body))
		require.NoError(t, err, name)
		require.EqualValues(t, 1, v.SecretID)
	}
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestRotationWithBothSecretsActive: Shopify says a rotated client secret
// takes up to an hour to apply, so deliveries signed with the old one keep
// coming after the new one is registered. With both active, each verifies
// and the secret that matched is returned, in either header spelling.
func TestRotationWithBothSecretsActive(t *testing.T) {
	t.Parallel()
	const (
		oldSecret = "shpss_0123456789abcdef0123456789abcdef"
		newSecret = "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"
	)
	secrets := []hookintype.Secret{{ID: 7, Value: oldSecret}, {ID: 8, Value: newSecret}}
	body := []byte(`{"id":820982911946154508,"email":"jon@example.com"}`)
	tests := []struct {
		name, header, secret string
		want                 int64
	}{
		{"old secret, classic header", "X-Shopify-Hmac-Sha256", oldSecret, 7},
		{"new secret, classic header", "X-Shopify-Hmac-Sha256", newSecret, 8},
		{"old secret, Events header", "Shopify-Hmac-Sha256", oldSecret, 7},
		{"new secret, Events header", "Shopify-Hmac-Sha256", newSecret, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := verify(t, secrets, http.Header{tt.header: {sign(tt.secret, body)}}, body)
			require.NoError(t, err)
			require.Equal(t, tt.want, v.SecretID)
		})
	}
	_, err := verify(t, secrets[1:], http.Header{"X-Shopify-Hmac-Sha256": {sign(oldSecret, body)}}, body)
	var unauth *providers.Unauthenticated
	require.ErrorAs(t, err, &unauth, "once the old secret is retired it no longer verifies")
	_, err = verify(t, secrets, http.Header{}, body)
	require.ErrorAs(t, err, &unauth, "no HMAC header")
	_, err = verify(t, secrets, http.Header{"Shopify-Hmac-Sha256": {"not base64!"}}, body)
	require.ErrorAs(t, err, &unauth)
}

func normalize(t *testing.T, h http.Header, body string) (providers.Normalized, error) {
	t.Helper()
	return shopify.Provider{}.Normalize(hookintype.EndpointSettings{}, h, gjson.Parse(body))
}

func TestBothHeaderSpellingsNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		header             http.Header
		body               string
		id, typ, kind, res string
		at                 string
	}{
		{name: "classic webhook", header: http.Header{"X-Shopify-Event-Id": {"98880550-7158-44d4-b7cd-2c97c8a091b5"},
			"X-Shopify-Topic": {"orders/create"}, "X-Shopify-Shop-Domain": {"demo.myshopify.com"}, "X-Shopify-Triggered-At": {"2026-01-27T12:00:00Z"}},
			body: `{"id":820982911946154508}`, id: "98880550-7158-44d4-b7cd-2c97c8a091b5", typ: "orders/create", kind: "order",
			res: "820982911946154508", at: "2026-01-27T12:00:00Z"},
		// The Events delivery of Shopify's own test, Shopify/shopify-app-js
		// packages/apps/shopify-app-react-router/src/server/authenticate/webhooks/__tests__/authenticate.test.ts
		// (eventsWebhookHeaders), as an earlier version had it: both
		// spellings, the shopify-* ones naming the event.
		{name: "Events delivery beside the classic headers", header: http.Header{
			"X-Shopify-Shop-Domain": {"test-shop.myshopify.io"}, "X-Shopify-Topic": {"Product"}, "X-Shopify-Webhook-Id": {"evt-123"},
			"Shopify-Shop-Domain": {"test-shop.myshopify.io"}, "Shopify-Topic": {"Product"}, "Shopify-Event-Id": {"evt-123"},
			"Shopify-Handle": {"my-handle"}, "Shopify-Action": {"update"}, "Shopify-Resource-Id": {"gid://shopify/Product/123"},
			"Shopify-Triggered-At": {"2026-01-27T12:00:00Z"}},
			body: `{"some":"data"}`, id: "evt-123", typ: "Product/update", kind: "product", res: "gid://shopify/Product/123",
			at: "2026-01-27T12:00:00Z"},
		// The same test as it is now: shopify-event-id and
		// shopify-resource-id are gone, shopify-webhook-id names the delivery.
		{name: "Events delivery without shopify-event-id", header: http.Header{
			"X-Shopify-Shop-Domain": {"test-shop.myshopify.io"}, "X-Shopify-Topic": {"Product"}, "X-Shopify-Webhook-Id": {"evt-123"},
			"Shopify-Shop-Domain": {"test-shop.myshopify.io"}, "Shopify-Topic": {"Product"}, "Shopify-Webhook-Id": {"webhook-456"},
			"Shopify-Handle": {"my-handle"}, "Shopify-Action": {"update"}, "Shopify-Triggered-At": {"2026-01-27T12:00:00Z"}},
			body: `{"some":"data"}`, id: "webhook-456", typ: "Product/update", kind: "shop", res: "test-shop.myshopify.io",
			at: "2026-01-27T12:00:00Z"},
		{name: "Events delivery alone", header: http.Header{"Shopify-Shop-Domain": {"demo.myshopify.com"}, "Shopify-Topic": {"orders/paid"},
			"Shopify-Event-Id": {"e-1"}}, body: `{"id":5}`, id: "e-1", typ: "orders/paid", kind: "order", res: "5"},
		{name: "the shopify-* spelling wins", header: http.Header{"Shopify-Event-Id": {"new"}, "X-Shopify-Event-Id": {"old"},
			"Shopify-Topic": {"orders/paid"}, "X-Shopify-Topic": {"orders/create"}, "Shopify-Shop-Domain": {"demo.myshopify.com"}},
			body: `{"id":5}`, id: "new", typ: "orders/paid", kind: "order", res: "5"},
		{name: "no id anywhere: the shop", header: http.Header{"Shopify-Shop-Domain": {"demo.myshopify.com"}, "Shopify-Topic": {"shop/update"},
			"Shopify-Event-Id": {"e-2"}}, body: `{"name":"demo"}`, id: "e-2", typ: "shop/update", kind: "shop", res: "demo.myshopify.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := normalize(t, tt.header, tt.body)
			require.NoError(t, err)
			require.Equal(t, tt.id, n.EventID)
			require.Equal(t, tt.typ, n.EventType)
			require.Equal(t, tt.kind, n.ResourceKind)
			require.Equal(t, tt.res, n.ResourceID)
			require.True(t, n.UnsignedEventID)
			require.True(t, n.UnsignedAccount, "the shop header is not signed")
			if tt.at == "" {
				require.Nil(t, n.OccurredAt)
			} else {
				require.NotNil(t, n.OccurredAt)
				require.Equal(t, tt.at, n.OccurredAt.UTC().Format(time.RFC3339))
			}
		})
	}
	for _, missing := range []string{"Event-Id", "Topic", "Shop-Domain"} {
		h := http.Header{"Shopify-Event-Id": {"e"}, "Shopify-Topic": {"orders/paid"}, "Shopify-Shop-Domain": {"demo.myshopify.com"}}
		h.Del("Shopify-" + missing)
		_, err := normalize(t, h, `{"id":1}`)
		var bad *providers.MalformedError
		require.ErrorAs(t, err, &bad, missing)
		require.Contains(t, bad.Reason, "shopify-"+map[string]string{"Event-Id": "event-id", "Topic": "topic", "Shop-Domain": "shop-domain"}[missing])
	}
}

func TestKeepHeaderKeepsBothSpellingsButNeverTheHMAC(t *testing.T) {
	t.Parallel()
	p := shopify.Provider{}
	for name, keep := range map[string]bool{
		"x-shopify-hmac-sha256": false, "shopify-hmac-sha256": false,
		"x-shopify-topic": true, "shopify-topic": true, "shopify-event-id": true, "x-shopify-event-id": true,
		"shopify-shop-domain": true, "shopify-action": true, "stripe-signature": false,
	} {
		require.Equal(t, keep, p.KeepHeader(name), name)
	}
}
