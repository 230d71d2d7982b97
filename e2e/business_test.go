package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

var accountSeq atomic.Int64

// simWorld is a stack wired to a simulator: a Stripe endpoint whose API is
// the simulator and a feedback (Standard Webhooks) endpoint, both linked to
// one workspace. Accounts are unique per test: tests share a dev server and
// workflow IDs carry the account.
type simWorld struct {
	*stack
	sim       *simulator.Simulator
	targets   simulator.Targets
	account   string
	project   string
	workspace string
}

func newSimWorld(t *testing.T, s *stack, cfg simulator.Config) *simWorld {
	t.Helper()
	n := accountSeq.Add(1)
	w := &simWorld{stack: s, account: fmt.Sprintf("acct_e2e%d", n), project: fmt.Sprintf("proj_e2e%d", n), workspace: fmt.Sprintf("ws_e2e%d", n)}
	cfg.Accounts = []string{w.account}
	cfg.Projects = []string{w.project}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(n)
	}
	w.sim = simulator.New(cfg)
	api := httptest.NewServer(w.sim.Handler())
	t.Cleanup(api.Close)
	stripeSecret, fbSecret := "whsec_e2e_stripe", simulator.StandardSecret("e2e-feedback")
	settings := keys.EndpointSettings{}
	if cfg.Versions {
		settings.VersionPath = "data.object.version"
	}
	require.NoError(t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{Slug: "stripe-sim", Provider: "stripe", Environment: "test",
		Secrets: []string{stripeSecret}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey, Settings: settings}))
	require.NoError(t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{Slug: "feedback-sim", Provider: "standard", Environment: "test",
		Secrets: []string{fbSecret}, Settings: keys.EndpointSettings{AccountPath: "data.project_id", ResourcePath: "data.id"}}))
	require.NoError(t, endpoints.LinkAccount(s.ctx, s.store, "stripe-sim", w.account, w.workspace))
	require.NoError(t, endpoints.LinkAccount(s.ctx, s.store, "feedback-sim", w.project, w.workspace))
	require.NoError(t, records.SetWorkspaceEmail(s.ctx, s.store.Pool, w.workspace, "billing@"+w.workspace+".example"))
	w.targets = simulator.Targets{
		Stripe:   simulator.Endpoint{URL: s.url + "/webhooks/stripe-sim", Secrets: []string{stripeSecret}},
		Standard: simulator.Endpoint{URL: s.url + "/webhooks/feedback-sim", Secrets: []string{fbSecret}},
	}
	return w
}

func (w *simWorld) send(t *testing.T, events ...simulator.Event) {
	t.Helper()
	rep, err := w.sim.Send(context.Background(), w.targets, events...)
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.Equal(t, simulator.OutcomeAcked, r.Outcome, "%s %s: %s", r.Event.Type, r.Event.ID, r.LastError)
	}
}

func (w *simWorld) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, sql, args...).Scan(&n))
	return n
}

func (w *simWorld) balance(t *testing.T) int64 {
	ws, err := records.GetWorkspace(w.ctx, w.store.Pool, w.workspace)
	require.NoError(t, err)
	return ws.CreditsBalance
}

func (w *simWorld) allDone(t *testing.T, n int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d inbox rows done", n), func() bool {
		return w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`) == n
	})
}

func f1SameEventDeliveredConcurrently(t *testing.T) {
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	rep, err := w.sim.Deliver(context.Background(), w.targets, simulator.Copies(paid, 16))
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.Equal(t, simulator.OutcomeAcked, r.Outcome)
	}
	w.allDone(t, 1)
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM webhook_inbox`))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants`))
	require.EqualValues(t, 100, w.balance(t))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM outbox`))
}

func f2DistinctEventsForOneInvoice(t *testing.T) {
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	again, err := w.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	w.send(t, paid, again)
	w.allDone(t, 2)
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, inv.ID))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM outbox WHERE operation_key LIKE '%:confirmation'`))
	require.EqualValues(t, 100, w.balance(t))
}

func f4CrashBeforeAndAfterTheBusinessCommit(t *testing.T) {
	// After the commit: the attempt's answer is lost (the handler returns an
	// error once after its effect committed). The retry finds the row done.
	var lost atomic.Bool
	grants := builtin.MustBusiness().Handlers[credits.NameGrants]
	s := newStack(t, stackOptions{handlers: map[string]engine.Handler{
		credits.NameGrants: engine.HandlerFunc(func(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
			out, err := grants.Handle(ctx, c)
			if err == nil && lost.CompareAndSwap(false, true) {
				return engine.Outcome{}, fmt.Errorf("connection reset while reading the COMMIT answer")
			}
			return out, err
		}),
	}})
	w := newSimWorld(t, s, simulator.Config{})

	// Before the commit: the first balance update fails inside the business
	// transaction (a trigger standing in for a crash), rolling back the grant.
	// SECURITY DEFINER: the worker's role may not use the test's sequence.
	_, err := s.store.Pool.Exec(s.ctx, `
		CREATE SEQUENCE crash_once; -- nextval survives the rollback it causes
		CREATE FUNCTION crash_once() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN
			IF NEW.credits_balance > OLD.credits_balance AND nextval('crash_once') = 1 THEN
				RAISE EXCEPTION 'simulated crash before commit';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER crash_once BEFORE UPDATE ON workspaces FOR EACH ROW EXECUTE FUNCTION crash_once();`)
	require.NoError(t, err)

	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	require.True(t, lost.Load(), "the lost-answer path ran")
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants`))
	require.EqualValues(t, 100, w.balance(t), "never a second increment")
	var attempts int
	require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT attempts FROM webhook_inbox`).Scan(&attempts))
	require.GreaterOrEqual(t, attempts, 2, "the failed attempts are counted")
}

func f6ReversedSnapshotsWithVersionsAndReplay(t *testing.T) {
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{Versions: true})
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	updated, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := w.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account, Subscription: sub.ID})
	require.NoError(t, err)

	w.send(t, canceled, updated, created, paid)
	w.allDone(t, 4)
	// Replay of done events alongside new traffic: redeliveries and a new
	// distinct event for the paid invoice.
	again, err := w.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	w.send(t, created, paid, again, updated)
	w.allDone(t, 5)

	p, err := subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", sub.ID)
	require.NoError(t, err)
	require.NotNil(t, p, "the subscription has a projection")
	require.Equal(t, "canceled", p.State.Status)
	require.EqualValues(t, 3, *p.Version)
	require.True(t, p.Deleted)
	ok, err := records.WorkspaceHasAccess(w.ctx, w.store.Pool, w.workspace)
	require.NoError(t, err)
	require.False(t, ok, "the old active snapshot never comes back")
	require.EqualValues(t, 100, w.balance(t))
	truth := w.sim.Truth()
	require.Equal(t, "canceled", truth.Subscriptions[0].Status)
	require.False(t, truth.Subscriptions[0].Access)
}

func f6ReversedNoticesWithoutVersions(t *testing.T) {
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	updated, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := w.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	w.send(t, canceled, updated, created)
	w.allDone(t, 3)
	w.send(t, created) // a replayed old notice
	p, err := subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", sub.ID)
	require.NoError(t, err)
	require.NotNil(t, p, "the subscription has a projection")
	require.Equal(t, "canceled", p.State.Status)
	require.Nil(t, p.Version)
	ok, err := records.WorkspaceHasAccess(w.ctx, w.store.Pool, w.workspace)
	require.NoError(t, err)
	require.False(t, ok)
}

func f6TimedOutAttemptWritesLate(t *testing.T) {
	subs := &subscriptions.Subscriptions{}
	var stalled atomic.Bool
	release := make(chan struct{})
	s := newStack(t, stackOptions{
		configure: func(c *config.Config) { c.ActivityTimeout = 2 * time.Second },
		handlers: map[string]engine.Handler{
			subscriptions.Name: app.HandlerOf(hookinbox.HandlerFunc(func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
				if activity.GetInfo(ctx).Attempt == 1 && stalled.CompareAndSwap(false, true) {
					// Attempt 1 fetches, then stalls past its timeout and
					// writes anyway, as a process that missed its deadline.
					plan, err := subs.Prepare(ctx, ev)
					if err != nil {
						return hookinbox.Result{}, err
					}
					<-release
					return subs.Commit(context.WithoutCancel(ctx), ev, plan)
				}
				return subs.Handle(ctx, ev)
			})),
		},
	})
	w := newSimWorld(t, s, simulator.Config{})
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	w.send(t, created)
	eventually(t, 30*time.Second, "attempt 1 to stall", stalled.Load)
	// While attempt 1 holds its stale "active", the subscription is canceled
	// at the provider; attempt 2 (after the timeout) fetches that.
	_, err := w.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	w.allDone(t, 1)
	p, err := subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", sub.ID)
	require.NoError(t, err)
	require.NotNil(t, p, "the subscription has a projection")
	require.Equal(t, "canceled", p.State.Status)

	close(release) // the stale attempt writes late
	time.Sleep(500 * time.Millisecond)
	p, err = subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", sub.ID)
	require.NoError(t, err)
	require.NotNil(t, p, "the subscription has a projection")
	require.Equal(t, "canceled", p.State.Status, "the late write lost")
	var seq int64
	require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT write_seq FROM subscription_projection`).Scan(&seq))
	require.EqualValues(t, 1, seq)
}

func TestFeedbackCreatesOneAlertWhateverRepeatsIt(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	require.NoError(t, outbox.UpsertDestination(w.ctx, w.store.Pool, w.store.Keys, outbox.Destination{
		WorkspaceID: w.workspace, Name: "oncall", Kind: "webhook", Target: "http://127.0.0.1:1/hook", Enabled: true}))
	_, ev := w.sim.CreateFeedback(w.project, "search is slow")
	w.send(t, ev, ev, ev)
	w.allDone(t, 1)
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM feedback_alerts`))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM outbox WHERE class = 'feedback_alert'`))
}

// Credit notes end to end (issue #16, F2-style): a credit note delivered
// before its invoice's event waits and applies after the grant; two event
// ids for one credit note take back once; a second credit note voided
// before created nets to zero; everything in the invoice's workflow.
func TestCreditNotesInAnyOrderTakeBackOnce(t *testing.T) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account, Amount: 4000})
	require.NoError(t, err)
	cn, created, err := w.sim.CreateCreditNote(inv.ID, 1000) // 25 credits
	require.NoError(t, err)
	again, err := w.sim.CreditNoteCreatedAgain(cn.ID)
	require.NoError(t, err)
	cn2, created2, err := w.sim.CreateCreditNote(inv.ID, 2000) // 50 credits, then voided
	require.NoError(t, err)
	voided2, err := w.sim.VoidCreditNote(cn2.ID)
	require.NoError(t, err)

	// The credit note first, then its invoice's event, the void before its
	// credit note, and the second event id last.
	w.send(t, created)
	w.send(t, paid, voided2, created2, again)
	w.allDone(t, 5)
	require.EqualValues(t, 75, w.balance(t), "100 granted, 25 taken back once, 50 taken and given back")
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, inv.ID))
	require.Equal(t, 3, w.count(t, `SELECT count(*) FROM credit_adjustments WHERE invoice_id = $1`, inv.ID))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_adjustments WHERE reference = $1 AND operation = 'credit-reversal-void' AND applied = 50`, cn2.ID))
	require.Equal(t, 3, w.count(t, `SELECT count(*) FROM outbox WHERE class = 'credits_reversal'`), "a notice per reversal and void")
	eventually(t, 60*time.Second, "the confirmation and the three notices sent", func() bool {
		return w.count(t, `SELECT count(*) FROM outbox WHERE status = 'sent'`) == 4
	})
	require.Equal(t, 4, mailpitCount(t, mp))
	// The first credit note waited for the grant rather than failing.
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = $1 AND attempts >= 2`, created.ID))
}
