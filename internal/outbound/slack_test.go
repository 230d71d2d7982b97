package outbound_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/outbound"
)

// A Slack-compatible incoming webhook gets {"text": …} and nothing else;
// its answers are classified like every other destination's, and errors
// never name the URL's path (its token).
func TestSlackSenderPostsTextAndClassifiesAnswers(t *testing.T) {
	t.Parallel()
	var got, contentType atomic.Value
	status := atomic.Int64{}
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		contentType.Store(r.Header.Get("Content-Type"))
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte("invalid_token T0KEN-ECHO"))
	}))
	defer srv.Close()
	s := &outbound.SlackSender{URL: srv.URL + "/services/T000/B000/XXXXtokenXXXX", Guard: outbound.Guard{AllowPrivate: true}}
	require.False(t, s.Idempotent(), "an incoming webhook cannot dedupe: the class's policy decides")
	_, err := s.Send(context.Background(), outbound.Message{Key: "op:1", Subject: "ignored", Text: "[hookinbox] FIRING: 2 events", Body: []byte(`{"no":"body"}`)})
	require.NoError(t, err)
	require.Equal(t, "application/json", contentType.Load())
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Load().(string)), &body))
	require.Equal(t, map[string]any{"text": "[hookinbox] FIRING: 2 events"}, body)

	for _, tt := range []struct {
		status              int
		definite, permanent bool
	}{{403, true, true}, {404, true, true}, {410, true, true}, {429, true, false}, {500, false, false}, {302, true, true}} {
		status.Store(int64(tt.status))
		_, err := s.Send(context.Background(), outbound.Message{Key: "op:1", Text: "x"})
		require.Error(t, err, "HTTP %d", tt.status)
		require.Equal(t, tt.definite, outbound.IsDefinite(err), "HTTP %d: %v", tt.status, err)
		require.Equal(t, tt.permanent, outbound.IsPermanent(err), "HTTP %d: %v", tt.status, err)
		for _, leak := range []string{"XXXXtoken", "T0KEN-ECHO", "/services/"} {
			require.NotContains(t, err.Error(), leak)
		}
	}
}

// The guard refuses a private Slack URL at dial time (SSRF), and a redirect
// is never followed.
func TestSlackSenderIsGuardedAndNeverRedirected(t *testing.T) {
	t.Parallel()
	var hits, reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, err := (&outbound.SlackSender{URL: srv.URL + "/hook"}).Send(context.Background(), outbound.Message{Key: "k", Text: "x"})
	require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
	require.True(t, outbound.IsPermanent(err))
	require.Zero(t, hits.Load())

	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer other.Close()
	redir := httptest.NewServer(http.RedirectHandler(other.URL+"/metadata", http.StatusTemporaryRedirect))
	defer redir.Close()
	_, err = (&outbound.SlackSender{URL: redir.URL, Guard: outbound.Guard{AllowPrivate: true}}).Send(context.Background(), outbound.Message{Key: "k", Text: "x"})
	require.True(t, outbound.IsPermanent(err), "%v", err)
	require.Zero(t, reached.Load())
}
