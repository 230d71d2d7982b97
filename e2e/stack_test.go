package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

var queueSeq atomic.Int64

// stack is the whole product for one test: intake, worker, database,
// Temporal (shared or dedicated dev server).
type stack struct {
	t      *testing.T
	cfg    config.Config
	store  *store.Store
	client client.Client
	url    string
	// internalURL is the intake's internal listener (/metrics, /readyz).
	internalURL string
	metrics     *metrics.Metrics
	handlers    map[string]engine.Handler
	ctx         context.Context
	// business is the shipped binary's (lab/builtin): the routes and the
	// domains' handlers the stack runs, before handlers overrides them.
	business app.Business

	stopWorker func()
	stopIntake func()
	sdkMetrics bool

	// The intake's and the worker's stores, connected as their roles
	// (store is the owner's: fixtures and checks).
	intakeStore *store.Store
	workerStore *store.Store
}

type stackOptions struct {
	temporalAddr string
	// databaseURL: a database of the test's own (default a fresh one on
	// the package's server).
	databaseURL string
	configure   func(*config.Config)
	handlers    map[string]engine.Handler
	// noWorker: the test runs the worker itself (as a process it kills).
	noWorker bool
}

func testLogger() *slog.Logger {
	if os.Getenv("HOOKINBOX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	if o.temporalAddr == "" {
		o.temporalAddr = testenv.TemporalAddress(t)
	}
	cfg := config.Default()
	cfg.DatabaseURL = o.databaseURL
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = testenv.DatabaseURL(t)
	}
	cfg.SecretsKey = testenv.SecretsKey()
	// Each process as its own role, so every e2e test also proves the
	// grants (store.Grants) are enough; s.store (the owner) sets up and checks.
	cfg.IntakeDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RoleIntake)
	cfg.WorkerDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RoleWorker)
	cfg.TemporalAddress = o.temporalAddr
	cfg.TaskQueue = fmt.Sprintf("e2e-%d-%d", os.Getpid(), queueSeq.Add(1))
	cfg.SweepInterval = 2 * time.Second
	cfg.SweepAfter = time.Second
	cfg.IdleTimeout = 30 * time.Second
	cfg.RetryInitial = 50 * time.Millisecond
	cfg.RetryMax = 500 * time.Millisecond
	cfg.RetryBudget = 4
	cfg.ActivityTimeout = 10 * time.Second
	cfg.OutboundAllowPrivate = true // the team destinations are httptest servers on loopback
	cfg.HandoffTimeout = 2 * time.Second
	// Scheduled reconciliation, backfill and retention would act on tests
	// that deliberately never send some events; tests that need them run
	// them explicitly.
	cfg.ReconcileInterval, cfg.BackfillInterval, cfg.RetentionInterval = 0, 0, 0
	if o.configure != nil {
		o.configure(&cfg)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL, 20)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	t.Cleanup(st.Close)
	intakeSt, err := store.Open(ctx, cfg.IntakeDB(), 20)
	require.NoError(t, err)
	intakeSt.Keys = st.Keys
	t.Cleanup(intakeSt.Close)
	workerSt, err := store.Open(ctx, cfg.WorkerDB(), 20)
	require.NoError(t, err)
	workerSt.Keys = st.Keys
	t.Cleanup(workerSt.Close)
	s := &stack{t: t, cfg: cfg, store: st, intakeStore: intakeSt, workerStore: workerSt, metrics: metrics.New(), handlers: o.handlers, ctx: ctx,
		business: builtin.MustBusiness()}
	if s.handlers == nil {
		s.handlers = map[string]engine.Handler{}
	}
	s.client = testenv.TemporalClient(t, cfg.TemporalAddress)
	s.stopWorker = func() {}
	if !o.noWorker {
		s.startWorker()
	}
	s.startIntake()
	t.Cleanup(func() {
		s.stopIntake()
		s.stopWorker()
	})
	return s
}

func (s *stack) startWorker() {
	t := s.t
	log := testLogger()
	var opts []starter.Option
	if !s.sdkMetrics {
		h, err := starter.PrometheusMetrics(s.metrics.Registry, log)
		require.NoError(t, err)
		opts = append(opts, starter.WithMetrics(h))
		s.sdkMetrics = true
	}
	wc, err := starter.Dial(context.Background(), s.cfg, log, opts...)
	require.NoError(t, err)
	acts, err := app.NewActivities(s.cfg, s.workerStore, wc, s.metrics, log, s.business)
	require.NoError(t, err)
	for k, h := range s.handlers {
		if h == nil {
			delete(acts.Handlers, k) // a test of the no-handler path
			continue
		}
		acts.Handlers[k] = h
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.RunWorker(ctx, s.cfg, wc, acts, s.metrics, "", log) }()
	s.stopWorker = func() {
		cancel()
		<-done
		wc.Close()
	}
}

func (s *stack) startIntake() {
	t := s.t
	log := testLogger()
	ic, err := starter.DialLazy(s.cfg, log)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.url = "http://" + ln.Addr().String()
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.internalURL = "http://" + iln.Addr().String()
	in := app.NewIntake(s.cfg, s.intakeStore, ic, s.metrics, log, s.business.Router(s.cfg, s.intakeStore, log))
	in.InternalListener = iln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx, "", ln, log) }()
	s.stopIntake = func() {
		cancel()
		<-done
		ic.Close()
	}
}

// stripeEndpoint registers a Stripe endpoint whose own account is account.
func (s *stack) stripeEndpoint(slug, account, workspace string) {
	require.NoError(s.t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{
		Slug: slug, Provider: "stripe", Environment: "test", Secrets: []string{"whsec_" + slug}}))
	require.NoError(s.t, endpoints.LinkAccount(s.ctx, s.store, slug, account, workspace))
}

// sendStripe signs an event with stripe-go and posts it; returns the status.
func (s *stack) sendStripe(slug, eventID, typ, objKind, objID string) int {
	body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"livemode":false,"created":%d,"data":{"object":{"id":%q,"object":%q}}}`,
		eventID, typ, time.Now().Unix(), objID, objKind))
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_" + slug})
	req, err := http.NewRequest(http.MethodPost, s.url+"/webhooks/"+slug, strings.NewReader(string(body)))
	require.NoError(s.t, err)
	req.Header.Set("Stripe-Signature", p.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *stack) statusOf(k keys.Event) string {
	e, err := inbox.GetInboxEvent(s.ctx, s.store.Pool, k)
	require.NoError(s.t, err)
	return e.Status
}

// countStatus counts inbox rows by status.
func (s *stack) countStatus(status string) int {
	var n int
	require.NoError(s.t, s.store.Pool.QueryRow(s.ctx, `SELECT count(*) FROM webhook_inbox WHERE status = $1`, status).Scan(&n))
	return n
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countingHandler completes each event done and adds one credit per
// handled event to the workspace, in the event's one transaction.
func countingHandler(st func() *store.Store, calls *atomic.Int64) engine.Handler {
	return engine.HandlerFunc(func(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
		calls.Add(1)
		return engine.InPendingTx(ctx, st(), c.Event.Key, func(tx pgx.Tx, ev *inbox.StoredEvent) (engine.Outcome, error) {
			_, err := tx.Exec(ctx, `UPDATE workspaces SET credits_balance = credits_balance + 1 WHERE id = $1`, ev.WorkspaceID)
			return engine.Outcome{Status: keys.StatusDone}, err
		})
	})
}
