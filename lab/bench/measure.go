package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Latencies collects operation durations from many goroutines.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one duration.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// Merge adds a goroutine's local batch.
func (l *Latencies) Merge(ds []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, ds...)
	l.mu.Unlock()
}

// Percentile returns the p-th percentile (0 < p ≤ 100), nearest rank.
func (l *Latencies) Percentile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.d, p)
}

// Mean is the mean duration (0 without any).
func (l *Latencies) Mean() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range l.d {
		sum += d
	}
	return sum / time.Duration(len(l.d))
}

// Count is the number of durations recorded.
func (l *Latencies) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// Rate is a closed-loop measurement: operations completed, their rate and
// latency.
type Rate struct {
	Ops     int     `json:"ops"`
	Errors  int     `json:"errors"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	// MeanMs is the mean latency: at one sender, the rate is its inverse.
	MeanMs float64 `json:"mean_ms,omitempty"`
	// CPU per operation over the window, in microseconds (from /proc,
	// 10 ms ticks: read it over a window of seconds): this process's
	// (senders, and whatever of the target runs in it) and the whole
	// machine's busy time on every core (PostgreSQL's backends and the
	// kernel's loopback work included).
	ProcessCPUus float64 `json:"process_cpu_us_per_op,omitempty"`
	MachineCPUus float64 `json:"machine_cpu_us_per_op,omitempty"`
}

// Op is one operation of a closed-loop load; seq is unique in the run.
type Op func(ctx context.Context, seq int64) error

// ClosedLoop runs op from concurrency goroutines, each starting its next
// operation when the previous one ends, for duration after a warm-up, and
// measures the operations that completed inside the window.
func ClosedLoop(ctx context.Context, op Op, seq *atomic.Int64, concurrency int, warmup, duration time.Duration) (Rate, error) {
	var lat Latencies
	var errs atomic.Int64
	var firstErr atomic.Value
	start := time.Now().Add(warmup)
	end := start.Add(duration)
	var wg sync.WaitGroup
	// The window's CPU, read at its two ends.
	var cpuProc, cpuBusy uint64
	cpuDone := make(chan struct{})
	go func() {
		defer close(cpuDone)
		select {
		case <-time.After(time.Until(start)):
		case <-ctx.Done():
			return
		}
		p0, b0 := processCPU(os.Getpid()), busyTicks()
		select {
		case <-time.After(time.Until(end)):
		case <-ctx.Done():
			return
		}
		cpuProc, cpuBusy = processCPU(os.Getpid())-p0, busyTicks()-b0
	}()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				err := op(ctx, seq.Add(1))
				d := time.Since(t0)
				if t0.Before(start) {
					continue // warm-up
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				local = append(local, d)
			}
			lat.Merge(local)
		}()
	}
	wg.Wait()
	<-cpuDone
	if ctx.Err() != nil {
		return Rate{}, ctx.Err()
	}
	r := Rate{Ops: lat.Count(), Errors: int(errs.Load()), Seconds: duration.Seconds()}
	r.PerSec = float64(r.Ops) / r.Seconds
	r.P50ms = ms(lat.Percentile(50))
	r.P99ms = ms(lat.Percentile(99))
	r.MeanMs = ms(lat.Mean())
	if r.Ops > 0 {
		tickUs := 1e6 / float64(clockTicks)
		r.ProcessCPUus = math.Round(float64(cpuProc)*tickUs/float64(r.Ops)*10) / 10
		r.MachineCPUus = math.Round(float64(cpuBusy)*tickUs/float64(r.Ops)*10) / 10
	}
	if r.Ops == 0 && r.Errors > 0 {
		return r, fmt.Errorf("every operation failed: %v", firstErr.Load())
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// LoadAverage is /proc/loadavg's first three fields ("" when unreadable).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuTotals reads the machine's busy and total jiffies from /proc/stat.
func cpuTotals() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// busyTicks is the machine's busy time on every core, in clock ticks.
func busyTicks() uint64 {
	busy, _ := cpuTotals()
	return busy
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTicks = 100

// processCPU is a process's user+system CPU time in clock ticks (clockTicks a second).
func processCPU(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name in parentheses (which may hold spaces).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	sy, _ := strconv.ParseUint(f[12], 10, 64)
	return u + sy
}

// findProcess returns the pid of the first process whose NUL-separated
// command line contains every part.
func findProcess(parts ...string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		ok := true
		for _, p := range parts {
			if !bytes.Contains(b, []byte(p)) {
				ok = false
				break
			}
		}
		if ok {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return pid
		}
	}
	return 0
}

// CPUMeter measures the machine's CPU use and one process's over a window.
type CPUMeter struct {
	pid               int
	busy0, total0, p0 uint64
	start             time.Time
}

// StartCPU begins a window; pid (0 for none) is a process to account for.
func StartCPU(pid int) *CPUMeter {
	m := &CPUMeter{pid: pid, start: time.Now()}
	m.busy0, m.total0 = cpuTotals()
	m.p0 = processCPU(pid)
	return m
}

// Stop returns the machine's busy fraction (0–1 over every core) and the
// process's CPU use in cores (1.0 = one core busy the whole window).
func (m *CPUMeter) Stop() (machineBusy, processCores float64) {
	busy, total := cpuTotals()
	if total > m.total0 {
		machineBusy = float64(busy-m.busy0) / float64(total-m.total0)
	}
	if m.pid > 0 {
		if el := time.Since(m.start).Seconds(); el > 0 {
			processCores = m.ProcessMs() / 1000 / el
		}
	}
	return machineBusy, processCores
}

// ProcessMs is the process's CPU time since StartCPU, in milliseconds
// (0 without a process).
func (m *CPUMeter) ProcessMs() float64 {
	if m.pid <= 0 {
		return 0
	}
	return float64(processCPU(m.pid)-m.p0) * 1000 / clockTicks
}

// MemoryPeak samples this process's Go heap while a run goes on, and reads
// the kernel's peak resident set (VmHWM), reset at the start.
type MemoryPeak struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64
}

// StartMemory resets VmHWM (where the kernel allows it) and samples the
// heap every 200 ms.
func StartMemory() *MemoryPeak {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM
	m := &MemoryPeak{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	go func() {
		defer close(m.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			v := sample[0].Value.Uint64() + sample[1].Value.Uint64()
			if v > m.peak.Load() {
				m.peak.Store(v)
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// Stop returns the peak Go heap in use and the process's peak RSS, in MiB.
func (m *MemoryPeak) Stop() (heapMiB, rssMiB float64) {
	close(m.stop)
	<-m.done
	return float64(m.peak.Load()) / (1 << 20), float64(vmHWM()) / (1 << 20)
}

// AfterSettle is how long a run's process idles after its last effect
// before memoryAfter reads what it keeps: long enough for the finished
// workflows' tasks to be answered and the runtime's background scavenger to
// return freed pages, as it would in a long-running worker.
const AfterSettle = 15 * time.Second

// afterMemory is what a run's process keeps once it has settled, in MiB:
// the live heap, the resident set, and where the rest of the runtime's
// memory is (to tell a heap that grew from pages the runtime has not handed
// back yet, from memory outside Go's heap).
type afterMemory struct {
	heap float64 // live objects, after one GC
	rss  float64 // VmRSS
	// free: heap the runtime holds and may still have resident: idle spans
	// not yet returned to the kernel and the unused part of spans in use.
	free float64
	// released: heap the runtime has returned to the kernel (not resident).
	released float64
	// runtime: goroutine and OS stacks, the runtime's metadata and other
	// runtime memory.
	runtime float64
}

// memoryClasses are the runtime/metrics classes afterMemory reads, in its
// fields' order after the live heap.
var memoryClasses = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes", "/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes", "/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/other:bytes", "/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
}

// memoryAfter waits settle, collects garbage once, and reads what the
// process keeps (afterMemory).
func memoryAfter(ctx context.Context, settle time.Duration) afterMemory {
	select {
	case <-ctx.Done():
	case <-time.After(settle):
	}
	runtime.GC()
	sample := make([]metrics.Sample, len(memoryClasses))
	for i, name := range memoryClasses {
		sample[i].Name = name
	}
	metrics.Read(sample)
	mib := func(from, to int) float64 {
		var n uint64
		for _, s := range sample[from:to] {
			if s.Value.Kind() == metrics.KindUint64 {
				n += s.Value.Uint64()
			}
		}
		return float64(n) / (1 << 20)
	}
	return afterMemory{heap: mib(0, 1), free: mib(1, 3), released: mib(3, 4), runtime: mib(4, len(sample)),
		rss: float64(procStatus("VmRSS:")) / (1 << 20)}
}

// writeHeapProfile writes this process's heap profile to path (the live
// heap as of the last GC, and what was allocated where).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return nil
}

// openFiles is the number of this process's open file descriptors (0 when
// /proc cannot tell).
func openFiles() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(fds)
}

// vmHWM is this process's peak resident set in bytes.
func vmHWM() uint64 { return procStatus("VmHWM:") }

// procStatus reads a size field of /proc/self/status, in bytes.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
