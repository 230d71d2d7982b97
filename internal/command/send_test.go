package command

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// The endpoints `send` is tried on, each with a real secret of its
// provider's format, linked as its deliveries need.
var sendEndpoints = []struct {
	ep      endpoints.NewEndpoint
	account string
	event   string
	// status is what the intake records for the type with the built-in
	// routes: pending (a handler takes it) or ignored.
	status string
}{
	{endpoints.NewEndpoint{Slug: "stripe-send", Provider: keys.ProviderStripe, Environment: keys.EnvTest,
		Secrets: []string{"whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m"}}, "acct_send", "invoice.paid", keys.StatusPending},
	{endpoints.NewEndpoint{Slug: "gh-send", Provider: keys.ProviderGitHub, Environment: keys.EnvTest,
		Secrets: []string{"c2VjcmV0LWZvci1naXRodWItMjQtYnl0ZXMhIQ"}}, "octo-org", "issues.opened", keys.StatusIgnored},
	{endpoints.NewEndpoint{Slug: "fb-send", Provider: keys.ProviderStandard, Environment: keys.EnvTest,
		Secrets:  []string{"whsec_c3RhbmRhcmQtc2VjcmV0LW9uZS0zMi1ieXRlcyEhISE="},
		Settings: keys.EndpointSettings{AccountPath: "data.project_id", ResourcePath: "data.id"}}, "proj_send", "feedback.created", keys.StatusPending},
	{endpoints.NewEndpoint{Slug: "shop-send", Provider: keys.ProviderShopify, Environment: keys.EnvTest, Account: "send.myshopify.com",
		Secrets: []string{"shpss_0123456789abcdef0123456789abcdef"}}, "send.myshopify.com", "orders/create", keys.StatusIgnored},
}

type sendBundle struct {
	ctx    context.Context
	st     *store.Store
	url    string // the running intake
	out    *bytes.Buffer
	errOut *bytes.Buffer
}

// setupSend registers the endpoints and starts the real intake (the
// production app.NewIntake on a loopback port) on a fresh database, with a
// Temporal that never answers: the intake commits and answers without it.
func setupSend(t *testing.T) *sendBundle {
	t.Helper()
	ctx := context.Background()
	st := testenv.Store(t)
	svc := &ops.Service{Store: st}
	for _, e := range sendEndpoints {
		require.NoError(t, svc.AddEndpoint(ctx, ops.Actor{Name: "setup"}, e.ep, ""))
		_, err := svc.LinkAccount(ctx, ops.Actor{Name: "setup"}, e.ep.Slug, e.account, "ws_"+e.ep.Slug, "")
		require.NoError(t, err)
	}
	cfg := config.Default()
	cfg.TemporalAddress = "127.0.0.1:1"
	cfg.HandoffTimeout = 200 * time.Millisecond
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := starter.DialLazy(cfg, log)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	internal, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in := app.NewIntake(cfg, st, c, metrics.New(), log, routestest.Builtin())
	in.InternalListener = internal
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx, "", ln, log) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &sendBundle{ctx: ctx, st: st, url: "http://" + ln.Addr().String(), out: &bytes.Buffer{}, errOut: &bytes.Buffer{}}
}

func (b *sendBundle) env() opsEnv {
	b.out.Reset()
	b.errOut.Reset()
	cfg := config.Default()
	cfg.ConsoleURL = "http://console.test:9092"
	return opsEnv{svc: &ops.Service{Store: b.st, Routes: routestest.Builtin(), Config: cfg}, out: b.out, errOut: b.errOut}
}

func (b *sendBundle) send(t *testing.T, o sendOptions) error {
	t.Helper()
	if o.count == 0 {
		o.count = 1
	}
	o.url, o.by, o.format = b.url, "tester", "table"
	require.NoError(t, o.validate())
	return runSend(b.ctx, b.env(), o)
}

func (b *sendBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

// TestSendEachProviderThroughTheRealIntake: for each provider, `send
// --count 4 --duplicate-rate 0.5` makes six signed deliveries that the
// real intake verifies; the four events are four distinct rows (none
// quarantined), the two sent again are answered 2xx as duplicates and
// stored once, and the output says what each became with its console
// page. The secret's read is audited once and the secret never printed.
func TestSendEachProviderThroughTheRealIntake(t *testing.T) {
	t.Parallel()
	b := setupSend(t)
	for _, e := range sendEndpoints {
		t.Run(e.ep.Provider, func(t *testing.T) {
			// Not parallel: the bundle's buffers are shared.
			slug := e.ep.Slug
			require.NoError(t, b.send(t, sendOptions{slug: slug, eventType: e.event, count: 4, duplicateRate: 0.5}))
			out := b.out.String()

			require.Equal(t, 4, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = $1`, slug), out)
			require.Equal(t, 4, b.count(t, `SELECT count(DISTINCT event_id) FROM webhook_inbox WHERE endpoint_slug = $1`, slug))
			require.Equal(t, 4, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = $1 AND status = $2
				AND source_account = $3 AND event_type = $4 AND workspace_id = $5`, slug, e.status, e.account, e.event, "ws_"+slug))
			require.Zero(t, b.count(t, `SELECT count(*) FROM inbox_quarantine WHERE endpoint_slug = $1`, slug), out)

			require.Contains(t, out, "6 deliveries (4 events, 2 sent twice), 6 answered 2xx; inbox: 4 row(s) ("+e.status+" 4)")
			rows := func(pattern string) int { return len(regexp.MustCompile(pattern).FindAllString(out, -1)) }
			require.Equal(t, 2, rows(`(?m)^\d+ again\s+`+e.ep.Provider+`/\S+\s+200\s+duplicate\s+duplicate\s+stored once \(`+e.status+`\)\s`), out)
			answer := "accepted"
			if e.status == keys.StatusIgnored {
				answer = "ignored"
			}
			require.Equal(t, 4, rows(`(?m)^\d+\s+`+e.ep.Provider+`/\S+\s+200\s+`+answer+`\s+`+e.status+`\s`), out)
			require.Contains(t, out, "http://console.test:9092/events/"+e.ep.Provider+"%2F")
			require.Contains(t, out, "account "+e.account+" (workspace ws_"+slug+")")

			acts, err := b.env().svc.RecentActions(b.ctx, "tester", ops.ActionSigningSecretRead, 10)
			require.NoError(t, err)
			n := 0
			for _, a := range acts {
				if a.Target == "endpoint:"+slug {
					n++
					require.Equal(t, e.account, a.Details["account"])
				}
			}
			require.Equal(t, 1, n, "one audited read of the secret per run")
			require.NotContains(t, out+b.errOut.String(), e.ep.Secrets[0], "the secret is never printed")
		})
	}
}

// TestSendRefusesALiveEndpointWithoutLive: a live endpoint is refused with
// a usage error before its secret is read (no audit row, nothing sent);
// with --live its delivery is sent, livemode true.
func TestSendRefusesALiveEndpointWithoutLive(t *testing.T) {
	t.Parallel()
	b := setupSend(t)
	svc := b.env().svc
	require.NoError(t, svc.AddEndpoint(b.ctx, ops.Actor{Name: "setup"}, endpoints.NewEndpoint{Slug: "stripe-live", Provider: keys.ProviderStripe,
		Environment: keys.EnvLive, Secrets: []string{"whsec_9pQ2rLmX4vT7sK1nB8cJ5hF3gD6aZ0wE"}}, ""))
	_, err := svc.LinkAccount(b.ctx, ops.Actor{Name: "setup"}, "stripe-live", "acct_live", "ws_live", "")
	require.NoError(t, err)

	err = b.send(t, sendOptions{slug: "stripe-live", eventType: "invoice.paid"})
	var ue cli.UsageError
	require.ErrorAs(t, err, &ue)
	require.EqualError(t, err, "endpoint stripe-live is a live endpoint: sending made-up events is for local and staging work (give --live to send to it anyway)")
	require.Zero(t, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = $1`, ops.ActionSigningSecretRead))
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = 'stripe-live'`))

	start := time.Now()
	require.NoError(t, b.send(t, sendOptions{slug: "stripe-live", eventType: "invoice.paid", live: true, wait: 300 * time.Millisecond}))
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "no worker here: it waited for the pending row, then printed it")
	require.Regexp(t, `accepted\s+pending`, b.out.String())
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = 'stripe-live' AND environment = 'live'
		AND source_account = 'acct_live'`), b.out.String())
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = $1 AND target = 'endpoint:stripe-live'`,
		ops.ActionSigningSecretRead))
}

// TestSendBadInput: bad flags are usage errors (exit status 2) before
// anything is opened; an unknown endpoint or type is one too, the type's
// naming the built-in ones; a payload of one's own is sent for any type.
func TestSendBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--endpoint", "e", "--event", "invoice.paid", "--duplicate-rate", "1.5"}, "--duplicate-rate must be a fraction between 0 and 1 (got 1.5)"},
		{[]string{"--endpoint", "e", "--event", "invoice.paid", "--duplicate-rate", "-0.1"}, "--duplicate-rate must be a fraction between 0 and 1"},
		{[]string{"--endpoint", "e", "--event", "invoice.paid", "--duplicate-rate", "half"}, `invalid argument "half"`},
		{[]string{"--endpoint", "e", "--event", "invoice.paid", "--count", "0"}, "--count must be between 1 and 10000 (got 0)"},
		{[]string{"--endpoint", "e", "--event", "invoice.paid", "--url", "127.0.0.1:8080"}, "--url must be the intake's base URL"},
		{[]string{"--event", "invoice.paid"}, `required flag(s) "endpoint" not set`},
	} {
		root := NewRootCmd()
		root.SetArgs(append([]string{"send"}, tt.args...))
		var errOut bytes.Buffer
		require.Equal(t, 2, cli.Run(context.Background(), root, &errOut), "%v", tt.args)
		require.Contains(t, errOut.String(), tt.msg, "%v", tt.args)
	}

	b := setupSend(t)
	var ue cli.UsageError
	err := b.send(t, sendOptions{slug: "nope", eventType: "invoice.paid"})
	require.ErrorAs(t, err, &ue)
	require.EqualError(t, err, `unknown endpoint "nope" ('hookinbox endpoints list' shows them)`)

	err = b.send(t, sendOptions{slug: "stripe-send", eventType: "invoice.payed"})
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, `unknown event type "invoice.payed" for stripe: the built-in ones are checkout.session.completed, `+
		`credit_note.created, customer.subscription.updated, invoice.paid (or give --payload FILE)`)

	err = b.send(t, sendOptions{slug: "stripe-send", eventType: "invoice.paid", account: "acct_other"})
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, "account acct_other is not linked to endpoint stripe-send (linked: acct_send)")
	require.Zero(t, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = $1`, ops.ActionSigningSecretRead),
		"no secret is read for a refused run")

	// A payload of one's own, for a type with no built-in template.
	file := filepath.Join(t.TempDir(), "refund.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"object":"event","data":{"object":{"id":"re_1","object":"refund"}}}`), 0o600))
	require.NoError(t, b.send(t, sendOptions{slug: "stripe-send", eventType: "charge.refunded", payloadFile: file}))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = 'stripe-send' AND event_type = 'charge.refunded'
		AND resource_id = 're_1' AND status = 'ignored'`), b.out.String())
	err = b.send(t, sendOptions{slug: "stripe-send", eventType: "charge.refunded", payloadFile: filepath.Join(t.TempDir(), "missing.json")})
	require.ErrorAs(t, err, &ue)
}

// TestSendSaysWhenTheIntakeIsNotThere: nothing listening is an error that
// says how to start the intake; nothing is stored.
func TestSendSaysWhenTheIntakeIsNotThere(t *testing.T) {
	t.Parallel()
	b := setupSend(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	o := sendOptions{slug: "stripe-send", eventType: "invoice.paid", count: 3, url: dead, by: "tester", format: "table"}
	err = runSend(b.ctx, b.env(), o)
	require.Error(t, err)
	var ue cli.UsageError
	require.False(t, errors.As(err, &ue))
	require.ErrorContains(t, err, "is the intake running? 'make run' starts it")
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox`))
}

func TestDuplicatedSpreadsTheRate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		rate float64
		want int
	}{{4, 0.5, 2}, {3, 0.5, 1}, {10, 0.3, 3}, {10, 1, 10}, {10, 0, 0}, {1, 0.5, 0}, {7, 0.1, 0}, {100, 0.07, 7}} {
		got := 0
		for i := range tt.n {
			if duplicated(i, tt.rate) {
				got++
			}
		}
		require.Equal(t, tt.want, got, "%d events at %v", tt.n, tt.rate)
	}
	require.Equal(t, "http://127.0.0.1:8080", intakeBaseURL(":8080"))
	require.Equal(t, "http://127.0.0.1:8081", intakeBaseURL("0.0.0.0:8081"))
	require.Equal(t, "http://10.0.0.5:8080", intakeBaseURL("10.0.0.5:8080"))
}

// TestSendShowsWhatTheQuarantineKept: a delivery the intake quarantines
// (a Shopify shop the endpoint is not bound to: its shop header is not
// signed) is answered 202 and shown as quarantined, with the reason and
// the console page of its quarantine entry.
func TestSendShowsWhatTheQuarantineKept(t *testing.T) {
	t.Parallel()
	b := setupSend(t)
	svc := b.env().svc
	_, err := svc.LinkAccount(b.ctx, ops.Actor{Name: "setup"}, "shop-send", "other.myshopify.com", "ws_other", "")
	require.NoError(t, err)
	require.NoError(t, b.send(t, sendOptions{slug: "shop-send", eventType: "orders/create", account: "other.myshopify.com"}))
	var id int64
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT id FROM inbox_quarantine WHERE endpoint_slug = 'shop-send' AND reason = 'account_mismatch'`).Scan(&id))
	require.Regexp(t, `(?m)^1\s+shopify/other\.myshopify\.com/test/\S+\s+202\s+quarantined\s+quarantined\s+account_mismatch\s+`+
		`http://console\.test:9092/quarantine/`+strconv.FormatInt(id, 10)+`$`, b.out.String())
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = 'shop-send'`))
}

// TestSendClientDoesNotFollowARedirect: a signed delivery is a replayable
// credential, so whatever answers the intake's URL with a 3xx must not get
// send to carry the signed body to another host; the 3xx is the answer.
func TestSendClientDoesNotFollowARedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/webhooks/elsewhere", code)
		}))
		req, err := http.NewRequest(http.MethodPost, redirecting.URL+"/webhooks/x", bytes.NewReader([]byte(`{"signed":true}`)))
		require.NoError(t, err)
		req.Header.Set("Webhook-Signature", "v1,c2lnbmVk")
		resp, err := sendClient().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		redirecting.Close()
		require.Equal(t, code, resp.StatusCode, "the 3xx is send's answer")
	}
	require.Zero(t, elsewhere.Load(), "no signed body reached the redirect's target")
}
