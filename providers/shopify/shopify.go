// Package shopify is the Shopify provider: the base64 HMAC-SHA256 of the
// body, compared in constant time (Shopify publishes no Go verifier), with
// every active secret (a rotated secret takes up to an hour to apply, so
// old and new both verify meanwhile); the event id, the shop domain as the
// source account, the topic's noun and the body's id as the resource. Its
// headers come in two spellings: the classic webhooks' X-Shopify-* and the
// newer Events deliveries' shopify-* (shopify-hmac-sha256, shopify-topic,
// shopify-event-id, shopify-shop-domain…, sent beside or instead of the
// old ones); the shopify-* one wins when both are there. It has no API
// client.
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

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is Shopify.
type Provider struct{}

var (
	_ providers.Provider = Provider{}
	_ providers.Signer   = Provider{}
)

// Name is "shopify".
func (Provider) Name() string { return keys.ProviderShopify }

// Verifier checks the HMAC header against secrets.
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier { return verifier(secrets) }

type verifier []hookintype.Secret

// header reads a Shopify header by its Events name (shopify-<name>), else
// its classic one (X-Shopify-<name>).
func header(h http.Header, name string) string {
	if v := h.Get("Shopify-" + name); v != "" {
		return v
	}
	return h.Get("X-Shopify-" + name)
}

// Signature is the HMAC header Shopify sends with body: the base64
// HMAC-SHA256 of the body under secret.
func Signature(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign sets X-Shopify-Hmac-Sha256 for body, signed with secret, and, on an
// Events delivery (h carries shopify-topic), its shopify-hmac-sha256 too.
// Shopify signs the body only, so at is not used.
func (Provider) Sign(secret string, h http.Header, body []byte, _ time.Time) error {
	sig := Signature(body, secret)
	h.Set("X-Shopify-Hmac-Sha256", sig)
	if h.Get("Shopify-Topic") != "" {
		h.Set("Shopify-Hmac-Sha256", sig)
	}
	return nil
}

// Verify checks shopify-hmac-sha256 (else X-Shopify-Hmac-Sha256), the
// base64 HMAC-SHA256 of the body, in constant time against each secret and
// returns the one that matched. Shopify signs no timestamp.
func (v verifier) Verify(h http.Header, body []byte, _ time.Duration, _ time.Time) (providers.Verified, error) {
	got, err := base64.StdEncoding.DecodeString(header(h, "Hmac-Sha256"))
	if err != nil || len(got) != sha256.Size {
		return providers.Verified{}, providers.Unauthenticatedf("missing or malformed shopify-hmac-sha256 (X-Shopify-Hmac-Sha256)")
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

// Normalize reads a delivery, in either spelling of the headers: the event
// id (kept across retries; an Events delivery without one is keyed by its
// shopify-webhook-id, as Shopify's libraries key it), the topic (an Events delivery's topic names the
// resource type, "Product", and shopify-action what happened, "update":
// its type is then "Product/update"), the shop domain as the account, the
// topic's noun and the body's id as the resource (else an Events
// delivery's shopify-resource-id, else the shop).
func (Provider) Normalize(_ hookintype.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	// Shopify signs the body only: the event id, topic and shop are
	// headers anyone replaying a captured body may change.
	n := providers.Normalized{UnsignedEventID: true, UnsignedAccount: true}
	if n.EventID = header(h, "Event-Id"); n.EventID == "" {
		// Events deliveries are dropping shopify-event-id; Shopify's own
		// libraries then key them by shopify-webhook-id.
		n.EventID = h.Get("Shopify-Webhook-Id")
	}
	if n.EventID == "" {
		return n, providers.Malformedf("missing shopify-event-id (X-Shopify-Event-Id) or shopify-webhook-id")
	}
	if n.EventType = header(h, "Topic"); n.EventType == "" {
		return n, providers.Malformedf("missing shopify-topic (X-Shopify-Topic)")
	}
	if action := h.Get("Shopify-Action"); action != "" && !strings.Contains(n.EventType, "/") {
		n.EventType += "/" + action
	}
	if n.Account = header(h, "Shop-Domain"); n.Account == "" {
		return n, providers.Malformedf("missing shopify-shop-domain (X-Shopify-Shop-Domain)")
	}
	noun, _, _ := strings.Cut(n.EventType, "/")
	n.ResourceKind = strings.TrimSuffix(strings.ToLower(noun), "s")
	switch id := doc.Get("id"); {
	case id.Exists() && id.Type != gjson.Null:
		n.ResourceID = id.String()
	case h.Get("Shopify-Resource-Id") != "":
		n.ResourceID = h.Get("Shopify-Resource-Id")
	default:
		n.ResourceKind, n.ResourceID = "shop", n.Account
	}
	if t, err := time.Parse(time.RFC3339Nano, header(h, "Triggered-At")); err == nil {
		n.OccurredAt = &t
	}
	return n, nil
}

// KeepHeader keeps shopify-* and X-Shopify-* (topic, shop, event id,
// triggered-at, action…) except the HMAC.
func (Provider) KeepHeader(name string) bool {
	switch name {
	case "x-shopify-hmac-sha256", "shopify-hmac-sha256":
		return false
	}
	return strings.HasPrefix(name, "x-shopify-") || strings.HasPrefix(name, "shopify-")
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
