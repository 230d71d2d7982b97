package subscriptions_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
)

func TestReconcileCorrectsAStaleProjectionAndRecordsWhatDiffered(t *testing.T) {
	t.Parallel()
	f := setup(t, 8, false)
	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	r := subscription(sub.ID)

	out, err := f.h.Reconcile(f.ctx, r, "test")
	require.NoError(t, err)
	require.Equal(t, "in sync", out.Note)
	require.Empty(t, out.Divergences)
	require.Zero(t, f.count(t, `SELECT count(*) FROM reconcile_divergences`))

	// The cancellation's webhook never arrives: reconciliation finds it.
	_, err = f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	out, err = f.h.Reconcile(f.ctx, r, "schedule run 1")
	require.NoError(t, err)
	fields := map[string]hookintype.Divergence{}
	for _, d := range out.Divergences {
		fields[d.Field] = d
	}
	require.Equal(t, "active", fields["status"].LocalValue)
	require.Equal(t, "canceled", fields["status"].ProviderValue)
	require.True(t, fields["status"].Corrected)
	require.Contains(t, fields, "ended_at")
	require.Contains(t, out.Note, "corrected")
	p := f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status)
	require.False(t, p.Access)
	require.Equal(t, "reconcile: schedule run 1", p.WrittenBy)
	require.False(t, f.hasAccess(t, workspace))
	require.Equal(t, len(out.Divergences), f.count(t, `SELECT count(*) FROM reconcile_divergences WHERE corrected AND detected_by = 'reconcile: schedule run 1'`))

	// In sync again: nothing more is recorded.
	out, err = f.h.Reconcile(f.ctx, r, "schedule run 2")
	require.NoError(t, err)
	require.Equal(t, "in sync", out.Note)

	// A subscription only the provider knows is "missing" locally.
	other, _ := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	out, err = f.h.Reconcile(f.ctx, subscription(other.ID), "t")
	require.NoError(t, err)
	require.Len(t, out.Divergences, 1)
	require.Equal(t, "missing", out.Divergences[0].Field)
	require.Equal(t, "active", f.projection(t, other.ID).State.Status)
	require.Equal(t, workspace, f.projection(t, other.ID).WorkspaceID, "a new projection takes the endpoint's workspace")

	// An unlinked account cannot be reconciled: a permanent, explained error.
	nobody := subscription(sub.ID)
	nobody.Account = "acct_nobody"
	_, err = f.h.Reconcile(f.ctx, nobody, "t")
	require.True(t, hookinbox.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "acct_nobody")
}

// TestReconcileKeepsTheProjectionsWorkspace: an account linked on two
// endpoints with API keys, to two workspaces (links made before such links
// were refused). Reconciliation asks the provider through the first endpoint
// by slug; it must not move the projection to that endpoint's workspace.
func TestReconcileKeepsTheProjectionsWorkspace(t *testing.T) {
	t.Parallel()
	f := setup(t, 9, false)
	f.h.AddEndpoint(f.ctx, hookintest.Endpoint{Slug: "aaa-second", Provider: "stripe", Secret: "whsec_second_endpoint",
		APIBaseURL: f.apiURL, APIKey: simulator.DefaultAPIKey})
	_, err := f.h.DB.Exec(f.ctx, `INSERT INTO workspaces (id) VALUES ('ws_other');
		INSERT INTO account_links (endpoint_slug, account, workspace_id) VALUES ('aaa-second', '`+account+`', 'ws_other')`)
	require.NoError(t, err)

	sub, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	require.Equal(t, workspace, f.projection(t, sub.ID).WorkspaceID)

	_, err = f.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	out, err := f.h.Reconcile(f.ctx, subscription(sub.ID), "t")
	require.NoError(t, err)
	require.NotEmpty(t, out.Divergences)
	p := f.projection(t, sub.ID)
	require.Equal(t, "canceled", p.State.Status, "corrected")
	require.Equal(t, workspace, p.WorkspaceID, "the workspace did not flip")
}

// The reconciliation pass's listing compares each listed subscription with
// its projection: only those that differ (or have none) are reconciled.
func TestDifferingSubscriptions(t *testing.T) {
	t.Parallel()
	f := setup(t, 19, false)
	same, created := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created)
	changed, created2 := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})
	f.apply(t, created2)
	_, err := f.sim.CancelSubscription(changed.ID, true)
	require.NoError(t, err)
	unknown, _ := f.sim.CreateSubscription(account, "", simulator.SubscriptionOptions{})

	// What the listing says: the provider's current subscriptions.
	c, err := providers.NewClient(mustProvider(t, "stripe"), providers.ClientConfig{APIKey: simulator.DefaultAPIKey, BaseURL: f.apiURL, OwnAccount: account})
	require.NoError(t, err)
	var listed []providers.Subscription
	for _, id := range []string{same.ID, changed.ID, unknown.ID} {
		s, err := c.FetchSubscription(f.ctx, account, id)
		require.NoError(t, err)
		listed = append(listed, s)
	}
	diff, err := (&subscriptions.Subscriptions{}).DifferingSubscriptions(f.ctx, f.h.DB,
		hookintype.Scope{Provider: "stripe", Account: account, Environment: hookintype.Test, WorkspaceID: workspace}, listed)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{same.ID: false, changed.ID: true, unknown.ID: true}, diff)
}

func mustProvider(t *testing.T, name string) providers.Provider {
	t.Helper()
	p, ok := providers.Lookup(name)
	require.True(t, ok)
	return p
}
