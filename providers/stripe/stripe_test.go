package stripe_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

// thinInvoicePaid is a thin event as an event destination delivers it
// (docs.stripe.com/api/v2/core/events/object): object v2.core.event, an
// ISO-8601 created, the account in context, the object in related_object,
// no data, and the snapshot twin in snapshot_event.
const thinInvoicePaid = `{"id":"evt_test_65R9Ijk8d6z8V6WAYMwE5FPhC8pNfHXnCvTzVVhW6NSD9KZA","object":"v2.core.event",` +
	`"type":"v1.invoice.paid","livemode":false,"created":"2026-09-30T18:20:00.123Z","context":"acct_1Nv0FGQ9RKHgCVdK",` +
	`"related_object":{"id":"in_1QxYz2Nv0FGQ9RKHgCVdKabc","type":"invoice","url":"/v1/invoices/in_1QxYz2Nv0FGQ9RKHgCVdKabc"},` +
	`"reason":{"type":"request","request":{"id":"req_v2abc","idempotency_key":"k-1"}},"snapshot_event":"evt_1QxYz2Nv0FGQ9RKHsnap"}`

const (
	secretOld = "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m"
	secretNew = "whsec_9pQ2rLmX4vT7sK1nB8cJ5hF3gD6aZ0wE"
)

func signed(body []byte, at time.Time, secrets ...string) http.Header {
	return http.Header{"Stripe-Signature": {simulator.SignStripe(body, at, secrets...)}}
}

func verifier() providers.Verifier {
	return stripe.Provider{}.Verifier([]hookintype.Secret{{ID: 11, Value: secretOld}, {ID: 12, Value: secretNew}})
}

func TestAThinEventIsVerifiedByStripeGoAndRecordsTheSecretThatMatched(t *testing.T) {
	t.Parallel()
	body := []byte(thinInvoicePaid)
	// stripe-go's own test signer, not ours.
	one := func(secret string) http.Header {
		p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
		return http.Header{"Stripe-Signature": {p.Header}}
	}
	tests := []struct {
		name   string
		header http.Header
		secret int64
	}{
		{"signed with the old secret", one(secretOld), 11},
		{"signed with the new secret", one(secretNew), 12},
		{"signed with both while Stripe rolls the secret", signed(body, time.Now(), secretNew, secretOld), 11},
		{"signed with an unknown secret and the new one", signed(body, time.Now(), "whsec_unknownunknownunknownunknown1", secretNew), 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := verifier().Verify(tt.header, body, 5*time.Minute, time.Now())
			require.NoError(t, err)
			require.Equal(t, tt.secret, v.SecretID)
			require.Equal(t, body, v.Payload)
		})
	}
	// The reason for the second parser: stripe-go's ConstructEvent refuses a thin event.
	_, err := webhook.ConstructEvent(body, one(secretOld).Get("Stripe-Signature"), secretOld)
	require.Error(t, err)
}

// TestWhatSignMakesIsWhatStripeGoMakesAndVerifies: Sign's Stripe-Signature
// is the header stripe-go's own test signer makes for the same body, secret
// and time, and Verify accepts it, snapshot and thin alike.
func TestWhatSignMakesIsWhatStripeGoMakesAndVerifies(t *testing.T) {
	t.Parallel()
	at := time.Now().Truncate(time.Second)
	snapshot := []byte(`{"id":"evt_1Pgc76B7WZ01zgkWwyRHS12y","object":"event","type":"invoice.paid","livemode":false,"created":1760000000,` +
		`"data":{"object":{"id":"in_1","object":"invoice"}}}`)
	for name, body := range map[string][]byte{"snapshot": snapshot, "thin": []byte(thinInvoicePaid)} {
		h := http.Header{}
		require.NoError(t, stripe.Provider{}.Sign(secretNew, h, body, at), name)
		p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secretNew, Timestamp: at})
		require.Equal(t, p.Header, h.Get("Stripe-Signature"), name)
		v, err := verifier().Verify(h, body, 5*time.Minute, time.Now())
		require.NoError(t, err, name)
		require.EqualValues(t, 12, v.SecretID, name)
	}
	require.Equal(t, signed(snapshot, at, secretNew, secretOld).Get("Stripe-Signature"),
		stripe.Signature(snapshot, at, secretNew, secretOld), "the simulator signs through stripe.Signature")
}

func TestAForgedOrStaleThinEventIsRefused(t *testing.T) {
	t.Parallel()
	body := []byte(thinInvoicePaid)
	changed := bytes.Replace(body, []byte("in_1QxYz2Nv0FGQ9RKHgCVdKabc\",\"type"), []byte("in_2QxYz2Nv0FGQ9RKHgCVdKabc\",\"type"), 1)
	require.NotEqual(t, body, changed)
	tests := []struct {
		name   string
		header http.Header
		body   []byte
	}{
		{"no signature", http.Header{}, body},
		{"a wrong secret", signed(body, time.Now(), "whsec_wrongwrongwrongwrongwrongwrong1"), body},
		{"the body changed after signing", signed(body, time.Now(), secretOld), changed},
		{"older than the tolerance", signed(body, time.Now().Add(-6*time.Minute), secretOld), body},
		{"further in the future than the tolerance", signed(body, time.Now().Add(6*time.Minute), secretOld), body},
		{"a garbage header", http.Header{"Stripe-Signature": {"nonsense"}}, body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := verifier().Verify(tt.header, tt.body, 5*time.Minute, time.Now())
			var unauth *providers.Unauthenticated
			require.ErrorAs(t, err, &unauth)
		})
	}
}

func normalize(t *testing.T, body string) (providers.Normalized, error) {
	t.Helper()
	require.True(t, gjson.Valid(body), body)
	return stripe.Provider{}.Normalize(hookintype.EndpointSettings{}, http.Header{}, gjson.Parse(body))
}

func TestAThinEventIsNormalizedFromItsRelatedObjectAndContext(t *testing.T) {
	t.Parallel()
	n, err := normalize(t, thinInvoicePaid)
	require.NoError(t, err)
	require.Equal(t, "evt_test_65R9Ijk8d6z8V6WAYMwE5FPhC8pNfHXnCvTzVVhW6NSD9KZA", n.EventID, "the v2 id")
	require.Equal(t, "v1.invoice.paid", n.EventType, "stored as delivered; RouteType maps it")
	require.Equal(t, hookintype.Test, n.Environment)
	require.Equal(t, "acct_1Nv0FGQ9RKHgCVdK", n.Account, "the context is the source account")
	require.Equal(t, "invoice", n.ResourceKind)
	require.Equal(t, "in_1QxYz2Nv0FGQ9RKHgCVdKabc", n.ResourceID)
	require.Empty(t, n.ObjectID)
	require.NotNil(t, n.OccurredAt)
	require.Equal(t, time.Date(2026, 9, 30, 18, 20, 0, 123e6, time.UTC), *n.OccurredAt)
	require.False(t, n.UnsignedEventID, "Stripe signs the body, id included")

	// Its snapshot twin names the same resource in the same account.
	snap, err := normalize(t, `{"id":"evt_1QxYz2Nv0FGQ9RKHsnap","object":"event","type":"invoice.paid","livemode":false,`+
		`"account":"acct_1Nv0FGQ9RKHgCVdK","created":1790792400,"data":{"object":{"id":"in_1QxYz2Nv0FGQ9RKHgCVdKabc","object":"invoice"}}}`)
	require.NoError(t, err)
	require.Equal(t, [3]string{n.Account, n.ResourceKind, n.ResourceID}, [3]string{snap.Account, snap.ResourceKind, snap.ResourceID})
	require.Equal(t, stripe.Provider{}.RouteType(n.EventType), snap.EventType)
}

func TestThinEventVariants(t *testing.T) {
	t.Parallel()
	base := func(extra string) string {
		return `{"id":"evt_test_1","object":"v2.core.event","type":"v1.customer.subscription.updated","livemode":true` + extra + `}`
	}
	tests := []struct {
		name              string
		body              string
		account, kind, id string
		malformed         string
		noTime            bool
	}{
		{name: "no context: the endpoint's own account", body: base(`,"created":"2026-01-02T03:04:05Z","related_object":{"id":"sub_1","type":"subscription","url":"/v1/subscriptions/sub_1"}`),
			kind: "subscription", id: "sub_1"},
		{name: "a null context", body: base(`,"context":null,"related_object":{"id":"sub_1","type":"subscription"}`), kind: "subscription", id: "sub_1", noTime: true},
		{name: "an organization context path", body: base(`,"context":"acct_org/acct_conn","related_object":{"id":"sub_1","type":"subscription"}`),
			account: "acct_org/acct_conn", kind: "subscription", id: "sub_1", noTime: true},
		{name: "no related object (v1.billing.meter.no_meter_found)", body: base(`,"context":"acct_1"`), account: "acct_1", noTime: true},
		{name: "a number for created", body: base(`,"created":1767322000`), malformed: "created is not an ISO-8601 time"},
		{name: "a bad date", body: base(`,"created":"yesterday"`), malformed: "created is not an ISO-8601 time"},
		{name: "a context that is no string", body: base(`,"context":42`), malformed: "context is not a string"},
		{name: "a related object that is no object", body: base(`,"related_object":"sub_1"`), malformed: "related_object is not an object"},
		{name: "not a Stripe event id", body: `{"id":"msg_1","object":"v2.core.event","type":"v1.invoice.paid","livemode":false}`, malformed: "not a Stripe event id"},
		{name: "no livemode", body: `{"id":"evt_1","object":"v2.core.event","type":"v1.invoice.paid"}`, malformed: "missing livemode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := normalize(t, tt.body)
			if tt.malformed != "" {
				var bad *providers.MalformedError
				require.ErrorAs(t, err, &bad)
				require.Contains(t, bad.Reason, tt.malformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, hookintype.Live, n.Environment)
			require.Equal(t, tt.account, n.Account)
			require.Equal(t, tt.kind, n.ResourceKind)
			require.Equal(t, tt.id, n.ResourceID)
			require.Equal(t, tt.noTime, n.OccurredAt == nil)
		})
	}
}

// A signed thin event stripe-go cannot decode is authentic all the same: it
// passes Verify (no 401, which would make Stripe retry a body that never
// changes) and Normalize refuses it (quarantined as malformed).
func TestAnAuthenticThinEventStripeGoCannotDecodeIsMalformedNotUnauthenticated(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_test_2","object":"v2.core.event","type":"v1.invoice.paid","livemode":false,"created":"not a time"}`)
	v, err := verifier().Verify(signed(body, time.Now(), secretNew), body, 5*time.Minute, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 12, v.SecretID)
	_, err = normalize(t, string(body))
	var bad *providers.MalformedError
	require.ErrorAs(t, err, &bad)
}

func TestRouteType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v1.invoice.paid":                         "invoice.paid",
		"v1.customer.subscription.deleted":        "customer.subscription.deleted",
		"invoice.paid":                            "invoice.paid",
		"v2.core.account.updated":                 "v2.core.account.updated",
		"v1.credit_note.created":                  "v1.credit_note.created", // its resource would have to be the invoice
		"v1.billing.meter.error_report_triggered": "billing.meter.error_report_triggered",
	} {
		require.Equal(t, want, stripe.Provider{}.RouteType(in), in)
		require.Equal(t, want, providers.RouteType(stripe.Provider{}, in), in)
	}
}
