package bench

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	base := memoryAfter(ctx, 0).heap

	held := &struct{ b []byte }{b: make([]byte, size)}
	for i := range held.b {
		held.b[i] = byte(i)
	}
	lo := statmRSS(t)
	m := memoryAfter(ctx, 0)
	heap, rss := m.heap, m.rss
	hi := statmRSS(t)
	require.InDelta(t, 64, heap-base, 4, "the live heap grew by the 64 MiB still referenced (from %.1f to %.1f MiB)", base, heap)
	require.GreaterOrEqual(t, rss, min(lo, hi)-4, "statm said %.1f–%.1f MiB", lo, hi)
	require.LessOrEqual(t, rss, max(lo, hi)+4, "statm said %.1f–%.1f MiB", lo, hi)
	require.GreaterOrEqual(t, rss, heap, "the touched heap is resident")
	runtime.KeepAlive(held.b)

	require.Positive(t, m.runtime, "stacks and metadata are read")

	held.b = nil
	gone := memoryAfter(ctx, 0)
	require.InDelta(t, 64, heap-gone.heap, 4, "the 64 MiB no longer referenced left the live heap (from %.1f to %.1f MiB)", heap, gone.heap)
	// The runtime holds the freed 64 MiB as free heap or has returned it:
	// either way it is counted, not lost.
	require.InDelta(t, 64, (gone.free+gone.released)-(m.free+m.released), 8,
		"freed heap shows as free or released (free %.1f → %.1f, released %.1f → %.1f MiB)", m.free, gone.free, m.released, gone.released)
}

// openFiles counts this process's descriptors: opening 20 files adds 20,
// closing them takes them away (within 3: the process's other goroutines
// may open or close a socket meanwhile). Not parallel: it counts the whole
// process.
func TestOpenFilesCountsThisProcesssDescriptors(t *testing.T) {
	before := openFiles()
	require.Positive(t, before)
	var files []*os.File
	for range 20 {
		f, err := os.Open(os.Args[0])
		require.NoError(t, err)
		files = append(files, f)
	}
	require.InDelta(t, before+20, openFiles(), 3)
	for _, f := range files {
		require.NoError(t, f.Close())
	}
	require.InDelta(t, before, openFiles(), 3)
}

// TestClosedLoopChargesTheWindowsCPUToEachOperation: an operation that
// spins for 2 ms of this process's CPU is charged about that much per
// operation (process and machine alike: the machine's busy time holds this
// process's), and its mean latency is read. A window that charged the
// warm-up, or divided by another count, would be off by far more than the
// 10 ms ticks' rounding over a 1.5 s window. Not parallel: it measures the
// whole process.
func TestClosedLoopChargesTheWindowsCPUToEachOperation(t *testing.T) {
	spin := func(context.Context, int64) error {
		for end := time.Now().Add(2 * time.Millisecond); time.Now().Before(end); {
		}
		return nil
	}
	var seq atomic.Int64
	r, err := ClosedLoop(context.Background(), spin, &seq, 1, 500*time.Millisecond, 1500*time.Millisecond)
	require.NoError(t, err)
	require.Greater(t, r.Ops, 100)
	require.InDelta(t, 2.0, r.MeanMs, 1.0, "mean latency of a 2 ms spin")
	require.InDelta(t, 2000, r.ProcessCPUus, 800, "this process's CPU per operation")
	require.GreaterOrEqual(t, r.MachineCPUus, r.ProcessCPUus*0.8, "the machine's busy time holds this process's")
}
