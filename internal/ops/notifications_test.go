package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

const notifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func webhookRule() ops.NotificationSpec {
	return ops.NotificationSpec{Name: "oncall", Triggers: []string{"event_failed", "quarantine_opened"},
		WebhookURL: "https://hooks.example.com/in?token=T0KEN", Secret: notifySecret}
}

// Bad input is a clear error, and nothing is stored or audited: unknown
// triggers, bad or private URLs, bad or misplaced secrets, channels given
// twice or not at all, windows out of range, scopes that do not exist or
// that a trigger cannot have.
func TestAddNotificationRefusesBadInputAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, tt := range map[string]struct {
		mut  func(*ops.NotificationSpec)
		want string
	}{
		"bad name":        {func(s *ops.NotificationSpec) { s.Name = "On Call" }, "rule name"},
		"unknown trigger": {func(s *ops.NotificationSpec) { s.Triggers = []string{"event_failed", "disk_full"} }, `unknown trigger "disk_full"`},
		"no trigger":      {func(s *ops.NotificationSpec) { s.Triggers = nil }, "at least one trigger"},
		"no channel":      {func(s *ops.NotificationSpec) { s.WebhookURL, s.Secret = "", "" }, "exactly one channel"},
		"two channels":    {func(s *ops.NotificationSpec) { s.Email = "oncall@example.com" }, "exactly one channel"},
		"not a URL":       {func(s *ops.NotificationSpec) { s.WebhookURL = "hooks.example.com/in" }, "must be an http(s) URL"},
		"ftp":             {func(s *ops.NotificationSpec) { s.WebhookURL = "ftp://hooks.example.com/" }, "must be an http(s) URL"},
		"credentials":     {func(s *ops.NotificationSpec) { s.WebhookURL = "https://u:p@hooks.example.com/" }, "credentials"},
		"plain http":      {func(s *ops.NotificationSpec) { s.WebhookURL = "http://hooks.example.com/" }, "must be https"},
		"loopback":        {func(s *ops.NotificationSpec) { s.WebhookURL = "https://127.0.0.1:9000/" }, "--allow-private"},
		"localhost":       {func(s *ops.NotificationSpec) { s.WebhookURL = "https://localhost/" }, "--allow-private"},
		"private":         {func(s *ops.NotificationSpec) { s.WebhookURL = "https://10.1.2.3/" }, "--allow-private"},
		"metadata":        {func(s *ops.NotificationSpec) { s.WebhookURL = "https://169.254.169.254/latest/" }, "--allow-private"},
		"ipv6 loopback":   {func(s *ops.NotificationSpec) { s.WebhookURL = "https://[::1]/" }, "--allow-private"},
		"private slack": {func(s *ops.NotificationSpec) {
			s.WebhookURL, s.Secret, s.SlackURL = "", "", "https://192.168.1.1/T0KEN"
		}, "--allow-private"},
		"secret not whsec":     {func(s *ops.NotificationSpec) { s.Secret = "hunter2" }, "Standard Webhooks secret"},
		"no secret":            {func(s *ops.NotificationSpec) { s.Secret = "" }, "secret"},
		"secret for slack":     {func(s *ops.NotificationSpec) { s.WebhookURL, s.SlackURL = "", "https://hooks.slack.com/services/T/B/X" }, "its own secret"},
		"secret for email":     {func(s *ops.NotificationSpec) { s.WebhookURL, s.Email = "", "oncall@example.com" }, "an email rule takes none"},
		"bad email":            {func(s *ops.NotificationSpec) { s.WebhookURL, s.Secret, s.Email = "", "", "oncall at example" }, "email"},
		"window too short":     {func(s *ops.NotificationSpec) { s.Window = time.Millisecond }, "window must be"},
		"window too long":      {func(s *ops.NotificationSpec) { s.Window = 30 * 24 * time.Hour }, "window must be"},
		"window fractional":    {func(s *ops.NotificationSpec) { s.Window = 1500 * time.Millisecond }, "whole seconds"},
		"age without trigger":  {func(s *ops.NotificationSpec) { s.PendingAge = time.Minute }, "pending_age trigger's threshold"},
		"unknown workspace":    {func(s *ops.NotificationSpec) { s.Workspace = "ws_nobody" }, `workspace "ws_nobody" does not exist`},
		"unknown endpoint":     {func(s *ops.NotificationSpec) { s.Endpoint = "nope" }, `endpoint "nope" does not exist`},
		"schedule of a tenant": {func(s *ops.NotificationSpec) { s.Workspace, s.Triggers = "ws_1", []string{"schedule_failed"} }, "schedule_failed"},
		"outbox of endpoint":   {func(s *ops.NotificationSpec) { s.Endpoint, s.Triggers = "stripe", []string{"outbox_stuck"} }, "--workspace instead"},
	} {
		s := webhookRule()
		tt.mut(&s)
		_, err := b.svc.AddNotification(b.ctx, alice, s, "")
		require.True(t, ops.IsInvalid(err), "%s: %v", name, err)
		require.ErrorContains(t, err, tt.want, name)
		for _, leak := range []string{"T0KEN", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
			require.NotContains(t, err.Error(), leak, "%s: an error never shows the URL's path or query, nor the secret", name)
		}
	}
	_, err := b.svc.AddNotification(b.ctx, ops.Actor{}, webhookRule(), "")
	require.True(t, ops.IsInvalid(err), "who acts must be named")
	require.Zero(t, b.count(t, `SELECT count(*) FROM notification_rules`))
	require.Empty(t, b.actions(t, "notification_add"))
}

// A rule is stored with its secret sealed and audited without it; a Slack
// URL (its token is its path) is sealed whole and shown by its origin only;
// adding the same name again is a conflict; removing is audited.
func TestAddNotificationSealsItsSecretAndAuditsWithoutIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v, err := b.svc.AddNotification(b.ctx, alice, webhookRule(), "on-call pager")
	require.NoError(t, err)
	require.Equal(t, []string{"event_failed", "quarantine_opened"}, v.Triggers)
	require.Equal(t, notify.ChannelWebhook, v.Channel)
	require.True(t, v.Signed)
	require.Equal(t, "15m0s", v.Window, "the default window")
	_, err = b.svc.AddNotification(b.ctx, alice, webhookRule(), "")
	require.True(t, ops.IsConflict(err), "%v", err)

	v, err = b.svc.AddNotification(b.ctx, alice, ops.NotificationSpec{Name: "chat", Triggers: []string{"all"},
		SlackURL: "https://hooks.slack.com/services/T000/B000/XXXXtokenXXXX"}, "")
	require.NoError(t, err)
	require.Equal(t, "https://hooks.slack.com", v.Target, "the origin only")
	require.Equal(t, notify.Triggers, v.Triggers)
	v, err = b.svc.AddNotification(b.ctx, alice, ops.NotificationSpec{Name: "tenant", Triggers: []string{"event_failed", "pending_age"},
		Email: "Ops <ops@ws1.example>", Workspace: "ws_1", Window: time.Hour, PendingAge: 5 * time.Minute}, "")
	require.NoError(t, err)
	require.Equal(t, "ops@ws1.example", v.Target)
	require.Equal(t, "5m0s", v.PendingAge)
	require.False(t, v.Signed)

	var all []byte
	rows, err := b.st.Pool.Query(b.ctx, `SELECT coalesce(secret_sealed, ''), target FROM notification_rules`)
	require.NoError(t, err)
	for rows.Next() {
		var sealed []byte
		var target string
		require.NoError(t, rows.Scan(&sealed, &target))
		all = append(append(all, sealed...), target...)
	}
	require.NoError(t, rows.Err())
	require.False(t, bytes.Contains(all, []byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")), "the webhook secret is sealed")
	require.False(t, bytes.Contains(all, []byte("XXXXtokenXXXX")), "the Slack URL's token is sealed")
	r, err := notifications.Open(b.ctx, b.st, "chat")
	require.NoError(t, err)
	require.Equal(t, "https://hooks.slack.com/services/T000/B000/XXXXtokenXXXX", r.Secret, "the worker opens it")

	acts := b.actions(t, "notification_add")
	require.Len(t, acts, 3)
	raw, err := json.Marshal(acts)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NotContains(t, string(raw), "XXXXtoken")
	listed, err := b.svc.ListNotifications(b.ctx)
	require.NoError(t, err)
	raw, err = json.Marshal(listed)
	require.NoError(t, err)
	require.Len(t, listed, 3)
	require.NotContains(t, string(raw), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NotContains(t, string(raw), "XXXXtoken")

	require.NoError(t, b.svc.RemoveNotification(b.ctx, alice, "chat", "replaced"))
	require.True(t, ops.IsNotFound(b.svc.RemoveNotification(b.ctx, alice, "chat", "")))
	require.Len(t, b.actions(t, "notification_remove"), 1)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM notification_rules`))
}

// `test` sends through the channel now and says what it answered, accepted
// or not, audited each time with the status only (a body may echo
// anything): a signed webhook the receiver verifies, a Slack post, and a
// refusal reported as a result, not an error.
func TestNotificationTestSaysWhatTheChannelAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	verifier, err := standardwebhooks.NewWebhook(notifySecret)
	require.NoError(t, err)
	var mu sync.Mutex
	var docs []notify.Document
	var slackText []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/slack/T0KEN" {
			var m map[string]string
			_ = json.Unmarshal(body, &m)
			slackText = append(slackText, m["text"])
			if refuse {
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte("no_service"))
				return
			}
			_, _ = w.Write([]byte("ok"))
			return
		}
		if err := verifier.Verify(body, r.Header); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var d notify.Document
		_ = json.Unmarshal(body, &d)
		docs = append(docs, d)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"received": true}`))
	}))
	defer srv.Close()
	b.svc.Config.ConsoleURL = "http://console.test"
	_, err = b.svc.AddNotification(b.ctx, alice, ops.NotificationSpec{Name: "hook", Triggers: []string{"all"},
		WebhookURL: srv.URL + "/in", Secret: notifySecret, AllowPrivate: true}, "")
	require.NoError(t, err)
	_, err = b.svc.AddNotification(b.ctx, alice, ops.NotificationSpec{Name: "chat", Triggers: []string{"all"},
		SlackURL: srv.URL + "/slack/T0KEN", AllowPrivate: true}, "")
	require.NoError(t, err)

	res, err := b.svc.TestNotification(b.ctx, alice, "hook", "does it reach the pager?")
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	require.Equal(t, "HTTP 202", res.Answer, "a private address's answer: the status only, never its body")
	mu.Lock()
	require.Len(t, docs, 1, "signed with the rule's secret and verified")
	require.Equal(t, notify.TypeTest, docs[0].Type)
	require.Equal(t, res.OperationKey, docs[0].OperationKey)
	require.Contains(t, docs[0].Text, "http://console.test/notifications")
	mu.Unlock()

	res, err = b.svc.TestNotification(b.ctx, alice, "chat", "")
	require.NoError(t, err)
	require.True(t, res.OK)
	require.Equal(t, "HTTP 200", res.Answer)
	mu.Lock()
	refuse = true
	mu.Unlock()
	res, err = b.svc.TestNotification(b.ctx, alice, "chat", "")
	require.NoError(t, err, "a refusal is the result, not an error")
	require.False(t, res.OK)
	require.Equal(t, "HTTP 404", res.Answer)
	require.Contains(t, res.Error, "HTTP 404")
	require.NotContains(t, res.Error, "T0KEN")
	mu.Lock()
	require.Len(t, slackText, 2)
	require.True(t, strings.HasPrefix(slackText[0], "[hookinbox] TEST: notifications of rule chat"))
	mu.Unlock()

	acts := b.actions(t, "notification_test")
	require.Len(t, acts, 3)
	raw, err := json.Marshal(acts)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "no_service", "the audit keeps the status only")
	require.NotContains(t, string(raw), "T0KEN")
	require.Contains(t, string(raw), "HTTP 404")

	_, err = b.svc.TestNotification(b.ctx, alice, "nope", "")
	require.True(t, ops.IsNotFound(err))
}

// The email channel's test goes to the configured mailer (Mailpit here),
// which answers with the message's id.
func TestNotificationTestOfAnEmailRuleReachesTheMailer(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	b := setup(t)
	b.svc.Mailer = &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "hookinbox@test.local", Timeout: 5 * time.Second, TLS: "off"}
	_, err := b.svc.AddNotification(b.ctx, alice, ops.NotificationSpec{Name: "mail", Triggers: []string{"event_failed"}, Email: "oncall@example.com"}, "")
	require.NoError(t, err)
	res, err := b.svc.TestNotification(b.ctx, alice, "mail", "")
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res)
	require.Equal(t, "accepted as "+outbound.StableID(res.OperationKey)+"@hookinbox.local", res.Answer)
	require.Eventually(t, func() bool {
		found, err := (&outbound.SMTPMailer{LookupURL: mp.HTTPURL}).Find(context.Background(), res.OperationKey)
		return err == nil && found
	}, 10*time.Second, 100*time.Millisecond, "Mailpit has it")

	b.svc.Mailer = nil
	_, err = b.svc.TestNotification(b.ctx, alice, "mail", "")
	require.ErrorContains(t, err, "no mailer")
}
