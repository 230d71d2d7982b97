package admission_test

import (
	"context"
	"fmt"
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

// A flood of deliveries to a slug nobody registered costs one lookup per
// slug and negative TTL: the repeats are answered from memory, without the
// database (here: with its pool closed), and a slug registered meanwhile
// works once the short TTL has passed.
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
	const negTTL = 500 * time.Millisecond
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: st, CacheTTL: time.Minute, NegativeTTL: negTTL})
	for i := range 3 {
		_, err := adm.Endpoint(ctx, fmt.Sprintf("ghost-%d", i))
		require.ErrorIs(t, err, fault.ErrNotFound)
	}
	st.Close() // any database call now fails with "closed pool"
	for range 100 {
		_, err := adm.Endpoint(ctx, "ghost-1")
		require.ErrorIs(t, err, fault.ErrNotFound, "an unknown slug repeated within the negative TTL reaches the database")
	}

	st2, err := store.Open(ctx, url, 2)
	require.NoError(t, err)
	st2.Keys = seed.Keys
	t.Cleanup(st2.Close)
	adm = admission.New(admission.Options{Routes: routestest.Builtin(), Store: st2, CacheTTL: time.Minute, NegativeTTL: negTTL})
	_, err = adm.Endpoint(ctx, "late")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.NoError(t, endpoints.InsertEndpoint(ctx, seed, endpoints.NewEndpoint{Slug: "late", Provider: "stripe", Environment: "test", Secrets: []string{"whsec_late0123456789abcdefghijklmnopqrstuvwxyz"}}))
	time.Sleep(negTTL + 50*time.Millisecond)
	ep, err := adm.Endpoint(ctx, "late")
	require.NoError(t, err, "a slug registered after a miss works once the negative TTL passed")
	require.Equal(t, "late", ep.Slug)
}
