package bench

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// statmRSS reads this process's resident set from /proc/self/statm (pages),
// a source memoryAfter does not use, in MiB.
func statmRSS(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.GreaterOrEqual(t, len(f), 2)
	pages, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(t, err)
	return float64(pages*uint64(os.Getpagesize())) / (1 << 20)
}

// TestMemoryAfterReadsTheLiveHeapAndResidentSet: what a run keeps is read
// from this process. The heap it reports grows by a 64 MiB allocation while
// it is referenced and falls by as much once it is not (a reading of
// allocated-ever or reserved heap would not fall); the resident set it
// reports is the one /proc/self/statm gives around the call, and holds the
// live heap. Not parallel: it measures the whole process.
func TestMemoryAfterReadsTheLiveHeapAndResidentSet(t *testing.T) {
	const size = 64 << 20
	ctx := context.Background()
	base, _ := memoryAfter(ctx, 0)

	held := &struct{ b []byte }{b: make([]byte, size)}
	for i := range held.b {
		held.b[i] = byte(i)
	}
	lo := statmRSS(t)
	heap, rss := memoryAfter(ctx, 0)
	hi := statmRSS(t)
	require.InDelta(t, 64, heap-base, 4, "the live heap grew by the 64 MiB still referenced (from %.1f to %.1f MiB)", base, heap)
	require.GreaterOrEqual(t, rss, min(lo, hi)-4, "statm said %.1f–%.1f MiB", lo, hi)
	require.LessOrEqual(t, rss, max(lo, hi)+4, "statm said %.1f–%.1f MiB", lo, hi)
	require.GreaterOrEqual(t, rss, heap, "the touched heap is resident")
	runtime.KeepAlive(held.b)

	held.b = nil
	after, _ := memoryAfter(ctx, 0)
	require.InDelta(t, 64, heap-after, 4, "the 64 MiB no longer referenced left the live heap (from %.1f to %.1f MiB)", heap, after)
}
