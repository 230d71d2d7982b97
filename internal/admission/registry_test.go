package admission_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/providertest"
)

// acme is a provider registered as a team's own is: X-Acme-Signature is
// the hex HMAC-SHA256 of the body, X-Acme-Delivery the event id, the body
// {"type":…,"account":…,"data":{"id":…}}.
type acme struct{}

func (acme) Name() string { return "acme" }

func (acme) Verifier(secrets []keys.Secret) providers.Verifier {
	return providertest.HMACVerifier{Header: "X-Acme-Signature", Secrets: secrets}
}

func (acme) Normalize(_ keys.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	n := providers.Normalized{EventID: h.Get("X-Acme-Delivery"), ResourceKind: "widget", ResourceID: doc.Get("data.id").String()}
	if n.EventID == "" {
		return n, providers.Malformedf("missing X-Acme-Delivery")
	}
	var err error
	if n.EventType, err = providers.RequireString(doc, "type"); err != nil {
		return n, err
	}
	if n.Account, err = providers.RequireString(doc, "account"); err != nil {
		return n, err
	}
	return n, nil
}

func (acme) KeepHeader(name string) bool { return name == "x-acme-delivery" }

func (acme) CheckSecret(s string) error {
	if len(s) < 16 {
		return errors.New("an acme secret has at least 16 characters")
	}
	return nil
}

func init() { providers.Register(acme{}) }

func acmeHeaders(body []byte, secret, delivery string) map[string]string {
	h := providertest.HMACHeaders("X-Acme-Signature", body, secret)
	h["X-Acme-Delivery"] = delivery
	return h
}

// TestARegisteredProviderIsAdmitted: a provider is its Provider value and
// one Register call; nothing else names it.
func TestARegisteredProviderIsAdmitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secret = "acme-secret-0123456789"
	require.ErrorContains(t, providers.ValidateSecret("acme", "short"), "16 characters")
	require.NoError(t, providers.ValidateSecret("acme", secret))
	require.Contains(t, providers.OneOf(), "acme")
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "acme", Provider: "acme", Environment: "live", Secrets: []string{secret}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "acme", "team_1", "ws_acme"))

	body := []byte(`{"type":"widget.updated","account":"team_1","data":{"id":"w_1"}}`)
	res, err := b.admit(t, "acme", body, acmeHeaders(body, secret, "dlv_1"))
	require.NoError(t, err)
	require.Equal(t, admission.Ignored, res.Outcome, "no handler takes acme events")
	key := keys.Event{Provider: "acme", Account: "team_1", Environment: "live", EventID: "dlv_1"}
	require.Equal(t, key, res.Key)
	got := b.row(t, key)
	require.Equal(t, "ws_acme", got.WorkspaceID)
	require.Equal(t, "w_1", got.ResourceID)

	_, err = b.admit(t, "acme", body, acmeHeaders(body, "another-secret-0123", "dlv_2"))
	var unauth *providers.Unauthenticated
	require.ErrorAs(t, err, &unauth)

	// An unlinked account is quarantined with the headers acme keeps.
	other := []byte(`{"type":"widget.updated","account":"team_2","data":{"id":"w_2"}}`)
	h := acmeHeaders(other, secret, "dlv_3")
	res, err = b.admit(t, "acme", other, h)
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonUnknownAccount, res.Reason)
	var kept []byte
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT headers FROM inbox_quarantine WHERE event_id = 'dlv_3'`).Scan(&kept))
	require.Contains(t, string(kept), "dlv_3")
	require.False(t, strings.Contains(strings.ToLower(string(kept)), "x-acme-signature"), "never the signature")
}

func init() { providers.Register(providertest.Handshaker{}) }

// TestAHandshakeIsAnsweredAndStoresNothing: a provider's Normalize may say
// a verified delivery is a handshake (Slack's url_verification): admission
// hands its reply back and stores nothing, not even before the endpoint
// links an account; its signature is checked first, as any delivery's.
func TestAHandshakeIsAnsweredAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secret = "handshake-secret-0123456789"
	// No account is linked yet: the sender checks the URL when it is set up.
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "hs", Provider: providertest.HandshakerName,
		Environment: "live", Secrets: []string{secret}}))
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "hs-linked", Provider: providertest.HandshakerName,
		Environment: "live", Secrets: []string{secret}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "hs-linked", "team_1", "ws_hs"))
	stored := func() (n int) {
		require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM webhook_inbox WHERE endpoint_slug IN ('hs', 'hs-linked'))
			+ (SELECT count(*) FROM inbox_quarantine WHERE endpoint_slug IN ('hs', 'hs-linked'))`).Scan(&n))
		return n
	}

	body := []byte(`{"type":"handshake","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`)
	res, err := b.admit(t, "hs", body, providertest.HandshakerHeaders(body, secret))
	require.NoError(t, err)
	require.Equal(t, admission.Replied, res.Outcome)
	require.NotNil(t, res.Reply)
	require.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", string(res.Reply.Body))
	require.Equal(t, "text/plain; charset=utf-8", res.Reply.ContentType)
	require.Zero(t, stored(), "a handshake stores nothing")
	require.Zero(t, b.handoff.count())

	_, err = b.admit(t, "hs", body, providertest.HandshakerHeaders(body, "another-secret-0123456789"))
	var unauth *providers.Unauthenticated
	require.ErrorAs(t, err, &unauth, "a handshake is verified first")
	_, err = b.admit(t, "hs", body, nil)
	require.ErrorAs(t, err, &unauth)
	require.Zero(t, stored())

	// The backfill has no one to answer: a listed handshake is refused.
	_, err = b.backfill(t, "hs-linked", "team_1", body)
	require.ErrorContains(t, err, "handshake")
	require.Zero(t, stored())

	// A reply the intake will not send is the provider's mistake: the
	// delivery is quarantined as malformed.
	for _, bad := range []string{
		`{"type":"handshake","challenge":"` + strings.Repeat("x", providers.MaxReplyBytes+1) + `"}`,
		`{"type":"handshake","challenge":"c","content_type":"text/plain\r\nSet-Cookie: a=b"}`,
	} {
		res, err = b.admit(t, "hs", []byte(bad), providertest.HandshakerHeaders([]byte(bad), secret))
		require.NoError(t, err)
		require.Equal(t, admission.Quarantined, res.Outcome)
		require.Equal(t, inbox.ReasonMalformed, res.Reason)
		require.Nil(t, res.Reply)
	}

	// The provider's events are admitted as ever.
	ev := []byte(`{"type":"thing.happened","id":"ev_1","account":"team_1","object":"o_1"}`)
	res, err = b.admit(t, "hs-linked", ev, providertest.HandshakerHeaders(ev, secret))
	require.NoError(t, err)
	require.Equal(t, admission.Ignored, res.Outcome, "%s: %s", res.Reason, res.Detail)
	require.Nil(t, res.Reply)
}
