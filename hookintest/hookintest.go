// Package hookintest runs a team's App on real components in its tests: a
// fresh PostgreSQL database migrated with hookinbox's migrations and then
// the App's own, the process roles with the App's grants, deliveries signed
// as each provider signs them and admitted through hookinbox's own intake
// path, and handlers run by hookinbox's own engine as the worker role. Run
// starts the whole stack on the Temporal dev server: the intake on loopback,
// the worker, one workflow per resource.
//
// No hookinbox checkout is needed: a team's module requiring hookinbox (a
// read-only copy in the module cache) runs its tests as they are, and
// nothing is written under that copy. By default each test binary starts
// its own throw-away PostgreSQL cluster (PostgreSQL's server binaries:
// /usr/lib/postgresql/N/bin, PATH or HOOKINBOX_PG_BIN), Temporal dev server and, for Run, a Mailpit;
// the pinned Temporal CLI and Mailpit are built once per machine from the
// module proxy into the user's cache (HOOKINBOX_CACHE_DIR moves it;
// HOOKINBOX_TEMPORAL_BIN and HOOKINBOX_MAILPIT_BIN use binaries of your
// own). Each server can be your own instead, one variable each:
// HOOKINBOX_TEST_DATABASE_URL (a superuser URL),
// HOOKINBOX_TEST_TEMPORAL_ADDRESS (its "default" namespace; no namespace is
// created) and HOOKINBOX_TEST_SMTP_ADDR (with HOOKINBOX_TEST_MAILPIT_URL to
// read the mail back; no Mailpit is built). Call Main from TestMain so that
// the servers are stopped:
//
//	func TestMain(m *testing.M) { hookintest.Main(m) }
package hookintest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/hookinbox/hookinbox/providers"
)

// Main runs the package's tests and stops the servers they started.
func Main(m *testing.M) { testenv.Main(m) }

// Harness is one App on a fresh database.
type Harness struct {
	// DB is the schema owner's pool: fixtures and assertions.
	DB *pgxpool.Pool

	t      testing.TB
	url    string
	biz    app.Business
	owner  *store.Store
	intake *store.Store
	worker *store.Store
	adm    *admission.Admitter
	events *engine.Events
	now    func() time.Time
	// stackID names the harness's task queue and workflow-id prefix.
	stackID string
}

// New migrates a fresh database for a (hookinbox's migrations, then a's),
// applies the process roles' grants with a's tables, and returns the
// harness. a must have no registration error.
func New(t testing.TB, a *hookinbox.App) *Harness {
	t.Helper()
	if err := a.Err(); err != nil {
		t.Fatalf("hookintest: the app has registration errors: %v", err)
	}
	biz := app.BusinessOf(a)
	url := testenv.CoreDatabaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("hookintest: %v", err)
	}
	for _, set := range biz.Migrations {
		if _, err := migrations.UpSet(ctx, conn, set, nil); err != nil {
			conn.Close(ctx)
			t.Fatalf("hookintest: migrations of %s: %v", set.Name, err)
		}
	}
	if _, _, err := store.ReapplyGrants(ctx, conn, biz.Grants...); err != nil {
		conn.Close(ctx)
		t.Fatalf("hookintest: grants: %v", err)
	}
	conn.Close(ctx)
	h := &Harness{t: t, url: url, biz: biz, now: time.Now, stackID: rand.Text()[:12]}
	h.owner = h.open(url)
	h.intake = h.open(testenv.RoleURL(t, url, store.RoleIntake))
	h.worker = h.open(testenv.RoleURL(t, url, store.RoleWorker))
	h.DB = h.owner.Pool
	// The intake checks signatures at the harness's clock, the one Deliver
	// signs with (SetNow).
	h.adm = admission.New(admission.Options{Store: h.intake, Routes: biz.Router(h.config(""), h.intake, nil), Tolerance: 5 * time.Minute,
		Now: func() time.Time { return h.now() }})
	h.events = &engine.Events{Store: h.worker, Providers: &engine.EndpointProviders{Store: h.worker}, Routes: biz.Router(h.config(""), h.worker, nil),
		Handlers: biz.Handlers, WaitLimits: biz.WaitLimits, WaitInitial: time.Second, WaitMax: time.Minute,
		Forwarder: biz.ForwardHandler(&forward.Sender{})}
	return h
}

func (h *Harness) open(url string) *store.Store {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, url, 10)
	if err != nil {
		h.t.Fatalf("hookintest: %v", err)
	}
	st.Keys = testenv.Keys(h.t)
	h.t.Cleanup(st.Close)
	return st
}

// Endpoint is a webhook endpoint to register.
type Endpoint struct {
	Slug        string
	Provider    string
	Environment string // default test
	Secret      string
	// APIBaseURL and APIKey, when set, are where handlers fetch from.
	APIBaseURL string
	APIKey     string
	// VersionPath locates a monotonic per-resource version in the payload
	// (`endpoints add --version-path`), when the provider sends one.
	VersionPath string
	// AccountPath locates the source account in a Standard Webhooks
	// payload (`endpoints add --account-path`).
	AccountPath string
	// Account is linked to Workspace (whose notices go to Email).
	Account   string
	Workspace string
	Email     string
}

// AddEndpoint registers e and links its account, as `hookinbox endpoints
// add` and `endpoints link` do.
func (h *Harness) AddEndpoint(ctx context.Context, e Endpoint) {
	h.t.Helper()
	if e.Environment == "" {
		e.Environment = hookintype.Test
	}
	err := endpoints.InsertEndpoint(ctx, h.owner, endpoints.NewEndpoint{Slug: e.Slug, Provider: e.Provider,
		Environment: e.Environment, Secrets: []string{e.Secret}, APIBaseURL: e.APIBaseURL, APIKey: e.APIKey,
		Settings: keys.EndpointSettings{VersionPath: e.VersionPath, AccountPath: e.AccountPath}})
	if err == nil && e.Account != "" {
		err = endpoints.LinkAccount(ctx, h.owner, e.Slug, e.Account, e.Workspace)
	}
	if err == nil && e.Email != "" {
		err = records.SetWorkspaceEmail(ctx, h.owner.Pool, e.Workspace, e.Email)
	}
	if err != nil {
		h.t.Fatalf("hookintest: endpoint %s: %v", e.Slug, err)
	}
}

// Delivery is what the intake did with one delivery.
type Delivery struct {
	Key EventKey
	// Outcome is accepted, ignored, duplicate, quarantined, or replied (a
	// provider's handshake, answered with Reply and stored as nothing).
	Outcome string
	// Status of the inbox row (pending, ignored, or a duplicate's current).
	Status string
	// Reason a quarantined delivery was refused.
	Reason string
	// Reply is the body a handshake was answered with.
	Reply []byte
}

// EventKey is hookinbox's event key.
type EventKey = hookintype.EventKey

// Sign adds to header the signature the endpoint's provider would send for
// body, with secret, at the harness's now: Stripe-Signature,
// webhook-signature (Standard Webhooks; header must carry webhook-id),
// X-Hub-Signature-256 (GitHub) or X-Shopify-Hmac-Sha256.
func Sign(provider, secret string, header http.Header, body []byte, at time.Time) error {
	p, ok := providers.Lookup(provider)
	if !ok {
		return fmt.Errorf("hookintest cannot sign for provider %q", provider)
	}
	return providers.Sign(p, secret, header, body, at)
}

// Deliver signs body (with header's other headers) for the endpoint slug
// with its secret and admits it through the intake's own path: verify,
// normalize, map the account, route, insert. It fails the test when the
// endpoint is unknown or the delivery could not be stored.
func (h *Harness) Deliver(ctx context.Context, slug, secret string, header http.Header, body []byte) Delivery {
	h.t.Helper()
	ep, err := h.adm.Endpoint(ctx, slug)
	if err != nil {
		h.t.Fatalf("hookintest: endpoint %s: %v", slug, err)
	}
	if header == nil {
		header = http.Header{}
	}
	header = header.Clone()
	if err := Sign(ep.Provider, secret, header, body, h.now()); err != nil {
		h.t.Fatalf("hookintest: sign: %v", err)
	}
	res, err := h.adm.Admit(ctx, ep, admission.Delivery{Header: header, Body: body}, keys.OriginWebhook)
	if err != nil {
		h.t.Fatalf("hookintest: admit: %v", err)
	}
	d := Delivery{Key: res.Key, Status: res.Status, Reason: res.Reason}
	switch res.Outcome {
	case admission.Accepted:
		d.Outcome = "accepted"
	case admission.Ignored:
		d.Outcome = "ignored"
	case admission.Duplicate:
		d.Outcome = "duplicate"
	case admission.Quarantined:
		d.Outcome = "quarantined"
	case admission.Replied:
		d.Outcome, d.Reply = "replied", res.Reply.Body
	}
	return d
}

// Handled is one attempt at an event, as the worker makes it.
type Handled struct {
	// Status of the row after the attempt (pending when it failed or waits).
	Status string
	Note   string
	// Err is the handler's error (nil: done, ignored, or waiting).
	Err error
	// BusinessKey, Outbox and Divergences are what the handler reported to
	// the worker (its Result's business key, the outbox intents its
	// commit recorded, its divergences): the logs' and metrics' view.
	BusinessKey string
	Outbox      []int64
	Divergences []hookintype.Divergence
}

// Handle makes one attempt at the event, as the worker would (as the worker
// role, through the route table and the handler), without Temporal: a
// failed attempt is not recorded, retried nor stopped.
func (h *Harness) Handle(ctx context.Context, key EventKey) Handled {
	h.t.Helper()
	out, err := h.events.Handle(ctx, key)
	if out.Missing {
		h.t.Fatalf("hookintest: event %s is not in the inbox", key)
	}
	row, rerr := inbox.GetInboxEvent(ctx, h.owner.Pool, key)
	if rerr != nil {
		h.t.Fatalf("hookintest: %v", rerr)
	}
	return Handled{Status: row.Status, Note: out.Note, Err: err, BusinessKey: out.BusinessKey, Outbox: out.Outbox,
		Divergences: out.Divergences}
}

// Status is an event's inbox status.
func (h *Harness) Status(ctx context.Context, key EventKey) string {
	h.t.Helper()
	row, err := inbox.GetInboxEvent(ctx, h.owner.Pool, key)
	if err != nil {
		h.t.Fatalf("hookintest: %v", err)
	}
	return row.Status
}

// Replay puts the event back to pending, audited, as `hookinbox replay
// --force` does (a done or ignored event too: deliberate reprocessing,
// still guarded by the handlers' business keys). Handle it next.
func (h *Harness) Replay(ctx context.Context, key EventKey, reason string) {
	h.t.Helper()
	if _, err := inbox.ReplayInboxEvent(ctx, h.owner, inbox.ReplayRequest{Key: key, Actor: "hookintest", Reason: reason, Force: true}); err != nil {
		h.t.Fatalf("hookintest: replay %s: %v", key, err)
	}
}

// Reconcile runs the App's reconciler of r's kind once, as the worker's
// reconciliation does (as the worker role, with the API client of the
// endpoint whose API key serves r's account), without Temporal.
func (h *Harness) Reconcile(ctx context.Context, r hookintype.Resource, reason string) (hookinbox.ReconcileResult, error) {
	h.t.Helper()
	rec, ok := h.biz.Reconcilers[r.Kind]
	if !ok {
		h.t.Fatalf("hookintest: the app reconciles no %q resources", r.Kind)
	}
	out, err := rec.Reconcile(ctx, engine.Env{Store: h.worker, Providers: h.events.Providers}, r, reason)
	return hookinbox.ReconcileResult{Note: out.Note, Divergences: out.Divergences}, err
}

// Destination is a team destination of a workspace (`hookinbox
// destinations add`): where its alerts go.
type Destination struct {
	Workspace string
	Name      string
	// Kind is "webhook" (Target a URL) or "email" (Target an address).
	Kind   string
	Target string
	// Secret signs a webhook destination's requests (Standard Webhooks).
	Secret   string
	Disabled bool
}

// AddDestination registers (or replaces) a team destination.
func (h *Harness) AddDestination(ctx context.Context, d Destination) {
	h.t.Helper()
	err := outbox.UpsertDestination(ctx, h.owner.Pool, h.owner.Keys, outbox.Destination{WorkspaceID: d.Workspace, Name: d.Name,
		Kind: d.Kind, Target: d.Target, Secret: d.Secret, Enabled: !d.Disabled})
	if err != nil {
		h.t.Fatalf("hookintest: destination %s: %v", d.Name, err)
	}
}

// SetNow sets the clock deliveries are signed with, and checked at by the
// intake Deliver admits through, and waits are measured by (default
// time.Now). The stack Run starts runs on the real clock.
func (h *Harness) SetNow(now func() time.Time) {
	h.now = now
	h.events.Now = now
}

// config is a stack configuration on the harness's database.
func (h *Harness) config(temporal string) config.Config {
	cfg := config.Default()
	cfg.DatabaseURL = h.url
	cfg.IntakeDatabaseURL = testenv.RoleURL(h.t, h.url, store.RoleIntake)
	cfg.WorkerDatabaseURL = testenv.RoleURL(h.t, h.url, store.RoleWorker)
	cfg.SecretsKey = testenv.SecretsKey()
	cfg.TemporalAddress = temporal
	// Each stack its own task queue and workflow ids: stacks sharing the
	// namespace (parallel tests, or a Temporal of the user's own, where no
	// namespace is created) never take each other's workflows, even for
	// the same resource.
	cfg.TaskQueue = "hookintest-" + h.stackID
	cfg.WorkflowIDPrefix = "hookintest-" + h.stackID + "/"
	cfg.SweepInterval, cfg.SweepAfter = 2*time.Second, time.Second
	cfg.RetryInitial, cfg.RetryMax, cfg.RetryBudget = 50*time.Millisecond, 500*time.Millisecond, 4
	cfg.ReconcileInterval, cfg.BackfillInterval, cfg.RetentionInterval = 0, 0, 0
	cfg.OutboundAllowPrivate = true // test destinations are loopback servers
	// The intake's internal listener (readyz, metrics) on a port of its
	// own: the default, 127.0.0.1:9090, would be taken by the first stack
	// of parallel tests (or by a local hookinbox), and an intake whose
	// internal listener fails stops.
	cfg.InternalAddr = "127.0.0.1:0"
	return cfg
}
