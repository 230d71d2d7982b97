package handlers

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
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
// that arrives before its invoice's grant waits: the row stays pending and
// is retried with backoff (the grant wakes it in its own commit), up to
// WaitLimit after it was received; then it is retried as an error and ends
// exhausted (visible, replayable) if the grant never comes.
type CreditNotes struct {
	Store     *store.Store
	Providers ports.Providers
	// Policy is the negative-balance policy (keys.Balance*).
	Policy string
	// WaitInitial and WaitMax bound the backoff while waiting for the
	// grant; WaitLimit is how long after receipt a credit note may wait.
	WaitInitial, WaitMax, WaitLimit time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// CreditReversalKey is the business key of a credit note's reversal:
// (provider, account, environment, invoice, credit note, credit-reversal).
func CreditReversalKey(provider, account, env, invoice, creditNote string) string {
	return keys.Join("credit-adjustment", provider, account, env, invoice, creditNote, ledger.OperationCreditReversal)
}

// CreditReversalVoidKey is the business key of a credit note's void.
func CreditReversalVoidKey(provider, account, env, invoice, creditNote string) string {
	return keys.Join("credit-adjustment", provider, account, env, invoice, creditNote, ledger.OperationCreditReversalVoid)
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
func (c *CreditNotes) Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error) {
	cnID := ev.ObjectID
	if cnID == "" {
		return Outcome{}, fault.Permanent(fmt.Errorf("%s event names no credit note", ev.EventType))
	}
	client, err := c.Providers.For(ctx, ev.EndpointSlug)
	if err != nil {
		return Outcome{}, err
	}
	cn, err := client.FetchCreditNote(ctx, ev.Key.Account, cnID)
	if err != nil {
		return Outcome{}, providerErr(err)
	}
	switch {
	case cn.ID != cnID:
		return Outcome{}, fault.Permanent(fmt.Errorf("provider answered credit note %q for %q", cn.ID, cnID))
	case cn.Invoice != ev.ResourceID:
		return Outcome{}, fault.Permanent(fmt.Errorf("credit note %s credits invoice %s at the provider; the event says %s", cn.ID, cn.Invoice, ev.ResourceID))
	case cn.Livemode != (ev.Key.Environment == keys.EnvLive):
		return Outcome{}, fault.Permanent(fmt.Errorf("credit note %s livemode=%t does not match the %s environment", cn.ID, cn.Livemode, ev.Key.Environment))
	case cn.Status != providers.CreditNoteIssued && cn.Status != providers.CreditNoteVoid:
		return Outcome{}, fault.Permanent(fmt.Errorf("credit note %s has status %q, neither issued nor void", cn.ID, cn.Status))
	case ev.EventType == EventCreditNoteVoided && cn.Status != providers.CreditNoteVoid:
		// The event says voided; the source of truth does not (yet).
		return Outcome{}, fmt.Errorf("credit note %s is %q at the provider, not void (yet)", cn.ID, cn.Status)
	}
	inv, err := client.FetchInvoice(ctx, ev.Key.Account, cn.Invoice)
	if err != nil {
		return Outcome{}, providerErr(err)
	}
	if inv.ID != cn.Invoice {
		return Outcome{}, fault.Permanent(fmt.Errorf("provider answered invoice %q for %q", inv.ID, cn.Invoice))
	}
	if inv.Total <= 0 {
		return Outcome{}, fault.Permanent(fmt.Errorf("invoice %s has total %d: nothing a credit note can be a part of", inv.ID, inv.Total))
	}
	bkey := CreditReversalKey(ev.Key.Provider, ev.Key.Account, ev.Key.Environment, inv.ID, cn.ID)
	out, err := InPendingTx(ctx, c.Store, ev.Key, func(tx pgx.Tx, row *inbox.StoredEvent) (Outcome, error) {
		return c.apply(ctx, tx, row, cn, inv, bkey)
	})
	if errors.Is(err, errNoGrantYet) {
		return c.wait(ctx, ev, bkey, err)
	}
	out.BusinessKey = bkey
	return out, err
}

// apply records the reversal (and the void, when the credit note is void)
// once each, in the event's transaction.
func (c *CreditNotes) apply(ctx context.Context, tx pgx.Tx, row *inbox.StoredEvent, cn providers.CreditNote, inv providers.Invoice, bkey string) (Outcome, error) {
	k := row.Key
	grant, err := ledger.GetCreditGrant(ctx, tx, k.Provider, k.Account, k.Environment, inv.ID, OperationInitialGrant)
	if errors.Is(err, fault.ErrNotFound) {
		return Outcome{}, fmt.Errorf("credit note %s of invoice %s: %w", cn.ID, inv.ID, errNoGrantYet)
	}
	if err != nil {
		return Outcome{}, err
	}
	if grant.WorkspaceID != row.WorkspaceID {
		return Outcome{}, fault.Permanent(fmt.Errorf("invoice %s was granted to workspace %s; this credit note maps to %s",
			inv.ID, grant.WorkspaceID, row.WorkspaceID))
	}
	credits := ReversalCredits(grant.Credits, cn.Total, inv.Total)
	out := Outcome{Status: keys.StatusDone}
	rev := ledger.CreditAdjustment{
		Provider: k.Provider, Account: k.Account, Environment: k.Environment, InvoiceID: inv.ID, Reference: cn.ID,
		Operation: ledger.OperationCreditReversal, WorkspaceID: grant.WorkspaceID, Requested: -credits, EventKey: k.String(),
		Detail: map[string]any{"credit_note_total": cn.Total, "invoice_total": inv.Total, "grant_credits": grant.Credits,
			"currency": cn.Currency},
	}
	reversed, prior, err := ledger.AdjustCreditsOnce(ctx, tx, &rev, c.Policy)
	if err != nil {
		return Outcome{}, err
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
		voided, prior, err := ledger.AdjustCreditsOnce(ctx, tx, &void, c.Policy)
		if err != nil {
			return Outcome{}, err
		}
		if voided {
			out.Note += fmt.Sprintf("; voided: gave back %d credits", void.Applied)
			notices = append(notices, void)
		} else {
			out.Note += "; void already applied by " + prior.EventKey
		}
	}
	ws, err := ledger.GetWorkspace(ctx, tx, grant.WorkspaceID)
	if err != nil {
		return Outcome{}, err
	}
	if ws.Email == "" {
		if len(notices) > 0 {
			out.Note += "; no notice: the workspace has no email"
		}
		return out, nil
	}
	for _, a := range notices {
		id, err := outbox.InsertOutbox(ctx, tx, reversalNotice(bkey, ws, inv.ID, cn.ID, a, row.Resource().String()))
		if err != nil {
			return Outcome{}, err
		}
		out.Outbox = append(out.Outbox, id)
	}
	return out, nil
}

func reversalNotice(bkey string, ws *ledger.Workspace, invoice, cn string, a ledger.CreditAdjustment, resource string) outbox.OutboxIntent {
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
	return outbox.OutboxIntent{
		OperationKey: op, Class: keys.ClassCreditsReversal, Kind: "email", Destination: ws.Email, WorkspaceID: ws.ID,
		ResourceKey: resource, Payload: map[string]any{"to": ws.Email, "subject": subject, "text": text},
	}
}

// wait keeps a credit note that arrived before its invoice's grant pending:
// the attempt is recorded with a backoff (the grant's commit wakes it
// sooner) and the workflow moves on to the resource's next rows, the grant
// among them. Past WaitLimit the wait is an ordinary retried error, which
// ends exhausted if the grant never comes.
func (c *CreditNotes) wait(ctx context.Context, ev *inbox.StoredEvent, bkey string, cause error) (Outcome, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	limit := c.WaitLimit
	if limit <= 0 {
		limit = 24 * time.Hour
	}
	if now.Sub(ev.ReceivedAt) > limit {
		return Outcome{BusinessKey: bkey}, fmt.Errorf("waited longer than %s: %w", limit, cause)
	}
	initial, maxWait := c.WaitInitial, c.WaitMax
	if initial <= 0 {
		initial = time.Second
	}
	if maxWait < initial {
		maxWait = max(initial, 5*time.Minute)
	}
	delay := maxWait
	if shift := ev.Attempts; shift < 30 {
		delay = min(initial<<shift, maxWait)
	}
	msg := WaitingForGrant + ": " + cause.Error()
	if err := inbox.RecordInboxFailure(ctx, c.Store.Pool, ev.Key, msg, now.Add(delay)); err != nil {
		return Outcome{}, err
	}
	return Outcome{Status: keys.StatusPending, Note: msg, BusinessKey: bkey}, nil
}
