package activities_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// signals records doorbells; fail makes every call fail.
type signals struct {
	mu   sync.Mutex
	got  []string // "signal resource"
	fail bool
}

func (s *signals) Ring(_ context.Context, r keys.Resource, signal, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("temporal unavailable")
	}
	s.got = append(s.got, signal+" "+r.ID)
	return nil
}

func (s *signals) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// passActivities are the pass activities over a bundle, in a test activity
// environment.
type passActivities struct {
	*bundle
	ctl   *activities.ControlActivities
	acts  *activities.ProviderActivities
	sig   *signals
	env   *testsuite.TestActivityEnvironment
	scope keys.Scope
}

func newPass(t *testing.T, cfg simulator.Config) *passActivities {
	t.Helper()
	b := setup(t, cfg)
	sig := &signals{}
	passes := storeports.Passes{Store: b.store}
	ctl := &activities.ControlActivities{Sweeps: storeports.Sweeps{Store: b.store}, Passes: passes,
		Retention: storeports.Retention{Store: b.store}, Doorbell: sig}
	biz := builtin.MustBusiness()
	acts := &activities.ProviderActivities{Providers: b.provs, Passes: passes,
		Projections: engine.BindLister(biz.Projections, b.env()), Facts: storeports.Facts{Store: b.store, Routes: biz.Routes}, Doorbell: sig}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(ctl)
	env.RegisterActivity(acts)
	return &passActivities{bundle: b, ctl: ctl, acts: acts, sig: sig, env: env,
		scope: keys.Scope{Provider: "stripe", Endpoint: "sim", Account: account, Environment: "test", WorkspaceID: "ws"}}
}

func (p *passActivities) begin(t *testing.T, name, owner string) keys.Checkpoint {
	t.Helper()
	cp, _, err := passes.BeginPass(p.ctx, p.store, name, owner, false)
	require.NoError(t, err)
	return cp
}

func (p *passActivities) reconcilePage(t *testing.T, in activities.ReconcilePageInput) (activities.PageResult, error) {
	t.Helper()
	v, err := p.env.ExecuteActivity(p.acts.ReconcilePage, in)
	if err != nil {
		return activities.PageResult{}, err
	}
	var res activities.PageResult
	require.NoError(t, v.Get(&res))
	return res, nil
}

func (p *passActivities) backfillPage(t *testing.T, in activities.BackfillPageInput) activities.PageResult {
	t.Helper()
	v, err := p.env.ExecuteActivity(p.acts.BackfillPage, in)
	require.NoError(t, err)
	var res activities.PageResult
	require.NoError(t, v.Get(&res))
	return res
}

func TestReconcilePageSignalsOnlyWhatDiffersAndCheckpointsEveryPage(t *testing.T) {
	t.Parallel()
	p := newPass(t, simulator.Config{})
	subs := engine.BindReconciler(builtin.MustBusiness().Reconcilers["subscription"], p.bundle.env())
	inSync, _ := p.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	stale, _ := p.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	missing, _ := p.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	for _, id := range []string{inSync.ID, stale.ID} {
		_, err := subs.Reconcile(p.ctx, keys.Resource{Provider: "stripe", Account: account, Environment: "test", Kind: "subscription", ID: id}, "seed")
		require.NoError(t, err)
	}
	_, err := p.sim.UpdateSubscription(stale.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)

	name := activities.CheckpointName(activities.PassSubscriptions, p.scope, "")
	cp := p.begin(t, name, "run-1")
	in := activities.ReconcilePageInput{PageInput: activities.PageInput{Scope: p.scope, Checkpoint: name, Owner: "run-1", Limit: 2}, Reason: "test pass"}

	// A failed doorbell leaves the checkpoint where it was: the page is retried whole.
	p.sig.fail = true
	_, err = p.reconcilePage(t, in)
	require.Error(t, err)
	got, err := passes.GetCheckpoint(p.ctx, p.store.Pool, name)
	require.NoError(t, err)
	require.EqualValues(t, 0, got.Pages)
	p.sig.fail = false

	first, err := p.reconcilePage(t, in) // newest first: missing, stale
	require.NoError(t, err)
	require.Equal(t, 2, first.Listed)
	require.Equal(t, 2, first.Differing)
	require.False(t, first.Done)
	require.Equal(t, stale.ID, first.Next)
	require.EqualValues(t, 1, first.Checkpoint.Pages)
	require.Equal(t, stale.ID, first.Checkpoint.Cursor)

	in.Pages, in.Cursor = first.Checkpoint.Pages, first.Next
	second, err := p.reconcilePage(t, in)
	require.NoError(t, err)
	require.Equal(t, 1, second.Listed)
	require.Equal(t, 0, second.Differing, "the in-sync subscription is not signalled")
	require.True(t, second.Done)
	require.Equal(t, []string{"reconcile " + missing.ID, "reconcile " + stale.ID}, p.sig.list())

	done, err := passes.GetCheckpoint(p.ctx, p.store.Pool, name)
	require.NoError(t, err)
	require.False(t, done.Unfinished())
	require.EqualValues(t, 2, done.Pages)
	require.EqualValues(t, 3, done.Seen)
	require.EqualValues(t, 2, done.Divergences)
	require.True(t, done.Watermark.Equal(*cp.StartedAt))

	// SignalAll rings every listed subscription.
	p.begin(t, name, "run-2")
	in = activities.ReconcilePageInput{PageInput: activities.PageInput{Scope: p.scope, Checkpoint: name, Owner: "run-2", Limit: 10},
		SignalAll: true, Reason: "all"}
	all, err := p.reconcilePage(t, in)
	require.NoError(t, err)
	require.Equal(t, 3, all.Signalled)
}

func TestReconcilePageOfAKilledRunLosesToTheRunThatTookOver(t *testing.T) {
	t.Parallel()
	p := newPass(t, simulator.Config{})
	p.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	name := activities.CheckpointName(activities.PassSubscriptions, p.scope, "")
	p.begin(t, name, "run-1")
	p.begin(t, name, "run-2") // run-1 was killed; run-2 resumes its pass
	_, err := p.reconcilePage(t, activities.ReconcilePageInput{
		PageInput: activities.PageInput{Scope: p.scope, Checkpoint: name, Owner: "run-1", Limit: 10}, Reason: "late"})
	require.ErrorContains(t, err, "taken over by run-2")
}

func TestBackfillPageInsertsOnlyMissingEventsThroughTheIntakePath(t *testing.T) {
	t.Parallel()
	p := newPass(t, simulator.Config{})
	_, delivered, err := p.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	p.accept(t, delivered) // its webhook came
	_, reserialized, err := p.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	// Its webhook came with another serialization of the same event.
	other := reserialized
	other.Body = append([]byte(" "), reserialized.Body...)
	p.accept(t, other)
	dropped, droppedEv, err := p.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	p.sim.CreateFeedback("", "not a Stripe event")

	name := activities.CheckpointName(activities.PassFacts, p.scope, "")
	cp := p.begin(t, name, "run-1")
	in := activities.BackfillPageInput{
		PageInput: activities.PageInput{Scope: p.scope, Checkpoint: name, Owner: "run-1", Limit: 100},
		Since:     cp.StartedAt.Add(-time.Hour), Types: activities.BackfillTypes(),
	}
	res := p.backfillPage(t, in)
	require.Equal(t, 3, res.Listed)
	require.Equal(t, 1, res.Inserted)
	require.Equal(t, 2, res.Duplicates, "same body or not, an existing key is already there")
	require.True(t, res.Done)
	require.Equal(t, []string{"event " + dropped.ID}, p.sig.list())

	row, err := inbox.GetInboxEvent(p.ctx, p.store.Pool, keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: droppedEv.ID})
	require.NoError(t, err)
	require.Equal(t, keys.OriginBackfill, row.Origin)
	require.Equal(t, keys.StatusPending, row.Status)
	require.Equal(t, "ws", row.WorkspaceID)
	require.Equal(t, dropped.ID, row.ResourceID)
	sum := sha256.Sum256(droppedEv.Body)
	require.Equal(t, sum[:], row.BodySHA256)
	require.Equal(t, 0, p.count(t, `SELECT count(*) FROM inbox_quarantine`), "never quarantined")

	// A second pass over the same window finds nothing missing.
	p.begin(t, name, "run-2")
	in.Owner = "run-2"
	again := p.backfillPage(t, in)
	require.Equal(t, 0, again.Inserted)
	require.Equal(t, 3, again.Duplicates)
	require.Len(t, p.sig.list(), 1, "no doorbell for what the inbox had")
	require.Equal(t, 3, p.count(t, `SELECT count(*) FROM webhook_inbox`))
}

func TestRetentionStepRefusesToDeleteInsideTheDedupWindow(t *testing.T) {
	t.Parallel()
	p := newPass(t, simulator.Config{})
	_, err := p.env.ExecuteActivity(p.ctl.RetentionStep, activities.RetentionStepInput{
		Step: activities.RetentionDeleteInbox, OlderThan: 24 * time.Hour, BatchSize: 10, MaxBatches: 1})
	require.ErrorContains(t, err, "refusing to delete")
}

// TestBackfillListsEveryTypeAHandlerTakesAndNoOther checks the map both
// ways: a listed type no handler takes would fill the inbox with events
// that are only ignored, and a handled type the list misses would leave its
// dropped webhooks unfound forever.
func TestBackfillListsEveryTypeAHandlerTakesAndNoOther(t *testing.T) {
	t.Parallel()
	routes := builtin.MustBusiness().Routes
	listed := activities.BackfillTypes()
	for _, typ := range listed {
		_, ok := routes.Route(keys.ProviderStripe, typ)
		require.True(t, ok, "the backfill lists %s, which no handler takes", typ)
		require.NotContains(t, typ, "*", "Stripe's types filter takes no wildcard")
	}
	handled := routes.ExactTypes(keys.ProviderStripe)
	require.NotEmpty(t, handled)
	for _, typ := range handled {
		require.Contains(t, listed, typ, "a handler takes %s, which the backfill does not list", typ)
	}
	require.ElementsMatch(t, handled, listed, "each type listed once")
}

func TestBackfillRefusesAKeyOfAnotherAccount(t *testing.T) {
	t.Parallel()
	p := newPass(t, simulator.Config{})
	_, _, err := p.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	// The endpoint says its own account is acct_other, but its API key is
	// acct_sim_a's: listed events (which name no account) would be booked
	// under the wrong account.
	_, err = p.store.Pool.Exec(p.ctx, `UPDATE endpoints SET account = 'acct_other'`)
	require.NoError(t, err)
	require.NoError(t, endpoints.LinkAccount(p.ctx, p.store, "sim", "acct_other", "ws_other"))
	scope := p.scope
	scope.Account, scope.WorkspaceID = "acct_other", "ws_other"
	name := activities.CheckpointName(activities.PassFacts, scope, "")
	cp := p.begin(t, name, "run-1")
	_, err = p.env.ExecuteActivity(p.acts.BackfillPage, activities.BackfillPageInput{
		PageInput: activities.PageInput{Scope: scope, Checkpoint: name, Owner: "run-1", Limit: 100},
		Since:     cp.StartedAt.Add(-time.Hour), Types: activities.BackfillTypes(),
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "belongs to account acct_sim_a")
	require.Equal(t, 0, p.count(t, `SELECT count(*) FROM webhook_inbox`))
}
