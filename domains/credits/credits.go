// Package credits is hookinbox's built-in credits domain (seed 000): every
// paid Stripe invoice grants its workspace a number of credits, once per
// invoice however many events or repairs mention it; a credit note takes
// its share back, and its void gives that back, once each. It is written
// on the public API alone (package hookinbox), as a team's own domain
// would be, with its records in package domains/ledger.
package credits

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits/schema"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/hookintype"
)

// Handler names: the metrics labels and inbox routes of the two handlers.
const (
	// NameGrants grants a workspace its credits for a paid invoice.
	NameGrants = "credits"
	// NameCreditNotes takes credits back for a credit note of a granted
	// invoice, and gives them back when it is voided.
	NameCreditNotes = "credit_notes"
)

// Outbox classes of the notices (HOOKINBOX_UNCERTAIN_POLICY names them).
const (
	ClassConfirmation = "credits_confirmation"
	ClassReversal     = "credits_reversal"
)

// OperationInitialGrant is the business operation of the first credit grant
// of an invoice. Corrections and refunds are operations of their own (a
// credit note's reversal, an operator's adjustment).
const OperationInitialGrant = "initial-credit-grant"

// Options configure the domain. The zero value is the default.
type Options struct {
	// PerInvoice is the credits a paid invoice grants (default 100).
	PerInvoice int64
	// Policy is the negative-balance policy of reversals: ledger.PolicyAllow
	// (default), PolicyClamp or PolicyHold.
	Policy string
	// CreditNoteWait is how long after its receipt a credit note may wait
	// for its invoice's grant (default 72h).
	CreditNoteWait time.Duration
}

// Register adds the credits domain to app: its tables (package schema) and
// its handlers, invoice.paid (NameGrants), and credit_note.created and
// credit_note.voided (NameCreditNotes), the credit notes serialized on the
// invoice they credit so that a reversal and the grant it reverses never
// race.
func Register(app *hookinbox.App, o Options) error {
	if o.PerInvoice == 0 {
		o.PerInvoice = 100
	}
	if o.PerInvoice < 0 {
		return fmt.Errorf("credits: credits per invoice must be positive (got %d)", o.PerInvoice)
	}
	policy, err := ledger.ParsePolicy(o.Policy)
	if err != nil {
		return fmt.Errorf("credits: %w", err)
	}
	if o.CreditNoteWait == 0 {
		o.CreditNoteWait = 72 * time.Hour
	}
	// The domain's own tables, its migration set (schema).
	app.Use(hookinbox.WithMigrations(schema.Name, schema.FS(), schema.Tables()...))
	// The notices are low-risk: a duplicate is better than none.
	app.OutboxClass(ClassConfirmation, hookinbox.AcceptDuplicate)
	app.OutboxClass(ClassReversal, hookinbox.AcceptDuplicate)
	app.Handle("stripe", "invoice.paid", &Grants{PerInvoice: o.PerInvoice}, hookinbox.Name(NameGrants))
	notes := &CreditNotes{Policy: policy}
	for _, typ := range []string{EventCreditNoteCreated, EventCreditNoteVoided} {
		app.Handle("stripe", typ, notes, hookinbox.Name(NameCreditNotes),
			hookinbox.SerializeOn("invoice", "data.object.invoice"), hookinbox.WaitLimit(o.CreditNoteWait))
	}
	return nil
}

// GrantKey is the business key of an invoice's initial grant.
func GrantKey(provider, account, env, invoice string) string {
	return hookinbox.Key("credit-grant", provider, account, env, invoice, OperationInitialGrant)
}

// Grants grants a workspace its credits once per paid invoice (SPEC
// R12–R14). The webhook is a notice: the invoice is fetched from the
// provider and checked (paid, same account and mode) before anything is
// granted; then the grant, the balance, the confirmation intent and the
// inbox row's completion commit in one transaction.
type Grants struct {
	PerInvoice int64
}

// Handle applies invoice.paid.
func (g *Grants) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	client, err := ev.Client(ctx)
	if err != nil {
		return hookinbox.Result{}, err
	}
	inv, err := client.FetchInvoice(ctx, ev.Key.Account, ev.Resource.ID)
	if err != nil {
		return hookinbox.Result{}, err
	}
	switch {
	case inv.ID != ev.Resource.ID:
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("provider answered invoice %q for %q", inv.ID, ev.Resource.ID))
	case inv.Livemode != (ev.Key.Environment == hookintype.Live):
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("invoice %s livemode=%t does not match the %s environment", inv.ID, inv.Livemode, ev.Key.Environment))
	case !inv.Paid:
		// The event says paid; the source of truth does not (yet). Never
		// grant on the event alone; retry until it agrees or the budget ends.
		return hookinbox.Result{}, fmt.Errorf("invoice %s is %q at the provider, not paid (yet)", inv.ID, inv.Status)
	}
	grant := ledger.CreditGrant{
		Provider: ev.Key.Provider, Account: ev.Key.Account, Environment: ev.Key.Environment, InvoiceID: inv.ID,
		Operation: OperationInitialGrant, WorkspaceID: ev.Workspace, Credits: g.PerInvoice,
		AmountPaid: inv.AmountPaid, Currency: inv.Currency, EventKey: ev.Key.String(),
	}
	bkey := GrantKey(grant.Provider, grant.Account, grant.Environment, grant.InvoiceID)
	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		granted, existing, err := ledger.GrantCreditsOnce(ctx, tx.Conn(), grant)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !granted {
			// Another event, a repair or an earlier attempt already did it:
			// check it is the same operation, then just complete the row.
			if existing.WorkspaceID != grant.WorkspaceID || existing.Credits != grant.Credits {
				return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("invoice %s was already granted %d credits to workspace %s; this event maps it to %s for %d",
					inv.ID, existing.Credits, existing.WorkspaceID, grant.WorkspaceID, grant.Credits))
			}
			return hookinbox.Result{Note: "already granted by " + existing.EventKey}, nil
		}
		res := hookinbox.Result{Note: fmt.Sprintf("granted %d credits for %s", grant.Credits, inv.ID)}
		// Credit notes of this invoice that arrived first wait for the
		// grant: make them due now, in the grant's own commit.
		if err := tx.Wake(ctx, ev.Resource); err != nil {
			return hookinbox.Result{}, err
		}
		ws, err := tx.Workspace(ctx, grant.WorkspaceID)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if ws.Email == "" {
			res.Note += "; no confirmation: the workspace has no email"
			return res, nil
		}
		_, err = tx.Send(ctx, hookinbox.Email(bkey+":confirmation", ClassConfirmation, ws.Email,
			fmt.Sprintf("%d credits added to %s", grant.Credits, ws.ID),
			fmt.Sprintf("Invoice %s was paid: %d credits were added to workspace %s.", inv.ID, grant.Credits, ws.ID)))
		return res, err
	})
	res.BusinessKey = bkey
	return res, err
}
