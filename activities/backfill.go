package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/provider"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/webhook"
)

// BackfillTypes are the Stripe event types the facts backfill lists: every
// type with a business handler (internal/catalog), named one by one because
// Stripe's `types` filter takes no wildcard.
func BackfillTypes() []string {
	return []string{
		"invoice.paid",
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
// through the intake's own path (SPEC R19): the endpoint's current settings
// and links derive the inbox event (webhook.Derive), marked as backfilled,
// and the event key's UNIQUE constraint settles whether the inbox already
// has it. An existing key (same body or not: the list API may serialize an
// event differently from its webhook) is simply "already have it", never
// quarantined. Each newly inserted pending event rings its resource's
// doorbell; the business handlers' keys make its effect happen once, so a
// paid invoice whose webhook never came grants its credits exactly once.
// A failed doorbell is only logged: the row is pending and the sweeper rings
// again. Events the derivation refuses (an unlinked account, a livemode
// mismatch) are counted and logged.
func (a *Activities) BackfillPage(ctx context.Context, in BackfillPageInput) (PageResult, error) {
	client, err := a.providers().For(ctx, in.Scope.Endpoint)
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list events", err)
	}
	ep, err := a.Store.GetProviderEndpoint(ctx, in.Scope.Endpoint)
	if errors.Is(err, store.ErrNotFound) {
		return PageResult{}, temporal.NewNonRetryableApplicationError("endpoint "+in.Scope.Endpoint+" no longer exists", "InvalidScope", err)
	}
	if err != nil {
		return PageResult{}, err
	}
	// Events of the endpoint's own account carry no account field: they are
	// attributed to that account, so the key must be that account's. A key
	// (or base URL) of another account would bring its events and grants in.
	if own, _ := ep.OwnAccount(); in.Scope.Account == own {
		keyAccount, err := client.OwnAccount(ctx)
		if err != nil {
			return PageResult{}, a.providerFailure(ctx, "retrieve own account", err)
		}
		if keyAccount != own {
			err := fmt.Errorf("the API key of endpoint %s belongs to account %s, not to the endpoint's account %s: nothing is backfilled", ep.Slug, keyAccount, own)
			return PageResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidScope", err)
		}
	}
	q := provider.EventQuery{Since: in.Since, Types: in.Types, Cursor: in.Cursor, Limit: in.Limit}
	page, err := client.ListEvents(ctx, in.Scope.Account, q)
	if cursorGone(err, in.Cursor) {
		a.log(ctx).Warn("the pass's cursor no longer exists at the provider; listing again from the start",
			"checkpoint", in.Checkpoint, "cursor", in.Cursor)
		q.Cursor = ""
		page, err = client.ListEvents(ctx, in.Scope.Account, q)
	}
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list events", err)
	}
	res := PageResult{Listed: len(page.Items)}
	var ring []keys.Resource
	ringing := map[keys.Resource]keys.Event{}
	for i, e := range page.Items {
		ev, err := webhook.Derive(ep, nil, e.Raw, e.Raw)
		if err == nil && ev.Key.Account != in.Scope.Account {
			err = fmt.Errorf("the event belongs to account %s, the pass lists %s", ev.Key.Account, in.Scope.Account)
		}
		if err != nil {
			res.Rejected++
			a.log(ctx).Warn("backfill skipped an event the intake would not admit", "event_id", e.ID, "type", e.Type,
				"endpoint", ep.Slug, "reason", err.Error())
			continue
		}
		ev.Origin = keys.OriginBackfill
		ins, err := store.InsertInboxEvent(ctx, a.Store.Pool, ev)
		if err != nil {
			return res, err // retried: the inserts are idempotent
		}
		if ins.Outcome != store.Inserted {
			res.Duplicates++
			continue
		}
		res.Inserted++
		a.log(ctx).Info("backfilled a missing event", "event_key", ev.Key.String(), "type", ev.EventType, "status", ev.Status)
		if r := ev.Resource(); ev.Status == keys.StatusPending {
			if _, ok := ringing[r]; !ok {
				ring = append(ring, r)
			}
			ringing[r] = ev.Key
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	for i, r := range ring {
		if err := pace(ctx, in.SignalRate, i); err != nil {
			return res, err
		}
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, ringing[r].String()); err != nil {
			res.SignalFailed++
			a.log(ctx).Warn("backfill could not signal; the sweeper will", "resource", r.String(), "error", err.Error())
			continue
		}
		res.Signalled++
	}
	return a.advance(ctx, in.PageInput, page.NextCursor, !page.HasMore, res, int64(res.Inserted))
}
