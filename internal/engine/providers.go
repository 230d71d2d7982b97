package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all" // the registry the clients come from
)

// Providers gives handlers the API client of the endpoint an event came
// through (each endpoint has its own API base URL and key).
type Providers interface {
	For(ctx context.Context, endpointSlug string) (providers.Client, error)
}

// EndpointProviders builds clients from the endpoint registry, cached for a
// short while so a rotated API key is picked up.
type EndpointProviders struct {
	Store *store.Store
	TTL   time.Duration

	mu    sync.Mutex
	cache map[string]cachedClient
}

type cachedClient struct {
	client providers.Client
	at     time.Time
}

// For returns the endpoint's client. An endpoint without an API key cannot
// be asked anything: that is a permanent error until an operator adds one.
func (p *EndpointProviders) For(ctx context.Context, slug string) (providers.Client, error) {
	ttl := p.TTL
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	p.mu.Lock()
	if c, ok := p.cache[slug]; ok && time.Since(c.at) < ttl {
		p.mu.Unlock()
		return c.client, nil
	}
	p.mu.Unlock()
	ep, err := endpoints.GetProviderEndpoint(ctx, p.Store, slug)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fault.Permanent(fmt.Errorf("endpoint %s no longer exists: no provider API to ask", slug))
	}
	if err != nil {
		return nil, err
	}
	if ep.APIKey == "" {
		return nil, fault.Permanent(fmt.Errorf("endpoint %s has no API key: register it with --api-key (and --api-base-url) to fetch from the provider", slug))
	}
	pr, ok := providers.Lookup(ep.Provider)
	if !ok {
		return nil, fault.Permanent(fmt.Errorf("no API client for provider %s: %w", ep.Provider, providers.ErrUnknown))
	}
	own, _ := ep.OwnAccount()
	c, err := providers.NewClient(pr, providers.ClientConfig{APIKey: ep.APIKey, BaseURL: ep.APIBaseURL, OwnAccount: own, Settings: ep.Settings})
	if err != nil {
		return nil, fault.Permanent(err)
	}
	p.mu.Lock()
	if p.cache == nil {
		p.cache = map[string]cachedClient{}
	}
	p.cache[slug] = cachedClient{client: c, at: time.Now()}
	p.mu.Unlock()
	return c, nil
}

// Hook returns the delivery log client of the endpoint's webhook and its
// recovery mode (ports.Hooks), read afresh each time: one call per page of
// the recovery pass. An endpoint without an API key or a hook, or whose
// provider has no delivery log, is a permanent error.
func (p *EndpointProviders) Hook(ctx context.Context, slug string) (ports.HookEndpoint, error) {
	ep, err := endpoints.GetProviderEndpoint(ctx, p.Store, slug)
	if errors.Is(err, fault.ErrNotFound) {
		return ports.HookEndpoint{}, fault.Permanent(fmt.Errorf("endpoint %s no longer exists: no delivery log to read", slug))
	}
	if err != nil {
		return ports.HookEndpoint{}, err
	}
	if ep.APIKey == "" {
		return ports.HookEndpoint{}, fault.Permanent(fmt.Errorf("endpoint %s has no API key: set one with endpoints update --api-key to read its hook's deliveries", slug))
	}
	mode := ep.Settings.GitHubRecovery
	switch mode {
	case "":
		mode = keys.RecoverRedeliver
	case keys.RecoverRedeliver, keys.RecoverFetch:
	default:
		return ports.HookEndpoint{}, fault.Permanent(fmt.Errorf("endpoint %s: unknown recovery mode %q", slug, mode))
	}
	pr, ok := providers.Lookup(ep.Provider)
	if !ok {
		return ports.HookEndpoint{}, fault.Permanent(fmt.Errorf("no delivery log for provider %s: %w", ep.Provider, providers.ErrUnknown))
	}
	own, _ := ep.OwnAccount()
	c, err := providers.NewHookClient(pr, providers.ClientConfig{APIKey: ep.APIKey, BaseURL: ep.APIBaseURL, OwnAccount: own, Settings: ep.Settings})
	if err != nil {
		return ports.HookEndpoint{}, fault.Permanent(fmt.Errorf("endpoint %s: %w", slug, err))
	}
	return ports.HookEndpoint{Client: c, Mode: mode}, nil
}
