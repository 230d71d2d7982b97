package app_test

// The public port's part of security issue #14, tried as an attacker
// would: the real intake (app.NewIntake, Run on a public and an internal
// listener, the production http.Server limits) in front of a real
// PostgreSQL, with a Temporal that is never there (hand-offs fail, which
// the intake tolerates by design).
//
// TestSecuritySuite lists every bad input with the answer it must get, and
// then checks that none of them stored anything, that the internal
// listener's /metrics has no series for a slug nobody registered, and that
// what the public port says about itself is only "ok".

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

const (
	secSlug    = "sec"
	secSecret  = "whsec_security_suite"
	secTimeout = time.Second // the request deadline under test (5s in production)
)

// secIntake is the running intake and its database.
type secIntake struct {
	public, internal string // host:port
	store            *store.Store
	dbURL            string
	ctx              context.Context
}

func startSecIntake(t *testing.T) *secIntake {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.TemporalAddress = "127.0.0.1:1" // never answers: the intake must not care
	cfg.RequestTimeout = secTimeout
	cfg.HandoffTimeout = 200 * time.Millisecond
	st, err := store.Open(ctx, cfg.DatabaseURL, 0)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	t.Cleanup(st.Close)
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: secSlug, Provider: "stripe", Environment: "test", Secrets: []string{secSecret}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, secSlug, "acct_sec", "ws_sec"))

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := starter.DialLazy(cfg, log)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	internal, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in := app.NewIntake(cfg, st, c, metrics.New(), log, routestest.Builtin())
	in.InternalListener = internal
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx, "", pub, log) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &secIntake{public: pub.Addr().String(), internal: internal.Addr().String(), store: st, dbURL: cfg.DatabaseURL, ctx: ctx}
}

// stripeEvent is a genuine delivery to the suite's endpoint.
func stripeEvent(id string) ([]byte, string) {
	body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","livemode":false,"created":%d,"data":{"object":{"id":"in_%s","object":"invoice"}}}`,
		id, time.Now().Unix(), id))
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secSecret})
	return body, p.Header
}

// do sends one request with the standard client; it returns the status.
func (b *secIntake) do(t *testing.T, method, host, path string, header http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+host+path, bytes.NewReader(body))
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// raw writes head on a fresh connection, then feeds the body from write
// (which may block or trickle) while reading the answer; it returns the
// status and how long the answer took.
func (b *secIntake) raw(t *testing.T, head string, write func(w io.Writer)) (int, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", b.public)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	go write(conn) // ends with a write error once the server closes
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer")
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

func postHead(host, path, extra string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" + extra + "\r\n"
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func signedHeader(sig string) http.Header {
	return http.Header{"Stripe-Signature": {sig}, "Content-Type": {"application/json"}}
}

func randomSlug() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 63)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// attack is one bad input and the answer it must get.
type attack struct {
	name string
	want int
	// within bounds how long the answer may take (0: no bound checked).
	within time.Duration
	send   func(t *testing.T, b *secIntake) (int, time.Duration)
}

func timed(f func() int) (int, time.Duration) {
	start := time.Now()
	code := f()
	return code, time.Since(start)
}

func attacks() []attack {
	body, sig := stripeEvent("evt_forged")
	post := func(path string, h http.Header, body []byte) func(t *testing.T, b *secIntake) (int, time.Duration) {
		return func(t *testing.T, b *secIntake) (int, time.Duration) {
			return timed(func() int { return b.do(t, http.MethodPost, b.public, path, h, body) })
		}
	}
	get := func(path string) func(t *testing.T, b *secIntake) (int, time.Duration) {
		return func(t *testing.T, b *secIntake) (int, time.Duration) {
			return timed(func() int { return b.do(t, http.MethodGet, b.public, path, nil, nil) })
		}
	}
	forged := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_guessed"}).Header
	tampered := bytes.Replace(body, []byte("in_evt_forged"), []byte("in_other"), 1)
	bigHeader := http.Header{"X-Flood": {strings.Repeat("x", 80<<10)}}
	manyHeaders := http.Header{}
	for i := range 2000 {
		manyHeaders.Set(fmt.Sprintf("X-Flood-%d", i), strings.Repeat("y", 32))
	}
	const hundredMB = 100 << 20
	return []attack{
		// Forged or missing signatures: 401, nothing stored.
		{name: "forged: signed with a guessed secret", want: http.StatusUnauthorized, send: post("/webhooks/"+secSlug, signedHeader(forged), body)},
		{name: "forged: genuine signature, body tampered", want: http.StatusUnauthorized, send: post("/webhooks/"+secSlug, signedHeader(sig), tampered)},
		{name: "forged: no signature", want: http.StatusUnauthorized, send: post("/webhooks/"+secSlug, http.Header{"Content-Type": {"application/json"}}, body)},
		// Slugs no endpoint can have: 404 before any database call.
		{name: "slug: 64 KiB long", want: http.StatusNotFound, send: post("/webhooks/"+strings.Repeat("a", 64<<10), signedHeader(sig), body)},
		{name: "slug: %ff (not UTF-8; used to panic the Prometheus client)", want: http.StatusNotFound, send: post("/webhooks/%ff", signedHeader(sig), body)},
		{name: "slug: invalid UTF-8 sequence %C3%28", want: http.StatusNotFound, send: post("/webhooks/%C3%28", signedHeader(sig), body)},
		{name: "slug: NUL byte", want: http.StatusNotFound, send: post("/webhooks/sec%00", signedHeader(sig), body)},
		{name: "slug: upper case and dots", want: http.StatusNotFound, send: post("/webhooks/SEC..x", signedHeader(sig), body)},
		{name: "slug: valid pattern, never registered", want: http.StatusNotFound, send: post("/webhooks/"+randomSlug(), signedHeader(sig), body)},
		{name: "slug: 50 random valid-pattern slugs", want: http.StatusNotFound, send: func(t *testing.T, b *secIntake) (int, time.Duration) {
			return timed(func() int {
				for range 49 {
					require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, b.public, "/webhooks/"+randomSlug(), signedHeader(sig), body))
				}
				return b.do(t, http.MethodPost, b.public, "/webhooks/"+randomSlug(), signedHeader(sig), body)
			})
		}},
		// Header floods: 431 from the server itself (MaxHeaderBytes 64 KiB).
		{name: "headers: one 80 KiB header", want: http.StatusRequestHeaderFieldsTooLarge, send: post("/webhooks/"+secSlug, bigHeader, body)},
		{name: "headers: 2000 headers, ~100 KiB", want: http.StatusRequestHeaderFieldsTooLarge, send: post("/webhooks/"+secSlug, manyHeaders, body)},
		// 100 MB bodies: 413 at once, without reading them.
		{name: "body: 100 MB declared in Content-Length", want: http.StatusRequestEntityTooLarge, within: 5 * time.Second,
			send: func(t *testing.T, b *secIntake) (int, time.Duration) {
				head := postHead(b.public, "/webhooks/"+secSlug, fmt.Sprintf("Stripe-Signature: %s\r\nContent-Length: %d\r\n", sig, hundredMB))
				return b.raw(t, head, func(w io.Writer) { _, _ = io.Copy(w, io.LimitReader(zeros{}, hundredMB)) })
			}},
		{name: "body: 100 MB streamed, chunked, no length", want: http.StatusRequestEntityTooLarge, within: 5 * time.Second,
			send: func(t *testing.T, b *secIntake) (int, time.Duration) {
				head := postHead(b.public, "/webhooks/"+secSlug, "Stripe-Signature: "+sig+"\r\nTransfer-Encoding: chunked\r\n")
				return b.raw(t, head, func(w io.Writer) {
					chunk := append([]byte(fmt.Sprintf("%x\r\n", 64<<10)), append(make([]byte, 64<<10), '\r', '\n')...)
					for range hundredMB / (64 << 10) {
						if _, err := w.Write(chunk); err != nil {
							return
						}
					}
					_, _ = io.WriteString(w, "0\r\n\r\n")
				})
			}},
		// The deadline: a body trickled past it gets 503 at the deadline.
		{name: "deadline: body sent 10 bytes, then nothing", want: http.StatusServiceUnavailable, within: secTimeout + 3*time.Second,
			send: func(t *testing.T, b *secIntake) (int, time.Duration) {
				head := postHead(b.public, "/webhooks/"+secSlug, "Stripe-Signature: "+sig+"\r\nContent-Length: 1000\r\n")
				return b.raw(t, head, func(w io.Writer) { _, _ = w.Write(body[:10]) })
			}},
		// Internal endpoints are not on the public port.
		{name: "public port: GET /metrics", want: http.StatusNotFound, send: get("/metrics")},
		{name: "public port: GET /readyz", want: http.StatusNotFound, send: get("/readyz")},
		{name: "public port: POST /metrics", want: http.StatusNotFound, send: post("/metrics", nil, nil)},
		{name: "public port: GET /debug/pprof/", want: http.StatusNotFound, send: get("/debug/pprof/")},
		{name: "public port: GET /webhooks/sec (wrong method)", want: http.StatusMethodNotAllowed, send: get("/webhooks/" + secSlug)},
	}
}

func TestSecuritySuite(t *testing.T) {
	t.Parallel()
	b := startSecIntake(t)

	for _, tt := range attacks() {
		code, took := tt.send(t, b)
		require.Equal(t, tt.want, code, "%s: answered %d, want %d", tt.name, code, tt.want)
		if tt.within > 0 {
			require.Less(t, took, tt.within, "%s: answered after %s", tt.name, took)
		}
		t.Logf("%-62s -> %d (%s)", tt.name, code, took.Round(time.Millisecond))
	}
	b.requireStored(t, nil)

	// A sender that never finishes its headers is disconnected (no request
	// exists to answer): ReadHeaderTimeout.
	conn, err := net.Dial("tcp", b.public)
	require.NoError(t, err)
	_, err = io.WriteString(conn, "POST /webhooks/sec HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	start := time.Now()
	n, err := conn.Read(make([]byte, 1))
	conn.Close()
	require.Error(t, err, "the server kept a half-sent request open")
	require.Zero(t, n)
	require.Less(t, time.Since(start), 15*time.Second)

	// The database slower than the deadline: 503 at the deadline, nothing
	// stored; the sender's retry is accepted once it recovers, so nothing
	// accepted is lost.
	t.Run("database slower than the deadline", func(t *testing.T) {
		body, sig := stripeEvent("evt_slow")
		lock, err := pgx.Connect(b.ctx, b.dbURL)
		require.NoError(t, err)
		defer lock.Close(b.ctx)
		tx, err := lock.Begin(b.ctx)
		require.NoError(t, err)
		_, err = tx.Exec(b.ctx, `LOCK TABLE webhook_inbox IN ACCESS EXCLUSIVE MODE`)
		require.NoError(t, err)
		code, took := timed(func() int { return b.do(t, http.MethodPost, b.public, "/webhooks/"+secSlug, signedHeader(sig), body) })
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Less(t, took, secTimeout+3*time.Second)
		require.NoError(t, tx.Rollback(b.ctx))
		b.requireStored(t, nil)

		sig = webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secSecret}).Header // the sender's retry, signed anew
		require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, b.public, "/webhooks/"+secSlug, signedHeader(sig), body))
		b.requireStored(t, []string{"evt_slow"})
	})

	// The database down: slugs cannot be looked up (503, the sender
	// retries), and still none becomes a metric label.
	t.Run("database down", func(t *testing.T) {
		_, sig := stripeEvent("evt_down")
		var db string
		require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT current_database()`).Scan(&db))
		admin := testenv.AdminURL(t, "postgres")
		testenv.AllowConnections(t, admin, db, false)
		defer testenv.AllowConnections(t, admin, db, true)
		for range 50 {
			require.Equal(t, http.StatusServiceUnavailable, b.do(t, http.MethodPost, b.public, "/webhooks/"+randomSlug(), signedHeader(sig), []byte(`{}`)))
		}
		require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, b.public, "/webhooks/%ff", signedHeader(sig), []byte(`{}`)),
			"an impossible slug is refused without the database")
	})

	// The internal listener: no series for any slug but the registered one.
	metricsText := b.get(t, b.internal, "/metrics")
	series := regexp.MustCompile(`(?m)^hookinbox_intake_requests_total\{([^}]*)\}`).FindAllStringSubmatch(metricsText, -1)
	require.NotEmpty(t, series, "the internal /metrics has the intake's counters")
	for _, s := range series {
		m := regexp.MustCompile(`endpoint="([^"]*)"`).FindStringSubmatch(s[1])
		require.NotNil(t, m, s[0])
		require.Contains(t, []string{"unknown", secSlug}, m[1], "a series for an unregistered slug: %s", s[0])
	}
	require.Less(t, len(series), 20, "series are bounded by endpoints and outcomes")
	require.Contains(t, metricsText, `hookinbox_intake_requests_total{endpoint="unknown",outcome="not_found",provider="unknown"}`)
	require.Contains(t, metricsText, `hookinbox_intake_requests_total{endpoint="unknown",outcome="unavailable",provider="unknown"} 50`)
	require.Contains(t, metricsText, `hookinbox_intake_requests_total{endpoint="sec",outcome="timeout",provider="stripe"} 2`)

	// /readyz is detailed on the internal listener; the public /healthz
	// says "ok" and nothing about the database.
	var ready map[string]string
	require.NoError(t, json.Unmarshal([]byte(b.get(t, b.internal, "/readyz")), &ready))
	require.Equal(t, "ok", ready["database"])
	require.Contains(t, ready, "temporal")
	require.JSONEq(t, `{"status":"ok"}`, b.get(t, b.public, "/healthz"))
}

func (b *secIntake) get(t *testing.T, host, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + host + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s%s", host, path)
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(out)
}

// requireStored checks the inbox holds exactly the events ids and the
// quarantine nothing.
func (b *secIntake) requireStored(t *testing.T, ids []string) {
	t.Helper()
	rows, err := b.store.Pool.Query(b.ctx, `SELECT event_id FROM webhook_inbox ORDER BY id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, ids, got, "inbox rows")
	var q int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM inbox_quarantine`).Scan(&q))
	require.Zero(t, q, "quarantine rows")
}
