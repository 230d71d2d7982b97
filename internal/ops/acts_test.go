package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// The four acts that once skipped ops (the CLI called the store): each
// validates before it changes anything and is audited exactly once.

func (b *bundle) actions(t *testing.T, action string) []ops.AuditEntry {
	t.Helper()
	acts, err := b.svc.RecentActions(b.ctx, "", action, 100)
	require.NoError(t, err)
	return acts
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func TestAdjustWorkspaceOncePerOperationIDAuditedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	balance := func() int { return b.count(t, `SELECT credits_balance FROM workspaces WHERE id = 'ws_1'`) }

	a, err := b.svc.AdjustWorkspace(b.ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: 50, OperationID: "T-1", Reason: "goodwill"})
	require.NoError(t, err)
	require.True(t, a.Adjusted)
	require.Equal(t, ops.AdjustmentView{Workspace: "ws_1", OperationID: "T-1", Adjusted: true, Requested: 50, Applied: 50,
		Policy: keys.BalanceAllow, Decision: "applied", BalanceBefore: 0, BalanceAfter: 50, ActionID: a.ActionID}, a)
	require.Equal(t, 50, balance())
	acts := b.actions(t, "workspace_adjust")
	require.Len(t, acts, 1, "the ledger audits the correction; ops adds no second entry")
	require.Equal(t, a.ActionID, acts[0].ID)
	require.Equal(t, "alice", acts[0].Actor)
	require.Equal(t, "workspace:ws_1", acts[0].Target)
	require.Equal(t, "goodwill", acts[0].Reason)
	require.EqualValues(t, 50, acts[0].Details["balance_after"])

	// The same request again changes nothing and records nothing.
	again, err := b.svc.AdjustWorkspace(b.ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: 50, OperationID: "T-1", Reason: "goodwill"})
	require.NoError(t, err)
	require.False(t, again.Adjusted)
	require.Zero(t, again.ActionID)
	require.Equal(t, 50, balance())
	require.Len(t, b.actions(t, "workspace_adjust"), 1)

	// The same operation id asking something else is refused.
	_, err = b.svc.AdjustWorkspace(b.ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: -7, OperationID: "T-1", Reason: "typo"})
	require.True(t, ops.IsConflict(err), "%v", err)
	require.ErrorContains(t, err, "nothing changed: operation T-1 was +50 credits")

	// The policy of the act, then the configured one when it names none.
	a, err = b.svc.AdjustWorkspace(b.ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: -80, OperationID: "T-2", Reason: "refund", Policy: keys.BalanceClamp})
	require.NoError(t, err)
	require.Equal(t, "clamped", a.Decision)
	require.EqualValues(t, -50, a.Applied)
	require.EqualValues(t, 30, a.Shortfall)
	require.Equal(t, 0, balance())
	b.svc.Config.NegativeBalancePolicy = keys.BalanceHold
	a, err = b.svc.AdjustWorkspace(b.ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: -5, OperationID: "T-3", Reason: "refund"})
	require.NoError(t, err)
	require.Equal(t, keys.BalanceHold, a.Policy)
	require.Equal(t, "held", a.Decision)
	require.Equal(t, 0, balance())
	require.Len(t, b.actions(t, "workspace_adjust"), 3)

	for _, bad := range []struct {
		who ops.Actor
		ws  string
		a   ops.WorkspaceAdjustment
	}{
		{alice, "ws_1", ops.WorkspaceAdjustment{Credits: 0, OperationID: "T-9", Reason: "x"}},
		{alice, "ws_1", ops.WorkspaceAdjustment{Credits: 5, OperationID: " ", Reason: "x"}},
		{alice, "ws_1", ops.WorkspaceAdjustment{Credits: 5, OperationID: "T-9", Reason: ""}},
		{alice, "ws_1", ops.WorkspaceAdjustment{Credits: 5, OperationID: "T-9", Reason: "x", Policy: "generous"}},
		{alice, "", ops.WorkspaceAdjustment{Credits: 5, OperationID: "T-9", Reason: "x"}},
		{ops.Actor{}, "ws_1", ops.WorkspaceAdjustment{Credits: 5, OperationID: "T-9", Reason: "x"}},
	} {
		_, err := b.svc.AdjustWorkspace(b.ctx, bad.who, bad.ws, bad.a)
		require.True(t, ops.IsInvalid(err), "%+v: %v", bad, err)
	}
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM credit_adjustments`), "nothing stored by a refused request")
	require.Len(t, b.actions(t, "workspace_adjust"), 3)

	_, err = b.svc.AdjustWorkspace(b.ctx, alice, "ws_nope", ops.WorkspaceAdjustment{Credits: 5, OperationID: "T-9", Reason: "x"})
	require.True(t, ops.IsNotFound(err), "%v", err)
}

func TestEraseWorkspaceRedactsAndIsAuditedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.add(t, "evt_1", "in_1", keys.StatusDone)
	require.NoError(t, b.svc.SetWorkspaceEmail(b.ctx, alice, "ws_1", "billing@ws1.example", ""))
	payloads := func() int { return b.count(t, `SELECT count(*) FROM webhook_inbox WHERE payload IS NOT NULL`) }

	for _, bad := range []struct {
		who        ops.Actor
		ws, reason string
	}{{alice, "ws_1", " "}, {alice, "", "GDPR"}, {ops.Actor{Name: ""}, "ws_1", "GDPR"}} {
		_, err := b.svc.EraseWorkspace(b.ctx, bad.who, bad.ws, bad.reason)
		require.True(t, ops.IsInvalid(err), "%+v: %v", bad, err)
	}
	require.Equal(t, 1, payloads(), "a refused erasure redacts nothing")
	require.Empty(t, b.actions(t, "workspace_erase"))

	res, err := b.svc.EraseWorkspace(b.ctx, alice, "ws_1", "GDPR request 1")
	require.NoError(t, err)
	require.Equal(t, "ws_1", res.Workspace)
	require.Equal(t, ops.ErasureCounts{InboxPayloads: 1, EmailAddresses: 1}, res.Counts)
	require.Zero(t, payloads())
	require.Zero(t, b.count(t, `SELECT count(*) FROM workspaces WHERE email IS NOT NULL`))
	require.Equal(t, keys.StatusDone, b.status(t, k), "the event and its status stay")
	acts := b.actions(t, "workspace_erase")
	require.Len(t, acts, 1, "the ledger audits the erasure; ops adds no second entry")
	require.Equal(t, res.ActionID, acts[0].ID)
	require.Equal(t, "alice", acts[0].Actor)
	require.Equal(t, "workspace:ws_1", acts[0].Target)
	require.Equal(t, "GDPR request 1", acts[0].Reason)

	_, err = b.svc.EraseWorkspace(b.ctx, alice, "ws_nope", "GDPR")
	require.True(t, ops.IsNotFound(err), "%v", err)
	require.Len(t, b.actions(t, "workspace_erase"), 1)
}

func TestSetOwnAccountSaysWhereEventsGoAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t) // endpoint stripe, own account acct_1, linked to ws_1

	v, err := b.svc.SetOwnAccount(b.ctx, alice, "stripe", " acct_platform ", "Connect platform")
	require.NoError(t, err)
	require.Equal(t, ops.OwnAccountView{Slug: "stripe", Account: "acct_platform", OwnAccount: "acct_platform"}, v, "not linked: no workspace")
	ep, err := b.svc.ShowEndpoint(b.ctx, "stripe")
	require.NoError(t, err)
	require.Equal(t, "acct_platform", ep.Account)

	v, err = b.svc.SetOwnAccount(b.ctx, alice, "stripe", "", "")
	require.NoError(t, err)
	require.Equal(t, ops.OwnAccountView{Slug: "stripe", OwnAccount: "acct_1", Workspace: "ws_1"}, v, "none set: the single link")

	acts := b.actions(t, "endpoint_set_account")
	require.Len(t, acts, 2)
	require.Equal(t, "endpoint:stripe", acts[1].Target)
	require.Equal(t, "Connect platform", acts[1].Reason)
	require.Equal(t, map[string]any{"account": "acct_platform", "previous_account": "acct_1"}, acts[1].Details)
	require.Equal(t, map[string]any{"account": "", "previous_account": "acct_platform"}, acts[0].Details)

	for _, bad := range [][2]string{{"stripe", "acct a"}, {"stripe", "a,b"}, {"", "acct_2"}} {
		_, err := b.svc.SetOwnAccount(b.ctx, alice, bad[0], bad[1], "")
		require.True(t, ops.IsInvalid(err), "%v: %v", bad, err)
	}
	_, err = b.svc.SetOwnAccount(b.ctx, ops.Actor{}, "stripe", "acct_2", "")
	require.True(t, ops.IsInvalid(err))
	_, err = b.svc.SetOwnAccount(b.ctx, alice, "nope", "acct_2", "")
	require.True(t, ops.IsNotFound(err), "%v", err)
	ep, err = b.svc.ShowEndpoint(b.ctx, "stripe")
	require.NoError(t, err)
	require.Empty(t, ep.Account, "refused requests change nothing")
	require.Len(t, b.actions(t, "endpoint_set_account"), 2)
}

func TestResealMovesEverySecretUnderTheCurrentKeyAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t) // one signing secret and an API key, sealed under the tests' key
	_, err := b.svc.AddRoute(b.ctx, alice, chargeRoute(), "")
	require.NoError(t, err)
	old := b.st.Keys
	rotated, err := secretbox.ParseKeyFile([]byte(secretbox.GenerateKeyLine("k2") + "\n" + old.CurrentID() + ":" + testenv.SecretsKey() + "\n"))
	require.NoError(t, err)
	svc := *b.svc
	svc.Store = &store.Store{Pool: b.st.Pool, Keys: rotated}

	_, err = svc.Reseal(b.ctx, ops.Actor{Name: " "}, "")
	require.True(t, ops.IsInvalid(err))
	_, err = (&ops.Service{Store: &store.Store{Pool: b.st.Pool}}).Reseal(b.ctx, alice, "")
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	// A keyring without the key the values are sealed under stops the
	// pass before it changes anything: nothing to audit.
	lost, err := secretbox.ParseKeyFile([]byte(secretbox.GenerateKeyLine("k3") + "\n"))
	require.NoError(t, err)
	_, err = (&ops.Service{Store: &store.Store{Pool: b.st.Pool, Keys: lost}}).Reseal(b.ctx, alice, "")
	require.ErrorContains(t, err, old.CurrentID())
	require.Empty(t, b.actions(t, ops.ActionSecretsReseal))
	st, err := svc.SecretStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "k2", st.CurrentKeyID)
	for _, c := range st.Counts {
		require.Equal(t, old.CurrentID(), c.KeyID, "%s: still under the old key", c.Column)
	}

	res, err := svc.Reseal(b.ctx, alice, "key rotation SEC-9")
	require.NoError(t, err)
	require.Equal(t, "k2", res.KeyID)
	rekeyed := map[string]int{}
	for _, c := range res.Columns {
		rekeyed[c.Column] = c.Rekeyed
		require.Zero(t, c.Sealed)
	}
	require.Equal(t, map[string]int{"endpoint_secrets.secret": 1, "endpoints.api_key": 1, "team_destinations.secret": 0,
		"forward_routes.secret": 1}, rekeyed)
	st, err = svc.SecretStatus(b.ctx)
	require.NoError(t, err)
	require.Len(t, st.Counts, 3)
	for _, c := range st.Counts {
		require.Equal(t, "k2", c.KeyID, c.Column)
	}
	require.Empty(t, st.Missing)
	ep, err := svc.ShowEndpoint(b.ctx, "stripe")
	require.NoError(t, err)
	require.Equal(t, ops.APIKeyFingerprint(svc.Store.Keys, "sk_test_SECRETKEY"), ep.APIKeyFingerprint, "the values open under the new key, the fingerprint follows it")
	fr, err := forwards.Open(b.ctx, svc.Store, "charges")
	require.NoError(t, err)
	require.Equal(t, routeSecret, fr.Secret, "a forward route's secret too")

	acts := b.actions(t, ops.ActionSecretsReseal)
	require.Len(t, acts, 1)
	require.Equal(t, res.ActionID, acts[0].ID)
	require.Equal(t, "alice", acts[0].Actor)
	require.Equal(t, "keyring:k2", acts[0].Target)
	require.Equal(t, "key rotation SEC-9", acts[0].Reason)
	require.Equal(t, "k2", acts[0].Details["key_id"])

	// The old keyring no longer opens what is sealed under k2.
	st, err = b.svc.SecretStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"k2"}, st.Missing)
}
