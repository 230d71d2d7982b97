package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"golang.org/x/sync/singleflight"

	"github.com/hookinbox/hookinbox/internal/store"
)

// cachedEndpoint is an endpoint with its prepared verifiers.
type cachedEndpoint struct {
	*store.Endpoint
	// standard holds one Standard Webhooks verifier per secret (nil when a
	// secret does not decode).
	standard []*standardwebhooks.Webhook
	loaded   time.Time
}

// endpointCache keeps endpoints, secrets and links in memory for a short
// TTL so the hot path costs one database round trip (the insert). A miss
// reads the database at once, and a failed signature check or an unknown
// account reloads (at most once a second per endpoint), so a new secret or
// link works immediately; a removed secret stops working within the TTL.
type endpointCache struct {
	store *store.Store
	ttl   time.Duration
	group singleflight.Group

	mu sync.RWMutex
	m  map[string]*cachedEndpoint
}

func newEndpointCache(s *store.Store, ttl time.Duration) *endpointCache {
	return &endpointCache{store: s, ttl: ttl, m: map[string]*cachedEndpoint{}}
}

// minReload bounds reloads caused by bad signatures or unknown accounts.
const minReload = time.Second

// get returns the endpoint, or store.ErrNotFound. fresh asks for a reload
// unless the entry is younger than minReload.
func (c *endpointCache) get(ctx context.Context, slug string, fresh bool) (*cachedEndpoint, error) {
	c.mu.RLock()
	e, ok := c.m[slug]
	c.mu.RUnlock()
	if ok {
		age := time.Since(e.loaded)
		if age < c.ttl && (!fresh || age < minReload) {
			return e, nil
		}
	}
	v, err, _ := c.group.Do(slug, func() (any, error) {
		ep, err := c.store.GetIntakeEndpoint(ctx, slug)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				c.mu.Lock()
				delete(c.m, slug)
				c.mu.Unlock()
			}
			return nil, err
		}
		ce := &cachedEndpoint{Endpoint: ep, loaded: time.Now()}
		for _, s := range ep.Secrets {
			wh, err := standardwebhooks.NewWebhook(s.Value)
			if err != nil {
				wh = nil
			}
			ce.standard = append(ce.standard, wh)
		}
		c.mu.Lock()
		c.m[slug] = ce
		c.mu.Unlock()
		return ce, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*cachedEndpoint), nil
}
