package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// DesignForward is the product with forward routes taking the benchmark's
// types (invoice.paid, customer.subscription.*) instead of its handlers:
// each event is POSTed, signed, to an in-process service that dedups on
// Idempotency-Key and answers 200, and the row completes with its attempt.
const DesignForward = "hookinbox-forward"

// forwardService is the team's service of the forward design: it applies
// each operation key once and answers 200 at once (the benchmark measures
// hookinbox, not the service).
type forwardService struct {
	mu       sync.Mutex
	applied  map[string]bool
	requests atomic.Int64
}

func (f *forwardService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.requests.Add(1)
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	f.applied[key] = true
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// startForwardService serves a forwardService on loopback and adds the
// forward routes to it.
func startForwardService(ctx context.Context, st *store.Store) (func(), *forwardService, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	svc := &forwardService{applied: map[string]bool{}}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: svc}
	go func() { _ = srv.Serve(ln) }()
	stop := func() { _ = srv.Close() }
	kr, err := st.Keyring()
	if err != nil {
		stop()
		return nil, nil, err
	}
	url := "http://" + ln.Addr().String() + "/hooks"
	secret := simulator.StandardSecret("hookinbox-bench-forward-route")
	for _, r := range []forwards.Route{
		{Name: "bench-invoices", EventType: "invoice.paid"},
		{Name: "bench-subscriptions", EventType: "customer.subscription.*"},
	} {
		r.Provider, r.URL, r.Secret, r.Timeout, r.ReplacesHandler, r.AllowPrivate, r.Enabled = "stripe", url, secret, 10*time.Second, true, true, true
		if err := forwards.Insert(ctx, st.Pool, kr, r); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return stop, svc, nil
}

// check says whether the service applied one operation per event.
func (f *forwardService) check(events int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.applied) != events {
		return fmt.Errorf("forward design: the service applied %d operations for %d events (%d requests)", len(f.applied), events, f.requests.Load())
	}
	return nil
}
