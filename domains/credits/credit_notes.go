package credits

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
)

// Stripe credit note event types.
const (
	EventCreditNoteCreated = "credit_note.created"
	EventCreditNoteVoided  = "credit_note.voided"
)

// CreditNotes takes credits back when a Stripe credit note credits a
// granted invoice, and gives them back when the credit note is voided
// (seed 000: refunds and corrections are operations of their own, with
// their own keys, never another run of the initial grant).
//
// Both events are notices about one credit note, and the handler converges
// on what the provider says it is now: fetched from the API (status, same
// account and mode, its invoice), the reversal is recorded once per credit
// note under its business key, and when the credit note is void the void
// that gives back exactly what the reversal took is recorded once too. So
// two event ids for one credit note, created after voided, and voided
// before created all end in the same rows. The reversal, the balance
// change, the outbox notice and the inbox row's completion commit in one
// transaction.
//
// The resource of a credit note event is its invoice (providers/stripe), so
// it runs in the invoice's workflow, one event at a time with the invoice's
// grant: a reversal and the grant it reverses can never race. A credit note
// that arrives before its invoice's grant waits (hookinbox.Wait): the row
// stays pending and is looked at again with backoff (the grant wakes it in
// its own commit), up to the domain's CreditNoteWait after it was received;
// then it is retried as an error and ends exhausted (visible, replayable)
// if the grant never comes.
type CreditNotes struct {
	// Policy is the negative-balance policy (ledger.Policy*).
	Policy string
}

// CreditReversalKey is the business key of a credit note's reversal:
// (provider, account, environment, invoice, credit note, credit-reversal).
func CreditReversalKey(provider, account, env, invoice, creditNote string) string {
	return hookinbox.Key("credit-adjustment", provider, account, env, invoice, creditNote, ledger.OperationCreditReversal)
}

// CreditReversalVoidKey is the business key of a credit note's void.
func CreditReversalVoidKey(provider, account, env, invoice, creditNote string) string {
	return hookinbox.Key("credit-adjustment", provider, account, env, invoice, creditNote, ledger.OperationCreditReversalVoid)
}

// ReversalCredits is what a credit note takes back: floor(credits ×
// creditNoteTotal / invoiceTotal), never more than the grant.
func ReversalCredits(credits, creditNoteTotal, invoiceTotal int64) int64 {
	if credits <= 0 || creditNoteTotal <= 0 || invoiceTotal <= 0 {
		return 0
	}
	n := new(big.Int).Mul(big.NewInt(credits), big.NewInt(creditNoteTotal))
	n.Quo(n, big.NewInt(invoiceTotal)) // both positive: truncation is floor
	if !n.IsInt64() || n.Int64() > credits {
		return credits
	}
	return n.Int64()
}

// WaitingForGrant starts the last_error of a credit note that waits for its
// invoice's grant (a pending row that is not stuck, only early).
const WaitingForGrant = "waiting for the invoice's grant"

// errNoGrantYet: the credit note's invoice has not been granted (yet).
var errNoGrantYet = errors.New("the invoice has no credit grant yet")

// Handle applies credit_note.created and credit_note.voided.
func (c *CreditNotes) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	cnID := ev.ObjectID
	if cnID == "" {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("%s event names no credit note", ev.Type))
	}
	client, err := ev.Client(ctx)
	if err != nil {
		return hookinbox.Result{}, err
	}
	cn, err := client.FetchCreditNote(ctx, ev.Key.Account, cnID)
	if err != nil {
		return hookinbox.Result{}, err
	}
	switch {
	case cn.ID != cnID:
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("provider answered credit note %q for %q", cn.ID, cnID))
	case cn.Invoice != ev.Resource.ID:
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("credit note %s credits invoice %s at the provider; the event says %s", cn.ID, cn.Invoice, ev.Resource.ID))
	case cn.Livemode != (ev.Key.Environment == hookintype.Live):
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("credit note %s livemode=%t does not match the %s environment", cn.ID, cn.Livemode, ev.Key.Environment))
	case cn.Status != providers.CreditNoteIssued && cn.Status != providers.CreditNoteVoid:
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("credit note %s has status %q, neither issued nor void", cn.ID, cn.Status))
	case ev.RouteType == EventCreditNoteVoided && cn.Status != providers.CreditNoteVoid:
		// The event says voided; the source of truth does not (yet).
		return hookinbox.Result{}, fmt.Errorf("credit note %s is %q at the provider, not void (yet)", cn.ID, cn.Status)
	}
	inv, err := client.FetchInvoice(ctx, ev.Key.Account, cn.Invoice)
	if err != nil {
		return hookinbox.Result{}, err
	}
	if inv.ID != cn.Invoice {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("provider answered invoice %q for %q", inv.ID, cn.Invoice))
	}
	if inv.Total <= 0 {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("invoice %s has total %d: nothing a credit note can be a part of", inv.ID, inv.Total))
	}
	bkey := CreditReversalKey(ev.Key.Provider, ev.Key.Account, ev.Key.Environment, inv.ID, cn.ID)
	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		return c.apply(ctx, tx, ev, cn, inv, bkey)
	})
	if errors.Is(err, errNoGrantYet) {
		err = hookinbox.Wait(WaitingForGrant, err)
	}
	res.BusinessKey = bkey
	return res, err
}

// apply records the reversal (and the void, when the credit note is void)
// once each, in the event's transaction.
func (c *CreditNotes) apply(ctx context.Context, tx *hookinbox.Tx, row *hookinbox.Event, cn providers.CreditNote, inv providers.Invoice, bkey string) (hookinbox.Result, error) {
	k := row.Key
	grant, err := ledger.GetCreditGrant(ctx, tx.Conn(), k.Provider, k.Account, k.Environment, inv.ID, OperationInitialGrant)
	if errors.Is(err, ledger.ErrNotFound) {
		return hookinbox.Result{}, fmt.Errorf("credit note %s of invoice %s: %w", cn.ID, inv.ID, errNoGrantYet)
	}
	if err != nil {
		return hookinbox.Result{}, err
	}
	if grant.WorkspaceID != row.Workspace {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("invoice %s was granted to workspace %s; this credit note maps to %s",
			inv.ID, grant.WorkspaceID, row.Workspace))
	}
	credits := ReversalCredits(grant.Credits, cn.Total, inv.Total)
	out := hookinbox.Result{}
	rev := ledger.CreditAdjustment{
		Provider: k.Provider, Account: k.Account, Environment: k.Environment, InvoiceID: inv.ID, Reference: cn.ID,
		Operation: ledger.OperationCreditReversal, WorkspaceID: grant.WorkspaceID, Requested: -credits, EventKey: k.String(),
		Detail: map[string]any{"credit_note_total": cn.Total, "invoice_total": inv.Total, "grant_credits": grant.Credits,
			"currency": cn.Currency},
	}
	reversed, prior, err := ledger.AdjustCreditsOnce(ctx, tx.Conn(), &rev, c.Policy)
	if err != nil {
		return hookinbox.Result{}, err
	}
	var notices []ledger.CreditAdjustment
	if reversed {
		out.Note = fmt.Sprintf("credit note %s: took back %d of %d credits (%s)", cn.ID, -rev.Applied, credits, rev.Decision)
		notices = append(notices, rev)
	} else {
		rev = *prior
		out.Note = "credit note " + cn.ID + " already reversed by " + prior.EventKey
		if prior.Requested != -credits {
			out.Note += fmt.Sprintf(" (%d credits then, %d now)", -prior.Requested, credits)
		}
	}
	if cn.Status == providers.CreditNoteVoid {
		void := ledger.CreditAdjustment{
			Provider: k.Provider, Account: k.Account, Environment: k.Environment, InvoiceID: inv.ID, Reference: cn.ID,
			Operation: ledger.OperationCreditReversalVoid, WorkspaceID: grant.WorkspaceID, Requested: -rev.Applied,
			EventKey: k.String(), Detail: map[string]any{"reversal_id": rev.ID, "reversal_decision": rev.Decision},
		}
		voided, prior, err := ledger.AdjustCreditsOnce(ctx, tx.Conn(), &void, c.Policy)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if voided {
			out.Note += fmt.Sprintf("; voided: gave back %d credits", void.Applied)
			notices = append(notices, void)
		} else {
			out.Note += "; void already applied by " + prior.EventKey
		}
	}
	ws, err := tx.Workspace(ctx, grant.WorkspaceID)
	if err != nil {
		return hookinbox.Result{}, err
	}
	if ws.Email == "" {
		if len(notices) > 0 {
			out.Note += "; no notice: the workspace has no email"
		}
		return out, nil
	}
	for _, a := range notices {
		if _, err := tx.Send(ctx, reversalNotice(bkey, ws, inv.ID, cn.ID, a)); err != nil {
			return hookinbox.Result{}, err
		}
	}
	return out, nil
}

func reversalNotice(bkey string, ws hookinbox.Workspace, invoice, cn string, a ledger.CreditAdjustment) hookinbox.Intent {
	op, subject, text := bkey+":notice", "", ""
	switch {
	case a.Operation == ledger.OperationCreditReversalVoid:
		op = CreditReversalVoidKey(a.Provider, a.Account, a.Environment, invoice, cn) + ":notice"
		subject = fmt.Sprintf("%d credits given back to %s", a.Applied, ws.ID)
		text = fmt.Sprintf("Credit note %s of invoice %s was voided: %d credits were given back to workspace %s.", cn, invoice, a.Applied, ws.ID)
	case a.Decision == ledger.DecisionHeld:
		subject = fmt.Sprintf("Credit note on %s held for review", ws.ID)
		text = fmt.Sprintf("Credit note %s of invoice %s would take back %d credits from workspace %s; the balance would go negative, so it is held for review.", cn, invoice, -a.Requested, ws.ID)
	default:
		subject = fmt.Sprintf("%d credits taken back from %s", -a.Applied, ws.ID)
		text = fmt.Sprintf("Credit note %s of invoice %s: %d credits were taken back from workspace %s.", cn, invoice, -a.Applied, ws.ID)
		if a.Shortfall > 0 {
			text += fmt.Sprintf(" %d credits could not be taken back (the balance stops at zero).", a.Shortfall)
		}
	}
	in := hookinbox.Email(op, ClassReversal, ws.Email, subject, text)
	in.Workspace = ws.ID
	return in
}
