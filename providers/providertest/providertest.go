// Package providertest signs deliveries the way the providers do, for the
// tests of the packages that receive them (webhook, admission). It holds
// no production code and nothing imports it outside tests.
package providertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
)

// StripeEvent is a Stripe test-mode event about one object; extra is
// spliced in before "data" (e.g. `"account":"acct_1",`).
func StripeEvent(id, typ, objID, objKind, extra string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"livemode":false,"created":1760000000,%s"data":{"object":{"id":%q,"object":%q}}}`,
		id, typ, extra, objID, objKind))
}

// StripeHeaders signs body at time at with Stripe's own test helper.
func StripeHeaders(body []byte, secret string, at time.Time) map[string]string {
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	return map[string]string{"Stripe-Signature": p.Header}
}

// GitHubHeaders are a GitHub delivery's headers: the HMAC-SHA256 of body,
// the delivery id and the event name.
func GitHubHeaders(body []byte, secret, delivery, event string) map[string]string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return map[string]string{
		"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil)),
		"X-GitHub-Delivery":   delivery,
		"X-GitHub-Event":      event,
	}
}

// Handshaker is a provider of the intake's tests (register it once per
// test binary): X-Test-Signature is the hex HMAC-SHA256 of the body, the
// body {"type":…,"id":…,"account":…,"object":…}; a body of type
// "handshake" is answered with its "challenge" and stored as nothing, as
// Slack's url_verification is.
type Handshaker struct{}

var _ providers.Provider = Handshaker{}

// HandshakerName is Handshaker's name.
const HandshakerName = "handshaker"

// Name is HandshakerName.
func (Handshaker) Name() string { return HandshakerName }

// Verifier checks X-Test-Signature against each secret.
func (Handshaker) Verifier(secrets []hookintype.Secret) providers.Verifier {
	return HMACVerifier{Header: "X-Test-Signature", Secrets: secrets}
}

// HMACVerifier is the scheme of the tests' own providers: Header holds the
// hex HMAC-SHA256 of the body under one of Secrets (HMACHeaders signs it).
type HMACVerifier struct {
	Header  string
	Secrets []hookintype.Secret
}

// Verify checks the HMAC in constant time and returns the matching
// secret's id.
func (v HMACVerifier) Verify(h http.Header, body []byte, _ time.Duration, _ time.Time) (providers.Verified, error) {
	got, err := hex.DecodeString(h.Get(v.Header))
	if err != nil || len(got) != sha256.Size {
		return providers.Verified{}, providers.Unauthenticatedf("missing or malformed %s", v.Header)
	}
	for _, s := range v.Secrets {
		mac := hmac.New(sha256.New, []byte(s.Value))
		mac.Write(body)
		if hmac.Equal(mac.Sum(nil), got) {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("no secret matches")
}

// HMACHeaders signs body for an HMACVerifier of header.
func HMACHeaders(header string, body []byte, secret string) map[string]string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return map[string]string{header: hex.EncodeToString(mac.Sum(nil))}
}

// Normalize answers a handshake with its challenge (content_type, when
// the body has one, is the reply's), and reads an event otherwise.
func (Handshaker) Normalize(_ hookintype.EndpointSettings, _ http.Header, doc gjson.Result) (providers.Normalized, error) {
	if doc.Get("type").String() == "handshake" {
		r := providers.ReplyText(doc.Get("challenge").String())
		if ct := doc.Get("content_type"); ct.Exists() {
			r.ContentType = ct.String()
		}
		return providers.Normalized{Reply: r}, nil
	}
	n := providers.Normalized{EventType: doc.Get("type").String(), EventID: doc.Get("id").String(),
		Account: doc.Get("account").String(), ResourceKind: "object", ResourceID: doc.Get("object").String()}
	if n.EventID == "" || n.EventType == "" {
		return n, providers.Malformedf("missing id or type")
	}
	return n, nil
}

// KeepHeader keeps nothing.
func (Handshaker) KeepHeader(string) bool { return false }

// CheckSecret takes any secret.
func (Handshaker) CheckSecret(string) error { return nil }

// Sign signs body as HandshakerHeaders does (providers.Signer).
func (Handshaker) Sign(secret string, h http.Header, body []byte, _ time.Time) error {
	for k, v := range HandshakerHeaders(body, secret) {
		h.Set(k, v)
	}
	return nil
}

// HandshakerHeaders signs body for Handshaker.
func HandshakerHeaders(body []byte, secret string) map[string]string {
	return HMACHeaders("X-Test-Signature", body, secret)
}
