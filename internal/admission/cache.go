package admission

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

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
// It also keeps the set of every registered slug, loaded on first use: a
// slug the set does not hold is answered not found from memory, so a flood
// of deliveries to random (valid-looking) slugs costs no query each. Such a
// miss refreshes the set at most once per negTTL for the whole intake (a
// global limit, however many distinct slugs arrive), and only the request
// that refreshes waits for it. Between refreshes a miss looks its one slug
// up before answering 404, within a global budget (missLookups a second,
// a burst of as many) and missLookupTimeout: a newly registered endpoint is
// found on its first delivery, while a flood of random slugs costs at most
// that many point reads a second, none of which holds a request long. When the last refresh failed (the database is away),
// a miss says so (503: the sender retries) rather than "not found".
type endpointCache struct {
	store  *store.Store
	ttl    time.Duration
	negTTL time.Duration
	now    func() time.Time
	group  singleflight.Group
	// lookups bounds the point reads of slugs the set lacks.
	lookups *rate.Limiter

	mu sync.RWMutex
	m  map[string]*Endpoint
	// slugs is every registered slug (nil until loaded), as of slugsAt;
	// slugsErr is the last refresh's error (nil once one succeeded since).
	slugs     map[string]struct{}
	slugsErr  error
	refreshAt time.Time // the last refresh (or attempt)
}

// DefaultNegativeTTL is the least time between two refreshes of the slug
// set caused by unknown slugs, unless the cache TTL is shorter.
const DefaultNegativeTTL = 2 * time.Second

// slugsTimeout bounds one refresh of the slug set. It runs on its own
// context: the request that started it may give up waiting, while the
// others keep answering from the set they have.
const slugsTimeout = 10 * time.Second

// missLookups is how many point reads a second (and in a burst) misses may
// cost between two refreshes of the slug set.
const missLookups = 20

func newEndpointCache(s *store.Store, ttl, negTTL time.Duration, now func() time.Time) *endpointCache {
	if negTTL == 0 {
		negTTL = min(DefaultNegativeTTL, ttl)
	}
	return &endpointCache{store: s, ttl: ttl, negTTL: negTTL, now: now, m: map[string]*Endpoint{},
		lookups: rate.NewLimiter(missLookups, missLookups)}
}

// minReload bounds reloads caused by bad signatures or unknown accounts.
const minReload = time.Second

// get returns the endpoint, or fault.ErrNotFound. fresh asks for a reload
// unless the entry is younger than minReload.
func (c *endpointCache) get(ctx context.Context, slug string, fresh bool) (*Endpoint, error) {
	c.mu.RLock()
	e, ok := c.m[slug]
	c.mu.RUnlock()
	if ok {
		age := c.now().Sub(e.loaded)
		if age < c.ttl && (!fresh || age < minReload) {
			return e, nil
		}
	} else {
		if err := c.known(ctx, slug); err != nil {
			return nil, err
		}
		c.mu.RLock()
		e, ok = c.m[slug] // read by a miss's lookup
		c.mu.RUnlock()
		if ok && c.now().Sub(e.loaded) < minReload {
			return e, nil
		}
	}
	v, err, _ := c.group.Do(slug, func() (any, error) {
		// Never the API key: the intake has no use for it.
		ep, err := endpoints.GetIntakeEndpoint(ctx, c.store, slug)
		if err != nil {
			if errors.Is(err, fault.ErrNotFound) {
				c.mu.Lock()
				delete(c.m, slug)
				delete(c.slugs, slug)
				c.mu.Unlock()
			}
			return nil, err
		}
		ce := NewEndpoint(ep)
		ce.loaded = c.now()
		c.mu.Lock()
		c.m[slug] = ce
		if c.slugs != nil {
			c.slugs[slug] = struct{}{}
		}
		c.mu.Unlock()
		return ce, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Endpoint), nil
}

// known returns nil when slug may be registered (the slug set holds it),
// fault.ErrNotFound when it is not, or the error of the last refresh when
// the set could not be read. A slug the set lacks refreshes it, unless one
// was tried less than negTTL ago.
func (c *endpointCache) known(ctx context.Context, slug string) error {
	c.mu.Lock()
	_, ok := c.slugs[slug]
	loaded, lastErr := c.slugs != nil, c.slugsErr
	refresh := c.negTTL <= 0 || !loaded && lastErr == nil || c.now().Sub(c.refreshAt) >= c.negTTL
	if !ok && refresh {
		c.refreshAt = c.now()
	}
	c.mu.Unlock()
	switch {
	case ok:
		return nil
	case !refresh && lastErr != nil:
		return lastErr
	case !refresh && c.lookups.AllowN(c.now(), 1):
		// Registered since the last refresh, perhaps: read this one slug.
		return c.lookup(ctx, slug)
	case !refresh:
		return fault.ErrNotFound
	}
	ch := c.group.DoChan("\x00slugs", c.loadSlugs)
	select {
	case r := <-ch:
		if r.Err != nil {
			return r.Err
		}
		if _, ok := r.Val.(map[string]struct{})[slug]; ok {
			return nil
		}
		return fault.ErrNotFound
	case <-ctx.Done():
		return ctx.Err()
	}
}

// missLookupTimeout bounds a miss's point read: a slow database answers
// the flood from the set, as before, and never holds a request longer.
const missLookupTimeout = 250 * time.Millisecond

// lookup reads one slug the set lacks and caches its endpoint; nil when it
// is registered. Not registered, or no answer within missLookupTimeout: the
// set's answer stands (fault.ErrNotFound).
func (c *endpointCache) lookup(ctx context.Context, slug string) error {
	lctx, cancel := context.WithTimeout(ctx, missLookupTimeout)
	defer cancel()
	ep, err := endpoints.GetIntakeEndpoint(lctx, c.store, slug)
	if err != nil {
		return fault.ErrNotFound
	}
	ce := NewEndpoint(ep)
	ce.loaded = c.now()
	c.mu.Lock()
	c.m[slug] = ce
	if c.slugs != nil {
		c.slugs[slug] = struct{}{}
	}
	c.mu.Unlock()
	return nil
}

// loadSlugs reads the slug set, on a context of its own.
func (c *endpointCache) loadSlugs() (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slugsTimeout)
	defer cancel()
	list, err := endpoints.ListSlugs(ctx, c.store)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.slugsErr = err
		return nil, err
	}
	set := make(map[string]struct{}, len(list))
	for _, s := range list {
		set[s] = struct{}{}
	}
	c.slugs, c.slugsErr = set, nil
	return set, nil
}
