// Package subscriptions is hookinbox's built-in subscriptions domain (seed
// 004): a local projection of each Stripe subscription's current state that
// never goes backwards (a stale "active" must never undo a later
// cancellation), the access rule derived from it, and its reconciliation
// with the provider. It is written on the public API alone (package
// hookinbox), as a team's own domain would be.
package subscriptions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/subscriptions/schema"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

// Name is the handler's name: its metrics label and inbox route.
const Name = "subscriptions"

// Types are the Stripe event types the projection follows.
var Types = []string{
	"customer.subscription.created",
	"customer.subscription.updated",
	"customer.subscription.deleted",
	"customer.subscription.paused",
	"customer.subscription.resumed",
	"customer.subscription.pending_update_applied",
	"customer.subscription.pending_update_expired",
}

// Subscription statuses that matter to the access rule.
const (
	statusActive   = "active"
	statusTrialing = "trialing"
	statusPastDue  = "past_due"
	// StatusCanceled is terminal: no later snapshot brings a canceled
	// subscription back (SPEC F6).
	StatusCanceled = "canceled"
)

// Register adds the subscriptions domain to app: its tables (package
// schema), the projection's handler for Types and its reconciler of
// the "subscription" kind.
func Register(app *hookinbox.App, logger *slog.Logger) *Subscriptions {
	s := &Subscriptions{Logger: logger}
	// The domain's own tables, its migration set (schema).
	app.Use(hookinbox.WithMigrations(schema.Name, schema.FS(), schema.Tables()...))
	for _, typ := range Types {
		app.Handle("stripe", typ, s, hookinbox.Name(Name))
	}
	app.Reconcile("subscription", s)
	return s
}

// errLostRace: the projection changed between this attempt's read and its
// write, so its fetch may be older than what is stored. Retried: the next
// attempt reads and fetches again.
var errLostRace = errors.New("the projection changed after this attempt read it (a newer write won); fetching again")

// Subscriptions keeps subscription_projection current and never backwards
// (SPEC R15). With a provider version the event's snapshot is applied only
// if newer (the comparison is part of the write, Tx.WriteNewer). Without one
// (Stripe's default) the event is a notice: read the projection's write
// sequence, fetch the current subscription, then write fenced on that
// sequence (Tx.WriteFenced), so a stale attempt's write is discarded.
// Access is derived by the product rule.
type Subscriptions struct {
	Logger *slog.Logger
}

var _ hookinbox.SubscriptionLister = (*Subscriptions)(nil)

// Plan is what an attempt read and fetched, before it writes.
type Plan struct {
	Versioned bool
	Snapshot  providers.Subscription
	Deleted   bool
	// ReadSeq is the projection's write_seq when the attempt began (0: none).
	ReadSeq int64
	Current *Projection
	Fetched time.Time
	// Gap is the divergence of a version jump (versioned events only).
	Gap *hookintype.Divergence
}

// Handle applies a customer.subscription.* event.
func (s *Subscriptions) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	plan, err := s.Prepare(ctx, ev)
	if err != nil {
		return hookinbox.Result{}, err
	}
	res, err := s.Commit(ctx, ev, plan)
	res.BusinessKey = "projection/" + ev.Resource.String()
	return res, err
}

// Prepare reads what the write will be checked against, then gets the
// state to write: the event's own snapshot when it is versioned, else the
// provider's current subscription. No transaction is open meanwhile.
func (s *Subscriptions) Prepare(ctx context.Context, ev *hookinbox.Event) (Plan, error) {
	plan := Plan{Deleted: ev.RouteType == "customer.subscription.deleted"}
	if ev.Version != nil {
		return s.prepareVersioned(ctx, ev, plan)
	}
	cur, err := Get(ctx, ev.DB(), ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.Resource.ID)
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
	plan.Deleted = plan.Deleted && snap.Status == StatusCanceled
	return plan, nil
}

// fetch reads ev's subscription from the provider, which must answer for
// that subscription.
func (s *Subscriptions) fetch(ctx context.Context, ev *hookinbox.Event) (providers.Subscription, error) {
	client, err := ev.Client(ctx)
	if err != nil {
		return providers.Subscription{}, err
	}
	snap, err := client.FetchSubscription(ctx, ev.Key.Account, ev.Resource.ID)
	if err != nil {
		return providers.Subscription{}, err
	}
	if snap.ID != ev.Resource.ID {
		return providers.Subscription{}, hookinbox.Permanent(fmt.Errorf("provider answered subscription %q for %q", snap.ID, ev.Resource.ID))
	}
	return snap, nil
}

// prepareVersioned plans a versioned event: its own snapshot, unless the
// version jumps past the stored one by more than one (seed 004: with
// partial changes, skipped versions hide facts) or its payload was erased.
// Then the current subscription is fetched and written, still guarded by
// its version, and a jump is recorded as a divergence.
func (s *Subscriptions) prepareVersioned(ctx context.Context, ev *hookinbox.Event, plan Plan) (Plan, error) {
	v := *ev.Version
	plan.Versioned = true
	cur, err := Get(ctx, ev.DB(), ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.Resource.ID)
	if err != nil {
		return plan, err
	}
	plan.Current = cur
	var snap providers.Subscription
	haveSnap := len(ev.Payload) > 0
	if haveSnap {
		if snap, err = stripe.SubscriptionFromEvent(ev.Key.Account, ev.Payload); err != nil {
			return plan, hookinbox.Permanent(err)
		}
		if snap.ID != ev.Resource.ID {
			return plan, hookinbox.Permanent(fmt.Errorf("event snapshot is subscription %q, resource is %q", snap.ID, ev.Resource.ID))
		}
		snap.Version, snap.HasVersion = v, true
	}
	gap := cur != nil && cur.Version != nil && v > *cur.Version+1
	if haveSnap && !gap {
		plan.Snapshot = snap
		return plan, nil
	}
	if gap {
		plan.Gap = &hookintype.Divergence{Field: "version_gap", LocalValue: fmt.Sprint(*cur.Version), ProviderValue: fmt.Sprint(v)}
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
	plan.Deleted = plan.Deleted && plan.Snapshot.Status == StatusCanceled
	return plan, nil
}

// Commit writes the plan in the event's one transaction.
func (s *Subscriptions) Commit(ctx context.Context, ev *hookinbox.Event, plan Plan) (hookinbox.Result, error) {
	workspace := ev.Workspace
	if plan.Versioned && plan.Current != nil {
		// A versioned snapshot updates the state, never whose projection it
		// is: an account relinked to another workspace keeps its rows'.
		workspace = plan.Current.WorkspaceID
	}
	p := projectionFor(ev.Resource, workspace, ev.Key.String(), plan)
	row, err := p.row()
	if err != nil {
		return hookinbox.Result{}, err
	}
	return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		if plan.Versioned {
			applied, err := tx.WriteNewer(ctx, Table, row)
			if err != nil {
				return hookinbox.Result{}, err
			}
			if g := plan.Gap; g != nil {
				g.Corrected = applied
				if err := tx.Diverged(ctx, "version gap: "+ev.Key.String(), *g); err != nil {
					return hookinbox.Result{}, err
				}
				if applied {
					return hookinbox.Result{Note: fmt.Sprintf("version jumped v%s→v%s: fetched and applied v%d (%s)",
						g.LocalValue, g.ProviderValue, *p.Version, p.State.Status)}, nil
				}
			}
			if !applied {
				return s.notApplied(ctx, tx, ev, p)
			}
			return hookinbox.Result{Note: fmt.Sprintf("applied snapshot v%d (%s)", *p.Version, p.State.Status)}, nil
		}
		if note, ok := s.keep(ev.Key.String(), plan, p); ok {
			return hookinbox.Result{Note: note}, nil
		}
		applied, err := tx.WriteFenced(ctx, Table, row, plan.ReadSeq)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !applied {
			return hookinbox.Result{}, errLostRace
		}
		return hookinbox.Result{Note: "fetched and wrote " + p.State.Status}, nil
	})
}

// notApplied explains a versioned snapshot the projection did not take, in
// the event's transaction. An older version, or a canceled projection, is
// the rule working. The same version with other content is the provider
// contradicting itself (seed 004: investigate, do not overwrite): each
// differing field is recorded as a same-version divergence, and the note
// says so.
func (s *Subscriptions) notApplied(ctx context.Context, tx *hookinbox.Tx, ev *hookinbox.Event, p Projection) (hookinbox.Result, error) {
	cur, err := Get(ctx, tx.Conn(), p.Provider, p.Account, p.Environment, p.ResourceID)
	if err != nil {
		return hookinbox.Result{}, err
	}
	if cur == nil {
		return hookinbox.Result{}, fmt.Errorf("projection of %s: not written, yet not there", p.ResourceID)
	}
	if cur.Version == nil || *cur.Version != *p.Version {
		stored := "unversioned"
		if cur.Version != nil {
			stored = fmt.Sprintf("v%d", *cur.Version)
		}
		return hookinbox.Result{Note: fmt.Sprintf("snapshot v%d not applied: the projection is at %s (%s)",
			*p.Version, stored, cur.State.Status)}, nil
	}
	var divs []hookintype.Divergence
	for _, d := range diffProjection(cur, p) {
		if d.Field != "version" {
			d.SameVersion = true
			divs = append(divs, d)
		}
	}
	if len(divs) == 0 {
		return hookinbox.Result{Note: fmt.Sprintf("snapshot v%d already applied", *p.Version)}, nil
	}
	if err := tx.Diverged(ctx, ev.Key.String(), divs...); err != nil {
		return hookinbox.Result{}, err
	}
	changes := make([]string, len(divs))
	for i, d := range divs {
		changes[i] = fmt.Sprintf("%s %s → %s", d.Field, orNone(d.LocalValue), orNone(d.ProviderValue))
	}
	s.log().Warn("a snapshot differs from the projection at the same provider version; kept the projection, recorded the divergence",
		"event_key", ev.Key.String(), "subscription", p.ResourceID, "version", *p.Version, "fields", len(divs))
	return hookinbox.Result{Divergences: divs, Note: fmt.Sprintf(
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
func (s *Subscriptions) keep(by string, plan Plan, p Projection) (string, bool) {
	c := plan.Current
	if c == nil {
		return "", false
	}
	if c.State.Status == StatusCanceled && p.State.Status != StatusCanceled {
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
// corrects it through the same fenced write as notices, recording every
// divergence (SPEC R19). It runs inside the resource's workflow, so it never
// races that resource's events.
func (s *Subscriptions) Reconcile(ctx context.Context, rc *hookinbox.Reconciliation) (hookinbox.ReconcileResult, error) {
	r := rc.Resource
	var plan Plan
	cur, err := Get(ctx, rc.DB(), r.Provider, r.Account, r.Environment, r.ID)
	if err != nil {
		return hookinbox.ReconcileResult{}, err
	}
	if cur != nil {
		plan.Current, plan.ReadSeq = cur, cur.WriteSeq
	}
	client, err := rc.Client(ctx)
	if err != nil {
		return hookinbox.ReconcileResult{}, err
	}
	snap, err := client.FetchSubscription(ctx, r.Account, r.ID)
	if err != nil {
		return hookinbox.ReconcileResult{}, err
	}
	plan.Snapshot, plan.Fetched = snap, time.Now()
	by := "reconcile: " + rc.Reason
	// The projection keeps its workspace: the endpoint asked is only the
	// one whose API key serves the account, and an account linked on
	// several endpoints (before such links had to agree) may map to another
	// workspace there. Only a new projection takes the endpoint's.
	workspace := rc.Workspace
	if cur != nil {
		workspace = cur.WorkspaceID
	}
	p := projectionFor(r, workspace, by, plan)
	divs := diffProjection(cur, p)
	if len(divs) == 0 {
		return hookinbox.ReconcileResult{Note: "in sync"}, nil
	}
	note, keep := s.keep(by, plan, p)
	row, err := p.row()
	if err != nil {
		return hookinbox.ReconcileResult{}, err
	}
	err = rc.Commit(ctx, func(tx *hookinbox.Tx) error {
		if !keep {
			applied, err := tx.WriteFenced(ctx, Table, row, plan.ReadSeq)
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
		return tx.Diverged(ctx, by, divs...)
	})
	if err != nil {
		return hookinbox.ReconcileResult{}, err
	}
	if keep {
		return hookinbox.ReconcileResult{Divergences: divs, Note: note}, nil
	}
	return hookinbox.ReconcileResult{Divergences: divs, Note: fmt.Sprintf("corrected %d field(s)", len(divs))}, nil
}

// DifferingSubscriptions reports, by id, whether each listed subscription
// of the scope differs from its projection or has none: what a
// reconciliation page signals.
func (s *Subscriptions) DifferingSubscriptions(ctx context.Context, db hookinbox.DB, sc hookintype.Scope, listed []providers.Subscription) (map[string]bool, error) {
	ids := make([]string, len(listed))
	for i, sub := range listed {
		ids[i] = sub.ID
	}
	local, err := List(ctx, db, sc.Provider, sc.Account, sc.Environment, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(listed))
	for _, sub := range listed {
		r := hookintype.Resource{Provider: sc.Provider, Account: sc.Account, Environment: sc.Environment, Kind: "subscription", ID: sub.ID}
		listed := projectionFor(r, sc.WorkspaceID, "", Plan{Snapshot: sub})
		out[sub.ID] = len(diffProjection(local[sub.ID], listed)) > 0
	}
	return out, nil
}

// diffProjection lists the fields where the stored projection and the
// provider's state differ.
func diffProjection(cur *Projection, p Projection) []hookintype.Divergence {
	if cur == nil {
		return []hookintype.Divergence{{Field: "missing", ProviderValue: p.State.Status}}
	}
	var out []hookintype.Divergence
	add := func(field, local, remote string) {
		if local != remote {
			out = append(out, hookintype.Divergence{Field: field, LocalValue: local, ProviderValue: remote})
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

func projectionFor(r hookintype.Resource, workspace, writtenBy string, plan Plan) Projection {
	snap := plan.Snapshot
	st := State{
		Status: snap.Status, Customer: snap.Customer, CancelAtPeriodEnd: snap.CancelAtPeriodEnd,
		CurrentPeriodEnd: timePtr(snap.CurrentPeriodEnd), CanceledAt: timePtr(snap.CanceledAt), EndedAt: timePtr(snap.EndedAt),
	}
	p := Projection{
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
func AccessRule(st State) (access bool, endsAt *time.Time) {
	switch st.Status {
	case statusActive, statusTrialing, statusPastDue:
		if st.CancelAtPeriodEnd {
			return true, st.CurrentPeriodEnd
		}
		return true, nil
	case StatusCanceled:
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
