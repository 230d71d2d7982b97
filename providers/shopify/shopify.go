// Package shopify is the Shopify provider: X-Shopify-Hmac-Sha256, the
// base64 HMAC-SHA256 of the body, compared in constant time (Shopify
// publishes no Go verifier); X-Shopify-Event-Id as the event id, the shop
// domain as the source account, the topic's noun and the body's id as the
// resource. It has no API client.
package shopify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is Shopify.
type Provider struct{}

var _ providers.Provider = Provider{}

// Name is keys.ProviderShopify.
func (Provider) Name() string { return keys.ProviderShopify }

// Verifier checks X-Shopify-Hmac-Sha256 against secrets.
func (Provider) Verifier(secrets []keys.Secret) providers.Verifier { return verifier(secrets) }

type verifier []keys.Secret

// Verify checks X-Shopify-Hmac-Sha256, the base64 HMAC-SHA256 of the body,
// in constant time. Shopify signs no timestamp.
func (v verifier) Verify(h http.Header, body []byte, _ time.Duration, _ time.Time) (providers.Verified, error) {
	got, err := base64.StdEncoding.DecodeString(h.Get("X-Shopify-Hmac-Sha256"))
	if err != nil || len(got) != sha256.Size {
		return providers.Verified{}, providers.Unauthenticatedf("missing or malformed X-Shopify-Hmac-Sha256")
	}
	for _, s := range v {
		mac := hmac.New(sha256.New, []byte(s.Value))
		mac.Write(body)
		if hmac.Equal(mac.Sum(nil), got) {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("shopify: no secret matches")
}

// Normalize reads a delivery: X-Shopify-Event-Id is kept across retries; the shop domain is
// the account; the topic's noun and the body's id the resource.
func (Provider) Normalize(_ keys.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	// Shopify signs the body only: the event id, topic and shop are
	// headers anyone replaying a captured body may change.
	n := providers.Normalized{UnsignedEventID: true, UnsignedAccount: true}
	n.EventID = h.Get("X-Shopify-Event-Id")
	if n.EventID == "" {
		return n, providers.Malformedf("missing X-Shopify-Event-Id")
	}
	n.EventType = h.Get("X-Shopify-Topic")
	if n.EventType == "" {
		return n, providers.Malformedf("missing X-Shopify-Topic")
	}
	n.Account = h.Get("X-Shopify-Shop-Domain")
	if n.Account == "" {
		return n, providers.Malformedf("missing X-Shopify-Shop-Domain")
	}
	noun, _, _ := strings.Cut(n.EventType, "/")
	n.ResourceKind = strings.TrimSuffix(noun, "s")
	if id := doc.Get("id"); id.Exists() && id.Type != gjson.Null {
		n.ResourceID = id.String()
	} else {
		n.ResourceKind, n.ResourceID = "shop", n.Account
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get("X-Shopify-Triggered-At")); err == nil {
		n.OccurredAt = &t
	}
	return n, nil
}

// KeepHeader keeps X-Shopify-* (topic, shop, event id, triggered-at) except
// the HMAC.
func (Provider) KeepHeader(name string) bool {
	return strings.HasPrefix(name, "x-shopify-") && name != "x-shopify-hmac-sha256"
}

// shopifyFormat is an app's client secret: 32 hex characters, with shpss_
// before them for custom apps.
var shopifyFormat = regexp.MustCompile(`^(shpss_)?[0-9a-f]{32}$`)

// CheckSecret accepts Shopify's own format, or at least 24 random bytes.
func (Provider) CheckSecret(secret string) error {
	if shopifyFormat.MatchString(secret) {
		return nil
	}
	if err := providers.CheckRandom(strings.TrimPrefix(secret, "shpss_")); err != nil {
		return fmt.Errorf("shopify: not an app secret (shpss_ and 32 hex characters) and %w", err)
	}
	return nil
}
