// Package stripe is the Stripe provider: Stripe-Signature checked by
// stripe-go's webhook package, Stripe Events normalized (evt_ id, livemode,
// the Connect account, data.object), and an API client built on stripe-go
// for fetching invoices and subscriptions and listing events.
package stripe

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is Stripe.
type Provider struct{}

var (
	_ providers.Provider = Provider{}
	_ providers.Clients  = Provider{}
)

// Name is keys.ProviderStripe.
func (Provider) Name() string { return keys.ProviderStripe }

// Verifier checks Stripe-Signature against secrets.
func (Provider) Verifier(secrets []keys.Secret) providers.Verifier { return verifier(secrets) }

type verifier []keys.Secret

// Verify uses stripe-go's webhook package: Stripe-Signature t=…,v1=…; the
// timestamp is inside the signed material. stripe-go rejects timestamps too
// old; one too far in the future is rejected here, so the tolerance holds
// both ways as for Standard Webhooks.
func (v verifier) Verify(h http.Header, body []byte, tolerance time.Duration, now time.Time) (providers.Verified, error) {
	sig := h.Get("Stripe-Signature")
	if sig == "" {
		return providers.Verified{}, providers.Unauthenticatedf("missing Stripe-Signature")
	}
	for _, part := range strings.Split(sig, ",") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			if ts, err := strconv.ParseInt(t, 10, 64); err == nil && time.Unix(ts, 0).Sub(now) > tolerance {
				return providers.Verified{}, providers.Unauthenticatedf("stripe: timestamp is in the future beyond the tolerance")
			}
		}
	}
	last := errors.New("no secret")
	for _, s := range v {
		err := webhook.ValidatePayloadWithTolerance(body, sig, s.Value, tolerance)
		if err == nil {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		}
		last = err
		if errors.Is(err, webhook.ErrInvalidHeader) || errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrTooOld) {
			break // the same for every secret
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("stripe: %s", last.Error())
}

// Normalize reads a Stripe Event: evt_ id, type, livemode, the Connect
// account, and the object the event is about.
func (Provider) Normalize(_ keys.EndpointSettings, _ http.Header, doc gjson.Result) (providers.Normalized, error) {
	var n providers.Normalized
	var err error
	if n.EventID, err = providers.RequireString(doc, "id"); err != nil {
		return n, err
	}
	if !strings.HasPrefix(n.EventID, "evt_") {
		return n, providers.Malformedf("id %q is not a Stripe event id (evt_…)", n.EventID)
	}
	if n.EventType, err = providers.RequireString(doc, "type"); err != nil {
		return n, err
	}
	live := doc.Get("livemode")
	if live.Type != gjson.True && live.Type != gjson.False {
		return n, providers.Malformedf("missing livemode")
	}
	n.Environment = keys.EnvTest
	if live.Bool() {
		n.Environment = keys.EnvLive
	}
	if a := doc.Get("account"); a.Type == gjson.String && a.Str != "" {
		n.Account = a.Str
	}
	n.ResourceKind = doc.Get("data.object.object").String()
	n.ResourceID = doc.Get("data.object.id").String()
	if n.ResourceKind == "credit_note" {
		// A credit note is serialized with the invoice it credits: its
		// resource is the invoice, so its reversal and the invoice's grant
		// run one at a time in one workflow and can never race.
		n.ObjectID = n.ResourceID
		n.ResourceKind, n.ResourceID = "invoice", stringOrID(doc.Get("data.object.invoice"))
		if n.ResourceID == "" {
			return n, providers.Malformedf("credit note %s names no invoice", n.ObjectID)
		}
	}
	if c := doc.Get("created"); c.Type == gjson.Number {
		t := time.Unix(c.Int(), 0).UTC()
		n.OccurredAt = &t
	}
	return n, nil
}

// stringOrID reads an expandable field: an id, or an object with an id.
func stringOrID(v gjson.Result) string {
	if v.IsObject() {
		return v.Get("id").String()
	}
	return v.String()
}

// KeepHeader keeps nothing of Stripe's own: the event is the body.
func (Provider) KeepHeader(string) bool { return false }

// CheckSecret requires Stripe's format: whsec_ followed by random material
// (32 base62 characters for dashboard endpoints, 64 hex for the CLI's).
func (Provider) CheckSecret(secret string) error {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return errors.New("a Stripe signing secret starts with whsec_")
	}
	if err := providers.CheckRandom(rest); err != nil {
		return fmt.Errorf("stripe: %w", err)
	}
	return nil
}

// NewClient is the Stripe API client of an endpoint: calls for its own
// account go without a Stripe-Account header.
func (Provider) NewClient(cfg providers.ClientConfig) (providers.Client, error) {
	return NewClient(ClientConfig{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, PlatformAccount: cfg.OwnAccount}), nil
}
