package command

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/testenv"
)

// The local stack's dev server keeps closed workflows DevRetention, set on
// the real server and read back; a retention the server refuses (under a
// local namespace's hour) is an error that says which namespace and value,
// and leaves the retention as it was.
func TestTheDevServerKeepsClosedWorkflowsAnHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := testenv.TemporalAddress(t)
	before, err := retention(ctx, addr, "default")
	require.NoError(t, err)
	require.Positive(t, before)
	t.Cleanup(func() { _ = setRetention(context.Background(), addr, "default", before) })

	require.NoError(t, setRetention(ctx, addr, "default", DevRetention))
	got, err := retention(ctx, addr, "default")
	require.NoError(t, err)
	require.Equal(t, time.Hour, got)

	err = setRetention(ctx, addr, "default", time.Minute)
	require.ErrorContains(t, err, "set the retention of namespace default to 1m0s")
	got, err = retention(ctx, addr, "default")
	require.NoError(t, err)
	require.Equal(t, time.Hour, got, "a refused retention changes nothing")
}
