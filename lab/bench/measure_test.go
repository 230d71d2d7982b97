package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryAfterReadsTheLiveHeapAndResidentSet: what a run keeps is read
// from this process (a live allocation shows in the heap, and the resident
// set holds at least the heap).
func TestMemoryAfterReadsTheLiveHeapAndResidentSet(t *testing.T) {
	keep := make([]byte, 64<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	heap, rss := memoryAfter(context.Background(), 0)
	require.GreaterOrEqual(t, heap, 64.0, "the 64 MiB still referenced")
	require.GreaterOrEqual(t, rss, heap)
	require.Equal(t, byte(1), keep[1])
}
