package messages_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"

	"example.com/slack-events/messages"
	"example.com/slack-events/slack"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	endpoint = "slack"
	secret   = "e3b0c44298fc1c149afbf4c8996fb924"
	team     = "T0TEAM"
	ws       = "ws_team"
	channel  = "C0GENERAL"
)

func setup(t *testing.T) *hookintest.Harness {
	t.Helper()
	h := hookintest.New(t, messages.New())
	h.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: endpoint, Provider: slack.Name, Secret: secret, Account: team, Workspace: ws})
	return h
}

// callback is an Events API delivery of event, as Slack sends it.
func callback(eventID, event string) []byte {
	return fmt.Appendf(nil, `{"token":"XXYYZZ","team_id":%q,"api_app_id":"A0APP","type":"event_callback","event_id":%q,`+
		`"event_time":%d,"authorizations":[{"team_id":%q,"user_id":"U0BOT","is_bot":true}],"event":%s}`,
		team, eventID, time.Now().Unix(), team, event)
}

// The inner events of a message's life (docs.slack.dev: the message
// event and its message_changed and message_deleted subtypes). at is the
// change's event_ts.
func posted(ts, text string) string {
	return fmt.Sprintf(`{"type":"message","channel":%q,"user":"U0ADA","text":%q,"ts":%q,"event_ts":%q,"channel_type":"channel"}`,
		channel, text, ts, ts)
}

func edited(ts, text, at string) string {
	return fmt.Sprintf(`{"type":"message","subtype":"message_changed","hidden":true,"channel":%q,"ts":%q,"event_ts":%q,`+
		`"message":{"type":"message","user":"U0ADA","text":%q,"ts":%q,"edited":{"user":"U0ADA","ts":%q}},`+
		`"previous_message":{"type":"message","user":"U0ADA","text":"before","ts":%q},"channel_type":"channel"}`,
		channel, at, at, text, ts, at, ts)
}

func deleted(ts, at string) string {
	return fmt.Sprintf(`{"type":"message","subtype":"message_deleted","hidden":true,"channel":%q,"ts":%q,"event_ts":%q,`+
		`"deleted_ts":%q,"previous_message":{"type":"message","user":"U0ADA","text":"bye","ts":%q},"channel_type":"channel"}`,
		channel, at, at, ts, ts)
}

// message is the row of message ts.
type message struct {
	text    *string
	user    *string
	edited  *string
	deleted bool
	version int64
}

func row(t *testing.T, h *hookintest.Harness, ts string) message {
	t.Helper()
	var m message
	require.NoError(t, h.DB.QueryRow(context.Background(), `SELECT text, user_id, edited_ts, deleted, provider_version
		FROM slack_messages WHERE team_id = $1 AND channel = $2 AND ts = $3`, team, channel, ts).
		Scan(&m.text, &m.user, &m.edited, &m.deleted, &m.version))
	return m
}

func count(t *testing.T, h *hookintest.Harness, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, h.DB.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// handle delivers one event and runs its handler once, as the worker
// would.
func handle(t *testing.T, h *hookintest.Harness, eventID, event string) hookintest.Handled {
	t.Helper()
	ctx := context.Background()
	d := h.Deliver(ctx, endpoint, secret, nil, callback(eventID, event))
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	require.Equal(t, hookintype.EventKey{Provider: slack.Name, Account: team, Environment: hookintype.Test, EventID: eventID}, d.Key,
		"keyed by event_id in the team")
	res := h.Handle(ctx, d.Key)
	require.NoError(t, res.Err)
	return res
}

// A message posted, edited twice and deleted is one row, whatever order
// the changes arrive in: a late older edit writes nothing, and once
// deleted it stays deleted, its text gone.
func TestAMessageIsOneRowThatNeverGoesBackwards(t *testing.T) {
	t.Parallel()
	h := setup(t)
	const ts = "1700000000.000100"

	res := handle(t, h, "Ev01", posted(ts, "hello"))
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Equal(t, "posted message "+ts, res.Note)
	m := row(t, h, ts)
	require.Equal(t, "hello", *m.text)
	require.Equal(t, "U0ADA", *m.user)
	require.Equal(t, int64(1700000000_000100), m.version, "the change's event_ts, in microseconds")

	// The second edit arrives before the first.
	handle(t, h, "Ev03", edited(ts, "hello, second edit", "1700000200.000000"))
	res = handle(t, h, "Ev02", edited(ts, "hello, first edit", "1700000100.000000"))
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Contains(t, res.Note, "newer state", "the late older edit is read, and writes nothing")
	m = row(t, h, ts)
	require.Equal(t, "hello, second edit", *m.text)
	require.Equal(t, "1700000200.000000", *m.edited)

	// Slack retries a delivery with the same event_id: a duplicate.
	d := h.Deliver(context.Background(), endpoint, secret, http.Header{"X-Slack-Retry-Num": {"1"}, "X-Slack-Retry-Reason": {"http_timeout"}},
		callback("Ev03", edited(ts, "hello, second edit", "1700000200.000000")))
	require.Equal(t, "duplicate", d.Outcome)

	res = handle(t, h, "Ev04", deleted(ts, "1700000300.000000"))
	require.Equal(t, "deleted message "+ts, res.Note)
	m = row(t, h, ts)
	require.True(t, m.deleted)
	require.Nil(t, m.text, "a deleted message's text is forgotten")

	// An edit older than the deletion, and even one stamped after it,
	// leave the tombstone alone.
	handle(t, h, "Ev05", edited(ts, "resurrected?", "1700000250.000000"))
	handle(t, h, "Ev06", edited(ts, "resurrected?", "1700000400.000000"))
	m = row(t, h, ts)
	require.True(t, m.deleted)
	require.Nil(t, m.text)
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM slack_messages`), "one row per message")

	// A message whose deletion arrives before its post stays deleted too.
	handle(t, h, "Ev08", deleted("1700000500.000100", "1700000600.000000"))
	handle(t, h, "Ev07", posted("1700000500.000100", "too late"))
	require.True(t, row(t, h, "1700000500.000100").deleted)
	require.Equal(t, 2, count(t, h, `SELECT count(*) FROM slack_messages`))
}

// A message event that changes no message's content is read and ignored;
// event types no handler takes are recorded ignored at the intake.
func TestWhatIsNoMessageContentIsIgnored(t *testing.T) {
	t.Parallel()
	h := setup(t)
	res := handle(t, h, "Ev10", fmt.Sprintf(`{"type":"message","subtype":"channel_join","channel":%q,"user":"U0BOB",`+
		`"text":"<@U0BOB> has joined the channel","ts":"1700000000.000200","event_ts":"1700000000.000200"}`, channel))
	require.Equal(t, hookintype.StatusIgnored, res.Status)
	require.Contains(t, res.Note, "channel_join")

	d := h.Deliver(context.Background(), endpoint, secret, nil, callback("Ev11",
		`{"type":"reaction_added","user":"U0ADA","reaction":"tada","item":{"type":"message","channel":"C0GENERAL","ts":"1.2"},"event_ts":"1.3"}`))
	require.Equal(t, "ignored", d.Outcome)
	require.Zero(t, count(t, h, `SELECT count(*) FROM slack_messages`))
}

// The url_verification handshake Slack sends when the request URL is set
// is answered with its challenge, and stored as nothing.
func TestTheURLVerificationHandshakeStoresNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	d := h.Deliver(context.Background(), endpoint, secret, nil,
		[]byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`))
	require.Equal(t, "replied", d.Outcome)
	require.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", string(d.Reply))
	require.Zero(t, count(t, h, `SELECT count(*) FROM webhook_inbox`))
	require.Zero(t, count(t, h, `SELECT count(*) FROM inbox_quarantine`))
}

// The team's grants: the worker role writes the table, the read-only
// operator role reads it but never who wrote what.
func TestTheTeamsTableIsCoveredByTheRoles(t *testing.T) {
	t.Parallel()
	h := setup(t)
	var worker, operatorText, operatorTS, intake bool
	require.NoError(t, h.DB.QueryRow(context.Background(), `SELECT
		has_table_privilege('hookinbox_worker', 'slack_messages', 'UPDATE'),
		has_column_privilege('hookinbox_operator', 'slack_messages', 'text', 'SELECT'),
		has_column_privilege('hookinbox_operator', 'slack_messages', 'ts', 'SELECT'),
		has_table_privilege('hookinbox_intake', 'slack_messages', 'SELECT')`).Scan(&worker, &operatorText, &operatorTS, &intake))
	require.True(t, worker)
	require.False(t, operatorText, "a message's text is personal data")
	require.True(t, operatorTS)
	require.False(t, intake)
}

// post sends body to the running intake as Slack does, signed with
// signingSecret at the real time, and returns the answer.
func post(t *testing.T, s *hookintest.Stack, signingSecret string, body []byte) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+"/webhooks/"+endpoint, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	require.NoError(t, hookintest.Sign(slack.Name, signingSecret, req.Header, body, time.Now()))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Content-Type"), string(got)
}

// On the real stack (the intake on HTTP, Temporal, the worker): the
// handshake is answered as Slack expects, a bad signature is refused with
// nothing stored, and a message reaches its row.
func TestSlackOnTheRealStack(t *testing.T) {
	t.Parallel()
	h := setup(t)
	s := h.Run()
	ctx := context.Background()

	code, ctype, body := post(t, s, secret, []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"c-on-the-stack","type":"url_verification"}`))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "c-on-the-stack", body, "Slack reads the challenge back as plain text")
	require.Equal(t, "text/plain; charset=utf-8", ctype)

	code, _, body = post(t, s, "00112233445566778899aabbccddeeff", []byte(`{"challenge":"c-forged","type":"url_verification"}`))
	require.Equal(t, http.StatusUnauthorized, code)
	require.NotContains(t, body, "c-forged")
	code, _, _ = post(t, s, "00112233445566778899aabbccddeeff", callback("EvForged", posted("1700000000.000900", "forged")))
	require.Equal(t, http.StatusUnauthorized, code)
	require.Zero(t, count(t, h, `SELECT count(*) FROM webhook_inbox`), "nothing stored")

	code, _, body = post(t, s, secret, callback("EvStack", posted("1700000000.000900", "on the stack")))
	require.Equal(t, http.StatusOK, code, body)
	key := hookintype.EventKey{Provider: slack.Name, Account: team, Environment: hookintype.Test, EventID: "EvStack"}
	s.WaitFor(ctx, key, hookintype.StatusDone, 2*time.Minute)
	require.Equal(t, "on the stack", *row(t, h, "1700000000.000900").text)
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for ts, want := range map[string]int64{"1355517523.000005": 1355517523_000005, "1355517523": 1355517523_000000, "1.5": 1_500000} {
		got, err := messages.Version(ts)
		require.NoError(t, err)
		require.Equal(t, want, got, ts)
	}
	for _, ts := range []string{"", "x.1", "1.0000001", "-1.2", "1.-2", "1.x"} {
		_, err := messages.Version(ts)
		require.Error(t, err, ts)
	}
}
