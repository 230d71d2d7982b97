package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits/schema"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/hookintest"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

type fixture struct {
	ctx context.Context
	h   *hookintest.Harness
}

// setup is a fresh migrated database (with the credits domain's set, whose
// tables the ledger writes) holding workspace ws (balance 0).
func setup(t *testing.T) *fixture {
	t.Helper()
	app := hookinbox.New(hookinbox.WithMigrations(schema.Name, schema.FS(), schema.Tables()...))
	f := &fixture{ctx: context.Background(), h: hookintest.New(t, app)}
	_, err := f.h.DB.Exec(f.ctx, `INSERT INTO workspaces (id) VALUES ('ws')`)
	require.NoError(t, err)
	return f
}

func (f *fixture) inTx(t *testing.T, fn func(tx pgx.Tx) error) error {
	t.Helper()
	tx, err := f.h.DB.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(f.ctx)
}

// operator applies an operator's correction of credits under operation id
// op with policy, as `hookinbox workspaces adjust` does.
func (f *fixture) operator(t *testing.T, credits int64, op, policy string) (bool, *ledger.CreditAdjustment, ledger.CreditAdjustment) {
	t.Helper()
	a := ledger.CreditAdjustment{Provider: ledger.ProviderOperator, Reference: op, Operation: ledger.OperationOperatorAdjustment,
		WorkspaceID: "ws", Requested: credits, EventKey: "operator:" + op, Detail: map[string]any{"actor": "alice"}}
	var adjusted bool
	var prior *ledger.CreditAdjustment
	require.NoError(t, f.inTx(t, func(tx pgx.Tx) error {
		var err error
		adjusted, prior, err = ledger.AdjustCreditsOnce(f.ctx, tx, &a, policy)
		return err
	}))
	return adjusted, prior, a
}

func (f *fixture) balance(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT credits_balance FROM workspaces WHERE id = 'ws'`).Scan(&n))
	return n
}

func (f *fixture) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, f.h.DB.QueryRow(f.ctx, sql).Scan(&n))
	return n
}

func TestOperatorAdjustmentIsKeyedByItsOperationID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	adjusted, prior, a := f.operator(t, 40, "ticket-7", ledger.PolicyAllow)
	require.True(t, adjusted)
	require.Nil(t, prior)
	require.NotZero(t, a.ID)
	require.EqualValues(t, 40, a.Applied)
	require.Equal(t, ledger.DecisionApplied, a.Decision)
	require.EqualValues(t, 0, a.BalanceBefore)
	require.EqualValues(t, 40, a.BalanceAfter)
	require.EqualValues(t, 40, f.balance(t))

	// A repeated id changes nothing, and says what it was.
	adjusted, prior, _ = f.operator(t, 40, "ticket-7", ledger.PolicyAllow)
	require.False(t, adjusted, "a repeated id changes nothing")
	require.NotNil(t, prior)
	require.Equal(t, a.ID, prior.ID)
	require.EqualValues(t, 40, prior.Requested)
	require.Equal(t, "operator:ticket-7", prior.EventKey)
	require.Equal(t, "alice", prior.Detail["actor"])
	// Even when it asks for something else: the caller sees the mismatch.
	adjusted, prior, _ = f.operator(t, -5, "ticket-7", ledger.PolicyAllow)
	require.False(t, adjusted)
	require.EqualValues(t, 40, prior.Requested)
	require.EqualValues(t, 40, f.balance(t))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM credit_adjustments WHERE operation = 'operator-adjustment'`))

	// Taking more than the balance follows the policy too.
	adjusted, _, a = f.operator(t, -100, "ticket-8", ledger.PolicyClamp)
	require.True(t, adjusted)
	require.Equal(t, ledger.DecisionClamped, a.Decision)
	require.EqualValues(t, -40, a.Applied)
	require.EqualValues(t, 60, a.Shortfall)
	require.EqualValues(t, 0, f.balance(t))

	got, err := ledger.GetAdjustment(f.ctx, f.h.DB, ledger.ProviderOperator, "", "", "", "ticket-8", ledger.OperationOperatorAdjustment)
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	require.EqualValues(t, 60, got.Shortfall)
	list, err := ledger.ListAdjustments(f.ctx, f.h.DB, "ws")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"ticket-7", "ticket-8"}, []string{list[0].Reference, list[1].Reference})
}

func TestNegativeBalancePolicyDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy                 string
		requested              int64
		applied, shortfall     int64
		decision               string
		balanceAfterFromTenTen int64
	}{
		{ledger.PolicyAllow, -50, -50, 0, ledger.DecisionAllowedNegative, -40},
		{ledger.PolicyClamp, -50, -10, 40, ledger.DecisionClamped, 0},
		{ledger.PolicyHold, -50, 0, 0, ledger.DecisionHeld, 10},
		// Within the balance, every policy applies the change.
		{ledger.PolicyAllow, -10, -10, 0, ledger.DecisionApplied, 0},
		{ledger.PolicyClamp, -10, -10, 0, ledger.DecisionApplied, 0},
		{ledger.PolicyHold, -10, -10, 0, ledger.DecisionApplied, 0},
		{ledger.PolicyHold, 5, 5, 0, ledger.DecisionApplied, 15},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %+d", tt.policy, tt.requested), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			_, _, _ = f.operator(t, 10, "top-up", ledger.PolicyAllow)
			adjusted, _, a := f.operator(t, tt.requested, "change", tt.policy)
			require.True(t, adjusted)
			require.Equal(t, tt.decision, a.Decision)
			require.Equal(t, tt.policy, a.Policy)
			require.Equal(t, tt.requested, a.Requested)
			require.Equal(t, tt.applied, a.Applied)
			require.Equal(t, tt.shortfall, a.Shortfall)
			require.EqualValues(t, 10, a.BalanceBefore)
			require.Equal(t, tt.balanceAfterFromTenTen, a.BalanceAfter)
			require.Equal(t, tt.balanceAfterFromTenTen, f.balance(t))
			got, err := ledger.GetAdjustment(f.ctx, f.h.DB, ledger.ProviderOperator, "", "", "", "change", ledger.OperationOperatorAdjustment)
			require.NoError(t, err)
			require.Equal(t, a.Decision, got.Decision)
			require.Equal(t, a.Applied, got.Applied)
		})
	}
}

func TestAdjustCreditsOnceRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := ledger.CreditAdjustment{Provider: ledger.ProviderOperator, Reference: "x", Operation: ledger.OperationOperatorAdjustment,
		WorkspaceID: "ws", Requested: -5, EventKey: "operator:x"}
	err := f.inTx(t, func(tx pgx.Tx) error {
		_, _, err := ledger.AdjustCreditsOnce(f.ctx, tx, &a, "refund")
		return err
	})
	require.ErrorIs(t, err, ledger.ErrUnknownPolicy)
	a.WorkspaceID = "ws_nope"
	err = f.inTx(t, func(tx pgx.Tx) error {
		_, _, err := ledger.AdjustCreditsOnce(f.ctx, tx, &a, ledger.PolicyAllow)
		return err
	})
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.ErrorIs(t, err, hookinbox.ErrNotFound)
	require.Zero(t, f.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.EqualValues(t, 0, f.balance(t))
	_, err = ledger.GetAdjustment(f.ctx, f.h.DB, ledger.ProviderOperator, "", "", "", "x", ledger.OperationOperatorAdjustment)
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": ledger.PolicyAllow, "allow": ledger.PolicyAllow, "clamp": ledger.PolicyClamp, "hold": ledger.PolicyHold} {
		got, err := ledger.ParsePolicy(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ledger.ParsePolicy("Clamp")
	require.ErrorIs(t, err, ledger.ErrUnknownPolicy)
}

func TestGrantCreditsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	g := ledger.CreditGrant{Provider: "stripe", Account: "acct_1", Environment: "test", InvoiceID: "in_1", Operation: "initial-credit-grant",
		WorkspaceID: "ws", Credits: 100, AmountPaid: 4200, Currency: "usd", EventKey: "stripe/acct_1/test/evt_1"}
	grant := func(g ledger.CreditGrant) (bool, *ledger.CreditGrant) {
		var granted bool
		var existing *ledger.CreditGrant
		require.NoError(t, f.inTx(t, func(tx pgx.Tx) error {
			var err error
			granted, existing, err = ledger.GrantCreditsOnce(f.ctx, tx, g)
			return err
		}))
		return granted, existing
	}
	granted, existing := grant(g)
	require.True(t, granted)
	require.Nil(t, existing)
	require.EqualValues(t, 100, f.balance(t))

	other := g
	other.EventKey = "stripe/acct_1/test/evt_2"
	granted, existing = grant(other)
	require.False(t, granted)
	require.Equal(t, g.EventKey, existing.EventKey)
	require.EqualValues(t, 100, existing.Credits)
	require.EqualValues(t, 100, f.balance(t))

	got, err := ledger.GetCreditGrant(f.ctx, f.h.DB, "stripe", "acct_1", "test", "in_1", "initial-credit-grant")
	require.NoError(t, err)
	require.Equal(t, existing.ID, got.ID)
	require.EqualValues(t, 4200, got.AmountPaid)
	_, err = ledger.GetCreditGrant(f.ctx, f.h.DB, "stripe", "acct_1", "test", "in_2", "initial-credit-grant")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}
