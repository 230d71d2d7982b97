package credits_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	account   = "acct_sim_a" // the simulator's default account
	workspace = "ws"
	slug      = "sim"
	secret    = "whsec_credits_domain_test"
)

// fixture is the credits domain on a fresh database, with a Stripe endpoint
// whose API is a simulator served over real HTTP (through gate), linked to
// workspace ws (whose notices go to billing@ws.example).
type fixture struct {
	ctx  context.Context
	h    *hookintest.Harness
	sim  *simulator.Simulator
	gate *gate
}

func setup(t *testing.T, cfg simulator.Config, o credits.Options) *fixture {
	t.Helper()
	return setupEndpoint(t, cfg, o, nil)
}

// setupEndpoint is setup with the endpoint changed by edit before it is
// registered.
func setupEndpoint(t *testing.T, cfg simulator.Config, o credits.Options, edit func(*hookintest.Endpoint)) *fixture {
	t.Helper()
	app := hookinbox.New()
	require.NoError(t, credits.Register(app, o))
	h := hookintest.New(t, app)
	sim := simulator.New(cfg)
	g := &gate{next: sim.Handler()}
	api := httptest.NewServer(g)
	t.Cleanup(api.Close)
	ctx := context.Background()
	ep := hookintest.Endpoint{Slug: slug, Provider: "stripe", Secret: secret,
		APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey, Account: account, Workspace: workspace, Email: "billing@ws.example"}
	if edit != nil {
		edit(&ep)
	}
	h.AddEndpoint(ctx, ep)
	return &fixture{ctx: ctx, h: h, sim: sim, gate: g}
}

// deliver admits a simulator event through the intake's path.
func (f *fixture) deliver(t *testing.T, ev simulator.Event) hookintype.EventKey {
	t.Helper()
	d := f.h.Deliver(f.ctx, slug, secret, nil, ev.Body)
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	require.Equal(t, hookintype.StatusPending, d.Status)
	require.Equal(t, ev.ID, d.Key.EventID)
	return d.Key
}

// handleDone makes one attempt and requires it to complete the row.
func (f *fixture) handleDone(t *testing.T, key hookintype.EventKey) hookintest.Handled {
	t.Helper()
	out := f.h.Handle(f.ctx, key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status, out.Note)
	return out
}

// grantInvoice pays an invoice of amount at the simulator and grants it
// through the invoice.paid handler.
func (f *fixture) grantInvoice(t *testing.T, amount int64) simulator.Invoice {
	t.Helper()
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: amount})
	require.NoError(t, err)
	out := f.handleDone(t, f.deliver(t, paid))
	require.Contains(t, out.Note, "granted 100 credits for "+inv.ID)
	return inv
}

func (f *fixture) balance(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT credits_balance FROM workspaces WHERE id = $1`, workspace).Scan(&n))
	return n
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.h.DB.QueryRow(f.ctx, sql, args...).Scan(&n))
	return n
}

// inboxRow is what the inbox holds of an event's handling.
type inboxRow struct {
	Status        string
	Attempts      int
	LastError     string
	Note          string
	NextAttemptAt time.Time
}

func (f *fixture) row(t *testing.T, k hookintype.EventKey) inboxRow {
	t.Helper()
	var r inboxRow
	var lastErr, note *string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT status, attempts, last_error, note, next_attempt_at FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(&r.Status, &r.Attempts, &lastErr, &note, &r.NextAttemptAt))
	if lastErr != nil {
		r.LastError = *lastErr
	}
	if note != nil {
		r.Note = *note
	}
	return r
}

// spend takes credits from the workspace as an operator's correction does
// (the ledger's own path, keyed by its operation id).
func (f *fixture) spend(t *testing.T, credits int64, operationID string) {
	t.Helper()
	f.inTx(t, func(tx pgx.Tx) {
		a := ledger.CreditAdjustment{Provider: ledger.ProviderOperator, Reference: operationID, Operation: ledger.OperationOperatorAdjustment,
			WorkspaceID: workspace, Requested: -credits, EventKey: "operator:" + operationID}
		adjusted, _, err := ledger.AdjustCreditsOnce(f.ctx, tx, &a, ledger.PolicyAllow)
		require.NoError(t, err)
		require.True(t, adjusted)
	})
}

// gate fronts the provider's API. It can hold the next request whose path
// starts with a prefix until released (an attempt stalled in the middle of
// its fetch: a timed-out activity still running), and rewrite the answers
// under a prefix (a provider whose state is not what the event says).
type gate struct {
	next http.Handler

	mu            sync.Mutex
	holdPrefix    string
	arrived       chan struct{}
	release       chan struct{}
	rewritePrefix string
	rewriteFn     func([]byte) []byte
}

// hold arms the gate for the next request under prefix: wait for arrived,
// then call release (the test's cleanup calls it too).
func (g *gate) hold(t *testing.T, prefix string) (arrived <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holdPrefix, g.arrived, g.release = prefix, make(chan struct{}), make(chan struct{})
	ch := g.release
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return g.arrived, release
}

// rewrite passes every answer under prefix through fn (nil: no more).
func (g *gate) rewrite(prefix string, fn func([]byte) []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rewritePrefix, g.rewriteFn = prefix, fn
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	var arrived, release chan struct{}
	if g.holdPrefix != "" && strings.HasPrefix(r.URL.Path, g.holdPrefix) {
		arrived, release = g.arrived, g.release
		g.holdPrefix = ""
	}
	var fn func([]byte) []byte
	if g.rewriteFn != nil && strings.HasPrefix(r.URL.Path, g.rewritePrefix) {
		fn = g.rewriteFn
	}
	g.mu.Unlock()
	if arrived != nil {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	if fn == nil {
		g.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	g.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(fn(rec.Body.Bytes()))
}

// inTx runs fn in a transaction of the owner's pool.
func (f *fixture) inTx(t *testing.T, fn func(tx pgx.Tx)) {
	t.Helper()
	tx, err := f.h.DB.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.ctx) }()
	fn(tx)
	require.NoError(t, tx.Commit(f.ctx))
}

// resourceKind is the resource kind the intake recorded the event under.
func (f *fixture) resourceKind(t *testing.T, k hookintype.EventKey) string {
	t.Helper()
	var kind string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT resource_kind FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(&kind))
	return kind
}
