package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/stripe"
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
	Providers ports.Providers
	Logger    *slog.Logger
}

var (
	_ ports.Reconciler  = (*Subscriptions)(nil)
	_ ports.Projections = (*Subscriptions)(nil)
)

// SubscriptionPlan is what an attempt read and fetched, before it writes.
type SubscriptionPlan struct {
	Versioned bool
	Snapshot  providers.Subscription
	Deleted   bool
	// ReadSeq is the projection's write_seq when the attempt began (0: none).
	ReadSeq int64
	Current *ledger.Projection
	Fetched time.Time
	// Gap is the divergence of a version jump (versioned events only).
	Gap *keys.Divergence
}

// Handle applies a customer.subscription.* event.
func (s *Subscriptions) Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error) {
	plan, err := s.Prepare(ctx, ev)
	if err != nil {
		return Outcome{}, err
	}
	out, err := s.Commit(ctx, ev, plan)
	out.BusinessKey = "projection/" + ev.Resource().String()
	return out, err
}

// Prepare reads what the write will be checked against, then gets the
// state to write: the event's own snapshot when it is versioned, else the
// provider's current subscription. No transaction is open meanwhile.
func (s *Subscriptions) Prepare(ctx context.Context, ev *inbox.StoredEvent) (SubscriptionPlan, error) {
	plan := SubscriptionPlan{Deleted: ev.EventType == "customer.subscription.deleted"}
	if ev.ProviderVersion != nil {
		return s.prepareVersioned(ctx, ev, plan)
	}
	cur, err := s.projection(ctx, ev)
	if err != nil {
		return plan, err
	}
	if cur != nil {
		plan.Current, plan.ReadSeq = cur, cur.WriteSeq
	}
	snap, err := s.fetch(ctx, ev)
	if err != nil {
		return plan, err
	}
	plan.Snapshot, plan.Fetched = snap, time.Now()
	// A deletion notice is a tombstone only if the provider agrees.
	plan.Deleted = plan.Deleted && snap.Status == subCanceled
	return plan, nil
}

// projection is the stored projection of ev's subscription, nil if none.
func (s *Subscriptions) projection(ctx context.Context, ev *inbox.StoredEvent) (*ledger.Projection, error) {
	cur, err := ledger.GetProjection(ctx, s.Store.Pool, ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.ResourceID)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, nil
	}
	return cur, err
}

// fetch reads ev's subscription from the provider, which must answer for
// that subscription.
func (s *Subscriptions) fetch(ctx context.Context, ev *inbox.StoredEvent) (providers.Subscription, error) {
	client, err := s.Providers.For(ctx, ev.EndpointSlug)
	if err != nil {
		return providers.Subscription{}, err
	}
	snap, err := client.FetchSubscription(ctx, ev.Key.Account, ev.ResourceID)
	if err != nil {
		return providers.Subscription{}, providerErr(err)
	}
	if snap.ID != ev.ResourceID {
		return providers.Subscription{}, fault.Permanent(fmt.Errorf("provider answered subscription %q for %q", snap.ID, ev.ResourceID))
	}
	return snap, nil
}

// prepareVersioned plans a versioned event: its own snapshot, unless the
// version jumps past the stored one by more than one (seed 004: with
// partial changes, skipped versions hide facts) or its payload was erased.
// Then the current subscription is fetched and written, still guarded by
// its version, and a jump is recorded as a divergence.
func (s *Subscriptions) prepareVersioned(ctx context.Context, ev *inbox.StoredEvent, plan SubscriptionPlan) (SubscriptionPlan, error) {
	v := *ev.ProviderVersion
	plan.Versioned = true
	cur, err := s.projection(ctx, ev)
	if err != nil {
		return plan, err
	}
	plan.Current = cur
	var snap providers.Subscription
	haveSnap := len(ev.Payload) > 0
	if haveSnap {
		if snap, err = stripe.SubscriptionFromEvent(ev.Key.Account, ev.Payload); err != nil {
			return plan, fault.Permanent(err)
		}
		if snap.ID != ev.ResourceID {
			return plan, fault.Permanent(fmt.Errorf("event snapshot is subscription %q, resource is %q", snap.ID, ev.ResourceID))
		}
		snap.Version, snap.HasVersion = v, true
	}
	gap := cur != nil && cur.Version != nil && v > *cur.Version+1
	if haveSnap && !gap {
		plan.Snapshot = snap
		return plan, nil
	}
	if gap {
		plan.Gap = &keys.Divergence{Field: "version_gap", LocalValue: fmt.Sprint(*cur.Version), ProviderValue: fmt.Sprint(v)}
	}
	fetched, err := s.fetch(ctx, ev)
	if err != nil {
		return plan, err
	}
	if !fetched.HasVersion {
		// The API does not say its version: the event's is the most that
		// can be claimed for it.
		fetched.Version, fetched.HasVersion = v, true
	}
	plan.Fetched = time.Now()
	plan.Snapshot = fetched
	if haveSnap && fetched.Version < v {
		plan.Snapshot = snap // the API lags behind the event: the event's snapshot is newer
	}
	plan.Deleted = plan.Deleted && plan.Snapshot.Status == subCanceled
	return plan, nil
}

// Commit writes the plan in the event's one transaction.
func (s *Subscriptions) Commit(ctx context.Context, ev *inbox.StoredEvent, plan SubscriptionPlan) (Outcome, error) {
	p := projectionOf(ev, plan)
	return InPendingTx(ctx, s.Store, ev.Key, func(tx pgx.Tx, _ *inbox.StoredEvent) (Outcome, error) {
		if plan.Versioned {
			applied, err := ledger.WriteProjectionIfNewer(ctx, tx, p)
			if err != nil {
				return Outcome{}, err
			}
			if g := plan.Gap; g != nil {
				g.Corrected = applied
				if err := passes.InsertDivergences(ctx, tx, ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.ResourceKind,
					ev.ResourceID, "version gap: "+ev.Key.String(), []keys.Divergence{*g}); err != nil {
					return Outcome{}, err
				}
				if applied {
					return Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("version jumped v%s→v%s: fetched and applied v%d (%s)",
						g.LocalValue, g.ProviderValue, *p.Version, p.State.Status)}, nil
				}
			}
			if !applied {
				return s.notApplied(ctx, tx, ev, p)
			}
			return Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("applied snapshot v%d (%s)", *p.Version, p.State.Status)}, nil
		}
		if note, ok := s.keep(ev.Key.String(), plan, p); ok {
			return Outcome{Status: keys.StatusDone, Note: note}, nil
		}
		applied, err := ledger.WriteProjectionCAS(ctx, tx, p, plan.ReadSeq)
		if err != nil {
			return Outcome{}, err
		}
		if !applied {
			return Outcome{}, errLostRace
		}
		return Outcome{Status: keys.StatusDone, Note: "fetched and wrote " + p.State.Status}, nil
	})
}

// notApplied explains a versioned snapshot the projection did not take, in
// the event's transaction. An older version, or a canceled projection, is
// the rule working. The same version with other content is the provider
// contradicting itself (seed 004: investigate, do not overwrite): each
// differing field is recorded as a same-version divergence, and the note
// says so.
func (s *Subscriptions) notApplied(ctx context.Context, tx pgx.Tx, ev *inbox.StoredEvent, p ledger.Projection) (Outcome, error) {
	cur, err := ledger.GetProjection(ctx, tx, p.Provider, p.Account, p.Environment, p.ResourceID)
	if err != nil {
		return Outcome{}, err
	}
	switch {
	case cur.Version == nil || *cur.Version != *p.Version:
		stored := "unversioned"
		if cur.Version != nil {
			stored = fmt.Sprintf("v%d", *cur.Version)
		}
		return Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("snapshot v%d not applied: the projection is at %s (%s)",
			*p.Version, stored, cur.State.Status)}, nil
	}
	var divs []keys.Divergence
	for _, d := range diffProjection(cur, p) {
		if d.Field != "version" {
			d.SameVersion = true
			divs = append(divs, d)
		}
	}
	if len(divs) == 0 {
		return Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("snapshot v%d already applied", *p.Version)}, nil
	}
	r := ev.Resource()
	if err := passes.InsertDivergences(ctx, tx, r.Provider, r.Account, r.Environment, r.Kind, r.ID, ev.Key.String(), divs); err != nil {
		return Outcome{}, err
	}
	changes := make([]string, len(divs))
	for i, d := range divs {
		changes[i] = fmt.Sprintf("%s %s → %s", d.Field, orNone(d.LocalValue), orNone(d.ProviderValue))
	}
	s.log().Warn("a snapshot differs from the projection at the same provider version; kept the projection, recorded the divergence",
		"event_key", ev.Key.String(), "subscription", p.ResourceID, "version", *p.Version, "fields", len(divs))
	return Outcome{Status: keys.StatusDone, Divergences: divs, Note: fmt.Sprintf(
		"snapshot v%d differs from the stored v%d (%s): not applied, same-version divergence recorded; investigate with the provider",
		*p.Version, *cur.Version, strings.Join(changes, ", "))}, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// keep reports whether a fetched state must not be written over the
// current projection, and why: a canceled subscription is terminal, and a
// fetch older (by version) than what is stored is stale.
func (s *Subscriptions) keep(by string, plan SubscriptionPlan, p ledger.Projection) (string, bool) {
	c := plan.Current
	if c == nil {
		return "", false
	}
	if c.State.Status == subCanceled && p.State.Status != subCanceled {
		s.log().Warn("provider answered a non-canceled state for a canceled subscription; kept canceled",
			"by", by, "subscription", p.ResourceID, "fetched_status", p.State.Status)
		return "fetched " + p.State.Status + " for a canceled subscription: kept canceled", true
	}
	if c.Version != nil && p.Version != nil && *p.Version < *c.Version {
		return fmt.Sprintf("fetched v%d is older than stored v%d", *p.Version, *c.Version), true
	}
	return "", false
}

// Reconcile compares the projection with the provider's current state and
// corrects it through the same compare-and-set as notices, recording every
// divergence (SPEC R19). It runs inside the resource's workflow, so it never
// races that resource's events.
func (s *Subscriptions) Reconcile(ctx context.Context, r keys.Resource, reason string) (ports.ReconcileOutcome, error) {
	ep, err := endpoints.FindAPIEndpoint(ctx, s.Store.Pool, r.Provider, r.Account, r.Environment)
	if errors.Is(err, fault.ErrNotFound) {
		return ports.ReconcileOutcome{}, fault.Permanent(fmt.Errorf("no %s endpoint with an API key links account %s (%s)", r.Provider, r.Account, r.Environment))
	}
	if err != nil {
		return ports.ReconcileOutcome{}, err
	}
	var plan SubscriptionPlan
	cur, err := ledger.GetProjection(ctx, s.Store.Pool, r.Provider, r.Account, r.Environment, r.ID)
	switch {
	case errors.Is(err, fault.ErrNotFound):
	case err != nil:
		return ports.ReconcileOutcome{}, err
	default:
		plan.Current, plan.ReadSeq = cur, cur.WriteSeq
	}
	client, err := s.Providers.For(ctx, ep.Slug)
	if err != nil {
		return ports.ReconcileOutcome{}, err
	}
	snap, err := client.FetchSubscription(ctx, r.Account, r.ID)
	if err != nil {
		return ports.ReconcileOutcome{}, providerErr(err)
	}
	plan.Snapshot, plan.Fetched = snap, time.Now()
	by := "reconcile: " + reason
	// The projection keeps its workspace: the endpoint asked is only the
	// one whose API key serves the account, and an account linked on
	// several endpoints (before such links had to agree) may map to another
	// workspace there. Only a new projection takes the endpoint's.
	workspace := ep.WorkspaceID
	if cur != nil {
		workspace = cur.WorkspaceID
	}
	p := projectionFor(r, workspace, by, plan)
	divs := diffProjection(cur, p)
	if len(divs) == 0 {
		return ports.ReconcileOutcome{Note: "in sync"}, nil
	}
	note, keep := s.keep(by, plan, p)
	err = s.Store.Tx(ctx, func(tx pgx.Tx) error {
		if !keep {
			applied, err := ledger.WriteProjectionCAS(ctx, tx, p, plan.ReadSeq)
			if err != nil {
				return err
			}
			if !applied {
				return errLostRace
			}
		}
		for i := range divs {
			divs[i].Corrected = !keep
		}
		return passes.InsertDivergences(ctx, tx, r.Provider, r.Account, r.Environment, r.Kind, r.ID, by, divs)
	})
	if err != nil {
		return ports.ReconcileOutcome{}, err
	}
	if keep {
		return ports.ReconcileOutcome{Divergences: divs, Note: note}, nil
	}
	return ports.ReconcileOutcome{Divergences: divs, Note: fmt.Sprintf("corrected %d field(s)", len(divs))}, nil
}

// DifferingSubscriptions reports, by id, whether each listed subscription
// of the scope differs from its projection or has none (ports.Projections):
// what a reconciliation page signals.
func (s *Subscriptions) DifferingSubscriptions(ctx context.Context, sc keys.Scope, listed []providers.Subscription) (map[string]bool, error) {
	ids := make([]string, len(listed))
	for i, sub := range listed {
		ids[i] = sub.ID
	}
	local, err := ledger.GetProjections(ctx, s.Store.Pool, sc.Provider, sc.Account, sc.Environment, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(listed))
	for _, sub := range listed {
		r := keys.Resource{Provider: sc.Provider, Account: sc.Account, Environment: sc.Environment, Kind: "subscription", ID: sub.ID}
		listed := projectionFor(r, sc.WorkspaceID, "", SubscriptionPlan{Snapshot: sub})
		out[sub.ID] = len(diffProjection(local[sub.ID], listed)) > 0
	}
	return out, nil
}

// diffProjection lists the fields where the stored projection and the
// provider's state differ.
func diffProjection(cur *ledger.Projection, p ledger.Projection) []keys.Divergence {
	if cur == nil {
		return []keys.Divergence{{Field: "missing", ProviderValue: p.State.Status}}
	}
	var out []keys.Divergence
	add := func(field, local, remote string) {
		if local != remote {
			out = append(out, keys.Divergence{Field: field, LocalValue: local, ProviderValue: remote})
		}
	}
	add("status", cur.State.Status, p.State.Status)
	add("cancel_at_period_end", fmt.Sprint(cur.State.CancelAtPeriodEnd), fmt.Sprint(p.State.CancelAtPeriodEnd))
	add("current_period_end", fmtTime(cur.State.CurrentPeriodEnd), fmtTime(p.State.CurrentPeriodEnd))
	add("ended_at", fmtTime(cur.State.EndedAt), fmtTime(p.State.EndedAt))
	if cur.Version != nil && p.Version != nil {
		add("version", fmt.Sprint(*cur.Version), fmt.Sprint(*p.Version))
	}
	return out
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Subscriptions) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func projectionOf(ev *inbox.StoredEvent, plan SubscriptionPlan) ledger.Projection {
	return projectionFor(ev.Resource(), ev.WorkspaceID, ev.Key.String(), plan)
}

func projectionFor(r keys.Resource, workspace, writtenBy string, plan SubscriptionPlan) ledger.Projection {
	snap := plan.Snapshot
	st := ledger.SubscriptionState{
		Status: snap.Status, Customer: snap.Customer, CancelAtPeriodEnd: snap.CancelAtPeriodEnd,
		CurrentPeriodEnd: timePtr(snap.CurrentPeriodEnd), CanceledAt: timePtr(snap.CanceledAt), EndedAt: timePtr(snap.EndedAt),
	}
	p := ledger.Projection{
		Provider: r.Provider, Account: r.Account, Environment: r.Environment, ResourceID: r.ID,
		WorkspaceID: workspace, State: st, Deleted: plan.Deleted, WrittenBy: writtenBy,
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
func AccessRule(st ledger.SubscriptionState) (access bool, endsAt *time.Time) {
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
