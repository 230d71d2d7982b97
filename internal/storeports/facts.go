package storeports

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// Facts implements ports.Facts: the facts backfill admits listed events
// through the intake's own derivation and insert.
type Facts struct {
	Store *store.Store
	// Routes decides handled or ignored, as at the intake.
	Routes routes.Router
}

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

func (f Facts) endpoint(ctx context.Context, slug string) (*endpoints.Endpoint, error) {
	ep, err := endpoints.GetProviderEndpoint(ctx, f.Store, slug)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", fault.ErrNotFound, err)
	}
	return ep, err
}

// Admit feeds each listed event through the one admission path (SPEC R19,
// admission.Admit with OriginBackfill): the endpoint's current settings and
// links derive the inbox event, the account is the one the pass listed
// under, and the event key's UNIQUE constraint settles whether the inbox
// already has it. An existing key holding the same event (the same bytes,
// or the list API's own serialization of it) is simply a duplicate, never
// quarantined. Events admission refuses (an unlinked account, a livemode
// mismatch, another event under an existing key) are rejected with the
// reason.
func (f Facts) Admit(ctx context.Context, endpoint, account string, events []providers.Event) ([]ports.Admission, error) {
	ep, err := f.endpoint(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	adm, aep := admission.New(admission.Options{Store: f.Store, Routes: f.Routes}), admission.NewEndpoint(ep)
	out := make([]ports.Admission, 0, len(events))
	for _, e := range events {
		a := ports.Admission{EventID: e.ID, Type: e.Type}
		res, err := adm.Admit(ctx, aep, admission.Delivery{Header: e.Header, Body: e.Raw, Account: account}, keys.OriginBackfill)
		if errors.Is(err, admission.ErrNotStored) {
			return out, err // retried: the inserts are idempotent
		}
		if err != nil {
			a.Outcome, a.Reason = ports.Rejected, err
			out = append(out, a)
			continue
		}
		switch res.Outcome {
		case admission.Duplicate:
			a.Outcome = ports.Duplicate
		case admission.Quarantined:
			a.Outcome, a.Reason = ports.Rejected, fmt.Errorf("%s: %s", res.Reason, res.Detail)
		default:
			ev := res.Event
			a.Outcome, a.Key, a.Resource, a.Status = ports.Admitted, ev.Key, ev.Resource(), ev.Status
		}
		out = append(out, a)
	}
	return out, nil
}
