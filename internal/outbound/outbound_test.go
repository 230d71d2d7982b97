package outbound_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestHTTPMailerClassifiesEveryOutcome(t *testing.T) {
	t.Parallel()
	var gotKey atomic.Value
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		definite  bool
		permanent bool
		ok        bool
	}{
		{"accepted", func(w http.ResponseWriter, r *http.Request) {
			gotKey.Store(r.Header.Get("Idempotency-Key"))
			_, _ = w.Write([]byte(`{"id":"em_1"}`))
		}, false, false, true},
		{"rate limited: not processed", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) }, true, false, false},
		{"bad request: rejected", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(400) }, true, true, false},
		{"bad gateway: may have processed", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502) }, false, false, false},
		{"connection dropped after the request", func(w http.ResponseWriter, _ *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			m := &outbound.HTTPMailer{BaseURL: srv.URL, From: "a@b", Dedupes: true}
			id, err := m.Send(context.Background(), outbound.Message{Key: "op:1", To: "x@y", Subject: "s", Text: "t"})
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, "em_1", id)
				require.Equal(t, "op:1", gotKey.Load())
				return
			}
			require.Error(t, err)
			require.Equal(t, tt.definite, outbound.IsDefinite(err), err.Error())
			require.Equal(t, tt.permanent, outbound.IsPermanent(err), err.Error())
		})
	}
	// Nothing listening: the request never left, a definite failure.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = (&outbound.HTTPMailer{BaseURL: "http://" + addr}).Send(context.Background(), outbound.Message{Key: "k", To: "x@y"})
	require.True(t, outbound.IsDefinite(err))
	require.False(t, outbound.IsPermanent(err))
}

func TestWebhookSenderSignsWithStandardWebhooksAndKeepsItsID(t *testing.T) {
	t.Parallel()
	secret := "whsec_dGVhbS1kZXN0aW5hdGlvbi1zZWNyZXQtMzItYnl0ZXMh"
	verifier, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			w.WriteHeader(401)
			return
		}
		ids = append(ids, r.Header.Get("webhook-id"))
		w.WriteHeader(204)
	}))
	defer srv.Close()
	s := &outbound.WebhookSender{URL: srv.URL, Secret: secret, Guard: outbound.Guard{AllowPrivate: true}}
	require.True(t, s.Idempotent())
	msg := outbound.Message{Key: "feedback-alert/standard/proj_1/live/fb_1/initial-alert:oncall", Body: []byte(`{"type":"feedback.alert"}`)}
	for range 2 {
		_, err := s.Send(context.Background(), msg)
		require.NoError(t, err)
	}
	require.Len(t, ids, 2)
	require.Equal(t, ids[0], ids[1], "a repeat carries the same webhook-id, so the receiver dedupes")
	require.Equal(t, outbound.WebhookID(msg.Key), ids[0])

	_, err = (&outbound.WebhookSender{URL: srv.URL, Secret: "whsec_" + "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZyE=", Guard: outbound.Guard{AllowPrivate: true}}).Send(context.Background(), msg)
	require.True(t, outbound.IsPermanent(err), "a 401 from the team endpoint is a rejection")
}

// mailpitMessages returns the messages Mailpit holds.
func mailpitMessages(t *testing.T, base string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/messages")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Messages
}

func TestSMTPMailerAgainstMailpit(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	m := &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "hookinbox@test.local", LookupURL: mp.HTTPURL, Timeout: 5 * time.Second}
	require.False(t, m.Idempotent())
	msg := outbound.Message{Key: "credit-grant/stripe/acct_1/test/in_1/initial-credit-grant:confirmation",
		To: "billing@ws.example", Subject: "100 credits added", Text: "Invoice in_1 was paid."}

	found, err := m.Find(context.Background(), msg.Key)
	require.NoError(t, err)
	require.False(t, found)

	id, err := m.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, outbound.StableID(msg.Key)+"@hookinbox.local", id)
	require.Eventually(t, func() bool { f, _ := m.Find(context.Background(), msg.Key); return f }, 10*time.Second, 100*time.Millisecond)
	msgs := mailpitMessages(t, mp.HTTPURL)
	require.Len(t, msgs, 1)
	require.Equal(t, id, msgs[0]["MessageID"])
	require.Equal(t, "100 credits added", msgs[0]["Subject"])

	// Another operation is not found by this one's key.
	found, err = m.Find(context.Background(), msg.Key+"x")
	require.NoError(t, err)
	require.False(t, found)

	// SMTP down: nothing was handed over, a definite (retryable) failure.
	mp.Kill()
	_, err = m.Send(context.Background(), msg)
	require.Error(t, err)
	require.True(t, outbound.IsDefinite(err), fmt.Sprint(err))
	require.False(t, outbound.IsPermanent(err))
	require.NoError(t, mp.Restart(context.Background()))
	_, err = m.Send(context.Background(), msg)
	require.NoError(t, err)
}

func TestGuardRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"127.0.0.1", false}, {"10.1.2.3", false}, {"172.16.0.9", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"100.64.0.1", false}, {"0.0.0.0", false}, {"224.0.0.1", false},
		{"::1", false}, {"fc00::1", false}, {"fe80::1", false}, {"::ffff:127.0.0.1", false}, {"::", false},
		{"64:ff9b::7f00:1", false}, {"2002:a9fe:a9fe::", false}, {"::a00:1", false}, {"198.18.0.1", false},
		{"240.0.0.1", false}, {"0.0.0.1", false}, {"192.0.0.1", false}, {"fec0::1", false},
		{"8.8.8.8", true}, {"2001:4860:4860::8888", true}, {"100.128.0.1", true}, {"64:ff9b::808:808", true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.allowed, outbound.Guard{}.Allowed(netip.MustParseAddr(tt.addr)), tt.addr)
		require.True(t, outbound.Guard{AllowPrivate: true}.Allowed(netip.MustParseAddr(tt.addr)), tt.addr)
	}
}

// A team webhook destination pointed at the worker's own network (SSRF) is
// refused at dial time, for good, and the destination sees nothing.
func TestWebhookSenderRefusesAPrivateDestination(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := &outbound.WebhookSender{URL: srv.URL + "/hook", Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))}
	_, err := s.Send(context.Background(), outbound.Message{Key: "op:ssrf", Body: []byte(`{}`)})
	require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
	require.True(t, outbound.IsPermanent(err), err.Error())
	require.Zero(t, hits.Load())

	s.Guard = outbound.Guard{AllowPrivate: true}
	_, err = s.Send(context.Background(), outbound.Message{Key: "op:ssrf", Body: []byte(`{}`)})
	require.NoError(t, err)
	require.EqualValues(t, 1, hits.Load())
}

// Redirects are not followed: the second host never sees the request, and
// the answer is a rejection.
func TestWebhookSenderDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/metadata", http.StatusTemporaryRedirect))
	defer srv.Close()
	s := &outbound.WebhookSender{URL: srv.URL, Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		Guard: outbound.Guard{AllowPrivate: true}}
	_, err := s.Send(context.Background(), outbound.Message{Key: "op:redirect", Body: []byte(`{}`)})
	require.Error(t, err)
	require.True(t, outbound.IsPermanent(err), err.Error())
	require.Zero(t, reached.Load())
}

// Errors end up on the outbox row, in logs and in Temporal histories: they
// name the destination's origin and status only, never the URL's path or
// query (where webhook tokens live) nor what the destination answered.
func TestSendErrorsCarryNoURLPathQueryOrBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("stack trace: db password=hunter2"))
	}))
	defer srv.Close()
	secretPath := "/services/T000/B000/XXXXtokenXXXX?key=querysecret"
	s := &outbound.WebhookSender{URL: srv.URL + secretPath, Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		Guard: outbound.Guard{AllowPrivate: true}}
	m := &outbound.HTTPMailer{BaseURL: srv.URL + "/tenant-token-path", From: "a@b"}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	gone := &outbound.WebhookSender{URL: closedURL + secretPath, Secret: s.Secret, Guard: s.Guard}
	for _, send := range []func() error{
		func() error {
			_, err := s.Send(context.Background(), outbound.Message{Key: "k", Body: []byte(`{}`)})
			return err
		},
		func() error {
			_, err := m.Send(context.Background(), outbound.Message{Key: "k", To: "x@y", Subject: "s", Text: "t"})
			return err
		},
		func() error {
			_, err := gone.Send(context.Background(), outbound.Message{Key: "k", Body: []byte(`{}`)})
			return err
		},
	} {
		err := send()
		require.Error(t, err)
		for _, leak := range []string{"XXXXtoken", "querysecret", "hunter2", "stack trace", "tenant-token-path"} {
			require.NotContains(t, err.Error(), leak)
		}
	}
}

// Sends reuse their connections: ten emails, and ten signed notices, one
// after another to one host open one connection each way, not ten (a
// client per send made a connection, and left it idle for 90 s, per
// send); a guard that differs gets a client of its own.
func TestSendsReuseTheirConnections(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"id":"em_1"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	m := &outbound.HTTPMailer{BaseURL: srv.URL, From: "a@b", Dedupes: true}
	for i := range 10 {
		_, err := m.Send(context.Background(), outbound.Message{Key: fmt.Sprintf("k%d", i), To: "x@y", Subject: "s", Text: "t"})
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, conns.Load(), "ten emails over one connection")

	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	w := &outbound.WebhookSender{URL: srv.URL + "/hook", Secret: secret, Guard: outbound.Guard{AllowPrivate: true}}
	for i := range 10 {
		_, err := w.Send(context.Background(), outbound.Message{Key: fmt.Sprintf("n%d", i), Body: []byte(`{}`)})
		require.NoError(t, err)
	}
	require.LessOrEqual(t, conns.Load(), int64(2), "ten notices over one connection more at most")

	require.Same(t, outbound.Guard{}.Client(time.Second), outbound.Guard{}.Client(time.Second))
	require.NotSame(t, outbound.Guard{}.Client(time.Second), outbound.Guard{AllowPrivate: true}.Client(time.Second),
		"a guard that allows private addresses never lends its connections to one that does not")
}
