package slack_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"

	"example.com/slack-events/slack"
)

// Slack's published example (docs.slack.dev, "Verifying requests from
// Slack"): a slash command's form body, signed in July 2018.
const (
	docSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	docTS     = "1531420618"
	docBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

const tolerance = 5 * time.Minute

var docAt = time.Unix(1531420618, 0)

func header(sig, ts string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set(slack.HeaderSignature, sig)
	}
	if ts != "" {
		h.Set(slack.HeaderTimestamp, ts)
	}
	return h
}

// The published example verifies at its own time, and Sign reproduces it:
// checked at a fixed clock, since it is from 2018.
func TestSlacksPublishedExampleAtItsTime(t *testing.T) {
	t.Parallel()
	v := slack.Provider{}.Verifier([]hookintype.Secret{{ID: 3, Value: "another-secret-of-the-endpoint"}, {ID: 7, Value: docSecret}})
	got, err := v.Verify(header(docSig, docTS), []byte(docBody), tolerance, docAt.Add(4*time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(7), got.SecretID, "the secret that matched")
	require.Equal(t, docBody, string(got.Payload))

	h := http.Header{}
	require.NoError(t, slack.Provider{}.Sign(docSecret, h, []byte(docBody), docAt))
	require.Equal(t, docSig, h.Get(slack.HeaderSignature))
	require.Equal(t, docTS, h.Get(slack.HeaderTimestamp))

	// At any later time it is a replay; slack-go's verifier, which reads
	// the wall clock, cannot check it at all.
	_, err = v.Verify(header(docSig, docTS), []byte(docBody), tolerance, docAt.Add(tolerance+time.Second))
	var unauth *providers.Unauthenticated
	require.ErrorAs(t, err, &unauth)
	_, err = slackgo.NewSecretsVerifier(header(docSig, docTS), docSecret)
	require.ErrorIs(t, err, slackgo.ErrExpiredTimestamp)
}

// What Sign makes, slack-go's own verifier (Slack's Go SDK) accepts; and
// a signature computed by hand from Slack's recipe, ours.
func TestSignAndVerifyAgreeWithSlackGo(t *testing.T) {
	t.Parallel()
	const secret = "e3b0c44298fc1c149afbf4c8996fb924"
	body := []byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"message","channel":"C1","ts":"1.000001"}}`)
	now := time.Now()
	h := http.Header{}
	require.NoError(t, slack.Provider{}.Sign(secret, h, body, now))
	sv, err := slackgo.NewSecretsVerifier(h, secret)
	require.NoError(t, err)
	_, err = sv.Write(body)
	require.NoError(t, err)
	require.NoError(t, sv.Ensure())

	sv, err = slackgo.NewSecretsVerifier(h, secret)
	require.NoError(t, err)
	_, _ = sv.Write(append(bytes.Clone(body), ' '))
	require.Error(t, sv.Ensure(), "slack-go refuses a changed body too")

	ts := strconv.FormatInt(now.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":" + string(body)))
	got, err := slack.Provider{}.Verifier([]hookintype.Secret{{ID: 1, Value: secret}}).
		Verify(header("v0="+hex.EncodeToString(m.Sum(nil)), ts), body, tolerance, now)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.SecretID)
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	v := slack.Provider{}.Verifier([]hookintype.Secret{{ID: 7, Value: docSecret}})
	body := []byte(docBody)
	signed := func(secret string, at time.Time, b []byte) http.Header {
		h := http.Header{}
		require.NoError(t, slack.Provider{}.Sign(secret, h, b, at))
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		body []byte
	}{
		{"no headers", http.Header{}, body},
		{"no timestamp", header(docSig, ""), body},
		{"a timestamp that is no number", header(docSig, "1531420618.5"), body},
		{"no v0 prefix", header(docSig[3:], docTS), body},
		{"another version", header("v1="+docSig[3:], docTS), body},
		{"not hex", header("v0=zz"+docSig[5:], docTS), body},
		{"too short", header(docSig[:20], docTS), body},
		{"the wrong secret", signed("an-attackers-guess-0123456789abc", docAt, body), body},
		{"a body changed after signing", header(docSig, docTS), append([]byte(docBody), '&')},
		{"the timestamp changed after signing", header(docSig, "1531420619"), body},
		{"too old", signed(docSecret, docAt.Add(-tolerance-time.Second), body), body},
		{"too far in the future", signed(docSecret, docAt.Add(tolerance+time.Second), body), body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(tt.h, tt.body, tolerance, docAt)
			var unauth *providers.Unauthenticated
			require.ErrorAs(t, err, &unauth)
			require.NotContains(t, err.Error(), docSecret)
		})
	}
	_, err := slack.Provider{}.Verifier(nil).Verify(header(docSig, docTS), body, tolerance, docAt)
	require.Error(t, err, "an endpoint with no secret verifies nothing")
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	norm := func(body string) (providers.Normalized, error) {
		return slack.Provider{}.Normalize(hookintype.EndpointSettings{}, http.Header{}, gjson.Parse(body))
	}

	// Slack's examples (docs.slack.dev: the url_verification event and the
	// Events API's event_callback envelope).
	n, err := norm(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	require.NoError(t, err)
	require.NotNil(t, n.Reply, "the handshake is answered, and is no event")
	require.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", string(n.Reply.Body))
	require.Empty(t, n.EventID)

	n, err = norm(`{"token":"XXYYZZ","team_id":"T123ABC456","api_app_id":"A123ABC456","event":{"type":"message","channel":"C123ABC456",
		"user":"U123ABC456","text":"Live long and prospect.","ts":"1355517523.000005","event_ts":"1355517523.000005","channel_type":"channel"},
		"type":"event_callback","authorizations":[{"team_id":"T123ABC456","user_id":"U123ABC456","is_bot":false}],
		"event_context":"EC123ABC456","event_id":"Ev123ABC456","event_time":1355517523}`)
	require.NoError(t, err)
	require.Nil(t, n.Reply)
	require.Equal(t, "Ev123ABC456", n.EventID)
	require.Equal(t, "message", n.EventType)
	require.Equal(t, "T123ABC456", n.Account, "the tenant is the team")
	require.Equal(t, slack.ResourceKind, n.ResourceKind)
	require.Equal(t, "C123ABC456", n.ResourceID)
	require.Equal(t, time.Unix(1355517523, 0).UTC(), *n.OccurredAt)
	require.False(t, n.UnsignedEventID, "Slack signs the body, id included, and a time")
	require.False(t, n.UnsignedAccount)

	for _, tt := range []struct{ body, channel string }{
		{`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"channel_created","channel":{"id":"C9","name":"x"}}}`, "C9"},
		{`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"reaction_added","item":{"type":"message","channel":"C8","ts":"1.2"}}}`, "C8"},
		{`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"team_join","user":{"id":"U1"}}}`, ""},
	} {
		n, err := norm(tt.body)
		require.NoError(t, err)
		require.Equal(t, tt.channel, n.ResourceID, tt.body)
	}

	n, err = norm(`{"token":"x","type":"app_rate_limited","team_id":"T123456","minute_rate_limited":1518467820,"api_app_id":"BADAPP"}`)
	require.NoError(t, err)
	require.Equal(t, "app_rate_limited:1518467820", n.EventID)
	require.Equal(t, "T123456", n.Account)

	for body, field := range map[string]string{
		`{"type":"url_verification"}`: "challenge",
		`{"challenge":"c"}`:           "type",
		`{"type":"event_callback","team_id":"T1","event":{"type":"message"}}`:   "event_id",
		`{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`: "team_id",
		`{"type":"event_callback","team_id":"T1","event_id":"Ev1"}`:             "event.type",
		`{"type":"block_actions","team_id":"T1"}`:                               "block_actions",
	} {
		_, err := norm(body)
		var bad *providers.MalformedError
		require.ErrorAs(t, err, &bad, body)
		require.Contains(t, bad.Reason, field)
	}
}

func TestKeepHeaderAndCheckSecret(t *testing.T) {
	t.Parallel()
	p := slack.Provider{}
	require.False(t, p.KeepHeader("x-slack-signature"), "never the signature")
	require.True(t, p.KeepHeader("x-slack-retry-num"))
	require.NoError(t, p.CheckSecret("e3b0c44298fc1c149afbf4c8996fb924"), "a signing secret as Slack shows it")
	require.NoError(t, p.CheckSecret("Qm9vdHN0cmFwLXNlY3JldC1vZi10aGUtdGVhbQ=="))
	require.Error(t, p.CheckSecret("00000000000000000000000000000000"))
	require.Error(t, p.CheckSecret("short"))
}
