package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/webhook"
)

// Names of the benchmark endpoint and its account.
const (
	benchSlug      = "bench"
	benchSecret    = "whsec_bench_secret"
	benchAccount   = "acct_bench"
	benchWorkspace = "ws_bench"
)

// invoiceTemplate is a realistic Stripe invoice.paid event (about 1.3 KB,
// the size class of Stripe's own): %[1]s is the event id, %[2]s the
// invoice id, %[3]d the creation time.
const invoiceTemplate = `{"id":"%[1]s","object":"event","api_version":"2025-09-30.clover","created":%[3]d,` +
	`"data":{"object":{"id":"%[2]s","object":"invoice","account_country":"US","account_name":"Bench Inc.",` +
	`"amount_due":2000,"amount_paid":2000,"amount_remaining":0,"attempt_count":1,"attempted":true,` +
	`"billing_reason":"subscription_cycle","collection_method":"charge_automatically","created":%[3]d,` +
	`"currency":"usd","customer":"cus_Rb3nch0000000","customer_email":"billing@example.com",` +
	`"customer_name":"Example Customer","hosted_invoice_url":"https://invoice.stripe.com/i/acct_bench/test_%[2]s",` +
	`"lines":{"object":"list","data":[{"id":"il_%[2]s","object":"line_item","amount":2000,"currency":"usd",` +
	`"description":"1 × Pro plan (at $20.00 / month)","period":{"end":%[3]d,"start":%[3]d},` +
	`"pricing":{"price_details":{"price":"price_1Pro","product":"prod_Pro"},"type":"price_details"},` +
	`"quantity":1}],"has_more":false,"total_count":1,"url":"/v1/invoices/%[2]s/lines"},` +
	`"livemode":false,"number":"BENCH-0001","paid":true,"period_end":%[3]d,"period_start":%[3]d,` +
	`"status":"paid","status_transitions":{"finalized_at":%[3]d,"paid_at":%[3]d},"subtotal":2000,"total":2000},` +
	`"previous_attributes":null},"livemode":false,"pending_webhooks":1,` +
	`"request":{"id":null,"idempotency_key":null},"type":"invoice.paid"}`

func invoiceBody(run string, seq int64, at time.Time) []byte {
	id := run + "_" + strconv.FormatInt(seq, 10)
	return fmt.Appendf(nil, invoiceTemplate, "evt_"+id, "in_"+id, at.Unix())
}

// registerEndpoint registers the benchmark's Stripe endpoint (test mode,
// own account linked to a workspace).
func registerEndpoint(ctx context.Context, st *store.Store) error {
	if err := endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: benchSlug, Provider: keys.ProviderStripe,
		Environment: keys.EnvTest, Account: benchAccount, Secrets: []string{benchSecret}}); err != nil {
		return err
	}
	return endpoints.LinkAccount(ctx, st, benchSlug, benchAccount, benchWorkspace)
}

// benchLogger is the production JSON logger at info level, writing nowhere:
// formatting costs what it costs in production.
func benchLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// pausable rings through bell, except while paused: then every ring
// succeeds at once without reaching Temporal. Between two measurements
// the intake bench pauses a target, so what its hand-off still has queued
// is not sent during the next target's window (each target's doorbells
// load Temporal during its own window only). A paused ring is a fast
// success, so the paced hand-off starts its next window wide open, the
// least favourable start for pacing.
type pausable struct {
	bell   keys.Doorbell
	paused atomic.Bool
}

func (p *pausable) Ring(ctx context.Context, r keys.Resource, signal, value string) error {
	if p.paused.Load() {
		return nil
	}
	return p.bell.Ring(ctx, r, signal, value)
}

// nopSignaler stands in for Temporal behind the intake's hand-off queue.
type nopSignaler struct{ n atomic.Int64 }

func (s *nopSignaler) Ring(context.Context, keys.Resource, string, string) error {
	s.n.Add(1)
	return nil
}

// IntakeTarget is the real intake (webhook.Server behind the real HTTP
// server and hand-off queue, ringing the resource workflows on a real
// Temporal server, or, with IntakeOptions.NoTemporal, a no-op signaller)
// on a fresh database, and a client posting Stripe-signed deliveries to it
// over loopback HTTP.
type IntakeTarget struct {
	sender
	store   *store.Store
	handoff *starter.Handoff
	bell    *pausable
	// settleGrace lets the calls in flight when a target is paused end
	// (at most the hand-off timeout).
	settleGrace time.Duration
	metrics     *metrics.Metrics
	cancel      context.CancelFunc
	done        chan struct{}
	drop        func()
}

// IntakeOptions size the intake's database pool.
type IntakeOptions struct {
	// MaxConns of the intake's pool; 0 keeps what `hookinbox webhook`
	// opens (pgxpool's default, max(4, cores), unless DATABASE_URL sets
	// pool_max_conns).
	MaxConns int32
	// Clients is the number of idle keep-alive connections to keep.
	Clients int
	// NoTemporal replaces Temporal by a no-op signaller (the measurement
	// before issue #17). Otherwise the hand-off rings a real server.
	NoTemporal bool
	// Unpaced turns the hand-off's pacing off (HOOKINBOX_HANDOFF_PACING=false).
	Unpaced bool
	// Writers is HOOKINBOX_INTAKE_WRITERS (0: the product default; -1: no
	// group commit).
	Writers int
}

// NewIntakeTarget starts the intake on a fresh database.
func NewIntakeTarget(ctx context.Context, env *Env, o IntakeOptions) (*IntakeTarget, error) {
	u, drop, err := env.Database(ctx, "intake")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, u, o.MaxConns)
	if err != nil {
		drop()
		return nil, err
	}
	st.Keys = benchKeys()
	if err := registerEndpoint(ctx, st); err != nil {
		st.Close()
		drop()
		return nil, err
	}
	cfg := config.Default()
	cfg.HandoffPacing = !o.Unpaced
	switch {
	case o.Writers > 0:
		cfg.IntakeWriters = o.Writers
	case o.Writers < 0:
		cfg.IntakeWriters = 0
	}
	log := benchLogger()
	m := metrics.New()
	var bell keys.Doorbell = &nopSignaler{}
	closeClient := func() {}
	if !o.NoTemporal {
		taddr, err := env.Temporal(ctx)
		if err == nil {
			cfg.TemporalAddress, cfg.TaskQueue = taddr, "bench-intake-"+runID()
			var c client.Client
			if c, err = starter.DialLazy(cfg, log); err == nil {
				bell, closeClient = app.Resources(cfg, c), c.Close
			}
		}
		if err != nil {
			st.Close()
			drop()
			return nil, err
		}
	}
	pb := &pausable{bell: bell}
	h := app.NewHandoff(cfg, pb, m, log)
	srv := webhook.New(app.IntakeOptions(cfg, st, h, m, log, builtin.MustBusiness().Routes))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		closeClient()
		st.Close()
		drop()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	t := &IntakeTarget{sender: newSender(ln.Addr().String(), o.Clients), store: st, handoff: h, bell: pb, settleGrace: time.Second, metrics: m, cancel: cancel, done: make(chan struct{}),
		drop: func() { closeClient(); drop() }}
	go func() {
		defer close(t.done)
		hctx, hcancel := context.WithCancel(rctx)
		go h.Run(hctx)
		_ = app.Serve(rctx, "", ln, srv.Handler(), log)
		hcancel()
	}()
	return t, nil
}

// Settle ends a measurement: it waits, up to limit, for the hand-off to
// send what it queued during the window, then empties what is left without
// sending it (see pausable), so that none of this window's doorbells load
// Temporal during the next one. It returns how many were left unsent.
func (t *IntakeTarget) Settle(ctx context.Context, limit time.Duration) int {
	end := time.Now().Add(limit)
	for t.handoff.Len() > 0 && time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	left := t.handoff.Len()
	t.bell.paused.Store(true)
	for t.handoff.Len() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(t.settleGrace)
	t.bell.paused.Store(false)
	return left
}

// Signals counts the hand-off's doorbells so far by result (sent, failed,
// coalesced, dropped).
func (t *IntakeTarget) Signals() map[string]float64 {
	out := map[string]float64{}
	for _, k := range []string{"sent", "failed", "coalesced", "dropped"} {
		out[k] = testutil.ToFloat64(t.metrics.HandoffSignals.WithLabelValues(k))
	}
	return out
}

func httpClient(conns int) *http.Client {
	conns = max(conns, 64)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}}
}

// sender is the intake's senders: a keep-alive client posting to the
// benchmark endpoint's URL on a server at one address.
type sender struct {
	URL    string
	run    string
	client *http.Client
}

func newSender(addr string, clients int) sender {
	return sender{URL: "http://" + addr + "/webhooks/" + benchSlug, run: runID(), client: httpClient(clients)}
}

// Send posts one distinct, freshly signed invoice.paid event and requires
// its acknowledgement (200 accepted).
func (t sender) Send(ctx context.Context, seq int64) error {
	now := time.Now()
	body := invoiceBody(t.run, seq, now)
	return post(ctx, t.client, t.URL, body, simulator.SignStripe(body, now, benchSecret))
}

func post(ctx context.Context, c *http.Client, url string, body []byte, sig string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sig)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"accepted"`)) {
		return fmt.Errorf("intake answered %d %s", resp.StatusCode, answer)
	}
	return nil
}

// Close stops the intake and drops its database.
func (t *IntakeTarget) Close() {
	t.cancel()
	<-t.done
	t.client.CloseIdleConnections()
	t.store.Close()
	t.drop()
}

// RawTarget inserts the intake's inbox row with one INSERT…COMMIT per row
// (pgx, autocommit, statement cached), nothing else: the physical limit of
// a durable acknowledgement on this database server.
type RawTarget struct {
	pool *pgxpool.Pool
	url  string
	run  string
	drop func()
}

// NewRawTarget opens a pool of maxConns connections on a fresh database.
func NewRawTarget(ctx context.Context, env *Env, maxConns int32) (*RawTarget, error) {
	u, drop, err := env.Database(ctx, "raw")
	if err != nil {
		return nil, err
	}
	r, err := openRaw(ctx, u, maxConns)
	if err != nil {
		drop()
		return nil, err
	}
	r.drop = drop
	return r, nil
}

// openRaw opens a raw target on an existing database (dropped by nobody).
func openRaw(ctx context.Context, url string, maxConns int32) (*RawTarget, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = maxConns, maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &RawTarget{pool: pool, url: url, run: runID(), drop: func() {}}, nil
}

// WithPool opens another target on the same database with a pool of
// maxConns connections (its Close leaves the database alone).
func (r *RawTarget) WithPool(ctx context.Context, maxConns int32) (*RawTarget, error) {
	return openRaw(ctx, r.url, maxConns)
}

// Insert commits one inbox-shaped row: the same columns, values and body
// size the intake stores for a delivery.
func (r *RawTarget) Insert(ctx context.Context, seq int64) error {
	now := time.Now()
	body := invoiceBody(r.run, seq, now)
	sum := sha256.Sum256(body)
	id := r.run + "_" + strconv.FormatInt(seq, 10)
	_, err := r.pool.Exec(ctx, `
		INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug,
			workspace_id, event_type, resource_kind, resource_id, provider_version, occurred_at,
			payload, body_sha256, secret_id, origin, status, last_error, processed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		keys.ProviderStripe, benchAccount, keys.EnvTest, "evt_"+id, benchSlug, benchWorkspace, "invoice.paid",
		"invoice", "in_"+id, nil, now, body, sum[:], int64(1), keys.OriginWebhook, keys.StatusPending, nil, nil)
	return err
}

// Close closes the pool and drops the database.
func (r *RawTarget) Close() {
	r.pool.Close()
	r.drop()
}

// StatementTarget commits the intake's inbox row with the product's own
// statement, inbox.InsertInboxEvent (its ON CONFLICT and the read of a
// winning row, every index of the table), called directly on a pool of one
// connection per sender: no HTTP, no verification, no group commit, no
// hand-off. Between the raw insert and the full intake, it says how much of
// the intake's cost is its statement.
type StatementTarget struct {
	pool *pgxpool.Pool
	run  string
}

// NewStatementTarget opens a pool of maxConns connections on the database
// at url (dropped by nobody: the caller owns it).
func NewStatementTarget(ctx context.Context, url string, maxConns int32) (*StatementTarget, error) {
	r, err := openRaw(ctx, url, maxConns)
	if err != nil {
		return nil, err
	}
	return &StatementTarget{pool: r.pool, run: runID()}, nil
}

// Insert commits one distinct invoice.paid event as the intake derives it
// (inbox.InsertInboxEvent, one autocommit round trip), and requires that it
// was inserted.
func (s *StatementTarget) Insert(ctx context.Context, seq int64) error {
	now := time.Now()
	res, err := inbox.InsertInboxEvent(ctx, s.pool, s.event(seq, invoiceBody(s.run, seq, now), now))
	if err == nil && res.Outcome != inbox.Inserted {
		err = fmt.Errorf("inbox statement: %s, want inserted", res.Outcome)
	}
	return err
}

// event is the inbox row the intake derives from body, the seq-th
// invoice.paid event of this target's run.
func (s *StatementTarget) event(seq int64, body []byte, at time.Time) *inbox.InboxEvent {
	sum := sha256.Sum256(body)
	id := s.run + "_" + strconv.FormatInt(seq, 10)
	return &inbox.InboxEvent{
		Key:          keys.Event{Provider: keys.ProviderStripe, Account: benchAccount, Environment: keys.EnvTest, EventID: "evt_" + id},
		EndpointSlug: benchSlug, WorkspaceID: benchWorkspace, EventType: "invoice.paid",
		ResourceKind: "invoice", ResourceID: "in_" + id, OccurredAt: &at,
		Payload: body, BodySHA256: sum[:], SecretID: 1, Origin: keys.OriginWebhook, Status: keys.StatusPending,
	}
}

// Close closes the pool.
func (s *StatementTarget) Close() { s.pool.Close() }

// FloorTarget is the least an HTTP intake of this row can cost on this
// machine: Go's net/http server with the product's listener settings
// (webhook.NewHTTPServer), whose handler reads the body and commits it
// with the intake's own statement (inbox.InsertInboxEvent, one connection
// per sender, as StatementTarget), then answers what the intake answers;
// the senders are the intake's (the same signed bodies, the same client).
// No gin, no endpoint lookup, no verification, no normalization, no group
// commit, no hand-off, no log line, no metrics. Between the statement and
// the intake, it says how much of the intake's cost is HTTP itself (the
// round trip over loopback, the client's and the server's goroutines and
// syscalls) and how much is the intake's own code.
type FloorTarget struct {
	sender
	stmt *StatementTarget
	seq  atomic.Int64
	srv  *http.Server
}

// NewFloorTarget serves the floor on a loopback port, committing to the
// database at url on a pool of maxConns connections (the caller owns the
// database).
func NewFloorTarget(ctx context.Context, url string, maxConns int32, clients int) (*FloorTarget, error) {
	stmt, err := NewStatementTarget(ctx, url, maxConns)
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		stmt.Close()
		return nil, err
	}
	f := &FloorTarget{stmt: stmt}
	f.srv = webhook.NewHTTPServer(http.HandlerFunc(f.receive))
	f.sender = newSender(ln.Addr().String(), clients)
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *FloorTarget) receive(w http.ResponseWriter, r *http.Request) {
	// The intake's senders always declare the length (readBody's fast
	// path); anything else is refused.
	if r.ContentLength <= 0 || r.ContentLength > 1<<20 {
		http.Error(w, "want a body of declared length", http.StatusBadRequest)
		return
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		http.Error(w, "could not read body", http.StatusBadRequest)
		return
	}
	ev := f.stmt.event(f.seq.Add(1), body, time.Now())
	res, err := inbox.InsertInboxEvent(r.Context(), f.stmt.pool, ev)
	if err != nil || res.Outcome != inbox.Inserted {
		http.Error(w, fmt.Sprintf("not stored: %v %v", res.Outcome, err), http.StatusServiceUnavailable)
		return
	}
	answer := `{"event":"` + ev.Key.String() + `","status":"accepted"}`
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = io.WriteString(w, answer)
}

// Close stops the server and closes the pool.
func (f *FloorTarget) Close() {
	_ = f.srv.Close()
	f.client.CloseIdleConnections()
	f.stmt.Close()
}

// IntakeSuite configures RunIntake.
type IntakeSuite struct {
	Concurrency []int
	Duration    time.Duration
	Warmup      time.Duration
	// MaxConns of the intake's pool (0: the product's default).
	MaxConns int32
	// WidePool also measures the intake with a pool of as many connections
	// as senders, to tell the pool's share of the gap from the CPU's.
	WidePool bool
	// Rounds repeats every measurement of a level this many times,
	// interleaved (raw, intake, wide, raw, …); the median round is kept.
	Rounds int
	// NoTemporal replaces Temporal behind the hand-off by a no-op
	// signaller. By default the hand-off rings a real dev server (no
	// worker polls it: the intake process runs none) and, between two
	// measurements, is given up to Settle to send what is queued.
	NoTemporal bool
	Settle     time.Duration
	// Unpaced also measures the intake with an unpaced hand-off (the
	// design before issue #17) beside the paced one.
	Unpaced bool
	// Writers is the intakes' HOOKINBOX_INTAKE_WRITERS (0: the product
	// default; -1: no group commit).
	Writers int
	// Statement also measures the product's inbox statement alone
	// (StatementTarget) between the raw insert and the intake: the
	// three-way split of the intake's cost.
	Statement bool
	// PauseTemporal stops the Temporal server (SIGSTOP) for every window,
	// so that it takes no CPU: what is left is the intake's own cost. The
	// hand-off still runs its real code: its calls wait until their
	// timeout, its queue fills and drops, as with Temporal unreachable.
	// Needs a server started here; ignored with NoTemporal.
	PauseTemporal bool
	// Floor also measures FloorTarget (the statement behind a bare
	// net/http server, the intake's senders) after the statement: what HTTP
	// itself costs, apart from the intake's own code. Needs Statement.
	Floor bool
	// Progress receives a line per measurement.
	Progress io.Writer
}

// IntakeResult is one concurrency level: the intake beside the raw insert.
type IntakeResult struct {
	Concurrency int     `json:"concurrency"`
	Intake      Rate    `json:"intake"`
	Raw         Rate    `json:"raw_insert"`
	Ratio       float64 `json:"ratio_intake_over_raw"`
	// IntakeWide is the intake with a pool of Concurrency connections
	// (when measured) and WideRatio its ratio to the raw insert.
	IntakeWide *Rate   `json:"intake_pool_per_sender,omitempty"`
	WideRatio  float64 `json:"ratio_wide_over_raw,omitempty"`
	// IntakeUnpaced is the intake with an unpaced hand-off (when
	// measured) and UnpacedRatio its ratio to the raw insert.
	IntakeUnpaced *Rate   `json:"intake_unpaced,omitempty"`
	UnpacedRatio  float64 `json:"ratio_unpaced_over_raw,omitempty"`
	// Statement is the product's inbox statement alone (when measured),
	// StatementRatio its ratio to the raw insert and IntakeOverStatement
	// the intake's ratio to it.
	Statement           *Rate   `json:"inbox_statement,omitempty"`
	StatementRatio      float64 `json:"ratio_statement_over_raw,omitempty"`
	IntakeOverStatement float64 `json:"ratio_intake_over_statement,omitempty"`
	// Floor is FloorTarget (when measured): the statement behind a bare
	// net/http server; FloorOverStatement is its ratio to the statement
	// and IntakeOverFloor the intake's ratio to it.
	Floor              *Rate   `json:"http_floor,omitempty"`
	FloorOverStatement float64 `json:"ratio_floor_over_statement,omitempty"`
	IntakeOverFloor    float64 `json:"ratio_intake_over_floor,omitempty"`
	// Temporal says the hand-off rang a real Temporal server, and
	// TemporalPaused that the server was stopped (SIGSTOP) for every
	// window of this level.
	Temporal       bool `json:"temporal"`
	TemporalPaused bool `json:"temporal_paused,omitempty"`
	// IntakeMaxConns is the intake pool's size in the Intake column.
	IntakeMaxConns int32  `json:"intake_max_conns"`
	Load           string `json:"load_average"`
	// Every round's rates (per second), in the order measured.
	RawRounds       []float64 `json:"raw_rounds,omitempty"`
	StatementRounds []float64 `json:"statement_rounds,omitempty"`
	FloorRounds     []float64 `json:"floor_rounds,omitempty"`
	IntakeRounds    []float64 `json:"intake_rounds,omitempty"`
	WideRounds      []float64 `json:"wide_rounds,omitempty"`
	UnpacedRounds   []float64 `json:"unpaced_rounds,omitempty"`
	// Doorbells of the paced (and unpaced) intake at this level, by
	// result: sent, failed, coalesced, dropped (queue full), and
	// unsent_after_window (still queued Settle after a window: discarded,
	// the sweeper's in production).
	Signals        map[string]float64 `json:"handoff_signals,omitempty"`
	UnpacedSignals map[string]float64 `json:"handoff_signals_unpaced,omitempty"`
}

// median returns the measurement with the median rate.
func median(rs []Rate) Rate {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b Rate) int { return cmp.Compare(a.PerSec, b.PerSec) })
	return s[(len(s)-1)/2]
}

func rates(rs []Rate) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = math.Round(r.PerSec)
	}
	return out
}

// RunIntake measures, at each concurrency, the raw insert and then the
// intake (and, with WidePool, the intake with a pool per sender), each for
// the same duration, in one process on one server. Every database is
// created before the first measurement: CREATE DATABASE forces a
// checkpoint and floods the WAL, which would slow whatever runs next.
func RunIntake(ctx context.Context, env *Env, s IntakeSuite) ([]IntakeResult, error) {
	if s.Progress == nil {
		s.Progress = io.Discard
	}
	maxC := 0
	for _, c := range s.Concurrency {
		maxC = max(maxC, c)
	}
	if s.Settle <= 0 {
		s.Settle = 30 * time.Second
	}
	unsent := map[*IntakeTarget]int{}
	pause := s.PauseTemporal && !s.NoTemporal
	settle := func(t *IntakeTarget) {
		switch {
		case pause:
			// Nothing will be sent: discard what is queued at once.
			unsent[t] += t.Settle(ctx, 0)
		case !s.NoTemporal:
			unsent[t] += t.Settle(ctx, s.Settle)
		}
	}
	intake, err := NewIntakeTarget(ctx, env, IntakeOptions{MaxConns: s.MaxConns, Clients: maxC, NoTemporal: s.NoTemporal, Writers: s.Writers})
	if err != nil {
		return nil, err
	}
	defer intake.Close()
	var unpaced *IntakeTarget
	if s.Unpaced {
		if unpaced, err = NewIntakeTarget(ctx, env, IntakeOptions{MaxConns: s.MaxConns, Clients: maxC, NoTemporal: s.NoTemporal, Unpaced: true, Writers: s.Writers}); err != nil {
			return nil, err
		}
		defer unpaced.Close()
	}
	rawURL, dropRaw, err := env.Database(ctx, "raw")
	if err != nil {
		return nil, err
	}
	defer dropRaw()
	var stmtURL string
	if s.Statement {
		u, dropStmt, err := env.Database(ctx, "stmt")
		if err != nil {
			return nil, err
		}
		defer dropStmt()
		stmtURL = u
	}
	var floorURL string
	if s.Floor && s.Statement {
		u, dropFloor, err := env.Database(ctx, "floor")
		if err != nil {
			return nil, err
		}
		defer dropFloor()
		floorURL = u
	}
	wide := map[int]*IntakeTarget{}
	if s.WidePool {
		for _, c := range s.Concurrency {
			t, err := NewIntakeTarget(ctx, env, IntakeOptions{MaxConns: int32(c), Clients: c, NoTemporal: s.NoTemporal, Writers: s.Writers})
			if err != nil {
				return nil, err
			}
			defer t.Close()
			wide[c] = t
		}
	}
	poolSize := s.MaxConns
	if poolSize == 0 {
		poolSize = int32(intake.store.Pool.Config().MaxConns)
	}
	if pause {
		resume, err := env.PauseTemporal()
		if err != nil {
			return nil, err
		}
		// Before the targets close (deferred above, so run after this).
		defer resume()
	}
	var seq atomic.Int64
	var out []IntakeResult
	line := func(what string, c int, r Rate) {
		fmt.Fprintf(s.Progress, "intake: %-22s c=%-3d %8.0f/s  p50 %6.2f ms  p99 %6.2f ms  (load %s)\n", what, c, r.PerSec, r.P50ms, r.P99ms, LoadAverage())
	}
	for _, c := range s.Concurrency {
		raw, err := openRaw(ctx, rawURL, int32(c))
		if err != nil {
			return out, err
		}
		var stmt *StatementTarget
		if s.Statement {
			if stmt, err = NewStatementTarget(ctx, stmtURL, int32(c)); err != nil {
				raw.Close()
				return out, err
			}
		}
		var floor *FloorTarget
		if floorURL != "" {
			if floor, err = NewFloorTarget(ctx, floorURL, int32(c), c); err != nil {
				raw.Close()
				stmt.Close()
				return out, err
			}
		}
		closeLevel := func() {
			raw.Close()
			if stmt != nil {
				stmt.Close()
			}
			if floor != nil {
				floor.Close()
			}
		}
		res := IntakeResult{Concurrency: c, Load: LoadAverage(), IntakeMaxConns: poolSize, Temporal: !s.NoTemporal, TemporalPaused: pause}
		var raws, stmts, floors, intakes, wides, unpaceds []Rate
		sig0 := intake.Signals()
		var usig0 map[string]float64
		if unpaced != nil {
			usig0 = unpaced.Signals()
		}
		// measure times one window of op, named what in the progress line
		// and in an error, into its rounds.
		measure := func(what string, op Op, into *[]Rate) error {
			r, err := ClosedLoop(ctx, op, &seq, c, s.Warmup, s.Duration)
			if err != nil {
				return fmt.Errorf("%s at %d: %w", what, c, err)
			}
			line(what, c, r)
			*into = append(*into, r)
			return nil
		}
		for range max(1, s.Rounds) {
			err := measure("raw insert", raw.Insert, &raws)
			if err == nil && stmt != nil {
				err = measure("inbox statement", stmt.Insert, &stmts)
			}
			if err == nil && floor != nil {
				err = measure("HTTP floor", floor.Send, &floors)
			}
			if err == nil {
				if err = measure(fmt.Sprintf("intake (pool %d)", poolSize), intake.Send, &intakes); err == nil {
					settle(intake)
				}
			}
			if t := wide[c]; err == nil && t != nil {
				if err = measure(fmt.Sprintf("intake (pool %d)", c), t.Send, &wides); err == nil {
					settle(t)
				}
			}
			if err == nil && unpaced != nil {
				if err = measure("intake (unpaced)", unpaced.Send, &unpaceds); err == nil {
					settle(unpaced)
				}
			}
			if err != nil {
				closeLevel()
				return out, err
			}
		}
		closeLevel()
		res.Raw, res.Intake = median(raws), median(intakes)
		res.RawRounds, res.IntakeRounds = rates(raws), rates(intakes)
		if res.Raw.PerSec > 0 {
			res.Ratio = res.Intake.PerSec / res.Raw.PerSec
		}
		if len(stmts) > 0 {
			m := median(stmts)
			res.Statement, res.StatementRounds = &m, rates(stmts)
			if res.Raw.PerSec > 0 {
				res.StatementRatio = m.PerSec / res.Raw.PerSec
			}
			if m.PerSec > 0 {
				res.IntakeOverStatement = res.Intake.PerSec / m.PerSec
			}
		}
		if len(floors) > 0 {
			f := median(floors)
			res.Floor, res.FloorRounds = &f, rates(floors)
			if res.Statement != nil && res.Statement.PerSec > 0 {
				res.FloorOverStatement = f.PerSec / res.Statement.PerSec
			}
			if f.PerSec > 0 {
				res.IntakeOverFloor = res.Intake.PerSec / f.PerSec
			}
		}
		if len(wides) > 0 {
			w := median(wides)
			res.IntakeWide, res.WideRounds = &w, rates(wides)
			if res.Raw.PerSec > 0 {
				res.WideRatio = w.PerSec / res.Raw.PerSec
			}
		}
		if len(unpaceds) > 0 {
			u := median(unpaceds)
			res.IntakeUnpaced, res.UnpacedRounds = &u, rates(unpaceds)
			if res.Raw.PerSec > 0 {
				res.UnpacedRatio = u.PerSec / res.Raw.PerSec
			}
			res.UnpacedSignals = diff(unpaced.Signals(), usig0)
			res.UnpacedSignals["unsent_after_window"] = float64(unsent[unpaced])
			// Paused rings after a window are not sent: not counted as sent.
			res.UnpacedSignals["sent"] -= float64(unsent[unpaced])
		}
		res.Signals = diff(intake.Signals(), sig0)
		res.Signals["unsent_after_window"] = float64(unsent[intake])
		res.Signals["sent"] -= float64(unsent[intake])
		unsent = map[*IntakeTarget]int{}
		out = append(out, res)
	}
	return out, nil
}

func diff(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

var runSeq atomic.Int64

// runID is unique per target in this process and across processes.
func runID() string {
	return strconv.FormatInt(time.Now().UnixNano()%1e12, 36) + strconv.FormatInt(runSeq.Add(1), 36)
}

// benchKeys is a fresh keyring for a benchmark's own database.
func benchKeys() *secretbox.Keyring {
	k, err := secretbox.ParseKey(secretbox.GenerateKey())
	if err != nil {
		panic(err) // a generated key always parses
	}
	return k
}
