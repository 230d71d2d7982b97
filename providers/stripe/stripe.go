// Package stripe is the Stripe provider. One endpoint takes both formats
// Stripe sends: snapshot events (object "event", the object in data.object;
// Stripe-Signature checked by stripe-go's webhook package) and thin events
// of event destinations (object "v2.core.event", the object named by
// related_object, no data; checked by stripe-go's event-notification
// parser). Both are normalized to the evt_ id, livemode, the source account
// (a snapshot's Connect account, a thin event's context) and the resource.
// A thin event for an API v1 resource (v1.invoice.paid) is routed as its
// snapshot twin (RouteType). The API client, built on stripe-go, fetches
// invoices, subscriptions, credit notes, thin events and their related
// objects, and lists events.
package stripe

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is Stripe.
type Provider struct{}

var (
	_ providers.Provider   = Provider{}
	_ providers.Clients    = Provider{}
	_ providers.RouteTyper = Provider{}
	_ providers.Signer     = Provider{}
)

// ThinObject is the object of a thin event (an event destination's
// payload), beside "event" for a snapshot event.
const ThinObject = "v2.core.event"

// isThin reports whether body is a thin event. It only chooses the parser:
// either way the same Stripe-Signature must match the exact bytes.
func isThin(body []byte) bool { return gjson.GetBytes(body, "object").Str == ThinObject }

// notifications parses thin events. It is never used to call the API:
// ParseEventNotification verifies and decodes, nothing else.
var notifications = stripego.NewClient("")

// Name is "stripe".
func (Provider) Name() string { return keys.ProviderStripe }

// Verifier checks Stripe-Signature against secrets.
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier { return verifier(secrets) }

type verifier []hookintype.Secret

// Signature is the Stripe-Signature header Stripe sends with body at time
// at: t=<unix>,v1=<hex>, one v1 per secret (Stripe signs with the old and
// the new secret while it rolls one), each computed by stripe-go's
// webhook.ComputeSignature over "<t>.<body>".
func Signature(body []byte, at time.Time, secrets ...string) string {
	parts := []string{"t=" + strconv.FormatInt(at.Unix(), 10)}
	for _, sec := range secrets {
		parts = append(parts, "v1="+hex.EncodeToString(webhook.ComputeSignature(at, body, sec)))
	}
	return strings.Join(parts, ",")
}

// Sign sets Stripe-Signature for body, signed with secret at time at.
// Snapshot and thin events are signed alike.
func (Provider) Sign(secret string, h http.Header, body []byte, at time.Time) error {
	h.Set("Stripe-Signature", Signature(body, at, secret))
	return nil
}

// Verify checks Stripe-Signature (t=…,v1=…; the timestamp is inside the
// signed material) with stripe-go: webhook.ValidatePayloadWithTolerance for
// a snapshot event (webhook.ConstructEvent would also refuse events of
// another API version, which are ours to take), the client's
// ParseEventNotification for a thin event (ConstructEvent refuses those).
// stripe-go rejects timestamps too old; one too far in the future is
// rejected here, so the tolerance holds both ways as for Standard Webhooks.
// Each active secret is tried in turn (several during a rotation) and the
// one that matched is returned.
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
	check := func(secret string) error { return webhook.ValidatePayloadWithTolerance(body, sig, secret, tolerance) }
	if isThin(body) {
		check = func(secret string) error { return verifyThin(body, sig, secret, tolerance) }
	}
	last := errors.New("no secret")
	for _, s := range v {
		err := check(s.Value)
		if err == nil {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		}
		last = err
		if sameForEverySecret(err) {
			break
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("stripe: %s", last.Error())
}

// verifyThin checks a thin event with stripe-go's ParseEventNotification.
// It verifies the signature, then decodes the notification: a decoding
// failure comes after a matching signature, so the delivery is authentic,
// and Normalize quarantines it as malformed rather than answering 401.
func verifyThin(body []byte, sig, secret string, tolerance time.Duration) error {
	_, err := notifications.ParseEventNotification(body, sig, secret, stripego.WithTolerance(tolerance))
	if err == nil || isSignatureError(err) {
		return err
	}
	return nil
}

// isSignatureError reports the errors of stripe-go's signature check (the
// webhook package's and the client's are distinct values).
func isSignatureError(err error) bool {
	for _, e := range []error{webhook.ErrInvalidHeader, webhook.ErrNotSigned, webhook.ErrTooOld, webhook.ErrNoValidSignature,
		stripego.ErrWebhookInvalidHeader, stripego.ErrWebhookNotSigned, stripego.ErrWebhookTooOld, stripego.ErrWebhookNoValidSignature} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// sameForEverySecret: a malformed header, no header or an old timestamp
// fails whichever secret is tried.
func sameForEverySecret(err error) bool {
	for _, e := range []error{webhook.ErrInvalidHeader, webhook.ErrNotSigned, webhook.ErrTooOld,
		stripego.ErrWebhookInvalidHeader, stripego.ErrWebhookNotSigned, stripego.ErrWebhookTooOld} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Normalize reads a Stripe event, snapshot or thin: evt_ id, type,
// livemode, the source account and the object the event is about.
func (Provider) Normalize(_ hookintype.EndpointSettings, _ http.Header, doc gjson.Result) (providers.Normalized, error) {
	n, err := normalizeCommon(doc)
	if err != nil {
		return n, err
	}
	if doc.Get("object").Str == ThinObject {
		return normalizeThin(n, doc)
	}
	if a := doc.Get("account"); a.Type == gjson.String && a.Str != "" {
		n.Account = a.Str
	}
	n.ResourceKind = doc.Get("data.object.object").String()
	n.ResourceID = doc.Get("data.object.id").String()
	// The object is the resource. A handler that must serialize it with
	// another (credit notes with the invoice they credit) says so with
	// hookinbox.SerializeOn: that is business, not the provider's format.
	if c := doc.Get("created"); c.Type == gjson.Number {
		t := time.Unix(c.Int(), 0).UTC()
		n.OccurredAt = &t
	}
	return n, nil
}

// normalizeCommon reads what both formats carry alike: the id (evt_…, a
// thin event's v2 id included), the type and livemode.
func normalizeCommon(doc gjson.Result) (providers.Normalized, error) {
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
	n.Environment = hookintype.Test
	if live.Bool() {
		n.Environment = hookintype.Live
	}
	return n, nil
}

// normalizeThin reads a thin event: its context (the Connect or
// organization account it happened in, sent back as Stripe-Context when
// the event or its object is fetched) is the source account;
// related_object names the resource (kind from its type: invoice,
// subscription…); created is an ISO-8601 time. It has no data: the
// handlers fetch the object's current state.
func normalizeThin(n providers.Normalized, doc gjson.Result) (providers.Normalized, error) {
	switch c := doc.Get("context"); c.Type {
	case gjson.String:
		n.Account = c.Str
	case gjson.Null:
	default:
		if c.Exists() {
			return n, providers.Malformedf("context is not a string")
		}
	}
	if ro := doc.Get("related_object"); ro.Exists() && ro.Type != gjson.Null {
		if !ro.IsObject() {
			return n, providers.Malformedf("related_object is not an object")
		}
		n.ResourceKind, n.ResourceID = ro.Get("type").String(), ro.Get("id").String()
	}
	if c := doc.Get("created"); c.Exists() && c.Type != gjson.Null {
		t, err := time.Parse(time.RFC3339Nano, c.String())
		if c.Type != gjson.String || err != nil {
			return n, providers.Malformedf("created is not an ISO-8601 time")
		}
		t = t.UTC()
		n.OccurredAt = &t
	}
	return n, nil
}

// RouteType routes a thin event for an API v1 resource as its snapshot
// twin: v1.invoice.paid is handled as invoice.paid. Stripe sends the thin
// version of a snapshot event under the snapshot's name with a v1. prefix
// (and, when one action raised both, names the snapshot in snapshot_event);
// both are one business operation, which the handlers' business keys keep
// to one effect. Credit notes are the exception: the credits domain runs
// them on the invoice they credit (SerializeOn data.object.invoice), which
// a thin event does not name, so a thin credit note event keeps its own
// type and is recorded ignored.
func (Provider) RouteType(eventType string) string {
	snapshot, ok := strings.CutPrefix(eventType, "v1.")
	if !ok || strings.HasPrefix(snapshot, "credit_note.") {
		return eventType
	}
	return snapshot
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
