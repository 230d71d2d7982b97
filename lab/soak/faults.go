package soak

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// dropAfterSend is the email API as the workers see it: after the API has
// accepted a send (its 2xx status is being written), it terminates the
// workers' database connections at the given rate before the answer goes
// back, so the worker's next statement (marking the row sent) finds its
// connection gone: the outcome of that send is uncertain (#13, scenario 3).
type dropAfterSend struct {
	next  http.Handler
	admin *pgxpool.Pool
	rate  float64
	logf  func(string, ...any)

	mu      sync.Mutex
	rng     *rand.Rand
	dropped atomic.Int64
}

func newDropAfterSend(next http.Handler, admin *pgxpool.Pool, rate float64, seed uint64, logf func(string, ...any)) *dropAfterSend {
	return &dropAfterSend{next: next, admin: admin, rate: rate, logf: logf, rng: rand.New(rand.NewPCG(seed, 13))}
}

func (d *dropAfterSend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/emails" || d.rate <= 0 {
		d.next.ServeHTTP(w, r)
		return
	}
	d.mu.Lock()
	drop := d.rng.Float64() < d.rate
	d.mu.Unlock()
	if !drop {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(&cutOnAccept{ResponseWriter: w, cut: func() { d.cut(r.Context()) }}, r)
}

// cut terminates every worker process's database connections.
func (d *dropAfterSend) cut(ctx context.Context) {
	var n int64
	err := d.admin.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		  FROM pg_stat_activity WHERE application_name LIKE $1`, appNamePrefix+"worker-%").Scan(&n)
	if err != nil {
		d.logf("chaos: could not drop the workers' connections after a send: %v", err)
		return
	}
	d.dropped.Add(1)
}

// cutOnAccept runs cut once, when a 2xx status is written (the send was
// accepted), before the status reaches the client.
type cutOnAccept struct {
	http.ResponseWriter
	cut  func()
	done bool
}

func (c *cutOnAccept) WriteHeader(code int) {
	if !c.done && code/100 == 2 {
		c.done = true
		c.cut()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cutOnAccept) Write(p []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (the simulator
// loses answers by hijacking it).
func (c *cutOnAccept) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// outage stops PostgreSQL as an operator's restart or a crash of the
// database host would (fast shutdown: every connection is dropped), keeps it
// down for d, and starts it again on the same data directory and port.
func (h *harness) outage(ctx context.Context, d time.Duration) error {
	h.logf("chaos: stopping PostgreSQL for %s", d.Round(time.Second))
	// A process killed just before comes back only with the database (it
	// cannot start without it); running processes must ride the outage out.
	h.fleet.held.Store(true)
	defer h.fleet.held.Store(false)
	if err := h.pg.Stop(); err != nil {
		h.logf("chaos: PostgreSQL stop: %v", err)
	}
	sleep(ctx, d)
	var err error
	for i := range 3 {
		if err = h.pg.Restart(ctx); err == nil {
			break
		}
		h.logf("chaos: PostgreSQL restart attempt %d failed: %v", i+1, err)
		sleep(ctx, 2*time.Second)
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.outages++
	h.outageTime += d
	h.mu.Unlock()
	h.logf("chaos: PostgreSQL is back after %s", d.Round(time.Second))
	return nil
}

// databaseWaits counts, in the workers' logs, the attempts that found the
// database away and waited for it (events, outbox sends).
func (h *harness) databaseWaits() (events, sends int) {
	files, _ := filepath.Glob(filepath.Join(h.logDir, "worker-*.log"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "database unavailable; the workflow waits for it") {
				continue
			}
			if strings.Contains(line, `"outbox_id"`) {
				sends++
			} else {
				events++
			}
		}
		f.Close()
	}
	return events, sends
}
