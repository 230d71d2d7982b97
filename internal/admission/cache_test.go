package admission_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// fakeClock is a clock that moves only when the test says.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A flood of deliveries to a slug nobody registered costs one lookup per
// slug and negative TTL: the repeats are answered from memory, without the
// database (here: with its pool closed), and a slug registered meanwhile
// still answers not found until the TTL has passed on the cache's clock,
// and works from then on.
func TestUnknownSlugsAreNegativelyCached(t *testing.T) {
	t.Parallel()
	url := testenv.DatabaseURL(t)
	ctx := context.Background()
	seed, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	seed.Keys = testenv.Keys(t)
	t.Cleanup(seed.Close)

	st, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	const negTTL = 2 * time.Second
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: st, CacheTTL: time.Minute, NegativeTTL: negTTL, Now: clock.Now})
	for i := range 3 {
		_, err := adm.Endpoint(ctx, fmt.Sprintf("ghost-%d", i))
		require.ErrorIs(t, err, fault.ErrNotFound)
	}
	st.Close() // any database call now fails with "closed pool"
	for range 100 {
		_, err := adm.Endpoint(ctx, "ghost-1")
		require.ErrorIs(t, err, fault.ErrNotFound, "an unknown slug repeated within the negative TTL reaches the database")
	}
	clock.Advance(negTTL)
	_, err = adm.Endpoint(ctx, "ghost-1")
	require.ErrorContains(t, err, "closed pool", "once the negative TTL has passed, the slug is looked up again")

	st2, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	st2.Keys = seed.Keys
	t.Cleanup(st2.Close)
	adm = admission.New(admission.Options{Routes: routestest.Builtin(), Store: st2, CacheTTL: time.Minute, NegativeTTL: negTTL, Now: clock.Now})
	_, err = adm.Endpoint(ctx, "late")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.NoError(t, endpoints.InsertEndpoint(ctx, seed, endpoints.NewEndpoint{Slug: "late", Provider: "stripe", Environment: "test", Secrets: []string{"whsec_late0123456789abcdefghijklmnopqrstuvwxyz"}}))
	clock.Advance(negTTL - time.Nanosecond)
	_, err = adm.Endpoint(ctx, "late")
	require.ErrorIs(t, err, fault.ErrNotFound, "registered, but the miss is remembered for the whole negative TTL")
	clock.Advance(time.Nanosecond)
	ep, err := adm.Endpoint(ctx, "late")
	require.NoError(t, err, "a slug registered after a miss works once the negative TTL passed")
	require.Equal(t, "late", ep.Slug)
}

// Distinct slugs, each valid and none registered, are answered from the
// preloaded slug set: a thousand of them cost no query (the pool is closed
// after the first), and the set is refreshed at most once per negative TTL
// for all of them together.
func TestAFloodOfDistinctUnknownSlugsCostsNoQueryEach(t *testing.T) {
	t.Parallel()
	url := testenv.DatabaseURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "real", Provider: "stripe", Environment: "test",
		Secrets: []string{"whsec_real0123456789abcdefghijklmnopqrstuvwxyz"}}))
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	const negTTL = 2 * time.Second
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: st, CacheTTL: time.Minute, NegativeTTL: negTTL, Now: clock.Now})
	_, err = adm.Endpoint(ctx, "real")
	require.NoError(t, err)
	_, err = adm.Endpoint(ctx, "ghost-first")
	require.ErrorIs(t, err, fault.ErrNotFound)
	st.Close()
	for i := range 1000 {
		_, err := adm.Endpoint(ctx, fmt.Sprintf("ghost-%d", i))
		require.ErrorIs(t, err, fault.ErrNotFound, "slug %d reached the database", i)
	}
	_, err = adm.Endpoint(ctx, "real")
	require.NoError(t, err, "the registered endpoint is still served from memory")
	clock.Advance(negTTL)
	_, err = adm.Endpoint(ctx, "ghost-next")
	require.ErrorContains(t, err, "closed pool", "one refresh per period")
	for i := range 100 {
		_, err := adm.Endpoint(ctx, fmt.Sprintf("ghost-after-%d", i))
		require.ErrorContains(t, err, "closed pool", "the set could not be refreshed: unknown, not not found")
		require.NotErrorIs(t, err, fault.ErrNotFound)
	}
}
