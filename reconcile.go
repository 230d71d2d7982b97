package hookinbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// Reconciler compares one resource with the provider and corrects the
// local state, recording what differed. It runs inside the
// resource's own workflow, between its events, so a reconciliation never
// races them. Register it with App.Reconcile.
type Reconciler interface {
	Reconcile(ctx context.Context, rc *Reconciliation) (ReconcileResult, error)
}

// ReconcileResult is what a reconciliation found and did.
type ReconcileResult struct {
	Note        string
	Divergences []hookintype.Divergence
}

// Reconciliation is one request to reconcile a resource.
type Reconciliation struct {
	Resource hookintype.Resource
	// Reason says who asked (the schedule, an operator).
	Reason string
	// Endpoint is the endpoint whose API key serves the resource's
	// account; Workspace the account's workspace there.
	Endpoint  string
	Workspace string

	env engine.Env
}

// Client is the provider's API client of Endpoint.
func (rc *Reconciliation) Client(ctx context.Context) (providers.Client, error) {
	return rc.env.Providers.For(ctx, rc.Endpoint)
}

// DB reads outside the transaction.
func (rc *Reconciliation) DB() DB { return rc.env.Store.Pool }

// Commit runs fn in one transaction (a correction and its divergences).
func (rc *Reconciliation) Commit(ctx context.Context, fn func(tx *Tx) error) error {
	return rc.env.Store.Tx(ctx, func(ptx pgx.Tx) error {
		return fn(&Tx{tx: ptx, rc: rc})
	})
}

// SubscriptionLister is a Reconciler of subscriptions that also compares a
// page of the provider's subscriptions listing with the local state: the
// reconciliation pass then reconciles only the subscriptions that differ.
type SubscriptionLister interface {
	Reconciler
	DifferingSubscriptions(ctx context.Context, db DB, scope hookintype.Scope, listed []providers.Subscription) (map[string]bool, error)
}

type reconcileAdapter struct{ r Reconciler }

func (a reconcileAdapter) Reconcile(ctx context.Context, env engine.Env, r hookintype.Resource, reason string) (ports.ReconcileOutcome, error) {
	ep, err := endpoints.FindAPIEndpoint(ctx, env.Store.Pool, r.Provider, r.Account, r.Environment)
	if errors.Is(err, fault.ErrNotFound) {
		return ports.ReconcileOutcome{}, fault.Permanent(fmt.Errorf("no %s endpoint with an API key links account %s (%s)", r.Provider, r.Account, r.Environment))
	}
	if err != nil {
		return ports.ReconcileOutcome{}, err
	}
	res, err := a.r.Reconcile(ctx, &Reconciliation{Resource: r, Reason: reason, Endpoint: ep.Slug, Workspace: ep.WorkspaceID, env: env})
	return ports.ReconcileOutcome{Note: res.Note, Divergences: res.Divergences}, err
}

type listerAdapter struct{ l SubscriptionLister }

func (a listerAdapter) DifferingSubscriptions(ctx context.Context, env engine.Env, sc hookintype.Scope, listed []providers.Subscription) (map[string]bool, error) {
	return a.l.DifferingSubscriptions(ctx, env.Store.Pool, sc, listed)
}
