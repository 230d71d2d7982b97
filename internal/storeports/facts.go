package storeports

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/provider"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/webhook"
)

// Facts implements ports.Facts: the facts backfill admits listed events
// through the intake's own derivation and insert.
type Facts struct{ Store *store.Store }

var _ ports.Facts = Facts{}

// OwnAccount is the endpoint's own account ("" when it has none).
func (f Facts) OwnAccount(ctx context.Context, endpoint string) (string, error) {
	ep, err := f.endpoint(ctx, endpoint)
	if err != nil {
		return "", err
	}
	own, _ := ep.OwnAccount()
	return own, nil
}

func (f Facts) endpoint(ctx context.Context, slug string) (*store.Endpoint, error) {
	ep, err := f.Store.GetEndpoint(ctx, slug)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ports.ErrNotFound, err)
	}
	return ep, err
}

// Admit feeds each listed event through the intake's own path (SPEC R19):
// the endpoint's current settings and links derive the inbox event
// (webhook.Derive), marked as backfilled, and the event key's UNIQUE
// constraint settles whether the inbox already has it. An existing key
// (same body or not: the list API may serialize an event differently from
// its webhook) is simply a duplicate, never quarantined. Events the
// derivation refuses (an unlinked account, a livemode mismatch) are
// rejected with the reason.
func (f Facts) Admit(ctx context.Context, endpoint, account string, events []provider.Event) ([]ports.Admission, error) {
	ep, err := f.endpoint(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	out := make([]ports.Admission, 0, len(events))
	for _, e := range events {
		a := ports.Admission{EventID: e.ID, Type: e.Type}
		ev, err := webhook.Derive(ep, nil, e.Raw, e.Raw)
		if err == nil && ev.Key.Account != account {
			err = fmt.Errorf("the event belongs to account %s, the pass lists %s", ev.Key.Account, account)
		}
		if err != nil {
			a.Outcome, a.Reason = ports.Rejected, err
			out = append(out, a)
			continue
		}
		ev.Origin = keys.OriginBackfill
		ins, err := store.InsertInboxEvent(ctx, f.Store.Pool, ev)
		if err != nil {
			return out, err // retried: the inserts are idempotent
		}
		a.Outcome = ports.Duplicate
		if ins.Outcome == store.Inserted {
			a.Outcome, a.Key, a.Resource, a.Status = ports.Admitted, ev.Key, ev.Resource(), ev.Status
		}
		out = append(out, a)
	}
	return out, nil
}
