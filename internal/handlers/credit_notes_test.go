package handlers_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/handlers"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// acceptCreditNote puts a credit note event in the inbox as the Stripe
// normalizer does: its resource is the invoice, the credit note its object.
func (b *bundle) acceptCreditNote(t *testing.T, ev simulator.Event) *inbox.StoredEvent {
	t.Helper()
	sum := sha256.Sum256(ev.Body)
	in := &inbox.InboxEvent{
		Key:          keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: ev.ID},
		EndpointSlug: "sim", WorkspaceID: "ws", EventType: ev.Type, ResourceKind: "invoice",
		ResourceID: gjson.GetBytes(ev.Body, "data.object.invoice").String(), ObjectID: gjson.GetBytes(ev.Body, "data.object.id").String(),
		Payload: ev.Body, BodySHA256: sum[:],
	}
	_, err := inbox.InsertInboxEvent(b.ctx, b.store.Pool, in)
	require.NoError(t, err)
	got, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, in.Key)
	require.NoError(t, err)
	return got
}

func (b *bundle) creditNotes(policy string) *handlers.CreditNotes {
	return &handlers.CreditNotes{Store: b.store, Providers: b.provs, Policy: policy,
		WaitInitial: time.Minute, WaitMax: time.Hour, WaitLimit: 24 * time.Hour}
}

// grantInvoice pays an invoice of amount at the simulator and grants it.
func (b *bundle) grantInvoice(t *testing.T, amount int64) simulator.Invoice {
	t.Helper()
	inv, paid, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: amount})
	require.NoError(t, err)
	out, err := (&handlers.Credits{Store: b.store, Providers: b.provs, PerInvoice: 100}).Handle(b.ctx, b.accept(t, paid))
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status)
	return inv
}

func handleDone(t *testing.T, b *bundle, h *handlers.CreditNotes, ev *inbox.StoredEvent) handlers.Outcome {
	t.Helper()
	out, err := h.Handle(b.ctx, ev)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, out.Status, out.Note)
	return out
}

func TestReversalCreditsIsTheFloorOfTheShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		credits, cn, inv, want int64
	}{
		{100, 1000, 4000, 25},
		{100, 1, 3, 33},
		{100, 2, 3, 66},
		{100, 4000, 4000, 100},
		{100, 5000, 4000, 100}, // never more than the grant
		{100, 0, 4000, 0},
		{1 << 40, 1 << 40, 1 << 41, 1 << 39}, // no overflow
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, handlers.ReversalCredits(tt.credits, tt.cn, tt.inv), "%d × %d / %d", tt.credits, tt.cn, tt.inv)
	}
}

// F2 for credit notes: two event ids for one credit note, a replay and a
// lost commit answer take the credits back once, with one notice.
func TestCreditNoteReversesOnceAcrossEventIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 11}, "")
	h := b.creditNotes(keys.BalanceAllow)
	inv := b.grantInvoice(t, 4000)
	cn, created, err := b.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	again, err := b.sim.CreditNoteCreatedAgain(cn.ID)
	require.NoError(t, err)

	first := b.acceptCreditNote(t, created)
	out := handleDone(t, b, h, first)
	require.Len(t, out.Outbox, 1, "one reversal notice")
	require.Equal(t, handlers.CreditReversalKey("stripe", account, "test", inv.ID, cn.ID), out.BusinessKey)
	require.EqualValues(t, 75, b.balance(t), "floor(100 × 1000 / 4000) = 25 taken back")

	out, err = h.Handle(b.ctx, first) // the commit's answer was lost: the retry finds it done
	require.NoError(t, err)
	require.Contains(t, out.Note, "already done")

	out = handleDone(t, b, h, b.acceptCreditNote(t, again))
	require.Contains(t, out.Note, "already reversed by "+first.Key.String())
	require.Empty(t, out.Outbox)

	require.EqualValues(t, 75, b.balance(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE class = 'credits_reversal'`))
	a, err := ledger.GetAdjustment(b.ctx, b.store.Pool, "stripe", account, "test", inv.ID, cn.ID, ledger.OperationCreditReversal)
	require.NoError(t, err)
	require.EqualValues(t, -25, a.Applied)
	require.Equal(t, ledger.DecisionApplied, a.Decision)
	require.Equal(t, keys.BalanceAllow, a.Policy)
}

// A credit note that arrives before its invoice's event waits pending,
// and the grant's commit makes it due again; then it applies.
func TestCreditNoteBeforeItsInvoiceWaitsForTheGrant(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 12}, "")
	h := b.creditNotes(keys.BalanceAllow)
	inv, paid, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created, err := b.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)

	note := b.acceptCreditNote(t, created)
	out, err := h.Handle(b.ctx, note)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, out.Status, "it waits, it is not lost")
	row, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, note.Key)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, row.Status)
	require.Equal(t, 1, row.Attempts)
	require.Contains(t, row.LastError, "waiting for the invoice's grant")
	require.True(t, row.NextAttemptAt.After(time.Now().Add(30*time.Second)), "backs off")
	require.EqualValues(t, 0, b.balance(t))

	_, err = (&handlers.Credits{Store: b.store, Providers: b.provs, PerInvoice: 100}).Handle(b.ctx, b.accept(t, paid))
	require.NoError(t, err)
	row, err = inbox.GetInboxEvent(b.ctx, b.store.Pool, note.Key)
	require.NoError(t, err)
	require.False(t, row.NextAttemptAt.After(time.Now()), "the grant woke the waiting credit note")

	handleDone(t, b, h, row)
	require.EqualValues(t, 50, b.balance(t))

	// Past the wait limit, a credit note without a grant is an ordinary
	// retried error (it ends exhausted, visible and replayable).
	inv2, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created2, err := b.sim.CreateCreditNote(inv2.ID, 0)
	require.NoError(t, err)
	late := b.creditNotes(keys.BalanceAllow)
	late.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	_, err = late.Handle(b.ctx, b.acceptCreditNote(t, created2))
	require.ErrorContains(t, err, "waited longer than 24h0m0s")
}

func TestCreditNoteVoidedAfterCreatedGivesBackOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 13}, "")
	h := b.creditNotes(keys.BalanceAllow)
	inv := b.grantInvoice(t, 3000)
	cn, created, err := b.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	handleDone(t, b, h, b.acceptCreditNote(t, created))
	require.EqualValues(t, 67, b.balance(t), "floor(100/3) = 33 taken back")

	voided, err := b.sim.VoidCreditNote(cn.ID)
	require.NoError(t, err)
	out := handleDone(t, b, h, b.acceptCreditNote(t, voided))
	require.Contains(t, out.Note, "voided: gave back 33 credits")
	require.Len(t, out.Outbox, 1, "one notice for the void")
	require.EqualValues(t, 100, b.balance(t))

	// The voided event again, and the created event replayed: nothing moves.
	_, err = inbox.ResetInboxEvent(b.ctx, b.store.Pool, keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: created.ID}, keys.StatusDone)
	require.NoError(t, err)
	replayed, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: created.ID})
	require.NoError(t, err)
	out = handleDone(t, b, h, replayed)
	require.Contains(t, out.Note, "already reversed")
	require.Contains(t, out.Note, "void already applied")
	require.EqualValues(t, 100, b.balance(t))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM outbox WHERE class = 'credits_reversal'`))
}

// Voided before created (reordered delivery): the voided event records the
// reversal and its void together; the late created event changes nothing.
func TestCreditNoteVoidedBeforeCreated(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 14}, "")
	h := b.creditNotes(keys.BalanceAllow)
	inv := b.grantInvoice(t, 2000)
	cn, created, err := b.sim.CreateCreditNote(inv.ID, 2000)
	require.NoError(t, err)
	voided, err := b.sim.VoidCreditNote(cn.ID)
	require.NoError(t, err)

	out := handleDone(t, b, h, b.acceptCreditNote(t, voided))
	require.Contains(t, out.Note, "took back 100")
	require.Contains(t, out.Note, "gave back 100")
	require.EqualValues(t, 100, b.balance(t))

	out = handleDone(t, b, h, b.acceptCreditNote(t, created))
	require.Contains(t, out.Note, "already reversed")
	require.EqualValues(t, 100, b.balance(t))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM credit_adjustments WHERE operation = 'credit-reversal-void' AND applied = 100`))
}

// A voided event the provider does not confirm yet is retried, never
// applied on the event's word.
func TestCreditNoteVoidedTrustsTheProvider(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 15}, "")
	h := b.creditNotes(keys.BalanceAllow)
	inv := b.grantInvoice(t, 2000)
	cn, created, err := b.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	voided := created
	voided.ID, voided.Type = "evt_forged_void", handlers.EventCreditNoteVoided
	voided.Body = []byte(`{"id":"evt_forged_void","type":"credit_note.voided","data":{"object":{"id":"` + cn.ID + `","invoice":"` + inv.ID + `"}}}`)
	_, err = h.Handle(b.ctx, b.acceptCreditNote(t, voided))
	require.ErrorContains(t, err, "not void (yet)")
	require.EqualValues(t, 100, b.balance(t))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM credit_adjustments`))
}

func TestNegativeBalancePolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy        string
		wantBalance   int64
		wantDecision  string
		wantShortfall int64
		// after the void
		wantRestored int64
	}{
		{keys.BalanceAllow, -40, ledger.DecisionAllowedNegative, 0, 10},
		{keys.BalanceClamp, 0, ledger.DecisionClamped, 40, 10},
		{keys.BalanceHold, 10, ledger.DecisionHeld, 0, 10},
	}
	for i, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			b := setup(t, simulator.Config{Seed: uint64(20 + i)}, "")
			h := b.creditNotes(tt.policy)
			inv := b.grantInvoice(t, 2000)
			// The workspace spent 90 of its 100 credits (an operator
			// correction through the same path).
			res, err := ledger.AdjustWorkspace(b.ctx, b.store, ledger.OperatorAdjustment{Workspace: "ws", Credits: -90,
				OperationID: "spend-1", Actor: "test", Reason: "usage", Policy: keys.BalanceAllow})
			require.NoError(t, err)
			require.True(t, res.Adjusted)
			require.EqualValues(t, 10, b.balance(t))

			cn, created, err := b.sim.CreateCreditNote(inv.ID, 1000) // 50 credits
			require.NoError(t, err)
			out := handleDone(t, b, h, b.acceptCreditNote(t, created))
			require.EqualValues(t, tt.wantBalance, b.balance(t), out.Note)
			a, err := ledger.GetAdjustment(b.ctx, b.store.Pool, "stripe", account, "test", inv.ID, cn.ID, ledger.OperationCreditReversal)
			require.NoError(t, err)
			require.Equal(t, tt.wantDecision, a.Decision)
			require.Equal(t, tt.policy, a.Policy)
			require.EqualValues(t, -50, a.Requested)
			require.Equal(t, tt.wantShortfall, a.Shortfall)
			require.EqualValues(t, 10, a.BalanceBefore)
			require.Equal(t, tt.wantBalance, a.BalanceAfter)

			voided, err := b.sim.VoidCreditNote(cn.ID)
			require.NoError(t, err)
			handleDone(t, b, h, b.acceptCreditNote(t, voided))
			require.EqualValues(t, tt.wantRestored, b.balance(t), "the void gives back exactly what was taken")
		})
	}
}

func TestOperatorAdjustmentIsKeyedByItsOperationID(t *testing.T) {
	t.Parallel()
	b := setup(t, simulator.Config{Seed: 30}, "")
	adj := ledger.OperatorAdjustment{Workspace: "ws", Credits: 40, OperationID: "ticket-7", Actor: "alice", Reason: "goodwill", Policy: keys.BalanceAllow}
	res, err := ledger.AdjustWorkspace(b.ctx, b.store, adj)
	require.NoError(t, err)
	require.True(t, res.Adjusted)
	require.NotZero(t, res.ActionID)
	require.EqualValues(t, 40, b.balance(t))

	again, err := ledger.AdjustWorkspace(b.ctx, b.store, adj)
	require.NoError(t, err)
	require.False(t, again.Adjusted, "a repeated id changes nothing")
	require.Empty(t, again.Mismatch)
	other := adj
	other.Credits = -5
	again, err = ledger.AdjustWorkspace(b.ctx, b.store, other)
	require.NoError(t, err)
	require.False(t, again.Adjusted)
	require.Contains(t, again.Mismatch, "+40 credits")
	require.EqualValues(t, 40, b.balance(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = 'workspace_adjust' AND target = 'workspace:ws'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM credit_adjustments WHERE operation = 'operator-adjustment'`))

	// Taking more than the balance follows the policy too.
	res, err = ledger.AdjustWorkspace(b.ctx, b.store, ledger.OperatorAdjustment{Workspace: "ws", Credits: -100, OperationID: "ticket-8",
		Actor: "alice", Reason: "chargeback", Policy: keys.BalanceClamp})
	require.NoError(t, err)
	require.Equal(t, ledger.DecisionClamped, res.Adjustment.Decision)
	require.EqualValues(t, 60, res.Adjustment.Shortfall)
	require.EqualValues(t, 0, b.balance(t))
}
