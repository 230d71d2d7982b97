package credits_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

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
		{100, 1000, 0, 0},
		{0, 1000, 4000, 0},
		{-5, 1000, 4000, 0},
		{1 << 40, 1 << 40, 1 << 41, 1 << 39}, // no overflow
		{1 << 62, 1 << 62, 1<<62 + 1, 1<<62 - 1},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, credits.ReversalCredits(tt.credits, tt.cn, tt.inv), "%d × %d / %d", tt.credits, tt.cn, tt.inv)
	}
}

// F2 for credit notes: two event ids for one credit note, a replay and a
// lost commit answer take the credits back once, with one notice.
func TestCreditNoteReversesOnceAcrossEventIDs(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 11}, credits.Options{})
	inv := f.grantInvoice(t, 4000)
	cn, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	again, err := f.sim.CreditNoteCreatedAgain(cn.ID)
	require.NoError(t, err)

	first := f.deliver(t, created)
	require.Equal(t, "invoice", f.resourceKind(t, first), "a credit note runs in its invoice's workflow")
	out := f.handleDone(t, first)
	require.Len(t, out.Outbox, 1, "one reversal notice")
	require.Equal(t, credits.CreditReversalKey("stripe", account, hookintype.Test, inv.ID, cn.ID), out.BusinessKey)
	require.EqualValues(t, 75, f.balance(t), "floor(100 × 1000 / 4000) = 25 taken back")

	out = f.h.Handle(f.ctx, first) // the commit's answer was lost: the retry finds it done
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status)
	require.Empty(t, out.Outbox)

	out = f.handleDone(t, f.deliver(t, again))
	require.Contains(t, out.Note, "already reversed by "+first.String())
	require.Empty(t, out.Outbox)

	f.h.Replay(f.ctx, first, "operator replays it")
	out = f.handleDone(t, first)
	require.Contains(t, out.Note, "already reversed by "+first.String())
	require.Empty(t, out.Outbox)

	require.EqualValues(t, 75, f.balance(t))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox WHERE class = $1`, credits.ClassReversal))
	a, err := ledger.GetAdjustment(f.ctx, f.h.DB, "stripe", account, hookintype.Test, inv.ID, cn.ID, ledger.OperationCreditReversal)
	require.NoError(t, err)
	require.EqualValues(t, -25, a.Applied)
	require.EqualValues(t, -25, a.Requested)
	require.Equal(t, ledger.DecisionApplied, a.Decision)
	require.Equal(t, ledger.PolicyAllow, a.Policy)
	require.Equal(t, first.String(), a.EventKey)
}

// A credit note that arrives before its invoice's event waits pending,
// and the grant's commit makes it due again; then it applies. Past the wait
// limit, a credit note without a grant is an ordinary retried error.
func TestCreditNoteBeforeItsInvoiceWaitsForTheGrant(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 12}, credits.Options{})
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)

	note := f.deliver(t, created)
	start := time.Now()
	out := f.h.Handle(f.ctx, note)
	require.NoError(t, out.Err, "waiting is not failing")
	require.Equal(t, hookintype.StatusPending, out.Status, "it waits, it is not lost")
	row := f.row(t, note)
	require.Equal(t, hookintype.StatusPending, row.Status)
	require.Equal(t, 1, row.Attempts)
	require.True(t, strings.HasPrefix(row.LastError, credits.WaitingForGrant), row.LastError)
	require.True(t, row.NextAttemptAt.After(start), "backs off: %s", row.NextAttemptAt)
	require.EqualValues(t, 0, f.balance(t))
	require.Zero(t, f.count(t, `SELECT count(*) FROM credit_adjustments`))

	f.handleDone(t, f.deliver(t, paid))
	require.EqualValues(t, 100, f.balance(t))
	var due bool
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT next_attempt_at <= now() FROM webhook_inbox WHERE event_id = $1`, note.EventID).Scan(&due))
	require.True(t, due, "the grant woke the waiting credit note")

	f.handleDone(t, note)
	require.EqualValues(t, 50, f.balance(t))

	// Past the wait limit (72h by default), a credit note without a grant
	// is retried as an error (it ends exhausted, visible and replayable).
	inv2, _, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created2, err := f.sim.CreateCreditNote(inv2.ID, 500)
	require.NoError(t, err)
	late := f.deliver(t, created2)
	f.h.SetNow(func() time.Time { return time.Now().Add(73 * time.Hour) })
	out = f.h.Handle(f.ctx, late)
	require.ErrorContains(t, out.Err, "waited longer than 72h0m0s")
	require.ErrorContains(t, out.Err, credits.WaitingForGrant)
	require.False(t, hookinbox.IsPermanent(out.Err), "retried, then exhausted")
	require.EqualValues(t, 50, f.balance(t))
}

// The wait limit is the domain's CreditNoteWait.
func TestCreditNoteWaitLimitIsConfigurable(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 16}, credits.Options{CreditNoteWait: time.Hour})
	inv, _, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created, err := f.sim.CreateCreditNote(inv.ID, 500)
	require.NoError(t, err)
	note := f.deliver(t, created)
	f.h.SetNow(func() time.Time { return time.Now().Add(59 * time.Minute) })
	out := f.h.Handle(f.ctx, note)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusPending, out.Status)
	f.h.SetNow(func() time.Time { return time.Now().Add(61 * time.Minute) })
	out = f.h.Handle(f.ctx, note)
	require.ErrorContains(t, out.Err, "waited longer than 1h0m0s")
}

func TestCreditNoteVoidedAfterCreatedGivesBackOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 13}, credits.Options{})
	inv := f.grantInvoice(t, 3000)
	cn, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	createdKey := f.deliver(t, created)
	f.handleDone(t, createdKey)
	require.EqualValues(t, 67, f.balance(t), "floor(100/3) = 33 taken back")

	voided, err := f.sim.VoidCreditNote(cn.ID)
	require.NoError(t, err)
	voidedKey := f.deliver(t, voided)
	out := f.handleDone(t, voidedKey)
	require.Contains(t, out.Note, "already reversed by "+createdKey.String())
	require.Contains(t, out.Note, "voided: gave back 33 credits")
	require.Len(t, out.Outbox, 1, "one notice for the void")
	require.EqualValues(t, 100, f.balance(t))

	// The voided event again, and the created event replayed: nothing moves.
	for _, k := range []hookintype.EventKey{voidedKey, createdKey} {
		f.h.Replay(f.ctx, k, "operator replays it")
		out = f.handleDone(t, k)
		require.Contains(t, out.Note, "already reversed")
		require.Contains(t, out.Note, "void already applied by "+voidedKey.String())
		require.Empty(t, out.Outbox)
	}
	require.EqualValues(t, 100, f.balance(t))
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM outbox WHERE class = $1`, credits.ClassReversal))
	void, err := ledger.GetAdjustment(f.ctx, f.h.DB, "stripe", account, hookintype.Test, inv.ID, cn.ID, ledger.OperationCreditReversalVoid)
	require.NoError(t, err)
	require.EqualValues(t, 33, void.Applied)
	var op string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT operation_key FROM outbox WHERE class = $1 ORDER BY id DESC LIMIT 1`, credits.ClassReversal).Scan(&op))
	require.Equal(t, credits.CreditReversalVoidKey("stripe", account, hookintype.Test, inv.ID, cn.ID)+":notice", op)
}

// Voided before created (reordered delivery): the voided event records the
// reversal and its void together; the late created event changes nothing.
func TestCreditNoteVoidedBeforeCreated(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 14}, credits.Options{})
	inv := f.grantInvoice(t, 2000)
	cn, created, err := f.sim.CreateCreditNote(inv.ID, 2000)
	require.NoError(t, err)
	voided, err := f.sim.VoidCreditNote(cn.ID)
	require.NoError(t, err)

	out := f.handleDone(t, f.deliver(t, voided))
	require.Contains(t, out.Note, "took back 100")
	require.Contains(t, out.Note, "gave back 100")
	require.Len(t, out.Outbox, 2, "a notice for the reversal and one for its void")
	require.EqualValues(t, 100, f.balance(t))

	out = f.handleDone(t, f.deliver(t, created))
	require.Contains(t, out.Note, "already reversed")
	require.Contains(t, out.Note, "void already applied")
	require.Empty(t, out.Outbox)
	require.EqualValues(t, 100, f.balance(t))
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM credit_adjustments`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM credit_adjustments WHERE operation = 'credit-reversal-void' AND applied = 100`))
}

// A voided event the provider does not confirm yet is retried, never
// applied on the event's word.
func TestCreditNoteVoidedTrustsTheProvider(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 15}, credits.Options{})
	inv := f.grantInvoice(t, 2000)
	_, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	// A signed credit_note.voided whose credit note is still issued at the
	// provider (its snapshot copied from the created event).
	body := strings.Replace(string(created.Body), `"type":"credit_note.created"`, `"type":"credit_note.voided"`, 1)
	body = strings.Replace(body, created.ID, "evt_forged_void", 1)
	require.Contains(t, body, `"credit_note.voided"`)
	d := f.h.Deliver(f.ctx, slug, secret, nil, []byte(body))
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	out := f.h.Handle(f.ctx, d.Key)
	require.ErrorContains(t, out.Err, "not void (yet)")
	require.False(t, hookinbox.IsPermanent(out.Err), "retried until the provider agrees")
	require.Equal(t, hookintype.StatusPending, out.Status)
	require.EqualValues(t, 100, f.balance(t))
	require.Equal(t, 0, f.count(t, `SELECT count(*) FROM credit_adjustments`))
}

func TestNegativeBalancePolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy        string
		wantBalance   int64
		wantApplied   int64
		wantDecision  string
		wantShortfall int64
		wantSubject   string
		// after the void
		wantRestored int64
	}{
		{ledger.PolicyAllow, -40, -50, ledger.DecisionAllowedNegative, 0, "50 credits taken back from ws", 10},
		{ledger.PolicyClamp, 0, -10, ledger.DecisionClamped, 40, "10 credits taken back from ws", 10},
		{ledger.PolicyHold, 10, 0, ledger.DecisionHeld, 0, "Credit note on ws held for review", 10},
	}
	for i, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			f := setup(t, simulator.Config{Seed: uint64(20 + i)}, credits.Options{Policy: tt.policy})
			inv := f.grantInvoice(t, 2000)
			// The workspace spent 90 of its 100 credits (an operator
			// correction through the ledger's same path).
			f.spend(t, 90, "spend-1")
			require.EqualValues(t, 10, f.balance(t))

			cn, created, err := f.sim.CreateCreditNote(inv.ID, 1000) // 50 credits
			require.NoError(t, err)
			out := f.handleDone(t, f.deliver(t, created))
			require.EqualValues(t, tt.wantBalance, f.balance(t), out.Note)
			require.Contains(t, out.Note, "("+tt.wantDecision+")")
			a, err := ledger.GetAdjustment(f.ctx, f.h.DB, "stripe", account, hookintype.Test, inv.ID, cn.ID, ledger.OperationCreditReversal)
			require.NoError(t, err)
			require.Equal(t, tt.wantDecision, a.Decision)
			require.Equal(t, tt.policy, a.Policy)
			require.EqualValues(t, -50, a.Requested)
			require.Equal(t, tt.wantApplied, a.Applied)
			require.Equal(t, tt.wantShortfall, a.Shortfall)
			require.EqualValues(t, 10, a.BalanceBefore)
			require.Equal(t, tt.wantBalance, a.BalanceAfter)
			var subject string
			require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT payload->>'subject' FROM outbox WHERE class = $1`, credits.ClassReversal).Scan(&subject))
			require.Equal(t, tt.wantSubject, subject)

			voided, err := f.sim.VoidCreditNote(cn.ID)
			require.NoError(t, err)
			f.handleDone(t, f.deliver(t, voided))
			require.EqualValues(t, tt.wantRestored, f.balance(t), "the void gives back exactly what was taken")
			void, err := ledger.GetAdjustment(f.ctx, f.h.DB, "stripe", account, hookintype.Test, inv.ID, cn.ID, ledger.OperationCreditReversalVoid)
			require.NoError(t, err)
			require.Equal(t, -tt.wantApplied, void.Applied)
		})
	}
}

// The same on the whole stack (the intake over HTTP, one Temporal workflow
// per invoice): the credit note waits in the invoice's workflow, the grant
// runs meanwhile and wakes it, and it applies once.
func TestCreditNoteBeforeItsInvoiceOnTheWholeStack(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 17}, credits.Options{})
	stack := f.h.Run()
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	_, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	key := func(ev simulator.Event) hookintype.EventKey {
		return hookintype.EventKey{Provider: "stripe", Account: account, Environment: hookintype.Test, EventID: ev.ID}
	}

	require.Equal(t, 200, stack.Post(f.ctx, slug, secret, nil, created.Body).Status)
	require.Eventually(t, func() bool {
		var waiting bool
		err := f.h.DB.QueryRow(f.ctx, `SELECT attempts > 0 AND starts_with(coalesce(last_error, ''), $2) FROM webhook_inbox WHERE event_id = $1`,
			created.ID, credits.WaitingForGrant).Scan(&waiting)
		return err == nil && waiting
	}, time.Minute, 50*time.Millisecond, "the credit note waits for the grant")
	require.Equal(t, hookintype.StatusPending, f.h.Status(f.ctx, key(created)))

	require.Equal(t, 200, stack.Post(f.ctx, slug, secret, nil, paid.Body).Status)
	stack.WaitFor(f.ctx, key(paid), hookintype.StatusDone, time.Minute)
	stack.WaitFor(f.ctx, key(created), hookintype.StatusDone, time.Minute)
	require.EqualValues(t, 50, f.balance(t))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM credit_adjustments`))
}
