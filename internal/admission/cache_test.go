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

// Between two refreshes of the slug set, a miss looks its one slug up
// before answering 404, within a budget of MissLookups a second: a slug
// registered after the set was read is found on its first delivery (issue
// 34: a new endpoint answered 404 for up to 2 s after `endpoints add`), as
// many as the budget holds, the rest once it refills; with the pool closed
// a lookup answers not found, as the set does.
func TestAMissLooksItsSlugUpWithinABudget(t *testing.T) {
	t.Parallel()
	url := testenv.DatabaseURL(t)
	ctx := context.Background()
	seed, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	seed.Keys = testenv.Keys(t)
	t.Cleanup(seed.Close)
	st, err := store.Open(ctx, url, 4)
	require.NoError(t, err)
	st.Keys = seed.Keys
	t.Cleanup(st.Close)
	const negTTL = 2 * time.Second
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: st, CacheTTL: time.Minute, NegativeTTL: negTTL, Now: clock.Now})
	_, err = adm.Endpoint(ctx, "ghost")
	require.ErrorIs(t, err, fault.ErrNotFound, "the set is loaded")

	n := admission.MissLookups + admission.MissLookups/2
	for i := range n {
		require.NoError(t, endpoints.InsertEndpoint(ctx, seed, endpoints.NewEndpoint{Slug: fmt.Sprintf("late-%d", i), Provider: "stripe",
			Environment: "test", Secrets: []string{"whsec_late0123456789abcdefghijklmnopqrstuvwxyz"}}))
	}
	found := func(from, to int) int {
		got := 0
		for i := from; i < to; i++ {
			ep, err := adm.Endpoint(ctx, fmt.Sprintf("late-%d", i))
			if err == nil {
				require.Equal(t, fmt.Sprintf("late-%d", i), ep.Slug)
				got++
			} else {
				require.ErrorIs(t, err, fault.ErrNotFound)
			}
		}
		return got
	}
	require.Equal(t, admission.MissLookups, found(0, n), "found at once, within the budget")
	require.Equal(t, admission.MissLookups, found(0, n), "those found are served from memory; the budget is spent")
	clock.Advance(time.Second / 2)
	require.Equal(t, n, found(0, n), "the budget refills at MissLookups a second")

	st.Close()
	for i := range 3 * admission.MissLookups {
		_, err := adm.Endpoint(ctx, fmt.Sprintf("ghost-%d", i))
		require.ErrorIs(t, err, fault.ErrNotFound, "a lookup that cannot answer leaves the set's answer")
	}
	ep, err := adm.Endpoint(ctx, "late-0")
	require.NoError(t, err, "a found endpoint is served from memory")
	require.Equal(t, "late-0", ep.Slug)
	clock.Advance(negTTL)
	_, err = adm.Endpoint(ctx, "ghost-next")
	require.ErrorContains(t, err, "closed pool", "once the negative TTL has passed, the set is refreshed")
}

// Distinct slugs, each valid and none registered, are answered from the
// preloaded slug set: a thousand of them cost at most MissLookups point
// reads (TestAMissLooksItsSlugUpWithinABudget counts them; here the pool
// is closed after the first, and every one is not found), and the set is
// refreshed at most once per negative TTL for all of them together.
func TestAFloodOfDistinctUnknownSlugsCostsABoundedNumberOfQueries(t *testing.T) {
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
		require.ErrorIs(t, err, fault.ErrNotFound, "slug %d", i)
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
