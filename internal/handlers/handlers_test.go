package handlers_test

import (
	"context"
	"crypto/sha256"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/handlers"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
)

const account = "acct_sim_a"

type bundle struct {
	ctx   context.Context
	store *store.Store
	sim   *simulator.Simulator
	provs *handlers.EndpointProviders
}

// setup registers a Stripe endpoint whose API is a simulator served over
// real HTTP, linked to workspace ws.
func setup(t *testing.T, cfg simulator.Config, versionPath string) *bundle {
	t.Helper()
	st := testenv.Store(t)
	sim := simulator.New(cfg)
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "sim", Provider: "stripe", Environment: "test",
		Secrets: []string{"whsec_x"}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey,
		Settings: keys.EndpointSettings{VersionPath: versionPath}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "sim", account, "ws"))
	require.NoError(t, ledger.SetWorkspaceEmail(ctx, st.Pool, "ws", "billing@ws.example"))
	return &bundle{ctx: ctx, store: st, sim: sim, provs: &handlers.EndpointProviders{Store: st}}
}

// accept puts a simulator event in the inbox as the intake would.
func (b *bundle) accept(t *testing.T, ev simulator.Event) *inbox.StoredEvent {
	t.Helper()
	sum := sha256.Sum256(ev.Body)
	in := &inbox.InboxEvent{
		Key:          keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: ev.ID},
		EndpointSlug: "sim", WorkspaceID: "ws", EventType: ev.Type, ResourceKind: ev.ResourceKind, ResourceID: ev.ResourceID,
		Payload: ev.Body, BodySHA256: sum[:],
	}
	if v := gjson.GetBytes(ev.Body, "data.object.version"); v.Exists() {
		n := v.Int()
		in.ProviderVersion = &n
	}
	_, err := inbox.InsertInboxEvent(b.ctx, b.store.Pool, in)
	require.NoError(t, err)
	got, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, in.Key)
	require.NoError(t, err)
	return got
}

func (b *bundle) balance(t *testing.T) int64 {
	w, err := ledger.GetWorkspace(b.ctx, b.store.Pool, "ws")
	require.NoError(t, err)
	return w.CreditsBalance
}

func (b *bundle) count(t *testing.T, sql string) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, sql).Scan(&n))
	return n
}

func TestCreditsGrantOncePerInvoiceAcrossEventsAndLostAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 1}, "")
	h := &handlers.Credits{Store: b.store, Providers: b.provs, PerInvoice: 100}
	inv, paid, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 4200})
	require.NoError(t, err)
	again, err := b.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)

	first := b.accept(t, paid)
	out, err := h.Handle(b.ctx, first)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status)
	require.Len(t, out.Outbox, 1, "one confirmation intent")

	// A lost commit answer: the retry reads the persisted state and stops.
	out, err = h.Handle(b.ctx, first)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status)
	require.Contains(t, out.Note, "already done")

	// F2: a distinct event for the same invoice completes without a grant.
	second := b.accept(t, again)
	out, err = h.Handle(b.ctx, second)
	require.NoError(t, err)
	require.Contains(t, out.Note, "already granted by "+first.Key.String())
	require.Empty(t, out.Outbox)

	require.EqualValues(t, 100, b.balance(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM credit_grants`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE class = 'credits_confirmation'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`))
	var amount int64
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT amount_paid FROM credit_grants`).Scan(&amount))
	require.EqualValues(t, 4200, amount)
}

func TestCreditsTrustTheProviderNotTheEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 2}, "")
	h := &handlers.Credits{Store: b.store, Providers: b.provs, PerInvoice: 100}
	_, paid, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	ev := b.accept(t, paid)

	tests := []struct {
		name      string
		fault     simulator.Fault
		permanent bool
		retryable bool
	}{
		{"provider down", simulator.Fault{Status: 503, Times: 1}, false, true},
		{"rate limited", simulator.Fault{Status: 429, RetryAfter: 3 * time.Second, Times: 1}, false, true},
		{"404 is not a state", simulator.Fault{Status: 404, Times: 1}, false, false},
		{"403 is not a state", simulator.Fault{Status: 403, Times: 1}, true, false},
	}
	for _, tt := range tests {
		f := tt.fault
		f.Path = "/v1/invoices/"
		b.sim.InjectAPIFault(f)
		_, err := h.Handle(b.ctx, ev)
		require.Error(t, err, tt.name)
		require.Equal(t, tt.permanent, fault.IsPermanent(err), tt.name)
		require.Equal(t, tt.retryable, providers.IsRetryable(err), tt.name)
		require.EqualValues(t, 0, b.balance(t), tt.name)
	}
	d, ok := providers.RetryAfter(func() error {
		b.sim.InjectAPIFault(simulator.Fault{Path: "/v1/invoices/", Status: 429, RetryAfter: 3 * time.Second, Times: 1})
		_, err := h.Handle(b.ctx, ev)
		return err
	}())
	require.True(t, ok)
	require.Equal(t, 3*time.Second, d)

	out, err := h.Handle(b.ctx, ev)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status)
	require.EqualValues(t, 100, b.balance(t))
}

func TestCreditsWithoutAPIKeyFailPermanently(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 3}, "")
	require.NoError(t, endpoints.SetAPIKey(b.ctx, b.store, "sim", ""))
	_, paid, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	h := &handlers.Credits{Store: b.store, Providers: &handlers.EndpointProviders{Store: b.store}, PerInvoice: 100}
	_, err = h.Handle(b.ctx, b.accept(t, paid))
	require.True(t, fault.IsPermanent(err))
	require.ErrorContains(t, err, "no API key")
}

func (b *bundle) projection(t *testing.T, id string) *ledger.Projection {
	p, err := ledger.GetProjection(b.ctx, b.store.Pool, "stripe", account, "test", id)
	require.NoError(t, err)
	return p
}

func TestVersionedSnapshotsNeverGoBackwards(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 4, Versions: true}, "data.object.version")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	updated, err := b.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := b.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)

	// F6: delivered newest first; the older snapshots must not win.
	for _, ev := range []simulator.Event{canceled, created, updated} {
		_, err := h.Handle(b.ctx, b.accept(t, ev))
		require.NoError(t, err)
	}
	p := b.projection(t, sub.ID)
	require.EqualValues(t, 3, *p.Version)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	ok, err := ledger.WorkspaceHasAccess(b.ctx, b.store.Pool, "ws")
	require.NoError(t, err)
	require.False(t, ok, "a late active snapshot never restores access")
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`))
}

// Seed 004: a jump in a resource's version (v1 stored, v3 arrives: v2 was
// never applied) is recorded as a divergence and the current resource is
// fetched and written, not just the event's snapshot.
func TestVersionGapIsADivergenceAndFetchesTheCurrentResource(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 5, Versions: true}, "data.object.version")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err := b.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	third, err := b.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.Status = simulator.StatusPastDue })
	require.NoError(t, err)
	_, err = b.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.Status = simulator.StatusActive })
	require.NoError(t, err)

	_, err = h.Handle(b.ctx, b.accept(t, created))
	require.NoError(t, err)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM reconcile_divergences`))
	before := b.sim.Stats().API.Requests

	out, err := h.Handle(b.ctx, b.accept(t, third))
	require.NoError(t, err)
	require.Contains(t, out.Note, "version jumped v1→v3")
	require.Greater(t, b.sim.Stats().API.Requests, before, "the gap fetched the current subscription")
	p := b.projection(t, sub.ID)
	require.EqualValues(t, 4, *p.Version, "the current resource (v4), not the event's v3")
	require.Equal(t, "active", p.State.Status)
	require.True(t, p.State.CancelAtPeriodEnd, "v2's change, never delivered, is not lost")
	var field, local, remote string
	var corrected bool
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT field, local_value, provider_value, corrected FROM reconcile_divergences`).
		Scan(&field, &local, &remote, &corrected))
	require.Equal(t, []any{"version_gap", "1", "3", true}, []any{field, local, remote, corrected})
}

func TestNoticesFetchTheCurrentStateInAnyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 5}, "")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	atEnd, err := b.sim.CancelSubscription(sub.ID, true)
	require.NoError(t, err)

	// Cancel at period end: access until the period ends.
	_, err = h.Handle(b.ctx, b.accept(t, atEnd))
	require.NoError(t, err)
	p := b.projection(t, sub.ID)
	require.True(t, p.State.CancelAtPeriodEnd)
	require.True(t, p.Access)
	require.NotNil(t, p.AccessEndsAt)
	ok, err := ledger.WorkspaceHasAccess(b.ctx, b.store.Pool, "ws")
	require.NoError(t, err)
	require.True(t, ok)

	// Immediate cancellation, then the stale "created" notice arrives late:
	// it fetches the current (canceled) state, not its own old snapshot.
	now, err := b.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	for _, ev := range []simulator.Event{now, created} {
		_, err := h.Handle(b.ctx, b.accept(t, ev))
		require.NoError(t, err)
	}
	p = b.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.True(t, p.Deleted, "the deletion leaves a tombstone")
	require.False(t, p.Access)
	ok, err = ledger.WorkspaceHasAccess(b.ctx, b.store.Pool, "ws")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestAStaleAttemptsWriteLosesTheCompareAndSet(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 6}, "")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	e1 := b.accept(t, created)

	// Attempt A reads the projection and fetches "active", then stalls (a
	// timed-out activity still running).
	stale, err := h.Prepare(b.ctx, e1)
	require.NoError(t, err)
	require.Equal(t, "active", stale.Snapshot.Status)

	// Meanwhile the subscription is canceled and that notice is handled.
	canceled, err := b.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	_, err = h.Handle(b.ctx, b.accept(t, canceled))
	require.NoError(t, err)
	require.Equal(t, "canceled", b.projection(t, sub.ID).State.Status)

	// A wakes up and writes late: the fencing token has moved, so it loses.
	_, err = h.Commit(b.ctx, e1, stale)
	require.Error(t, err)
	require.False(t, fault.IsPermanent(err), "retried: the next attempt fetches again")
	p := b.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.Equal(t, keys.StatusPending, func() string {
		e, _ := inbox.GetInboxEvent(b.ctx, b.store.Pool, e1.Key)
		return e.Status
	}())

	// Its retry re-reads and re-fetches: the current state, still canceled.
	_, err = h.Handle(b.ctx, e1)
	require.NoError(t, err)
	require.Equal(t, "canceled", b.projection(t, sub.ID).State.Status)
	require.EqualValues(t, 2, b.projection(t, sub.ID).WriteSeq, "the notice's insert, then the retry's write")
}

func TestProviderErrorsAreNeverReadAsCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 7}, "")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err := h.Handle(b.ctx, b.accept(t, created))
	require.NoError(t, err)
	upd, err := b.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) {})
	require.NoError(t, err)
	ev := b.accept(t, upd)
	for _, status := range []int{404, 403, 500} {
		b.sim.InjectAPIFault(simulator.Fault{Path: "/v1/subscriptions/", Status: status, Times: 1})
		_, err := h.Handle(b.ctx, ev)
		require.Error(t, err)
		p := b.projection(t, sub.ID)
		require.Equal(t, "active", p.State.Status, "HTTP %d", status)
		require.True(t, p.Access, "HTTP %d", status)
	}
}

func TestFeedbackAlertOncePerItemAndOneIntentPerDestination(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "fb", Provider: "standard", Environment: "live",
		Secrets: []string{simulator.StandardSecret("k")}, Settings: keys.EndpointSettings{AccountPath: "data.project_id"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "fb", "proj_1", "ws"))
	for _, d := range []outbox.Destination{
		{WorkspaceID: "ws", Name: "oncall", Kind: "webhook", Target: "https://example.invalid/hook", Enabled: true},
		{WorkspaceID: "ws", Name: "team-mail", Kind: "email", Target: "team@ws.example", Enabled: true},
		{WorkspaceID: "ws", Name: "off", Kind: "email", Target: "x@ws.example", Enabled: false},
	} {
		require.NoError(t, outbox.UpsertDestination(ctx, st.Pool, st.Keys, d))
	}
	h := &handlers.FeedbackAlerts{Store: st}
	insert := func(id string) *inbox.StoredEvent {
		body := []byte(`{"type":"feedback.created","data":{"id":"fb_1","project_id":"proj_1","message":"search is slow"}}`)
		sum := sha256.Sum256(body)
		k := keys.Event{Provider: "standard", Account: "proj_1", Environment: "live", EventID: id}
		_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "fb", WorkspaceID: "ws",
			EventType: "feedback.created", ResourceKind: "feedback", ResourceID: "fb_1", Payload: body, BodySHA256: sum[:]})
		require.NoError(t, err)
		e, err := inbox.GetInboxEvent(ctx, st.Pool, k)
		require.NoError(t, err)
		return e
	}
	out, err := h.Handle(ctx, insert("msg_1"))
	require.NoError(t, err)
	require.Len(t, out.Outbox, 2)
	out, err = h.Handle(ctx, insert("msg_2")) // another event about the same item
	require.NoError(t, err)
	require.Empty(t, out.Outbox)

	rows, err := st.Pool.Query(ctx, `SELECT operation_key FROM outbox ORDER BY operation_key`)
	require.NoError(t, err)
	var opKeys []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		opKeys = append(opKeys, k)
	}
	rows.Close()
	base := handlers.FeedbackAlertKey("standard", "proj_1", "live", "fb_1")
	require.Equal(t, []string{base + ":oncall", base + ":team-mail"}, opKeys)
	var alerts int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM feedback_alerts`).Scan(&alerts))
	require.Equal(t, 1, alerts)
}

func TestAccessRule(t *testing.T) {
	t.Parallel()
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	ended := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	tests := []struct {
		name   string
		st     ledger.SubscriptionState
		access bool
		ends   *time.Time
	}{
		{"active renews", ledger.SubscriptionState{Status: "active", CurrentPeriodEnd: &end}, true, nil},
		{"cancel at period end keeps access until then", ledger.SubscriptionState{Status: "active", CancelAtPeriodEnd: true, CurrentPeriodEnd: &end}, true, &end},
		{"trialing", ledger.SubscriptionState{Status: "trialing"}, true, nil},
		{"past due", ledger.SubscriptionState{Status: "past_due"}, true, nil},
		{"immediate cancellation ends access", ledger.SubscriptionState{Status: "canceled", EndedAt: &ended, CurrentPeriodEnd: &end}, false, &ended},
		{"unpaid", ledger.SubscriptionState{Status: "unpaid"}, false, nil},
		{"incomplete", ledger.SubscriptionState{Status: "incomplete"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			access, ends := handlers.AccessRule(tt.st)
			require.Equal(t, tt.access, access)
			require.Equal(t, tt.ends, ends)
		})
	}
}

func TestReconcileCorrectsAStaleProjectionAndRecordsWhatDiffered(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 8}, "")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err := h.Handle(b.ctx, b.accept(t, created))
	require.NoError(t, err)
	r := keys.Resource{Provider: "stripe", Account: account, Environment: "test", Kind: "subscription", ID: sub.ID}

	out, err := h.Reconcile(b.ctx, r, "test")
	require.NoError(t, err)
	require.Equal(t, "in sync", out.Note)
	require.Empty(t, out.Divergences)

	// The cancellation's webhook never arrives: reconciliation finds it.
	_, err = b.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	out, err = h.Reconcile(b.ctx, r, "schedule run 1")
	require.NoError(t, err)
	fields := map[string]keys.Divergence{}
	for _, d := range out.Divergences {
		fields[d.Field] = d
	}
	require.Equal(t, "active", fields["status"].LocalValue)
	require.Equal(t, "canceled", fields["status"].ProviderValue)
	require.True(t, fields["status"].Corrected)
	p := b.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	require.Equal(t, "reconcile: schedule run 1", p.WrittenBy)
	require.Equal(t, len(out.Divergences), b.count(t, `SELECT count(*) FROM reconcile_divergences WHERE corrected`))

	// A subscription only the provider knows is "missing" locally.
	other, _ := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	out, err = h.Reconcile(b.ctx, keys.Resource{Provider: "stripe", Account: account, Environment: "test", Kind: "subscription", ID: other.ID}, "t")
	require.NoError(t, err)
	require.Equal(t, "missing", out.Divergences[0].Field)
	require.Equal(t, "active", b.projection(t, other.ID).State.Status)

	// An unlinked account cannot be reconciled: a permanent, explained error.
	_, err = h.Reconcile(b.ctx, keys.Resource{Provider: "stripe", Account: "acct_nobody", Environment: "test", Kind: "subscription", ID: sub.ID}, "t")
	require.True(t, fault.IsPermanent(err))
}

// TestReconcileKeepsTheProjectionsWorkspace: an account linked on two
// endpoints with API keys, to two workspaces (links made before such links
// were refused). Reconciliation asks the provider through the first endpoint
// by slug; it must not move the projection to that endpoint's workspace.
func TestReconcileKeepsTheProjectionsWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 9}, "")
	sim, err := endpoints.GetEndpoint(b.ctx, b.store, "sim")
	require.NoError(t, err)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "aaa-second", Provider: "stripe", Environment: "test",
		Secrets: []string{"whsec_y"}, APIBaseURL: sim.APIBaseURL, APIKey: simulator.DefaultAPIKey}))
	_, err = b.store.Pool.Exec(b.ctx, `INSERT INTO workspaces (id) VALUES ('ws_other');
		INSERT INTO account_links (endpoint_slug, account, workspace_id) VALUES ('aaa-second', '`+account+`', 'ws_other')`)
	require.NoError(t, err)

	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err = h.Handle(b.ctx, b.accept(t, created))
	require.NoError(t, err)
	require.Equal(t, "ws", b.projection(t, sub.ID).WorkspaceID)

	_, err = b.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	out, err := h.Reconcile(b.ctx, keys.Resource{Provider: "stripe", Account: account, Environment: "test", Kind: "subscription", ID: sub.ID}, "t")
	require.NoError(t, err)
	require.NotEmpty(t, out.Divergences)
	p := b.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status, "corrected")
	require.Equal(t, "ws", p.WorkspaceID, "the workspace did not flip")
}

// TestSameVersionWithOtherContentIsRecordedAsADivergence (seed 004: the
// same version with different content deserves investigation, not an
// overwrite): the projection keeps what it has, and the difference is
// recorded (reconcile_divergences, same_version), reported in the outcome
// (for the metric) and written in the inbox row's note. The same snapshot
// again is not a divergence.
func TestSameVersionWithOtherContentIsRecordedAsADivergence(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 10, Versions: true}, "data.object.version")
	h := &handlers.Subscriptions{Store: b.store, Providers: b.provs}
	sub, created := b.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err := h.Handle(b.ctx, b.accept(t, created))
	require.NoError(t, err)
	before := b.projection(t, sub.ID)
	require.Equal(t, "active", before.State.Status)

	// The same snapshot under another event id: nothing to investigate.
	again := created
	again.ID = "evt_again"
	again.Body = []byte(strings.Replace(string(created.Body), created.ID, again.ID, 1))
	out, err := h.Handle(b.ctx, b.accept(t, again))
	require.NoError(t, err)
	require.Empty(t, out.Divergences)
	require.NotContains(t, out.Note, "differs")

	// Version 1 again, but past_due.
	other := created
	other.ID = "evt_same_version"
	other.Body = []byte(strings.Replace(strings.Replace(string(created.Body), created.ID, other.ID, 1), `"status":"active"`, `"status":"past_due"`, 1))
	require.NotEqual(t, string(created.Body), string(other.Body))
	ev := b.accept(t, other)
	out, err = h.Handle(b.ctx, ev)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status)
	require.Contains(t, out.Note, "differs from the stored v1")
	require.Contains(t, out.Note, "status active → past_due")
	require.Equal(t, []keys.Divergence{{Field: "status", LocalValue: "active", ProviderValue: "past_due", SameVersion: true}}, out.Divergences)

	p := b.projection(t, sub.ID)
	require.Equal(t, "active", p.State.Status, "not overwritten")
	require.Equal(t, before.WriteSeq, p.WriteSeq)
	row, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, ev.Key)
	require.NoError(t, err)
	var note string
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT note FROM webhook_inbox WHERE event_id = $1`, ev.Key.EventID).Scan(&note))
	require.Equal(t, out.Note, note)
	require.Equal(t, keys.StatusDone, row.Status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM reconcile_divergences WHERE same_version AND NOT corrected
		AND field = 'status' AND local_value = 'active' AND provider_value = 'past_due' AND detected_by = '`+ev.Key.String()+`'`))
	bl, err := inbox.ReadBacklog(b.ctx, b.store.Pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, bl.SameVersionDivergences24h)
}
