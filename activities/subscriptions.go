package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/provider"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Subscription statuses that matter to the access rule.
const (
	subActive   = "active"
	subTrialing = "trialing"
	subPastDue  = "past_due"
	subCanceled = "canceled"
)

// errLostRace: the projection changed between this attempt's read and its
// write, so its fetch may be older than what is stored. Retried: the next
// attempt reads and fetches again.
var errLostRace = errors.New("the projection changed after this attempt read it (a newer write won); fetching again")

// Subscriptions keeps subscription_projection current and never backwards
// (SPEC R15). With a provider version the event's snapshot is applied only
// if newer (the comparison is part of the write). Without one (Stripe's
// default) the event is a notice: read the projection's write_seq, fetch the
// current subscription, then write with compare-and-set on write_seq, so a
// stale attempt's write is discarded. Access is derived by the product rule.
type Subscriptions struct {
	Store     *store.Store
	Providers Providers
	Logger    *slog.Logger
}

// SubscriptionPlan is what an attempt read and fetched, before it writes.
type SubscriptionPlan struct {
	Versioned bool
	Snapshot  provider.Subscription
	Deleted   bool
	// ReadSeq is the projection's write_seq when the attempt began (0: none).
	ReadSeq int64
	Current *store.Projection
	Fetched time.Time
}

// Handle applies a customer.subscription.* event.
func (s *Subscriptions) Handle(ctx context.Context, ev *store.StoredEvent) (Outcome, error) {
	plan, err := s.Prepare(ctx, ev)
	if err != nil {
		return Outcome{}, err
	}
	return s.Commit(ctx, ev, plan)
}

// Prepare reads what the write will be checked against, then gets the
// state to write: the event's own snapshot when it is versioned, else the
// provider's current subscription. No transaction is open meanwhile.
func (s *Subscriptions) Prepare(ctx context.Context, ev *store.StoredEvent) (SubscriptionPlan, error) {
	plan := SubscriptionPlan{Deleted: ev.EventType == "customer.subscription.deleted"}
	if ev.ProviderVersion != nil {
		snap, err := provider.SubscriptionFromEvent(ev.Key.Account, ev.Payload)
		if err != nil {
			return plan, Permanent(err)
		}
		if snap.ID != ev.ResourceID {
			return plan, Permanent(fmt.Errorf("event snapshot is subscription %q, resource is %q", snap.ID, ev.ResourceID))
		}
		snap.Version, snap.HasVersion = *ev.ProviderVersion, true
		plan.Versioned, plan.Snapshot = true, snap
		return plan, nil
	}
	cur, err := store.GetProjection(ctx, s.Store.Pool, ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.ResourceID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return plan, err
	default:
		plan.Current, plan.ReadSeq = cur, cur.WriteSeq
	}
	client, err := s.Providers.For(ctx, ev.EndpointSlug)
	if err != nil {
		return plan, err
	}
	snap, err := client.FetchSubscription(ctx, ev.Key.Account, ev.ResourceID)
	if err != nil {
		return plan, providerErr(err)
	}
	if snap.ID != ev.ResourceID {
		return plan, Permanent(fmt.Errorf("provider answered subscription %q for %q", snap.ID, ev.ResourceID))
	}
	plan.Snapshot, plan.Fetched = snap, time.Now()
	// A deletion notice is a tombstone only if the provider agrees.
	plan.Deleted = plan.Deleted && snap.Status == subCanceled
	return plan, nil
}

// Commit writes the plan in the event's one transaction.
func (s *Subscriptions) Commit(ctx context.Context, ev *store.StoredEvent, plan SubscriptionPlan) (Outcome, error) {
	p := projectionOf(ev, plan)
	return InPendingTx(ctx, s.Store, ev.Key, func(tx pgx.Tx, _ *store.StoredEvent) (Outcome, error) {
		if plan.Versioned {
			applied, err := store.WriteProjectionIfNewer(ctx, tx, p)
			if err != nil {
				return Outcome{}, err
			}
			if !applied {
				return Outcome{Status: store.StatusDone, Note: fmt.Sprintf("snapshot v%d not applied: the projection is newer or canceled", *p.Version)}, nil
			}
			return Outcome{Status: store.StatusDone, Note: fmt.Sprintf("applied snapshot v%d (%s)", *p.Version, p.State.Status)}, nil
		}
		if c := plan.Current; c != nil {
			if c.State.Status == subCanceled && p.State.Status != subCanceled {
				s.log().Warn("provider answered a non-canceled state for a canceled subscription; kept canceled",
					"event_key", ev.Key.String(), "subscription", ev.ResourceID, "fetched_status", p.State.Status)
				return Outcome{Status: store.StatusDone, Note: "fetched " + p.State.Status + " for a canceled subscription: kept canceled"}, nil
			}
			if c.Version != nil && p.Version != nil && *p.Version < *c.Version {
				return Outcome{Status: store.StatusDone, Note: fmt.Sprintf("fetched v%d is older than stored v%d", *p.Version, *c.Version)}, nil
			}
		}
		applied, err := store.WriteProjectionCAS(ctx, tx, p, plan.ReadSeq)
		if err != nil {
			return Outcome{}, err
		}
		if !applied {
			return Outcome{}, errLostRace
		}
		return Outcome{Status: store.StatusDone, Note: "fetched and wrote " + p.State.Status}, nil
	})
}

func (s *Subscriptions) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func projectionOf(ev *store.StoredEvent, plan SubscriptionPlan) store.Projection {
	snap := plan.Snapshot
	st := store.SubscriptionState{
		Status: snap.Status, Customer: snap.Customer, CancelAtPeriodEnd: snap.CancelAtPeriodEnd,
		CurrentPeriodEnd: timePtr(snap.CurrentPeriodEnd), CanceledAt: timePtr(snap.CanceledAt), EndedAt: timePtr(snap.EndedAt),
	}
	p := store.Projection{
		Provider: ev.Key.Provider, Account: ev.Key.Account, Environment: ev.Key.Environment, ResourceID: ev.ResourceID,
		WorkspaceID: ev.WorkspaceID, State: st, Deleted: plan.Deleted, WrittenBy: ev.Key.String(),
	}
	if snap.HasVersion {
		v := snap.Version
		p.Version = &v
	}
	if !plan.Fetched.IsZero() {
		f := plan.Fetched
		p.FetchedAt = &f
	}
	p.Access, p.AccessEndsAt = AccessRule(st)
	return p
}

// AccessRule is the product rule: active, trialing and past_due
// subscriptions give access, until the period ends when they are set to
// cancel at its end; an immediate cancellation ends access at once; any
// other status gives none. A canceled subscription is terminal, so a late
// "active" snapshot can never restore access.
func AccessRule(st store.SubscriptionState) (access bool, endsAt *time.Time) {
	switch st.Status {
	case subActive, subTrialing, subPastDue:
		if st.CancelAtPeriodEnd {
			return true, st.CurrentPeriodEnd
		}
		return true, nil
	case subCanceled:
		if st.EndedAt != nil {
			return false, st.EndedAt
		}
		return false, st.CanceledAt
	}
	return false, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
