package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
)

func TestKindsMatchThroughWrapping(t *testing.T) {
	t.Parallel()
	base := errors.New("invoice in_1 has no customer")
	p := fmt.Errorf("handle: %w", fault.Permanent(base))
	require.True(t, fault.IsPermanent(p))
	require.False(t, fault.IsRetryable(p))
	require.False(t, fault.IsUnavailable(p))
	require.ErrorIs(t, p, base, "the cause stays reachable")
	require.Equal(t, "handle: invoice in_1 has no customer", p.Error(), "the kind adds nothing to the message")

	u := fault.Unavailable(base)
	require.True(t, fault.IsUnavailable(u))
	require.False(t, fault.IsPermanent(u))

	require.NoError(t, fault.Permanent(nil))
	require.NoError(t, fault.Unavailable(nil))
	require.Same(t, p, fault.Permanent(p), "wrapping twice adds nothing")

	nf := fmt.Errorf("endpoint x: %w", fault.ErrNotFound)
	require.True(t, fault.IsNotFound(nf))
	require.False(t, fault.IsPermanent(nf), "not found is not permanent by itself")
}
