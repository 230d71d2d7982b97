package engine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Env is what handlers and reconcilers reach the world with: the worker's
// store (its role's connections) and the endpoints' provider API clients.
type Env struct {
	Store     *store.Store
	Providers *EndpointProviders
}

// Call is one handling of one pending inbox event.
type Call struct {
	Env
	Event *inbox.StoredEvent
	// Route is the event's route (its handler name, budget, resource rule).
	Route routes.Route
}

// Handler applies the business effect of one inbox event. It runs outside
// any transaction, may call the provider's API first, and then commits its
// effect together with the inbox row's completion in ONE transaction,
// normally through InPendingTx. Return fault.Permanent(err) for an event
// that can never succeed, fault.Wait to wait for another fact; any other
// error is retried.
type Handler interface {
	Handle(ctx context.Context, c *Call) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Call) (Outcome, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, c *Call) (Outcome, error) {
	return f(ctx, c)
}

// Reconciler compares one resource with the provider and corrects the
// local state, recording divergences (bound to an Env it is a
// ports.Reconciler).
type Reconciler interface {
	Reconcile(ctx context.Context, env Env, r keys.Resource, reason string) (ports.ReconcileOutcome, error)
}

// Lister compares a reconciliation page of listed subscriptions with the
// local projections (bound to an Env it is a ports.Projections).
type Lister interface {
	DifferingSubscriptions(ctx context.Context, env Env, scope keys.Scope, listed []providers.Subscription) (map[string]bool, error)
}

// BindReconciler binds r to env.
func BindReconciler(r Reconciler, env Env) ports.Reconciler { return boundReconciler{r, env} }

type boundReconciler struct {
	r   Reconciler
	env Env
}

func (b boundReconciler) Reconcile(ctx context.Context, r keys.Resource, reason string) (ports.ReconcileOutcome, error) {
	return b.r.Reconcile(ctx, b.env, r, reason)
}

// BindLister binds l to env.
func BindLister(l Lister, env Env) ports.Projections { return boundLister{l, env} }

type boundLister struct {
	l   Lister
	env Env
}

func (b boundLister) DifferingSubscriptions(ctx context.Context, sc keys.Scope, listed []providers.Subscription) (map[string]bool, error) {
	return b.l.DifferingSubscriptions(ctx, b.env, sc, listed)
}

// Set holds the handler instances by route name.
type Set map[string]Handler

// Outcome is what a handler did.
type Outcome struct {
	// Status the row ended in: done or ignored, or the status it already
	// had when another attempt completed it first.
	Status string
	// Note says what happened, for the row and the logs.
	Note string
	// BusinessKey names the business operation the event mapped to (a
	// grant, a projection, an alert), for the logs.
	BusinessKey string
	// Outbox lists the outbox rows the effect produced, to be sent after
	// the commit.
	Outbox []int64
	// Divergences the handler recorded (a snapshot whose content differs
	// from the stored one at the same provider version), for the metrics.
	Divergences []keys.Divergence
	// Woken lists the resources whose waiting rows the effect's commit
	// made due now (inbox.WakeResource woke at least one): the event's own
	// resource is loaded again by its workflow, another one's doorbell is
	// rung.
	Woken []keys.Resource
	// Completed lists other pending rows of the event's resource that the
	// effect's commit completed (the events a coalesced forward covered):
	// the workflow need not attempt them.
	Completed []keys.Event
}

// InPendingTx runs fn in one transaction holding the event's inbox row
// locked, only if the row is still pending, and completes the row with the
// status fn returns in the same transaction. If the row is already final
// (another attempt won), fn is not called and that status is returned: a
// retry never overwrites a completion committed elsewhere.
func InPendingTx(ctx context.Context, st *store.Store, k keys.Event, fn func(tx pgx.Tx, ev *inbox.StoredEvent) (Outcome, error)) (Outcome, error) {
	var out Outcome
	err := st.Tx(ctx, func(tx pgx.Tx) error {
		ev, err := inbox.LockInboxEvent(ctx, tx, k)
		if err != nil {
			return err
		}
		if ev.Status != keys.StatusPending {
			out = Outcome{Status: ev.Status, Note: "already " + ev.Status}
			return nil
		}
		out, err = fn(tx, ev)
		if err != nil {
			return err
		}
		if out.Status == "" {
			out.Status = keys.StatusDone
		}
		_, err = inbox.CompleteInboxEvent(ctx, tx, k, out.Status, out.Note)
		return err
	})
	return out, err
}
