// Package providertest signs deliveries the way the providers do, for the
// tests of the packages that receive them (webhook, admission). It holds
// no production code and nothing imports it outside tests.
package providertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"
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
