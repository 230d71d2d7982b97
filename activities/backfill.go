package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// BackfillTypes are the Stripe event types the facts backfill lists: every
// type with a business handler (handlers.For), named one by one because
// Stripe's `types` filter takes no wildcard.
func BackfillTypes() []string {
	return []string{
		"invoice.paid",
		"credit_note.created",
		"credit_note.voided",
		"customer.subscription.created",
		"customer.subscription.updated",
		"customer.subscription.deleted",
		"customer.subscription.paused",
		"customer.subscription.resumed",
		"customer.subscription.pending_update_applied",
		"customer.subscription.pending_update_expired",
	}
}

// BackfillPageInput is one page of the facts backfill of a scope.
type BackfillPageInput struct {
	PageInput
	// Since: events created at or after it are listed (the last complete
	// pass's start minus the overlap, or the lookback on a first pass).
	Since time.Time `json:"since"`
	Types []string  `json:"types"`
}

// BackfillPage lists one page of a scope's provider events and feeds each
// through the intake's own path (SPEC R19, ports.Facts.Admit): the
// endpoint's current settings and links derive the inbox event, marked as
// backfilled, and the event key's UNIQUE constraint settles whether the
// inbox already has it. An existing key holding the same event (in any
// serialization) is simply "already have it", never quarantined. Each newly inserted pending event rings its resource's
// doorbell; the business handlers' keys make its effect happen once, so a
// paid invoice whose webhook never came grants its credits exactly once.
// A failed doorbell is only logged: the row is pending and the sweeper rings
// again. Events the derivation refuses (an unlinked account, a livemode
// mismatch) are counted and logged.
func (a *ProviderActivities) BackfillPage(ctx context.Context, in BackfillPageInput) (PageResult, error) {
	client, err := a.Providers.For(ctx, in.Scope.Endpoint)
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list events", err)
	}
	own, err := a.Facts.OwnAccount(ctx, in.Scope.Endpoint)
	if errors.Is(err, fault.ErrNotFound) {
		return PageResult{}, temporal.NewNonRetryableApplicationError("endpoint "+in.Scope.Endpoint+" no longer exists", "InvalidScope", err)
	}
	if err != nil {
		return PageResult{}, err
	}
	// Events of the endpoint's own account carry no account field: they are
	// attributed to that account, so the key must be that account's. A key
	// (or base URL) of another account would bring its events and grants in.
	if in.Scope.Account == own {
		keyAccount, err := client.OwnAccount(ctx)
		if err != nil {
			return PageResult{}, a.providerFailure(ctx, "retrieve own account", err)
		}
		if keyAccount != own {
			err := fmt.Errorf("the API key of endpoint %s belongs to account %s, not to the endpoint's account %s: nothing is backfilled", in.Scope.Endpoint, keyAccount, own)
			return PageResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidScope", err)
		}
	}
	q := providers.EventQuery{Since: in.Since, Types: in.Types, Cursor: in.Cursor, Limit: in.Limit}
	page, err := client.ListEvents(ctx, in.Scope.Account, q)
	if cursorGone(err, in.Cursor) {
		logger(ctx, a.Logger).Warn("the pass's cursor no longer exists at the provider; listing again from the start",
			"checkpoint", in.Checkpoint, "cursor", in.Cursor)
		q.Cursor = ""
		page, err = client.ListEvents(ctx, in.Scope.Account, q)
	}
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list events", err)
	}
	res := PageResult{Listed: len(page.Items)}
	admitted, err := a.Facts.Admit(ctx, in.Scope.Endpoint, in.Scope.Account, page.Items)
	if err != nil {
		return res, err // retried: the inserts are idempotent
	}
	var ring []keys.Resource
	ringing := map[keys.Resource]keys.Event{}
	for i, ad := range admitted {
		switch ad.Outcome {
		case ports.Rejected:
			res.Rejected++
			logger(ctx, a.Logger).Warn("backfill skipped an event the intake would not admit", "event_id", ad.EventID, "type", ad.Type,
				"endpoint", in.Scope.Endpoint, "reason", ad.Reason.Error())
			continue
		case ports.Duplicate:
			res.Duplicates++
			continue
		}
		res.Inserted++
		logger(ctx, a.Logger).Info("backfilled a missing event", "event_key", ad.Key.String(), "type", ad.Type, "status", ad.Status)
		if r := ad.Resource; ad.Status == keys.StatusPending {
			if _, ok := ringing[r]; !ok {
				ring = append(ring, r)
			}
			ringing[r] = ad.Key
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	for i, r := range ring {
		if err := pace(ctx, in.SignalRate, i); err != nil {
			return res, err
		}
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, ringing[r].String()); err != nil {
			res.SignalFailed++
			logger(ctx, a.Logger).Warn("backfill could not signal; the sweeper will", "resource", r.String(), "error", err.Error())
			continue
		}
		res.Signalled++
	}
	return a.advance(ctx, in.PageInput, page.NextCursor, !page.HasMore, res, int64(res.Inserted))
}
