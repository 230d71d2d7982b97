package subscriptions_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/domains/subscriptions/schema"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// F6: versioned snapshots delivered newest first; the older ones must not
// win, and a late active snapshot never restores access.
func TestVersionedSnapshotsNeverGoBackwards(t *testing.T) {
	t.Parallel()
	f := setup(t, 4, true)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	updated, err := f.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)

	last := f.deliver(t, canceled.Body)
	out := f.handleDone(t, last)
	require.Equal(t, "applied snapshot v3 (canceled)", out.Note)
	require.Equal(t, "projection/"+subscription(sub.ID).String(), out.BusinessKey)
	for _, ev := range []simulator.Event{created, updated} {
		out := f.apply(t, ev)
		require.Contains(t, out.Note, "not applied: the projection is at v3 (canceled)")
		require.Empty(t, out.Divergences)
	}
	p := f.projection(t, sub.ID)
	require.EqualValues(t, 3, *p.Version)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	require.True(t, p.Deleted)
	require.EqualValues(t, 1, p.WriteSeq, "the older snapshots wrote nothing")
	require.Equal(t, last.String(), p.WrittenBy)
	require.False(t, f.hasAccess(t, workspace), "a late active snapshot never restores access")
	require.Equal(t, 3, f.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`))
	require.Zero(t, f.count(t, `SELECT count(*) FROM reconcile_divergences`))

	// In order, each newer snapshot is applied over the one before.
	sub2, created2 := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	updated2, err := f.sim.UpdateSubscription(sub2.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	require.Equal(t, "applied snapshot v1 (active)", f.apply(t, created2).Note)
	require.Equal(t, "applied snapshot v2 (active)", f.apply(t, updated2).Note)
	p = f.projection(t, sub2.ID)
	require.EqualValues(t, 2, *p.Version)
	require.True(t, p.State.CancelAtPeriodEnd)
	require.EqualValues(t, 2, p.WriteSeq)
	require.True(t, f.hasAccess(t, workspace), "cancel at period end: access until then")
}

// Seed 004: a jump in a resource's version (v1 stored, v3 arrives: v2 was
// never applied) is recorded as a divergence and the current resource is
// fetched and written, not just the event's snapshot.
func TestVersionGapIsADivergenceAndFetchesTheCurrentResource(t *testing.T) {
	t.Parallel()
	f := setup(t, 5, true)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	_, err := f.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	third, err := f.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.Status = simulator.StatusPastDue })
	require.NoError(t, err)
	_, err = f.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.Status = simulator.StatusActive })
	require.NoError(t, err)

	before := f.sim.Stats().API.Requests
	f.apply(t, created)
	require.Equal(t, before, f.sim.Stats().API.Requests, "a versioned snapshot in order is applied as it is")
	require.Equal(t, 0, f.count(t, `SELECT count(*) FROM reconcile_divergences`))

	k := f.deliver(t, third.Body)
	out := f.handleDone(t, k)
	require.Contains(t, out.Note, "version jumped v1→v3")
	require.Greater(t, f.sim.Stats().API.Requests, before, "the gap fetched the current subscription")
	p := f.projection(t, sub.ID)
	require.EqualValues(t, 4, *p.Version, "the current resource (v4), not the event's v3")
	require.Equal(t, "active", p.State.Status)
	require.True(t, p.State.CancelAtPeriodEnd, "v2's change, never delivered, is not lost")
	var field, local, remote, by string
	var corrected bool
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT field, local_value, provider_value, corrected, detected_by FROM reconcile_divergences`).
		Scan(&field, &local, &remote, &corrected, &by))
	require.Equal(t, []any{"version_gap", "1", "3", true}, []any{field, local, remote, corrected})
	require.Equal(t, "version gap: "+k.String(), by)
}

func TestNoticesFetchTheCurrentStateInAnyOrder(t *testing.T) {
	t.Parallel()
	f := setup(t, 5, false)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	atEnd, err := f.sim.CancelSubscription(sub.ID, true)
	require.NoError(t, err)

	// Cancel at period end: access until the period ends.
	out := f.apply(t, atEnd)
	require.Equal(t, "fetched and wrote active", out.Note)
	p := f.projection(t, sub.ID)
	require.Nil(t, p.Version, "Stripe sends no version")
	require.True(t, p.State.CancelAtPeriodEnd)
	require.True(t, p.Access)
	require.NotNil(t, p.AccessEndsAt)
	require.True(t, p.AccessEndsAt.After(time.Now()))
	require.NotNil(t, p.FetchedAt)
	require.True(t, f.hasAccess(t, workspace))

	// Immediate cancellation, then the stale "created" notice arrives late:
	// it fetches the current (canceled) state, not its own old snapshot.
	now, err := f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	for _, ev := range []simulator.Event{now, created} {
		f.apply(t, ev)
	}
	p = f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.True(t, p.Deleted, "the deletion leaves a tombstone")
	require.False(t, p.Access)
	require.False(t, f.hasAccess(t, workspace))
}

// A deletion notice is a tombstone only if the provider agrees: a
// customer.subscription.deleted whose subscription is active at the
// provider writes what the provider says.
func TestADeletionNoticeIsATombstoneOnlyIfTheProviderAgrees(t *testing.T) {
	t.Parallel()
	f := setup(t, 17, false)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	body := strings.Replace(string(created.Body), `"type":"customer.subscription.created"`, `"type":"customer.subscription.deleted"`, 1)
	body = strings.Replace(body, created.ID, "evt_early_delete", 1)
	require.Contains(t, body, "customer.subscription.deleted")
	f.handleDone(t, f.deliver(t, []byte(body)))
	p := f.projection(t, sub.ID)
	require.Equal(t, "active", p.State.Status)
	require.False(t, p.Deleted)
	require.True(t, f.hasAccess(t, workspace))
}

// between runs the subscriptions domain's own two steps, Prepare then
// Commit, with hook called between them: what an attempt does after it
// read and fetched, before it writes.
type between struct {
	s    *subscriptions.Subscriptions
	hook func(ev *hookinbox.Event, plan *subscriptions.Plan)
}

func (b *between) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	plan, err := b.s.Prepare(ctx, ev)
	if err != nil {
		return hookinbox.Result{}, err
	}
	if b.hook != nil {
		b.hook(ev, &plan)
	}
	return b.s.Commit(ctx, ev, plan)
}

// setupBetween registers b for the domain's event types.
func setupBetween(t *testing.T, b *between, seed uint64) *fixture {
	t.Helper()
	// The domain's tables without its handler: b stands in for it.
	app := hookinbox.New(hookinbox.WithMigrations(schema.Name, schema.FS(), schema.Tables()...))
	for _, typ := range subscriptions.Types {
		app.Handle("stripe", typ, b, hookinbox.Name(subscriptions.Name))
	}
	return setupApp(t, app, seed, false)
}

func TestAStaleAttemptsWriteLosesTheCompareAndSet(t *testing.T) {
	t.Parallel()
	var once sync.Once
	var eventID string
	prepared, resume := make(chan subscriptions.Plan, 1), make(chan struct{})
	b := &between{s: &subscriptions.Subscriptions{Logger: quiet}, hook: func(ev *hookinbox.Event, plan *subscriptions.Plan) {
		if ev.Key.EventID == eventID {
			once.Do(func() { prepared <- *plan; <-resume })
		}
	}}
	f := setupBetween(t, b, 6)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	eventID = created.ID
	e1 := f.deliver(t, created.Body)

	// Attempt A reads the projection and fetches "active", then stalls (a
	// timed-out activity still running).
	stale := make(chan hookintest.Handled, 1)
	go func() { stale <- f.h.Handle(f.ctx, e1) }()
	plan := <-prepared
	require.Equal(t, "active", plan.Snapshot.Status)
	require.Zero(t, plan.ReadSeq, "A read no projection")

	// Meanwhile the subscription is canceled and that notice is handled.
	canceled, err := f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	f.apply(t, canceled)
	require.Equal(t, "canceled", f.projection(t, sub.ID).State.Status)

	// A wakes up and writes late: the fencing token has moved, so it loses.
	close(resume)
	out := <-stale
	require.Error(t, out.Err)
	require.ErrorContains(t, out.Err, "fetching again")
	require.False(t, hookinbox.IsPermanent(out.Err), "retried: the next attempt fetches again")
	require.Equal(t, hookintype.StatusPending, out.Status)
	p := f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.EqualValues(t, 1, p.WriteSeq)

	// Its retry re-reads and re-fetches: the current state, still canceled.
	f.handleDone(t, e1)
	p = f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	require.EqualValues(t, 2, p.WriteSeq, "the notice's insert, then the retry's write")
}

// A canceled subscription is terminal: an answer of another state for it
// later (an API replica lagging behind) never brings it back.
func TestACanceledProjectionStaysCanceled(t *testing.T) {
	t.Parallel()
	var lagging string
	b := &between{s: &subscriptions.Subscriptions{Logger: quiet}, hook: func(ev *hookinbox.Event, plan *subscriptions.Plan) {
		if ev.Key.EventID == lagging {
			plan.Snapshot.Status, plan.Snapshot.EndedAt, plan.Snapshot.CanceledAt = "active", time.Time{}, time.Time{}
		}
	}}
	f := setupBetween(t, b, 18)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	canceled, err := f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	f.apply(t, canceled)
	before := f.projection(t, sub.ID)
	require.Equal(t, "canceled", before.State.Status)

	lagging = created.ID
	out := f.apply(t, created)
	require.Equal(t, "fetched active for a canceled subscription: kept canceled", out.Note)
	p := f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	require.Equal(t, before.WriteSeq, p.WriteSeq)
	require.False(t, f.hasAccess(t, workspace))
}

func TestProviderErrorsAreNeverReadAsCancelled(t *testing.T) {
	t.Parallel()
	f := setup(t, 7, false)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	upd, err := f.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) {})
	require.NoError(t, err)
	ev := f.deliver(t, upd.Body)
	for _, status := range []int{404, 403, 500, 503, 429} {
		f.sim.InjectAPIFault(simulator.Fault{Path: "/v1/subscriptions/", Status: status, Times: 1})
		out := f.h.Handle(f.ctx, ev)
		if status == 429 {
			// A rate limit with its Retry-After: the row waits for it, no
			// attempt counted (and, as for every error, nothing written).
			require.NoError(t, out.Err, "HTTP %d", status)
			require.Contains(t, out.Note, "rate limited", "HTTP %d", status)
		} else {
			require.Error(t, out.Err, "HTTP %d", status)
		}
		require.Equal(t, hookintype.StatusPending, out.Status, "HTTP %d", status)
		p := f.projection(t, sub.ID)
		require.Equal(t, "active", p.State.Status, "HTTP %d", status)
		require.True(t, p.Access, "HTTP %d", status)
		require.False(t, p.Deleted, "HTTP %d", status)
		require.EqualValues(t, 1, p.WriteSeq, "HTTP %d: nothing written", status)
		require.True(t, f.hasAccess(t, workspace), "HTTP %d", status)
	}
	f.handleDone(t, ev)
	require.Equal(t, "active", f.projection(t, sub.ID).State.Status)
}

func TestAccessRule(t *testing.T) {
	t.Parallel()
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	ended := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	canceledAt := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		st     subscriptions.State
		access bool
		ends   *time.Time
	}{
		{"active renews", subscriptions.State{Status: "active", CurrentPeriodEnd: &end}, true, nil},
		{"cancel at period end keeps access until then", subscriptions.State{Status: "active", CancelAtPeriodEnd: true, CurrentPeriodEnd: &end}, true, &end},
		{"trialing", subscriptions.State{Status: "trialing"}, true, nil},
		{"past due", subscriptions.State{Status: "past_due"}, true, nil},
		{"past due set to cancel at period end", subscriptions.State{Status: "past_due", CancelAtPeriodEnd: true, CurrentPeriodEnd: &end}, true, &end},
		{"immediate cancellation ends access", subscriptions.State{Status: "canceled", EndedAt: &ended, CurrentPeriodEnd: &end}, false, &ended},
		{"canceled without ended_at ends at canceled_at", subscriptions.State{Status: "canceled", CanceledAt: &canceledAt}, false, &canceledAt},
		{"unpaid", subscriptions.State{Status: "unpaid"}, false, nil},
		{"incomplete", subscriptions.State{Status: "incomplete"}, false, nil},
		{"paused", subscriptions.State{Status: "paused", CurrentPeriodEnd: &end}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			access, ends := subscriptions.AccessRule(tt.st)
			require.Equal(t, tt.access, access)
			require.Equal(t, tt.ends, ends)
		})
	}
}

// TestSameVersionWithOtherContentIsRecordedAsADivergence (seed 004: the
// same version with different content deserves investigation, not an
// overwrite): the projection keeps what it has, and the difference is
// recorded (reconcile_divergences, same_version), reported to the worker
// (for the metric) and written in the inbox row's note. The same snapshot
// again is not a divergence.
func TestSameVersionWithOtherContentIsRecordedAsADivergence(t *testing.T) {
	t.Parallel()
	f := setup(t, 10, true)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	before := f.projection(t, sub.ID)
	require.Equal(t, "active", before.State.Status)

	// The same snapshot under another event id: nothing to investigate.
	again := strings.Replace(string(created.Body), created.ID, "evt_again", 1)
	out := f.handleDone(t, f.deliver(t, []byte(again)))
	require.Empty(t, out.Divergences)
	require.Equal(t, "snapshot v1 already applied", out.Note)

	// Version 1 again, but past_due.
	other := strings.Replace(strings.Replace(string(created.Body), created.ID, "evt_same_version", 1), `"status":"active"`, `"status":"past_due"`, 1)
	require.NotEqual(t, string(created.Body), other)
	require.Contains(t, other, `"status":"past_due"`)
	k := f.deliver(t, []byte(other))
	out = f.handleDone(t, k)
	require.Contains(t, out.Note, "differs from the stored v1")
	require.Contains(t, out.Note, "status active → past_due")
	require.Equal(t, []hookintype.Divergence{{Field: "status", LocalValue: "active", ProviderValue: "past_due", SameVersion: true}}, out.Divergences)

	p := f.projection(t, sub.ID)
	require.Equal(t, "active", p.State.Status, "not overwritten")
	require.Equal(t, before.WriteSeq, p.WriteSeq)
	require.Equal(t, out.Note, f.note(t, k))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM reconcile_divergences WHERE same_version AND NOT corrected
		AND field = 'status' AND local_value = 'active' AND provider_value = 'past_due' AND detected_by = $1`, k.String()))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM reconcile_divergences WHERE same_version AND detected_at > now() - interval '24 hours'`),
		"what `hookinbox status` reports")
}
