package bench_test

// Go benchmarks of the intake (beside the raw insert) and a small end to
// end (beside the naive design). They start a throw-away PostgreSQL
// (durable settings) and Temporal dev server, or use
// HOOKINBOX_TEST_DATABASE_URL and HOOKINBOX_TEST_TEMPORAL_ADDRESS; they
// skip under -short and, like every Go benchmark, run only with -bench:
//
//	go test ./bench -run '^$' -bench Intake -benchtime 5s
//	go test ./bench -run '^$' -bench EndToEnd -benchtime 400x
//
// Each ratio is reported as a metric of the second benchmark of a pair
// (x-raw: intake acks/s over raw inserts/s; x-naive: hookinbox events/s
// over the naive design's), measured just before it in the same process.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/bench"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

var (
	envOnce sync.Once
	env     *bench.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		env.Close()
	}
	os.Exit(code)
}

func benchEnv(b testing.TB) *bench.Env {
	b.Helper()
	if testing.Short() {
		b.Skip("needs PostgreSQL and Temporal: run without -short")
	}
	envOnce.Do(func() {
		env, envErr = bench.StartEnv(context.Background(), bench.EnvOptions{
			DatabaseURL:     os.Getenv("HOOKINBOX_TEST_DATABASE_URL"),
			TemporalAddress: os.Getenv("HOOKINBOX_TEST_TEMPORAL_ADDRESS"),
			TemporalNice:    devenv.DefaultTemporalNice,
			Progress:        os.Stderr,
		})
	})
	if envErr != nil {
		b.Fatal(envErr)
	}
	return env
}

// runOps runs op b.N times from c goroutines (RunParallel with
// SetParallelism(c/GOMAXPROCS), so c is rounded up to a multiple of
// GOMAXPROCS; a plain loop for c = 1) and reports rate and latency.
// seq numbers every operation of the process: each one is a distinct event.
var seq atomic.Int64

func runOps(b *testing.B, op bench.Op, c int) float64 {
	ctx := context.Background()
	var lat bench.Latencies
	b.ResetTimer()
	if c == 1 {
		for range b.N {
			t0 := time.Now()
			if err := op(ctx, seq.Add(1)); err != nil {
				b.Fatal(err)
			}
			lat.Add(time.Since(t0))
		}
	} else {
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((c + procs - 1) / procs)
		b.RunParallel(func(pb *testing.PB) {
			local := make([]time.Duration, 0, 1024)
			for pb.Next() {
				t0 := time.Now()
				if err := op(ctx, seq.Add(1)); err != nil {
					b.Error(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			lat.Merge(local)
		})
	}
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "ops/s")
	b.ReportMetric(float64(lat.Percentile(50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat.Percentile(99).Microseconds())/1000, "p99-ms")
	return rate
}

// BenchmarkIntake measures, at 1, 16 and 64 concurrent senders, one
// INSERT…COMMIT of the inbox row (raw), the product's inbox statement alone
// (statement, inbox.InsertInboxEvent on a pool), the statement behind a bare
// net/http server (floor, bench.FloorTarget) and then the real intake over
// HTTP (intake), each of the last three with its ratio x-raw.
func BenchmarkIntake(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	intake, err := bench.NewIntakeTarget(ctx, e, bench.IntakeOptions{Clients: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer intake.Close()
	// Every database exists before the first measurement (CREATE
	// DATABASE forces a checkpoint that would slow what runs next).
	raw, err := bench.NewRawTarget(ctx, e, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	stmtURL, dropStmt, err := e.Database(ctx, "stmt")
	if err != nil {
		b.Fatal(err)
	}
	defer dropStmt()
	for _, c := range []int{1, 16, 64} {
		var rawRate float64
		b.Run(fmt.Sprintf("raw/c=%d", c), func(b *testing.B) {
			r, err := raw.WithPool(ctx, int32(c))
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			rawRate = runOps(b, r.Insert, c)
		})
		b.Run(fmt.Sprintf("statement/c=%d", c), func(b *testing.B) {
			st, err := bench.NewStatementTarget(ctx, stmtURL, int32(c))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			rate := runOps(b, st.Insert, c)
			if rawRate > 0 {
				b.ReportMetric(rate/rawRate, "x-raw")
			}
		})
		b.Run(fmt.Sprintf("floor/c=%d", c), func(b *testing.B) {
			f, err := bench.NewFloorTarget(ctx, stmtURL, int32(c), c)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			rate := runOps(b, f.Send, c)
			if rawRate > 0 {
				b.ReportMetric(rate/rawRate, "x-raw")
			}
		})
		b.Run(fmt.Sprintf("intake/c=%d", c), func(b *testing.B) {
			rate := runOps(b, intake.Send, c)
			if rawRate > 0 {
				b.ReportMetric(rate/rawRate, "x-raw")
			}
		})
	}
}

// BenchmarkEndToEnd runs b.N events through the naive design, then
// hookinbox-v1 (the design before issue #17), hookinbox (local-activity
// handling, the default) and hookinbox-activity
// (HOOKINBOX_HANDLE_MODE=activity), spread one paid invoice (with its
// email) per resource and in bursts of 40 subscription updates per resource, and reports events/s (first acknowledgement to last
// effect), history events per event, and each design's ratio x-naive. Each run gets a fresh
// dev server.
func BenchmarkEndToEnd(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	for _, shape := range []struct {
		name string
		per  int
		kind string
	}{{"spread", 1, bench.KindInvoice}, {"burst40", 40, bench.KindSubscription}} {
		var naiveRate float64
		for _, design := range []string{bench.DesignNaive, bench.DesignV1, bench.DesignHookinbox, bench.DesignActivity} {
			b.Run(shape.name+"/"+design, func(b *testing.B) {
				l := bench.Load{Name: shape.name, PerResource: shape.per, Kind: shape.kind, Resources: max(1, (b.N+shape.per-1)/shape.per)}
				b.StopTimer()
				if err := e.FreshTemporal(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r, err := bench.RunOnce(ctx, e, design, l, bench.E2ESuite{Senders: 16, HistorySample: 20})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.EventsPerSec, "events/s")
				b.ReportMetric(r.HistoryPerEvent, "history/event")
				b.ReportMetric(r.LatencyP50ms, "p50-ms")
				if design == bench.DesignNaive {
					naiveRate = r.EventsPerSec
				} else if naiveRate > 0 {
					b.ReportMetric(r.EventsPerSec/naiveRate, "x-naive")
				}
			})
		}
	}
}

// TestTheHTTPFloorCommitsEachDeliveryAndAnswersAsTheIntake: the floor is a
// fair baseline only if it does the intake's durable work: each signed
// delivery its senders post is committed, with the bytes sent, before the
// answer the intake gives ("accepted"); a body it cannot read is refused
// with nothing stored.
func TestTheHTTPFloorCommitsEachDeliveryAndAnswersAsTheIntake(t *testing.T) {
	e := benchEnv(t)
	ctx := context.Background()
	url, drop, err := e.Database(ctx, "floor")
	require.NoError(t, err)
	defer drop()
	f, err := bench.NewFloorTarget(ctx, url, 2, 2)
	require.NoError(t, err)
	defer f.Close()
	for i := range int64(20) {
		require.NoError(t, f.Send(ctx, i))
	}
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var rows, distinct int
	var sample []byte
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT body_sha256), max(payload::text)::bytea FROM webhook_inbox`).Scan(&rows, &distinct, &sample))
	require.Equal(t, 20, rows, "one row per delivery")
	require.Equal(t, 20, distinct, "each row holds its own delivery's bytes")
	require.Contains(t, string(sample), `"type":"invoice.paid"`, "the payload is the body sent")

	resp, err := http.Post(f.URL, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox`).Scan(&rows))
	require.Equal(t, 20, rows, "nothing stored for an empty body")
}
