package handlers

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// OperationInitialGrant is the business operation of the first credit grant
// of an invoice. Corrections and refunds are operations of their own
// (credit_notes.go, store.AdjustCreditsOnce).
const OperationInitialGrant = "initial-credit-grant"

// Credits grants a workspace its credits once per paid invoice (SPEC
// R12–R14). The webhook is a notice: the invoice is fetched from the
// provider and checked (paid, same account and mode) before anything is
// granted; then grant, balance, confirmation intent and the inbox row's
// completion commit in one transaction.
type Credits struct {
	Store      *store.Store
	Providers  ports.Providers
	PerInvoice int64
}

// CreditGrantKey is the business key of an invoice's initial grant.
func CreditGrantKey(provider, account, env, invoice string) string {
	return keys.Join("credit-grant", provider, account, env, invoice, OperationInitialGrant)
}

// Handle applies invoice.paid.
func (c *Credits) Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error) {
	client, err := c.Providers.For(ctx, ev.EndpointSlug)
	if err != nil {
		return Outcome{}, err
	}
	inv, err := client.FetchInvoice(ctx, ev.Key.Account, ev.ResourceID)
	if err != nil {
		return Outcome{}, providerErr(err)
	}
	if inv.ID != ev.ResourceID {
		return Outcome{}, fault.Permanent(fmt.Errorf("provider answered invoice %q for %q", inv.ID, ev.ResourceID))
	}
	if inv.Livemode != (ev.Key.Environment == keys.EnvLive) {
		return Outcome{}, fault.Permanent(fmt.Errorf("invoice %s livemode=%t does not match the %s environment", inv.ID, inv.Livemode, ev.Key.Environment))
	}
	if !inv.Paid {
		// The event says paid; the source of truth does not (yet). Never
		// grant on the event alone; retry until it agrees or the budget ends.
		return Outcome{}, fmt.Errorf("invoice %s is %q at the provider, not paid (yet)", inv.ID, inv.Status)
	}
	grant := ledger.CreditGrant{
		Provider: ev.Key.Provider, Account: ev.Key.Account, Environment: ev.Key.Environment, InvoiceID: inv.ID,
		Operation: OperationInitialGrant, WorkspaceID: ev.WorkspaceID, Credits: c.PerInvoice,
		AmountPaid: inv.AmountPaid, Currency: inv.Currency, EventKey: ev.Key.String(),
	}
	bkey := CreditGrantKey(grant.Provider, grant.Account, grant.Environment, grant.InvoiceID)
	out, err := InPendingTx(ctx, c.Store, ev.Key, func(tx pgx.Tx, row *inbox.StoredEvent) (Outcome, error) {
		granted, existing, err := ledger.GrantCreditsOnce(ctx, tx, grant)
		if err != nil {
			return Outcome{}, err
		}
		if !granted {
			// Another event, a repair or an earlier attempt already did it:
			// check it is the same operation, then just complete the row.
			if existing.WorkspaceID != grant.WorkspaceID || existing.Credits != grant.Credits {
				return Outcome{}, fault.Permanent(fmt.Errorf("invoice %s was already granted %d credits to workspace %s; this event maps it to %s for %d",
					inv.ID, existing.Credits, existing.WorkspaceID, grant.WorkspaceID, grant.Credits))
			}
			return Outcome{Status: keys.StatusDone, Note: "already granted by " + existing.EventKey}, nil
		}
		out := Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("granted %d credits for %s", grant.Credits, inv.ID)}
		// Credit notes of this invoice that arrived first wait for the
		// grant: make them due now, in the grant's own commit.
		if _, err := inbox.WakeResource(ctx, tx, row.Resource()); err != nil {
			return Outcome{}, err
		}
		ws, err := ledger.GetWorkspace(ctx, tx, grant.WorkspaceID)
		if err != nil {
			return Outcome{}, err
		}
		if ws.Email == "" {
			out.Note += "; no confirmation: the workspace has no email"
			return out, nil
		}
		id, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{
			OperationKey: bkey + ":confirmation",
			Class:        keys.ClassCreditsConfirmation, Kind: "email", Destination: ws.Email, WorkspaceID: ws.ID,
			ResourceKey: row.Resource().String(),
			Payload: map[string]any{
				"to": ws.Email, "subject": fmt.Sprintf("%d credits added to %s", grant.Credits, ws.ID),
				"text": fmt.Sprintf("Invoice %s was paid: %d credits were added to workspace %s.", inv.ID, grant.Credits, ws.ID),
			},
		})
		if err != nil {
			return Outcome{}, err
		}
		out.Outbox = []int64{id}
		return out, nil
	})
	out.BusinessKey = bkey
	return out, err
}
