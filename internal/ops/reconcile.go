package ops

import (
	"context"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/passes"
)

// What an operator's reconciliation needs from the store: the resource a
// subscription of an endpoint is, and the accounts a pass covers. The
// reconciliation itself runs in Temporal (the resource workflow, or a
// pass workflow).

// SubscriptionResource is the resource of subscription sub of endpoint
// slug's account (default: the endpoint's own account), with the
// endpoint's provider and environment.
func (s *Service) SubscriptionResource(ctx context.Context, slug, account, sub string) (keys.Resource, error) {
	var r keys.Resource
	ep, err := s.ShowEndpoint(ctx, slug)
	if IsNotFound(err) {
		return r, Invalidf("no endpoint %q", slug)
	}
	if err != nil {
		return r, err
	}
	if account == "" {
		var ok bool
		if account, ok = ep.OwnAccount(); !ok {
			return r, Invalidf("endpoint %s has no own account and several linked ones: give --account", ep.Slug)
		}
	}
	return keys.Resource{Provider: ep.Provider, Account: account, Environment: ep.Environment, Kind: "subscription", ID: sub}, nil
}

// SubscriptionScopes are the accounts a subscriptions reconciliation pass
// over endpoint covers (every endpoint when ""): one per linked account and
// environment of the Stripe endpoints that have an API key.
func (s *Service) SubscriptionScopes(ctx context.Context, endpoint string) ([]keys.Scope, error) {
	return passes.ListScopes(ctx, s.Store.Pool, keys.ProviderStripe, endpoint)
}
