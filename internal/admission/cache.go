package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// Endpoint is a registered endpoint with its provider and prepared
// verifier.
type Endpoint struct {
	*endpoints.Endpoint
	// provider is nil for a provider nobody registered: its deliveries are
	// refused (401) and cannot be derived.
	provider providers.Provider
	verifier providers.Verifier
	loaded   time.Time
}

// NewEndpoint prepares ep for admission (the intake's cache does it for
// each endpoint it loads).
func NewEndpoint(ep *endpoints.Endpoint) *Endpoint {
	e := &Endpoint{Endpoint: ep, loaded: time.Now()}
	if p, ok := providers.Lookup(ep.Provider); ok {
		e.provider, e.verifier = p, p.Verifier(ep.Secrets)
	}
	return e
}

// verify authenticates a delivery with the endpoint's provider.
func (e *Endpoint) verify(d Delivery, tolerance time.Duration, now time.Time) (providers.Verified, error) {
	if len(e.Secrets) == 0 {
		return providers.Verified{}, providers.Unauthenticatedf("endpoint has no secret")
	}
	if e.verifier == nil {
		return providers.Verified{}, providers.Unauthenticatedf("provider %q has no verifier", e.Provider)
	}
	return e.verifier.Verify(d.Header, d.Body, tolerance, now)
}

// endpointCache keeps endpoints, secrets and links in memory for a short
// TTL so the hot path costs one database round trip (the insert). A miss
// reads the database at once, and a failed signature check or an unknown
// account reloads (at most once a second per endpoint, minReload), so a new
// secret or link works within a second; a removed secret stops working
// within the TTL.
//
// A slug the database does not know is remembered as unknown for a short
// negTTL, so a flood of deliveries to a missing endpoint costs one lookup
// per slug and period rather than one per request; a newly registered
// endpoint answers 404 for at most that long. The set is bounded
// (maxNegative): a flood of distinct slugs only wipes it.
type endpointCache struct {
	store  *store.Store
	ttl    time.Duration
	negTTL time.Duration
	now    func() time.Time
	group  singleflight.Group

	mu  sync.RWMutex
	m   map[string]*Endpoint
	neg map[string]time.Time
}

// DefaultNegativeTTL is how long an unknown slug is remembered, unless the
// cache TTL is shorter.
const DefaultNegativeTTL = 2 * time.Second

// maxNegative bounds the unknown slugs remembered.
const maxNegative = 4096

func newEndpointCache(s *store.Store, ttl, negTTL time.Duration, now func() time.Time) *endpointCache {
	if negTTL == 0 {
		negTTL = min(DefaultNegativeTTL, ttl)
	}
	return &endpointCache{store: s, ttl: ttl, negTTL: negTTL, now: now, m: map[string]*Endpoint{}, neg: map[string]time.Time{}}
}

// minReload bounds reloads caused by bad signatures or unknown accounts.
const minReload = time.Second

// get returns the endpoint, or fault.ErrNotFound. fresh asks for a reload
// unless the entry is younger than minReload.
func (c *endpointCache) get(ctx context.Context, slug string, fresh bool) (*Endpoint, error) {
	c.mu.RLock()
	e, ok := c.m[slug]
	missed, unknown := c.neg[slug]
	c.mu.RUnlock()
	if ok {
		age := c.now().Sub(e.loaded)
		if age < c.ttl && (!fresh || age < minReload) {
			return e, nil
		}
	}
	if unknown && c.now().Sub(missed) < c.negTTL {
		return nil, fault.ErrNotFound
	}
	v, err, _ := c.group.Do(slug, func() (any, error) {
		// Never the API key: the intake has no use for it.
		ep, err := endpoints.GetIntakeEndpoint(ctx, c.store, slug)
		if err != nil {
			if errors.Is(err, fault.ErrNotFound) {
				c.mu.Lock()
				delete(c.m, slug)
				c.rememberUnknown(slug)
				c.mu.Unlock()
			}
			return nil, err
		}
		ce := NewEndpoint(ep)
		ce.loaded = c.now()
		c.mu.Lock()
		c.m[slug] = ce
		delete(c.neg, slug)
		c.mu.Unlock()
		return ce, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Endpoint), nil
}

// rememberUnknown records slug as unknown; c.mu is held.
func (c *endpointCache) rememberUnknown(slug string) {
	if c.negTTL <= 0 {
		return
	}
	now := c.now()
	if len(c.neg) >= maxNegative {
		for k, at := range c.neg {
			if now.Sub(at) >= c.negTTL {
				delete(c.neg, k)
			}
		}
		if len(c.neg) >= maxNegative {
			clear(c.neg)
		}
	}
	c.neg[slug] = now
}
