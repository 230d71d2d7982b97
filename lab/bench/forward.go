package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// DesignForward is the product with forward routes taking the benchmark's
// types (invoice.paid, customer.subscription.*) instead of its handlers:
// each event is POSTed, signed, to an in-process service that dedups on
// Idempotency-Key and answers 200, and the row completes with its attempt.
const DesignForward = "hookinbox-forward"

// The forward designs of issue 34's bench: a route for
// customer.subscription.* with --fetch-current (each send carries the
// subscription's state read from the bench's Stripe, the lab simulator,
// just before it goes), one event per send; and the same route with
// --coalesce, one document for the run of a resource's pending events.
// Both run on loads of subscriptions only (the simulator holds no
// invoices for them to fetch).
const (
	DesignForwardFetch    = "hookinbox-forward-fetch"
	DesignForwardCoalesce = "hookinbox-forward-coalesce"
)

// isForward says whether design forwards events to the bench's service.
func isForward(design string) bool {
	return design == DesignForward || fetches(design)
}

// fetches says whether design's route fetches the current object, so that
// its run needs the bench's Stripe (stripeSource) and a subscription load.
func fetches(design string) bool {
	return design == DesignForwardFetch || design == DesignForwardCoalesce
}

// forwardService is the team's service of the forward designs: it waits
// its latency, then applies each operation key once (a key it applied
// before is answered 200 and not applied again, as the contract asks) and
// answers 200. Applying a document records the events it covers and the
// version of its current object per resource, which check compares with
// what the run sent and with the source's latest state.
type forwardService struct {
	latency  time.Duration
	requests atomic.Int64

	mu      sync.Mutex
	applied map[string]bool
	// covered counts, per event key, the applied documents that covered it.
	covered map[string]int
	// states lists, per resource id, the version of each applied document's
	// current object, in the order applied (-1: the document had none).
	states      map[string][]int64
	docs        int // documents applied
	coalesced   int // of which covered more than one event
	redelivered int // requests for a key applied before
	bad         []string
}

func newForwardService(latency time.Duration) *forwardService {
	return &forwardService{latency: latency, applied: map[string]bool{}, covered: map[string]int{}, states: map[string][]int64{}}
}

func (f *forwardService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	f.requests.Add(1)
	if f.latency > 0 {
		t := time.NewTimer(f.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	key := r.Header.Get("Idempotency-Key")
	var doc forward.Document
	if err == nil {
		err = json.Unmarshal(body, &doc)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		f.bad = append(f.bad, "unreadable document: "+err.Error())
	case key == "" || key != doc.OperationKey:
		f.bad = append(f.bad, fmt.Sprintf("Idempotency-Key %q is not the document's operation key %q", key, doc.OperationKey))
	}
	if err != nil || key == "" || key != doc.OperationKey {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if f.applied[key] {
		f.redelivered++ // dedup on the operation key: nothing applied twice
		w.WriteHeader(http.StatusOK)
		return
	}
	f.applied[key] = true
	f.docs++
	if len(doc.Coalesced) > 0 {
		f.coalesced++
		for _, c := range doc.Coalesced {
			f.covered[c.EventKey]++
		}
	} else {
		f.covered[doc.EventKey]++
	}
	v := int64(-1)
	if len(doc.Current) > 0 {
		cur := gjson.ParseBytes(doc.Current)
		if id := cur.Get("id").String(); id != doc.Resource.ID {
			f.bad = append(f.bad, fmt.Sprintf("%s: current object %q is not the resource %q", key, id, doc.Resource.ID))
		}
		if ver := cur.Get("version"); ver.Exists() {
			v = ver.Int()
		}
	}
	f.states[doc.Resource.ID] = append(f.states[doc.Resource.ID], v)
	w.WriteHeader(http.StatusOK)
}

// forwardStats is what the service saw.
type forwardStats struct {
	requests, docs, coalesced, redelivered int
}

func (f *forwardService) stats() forwardStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return forwardStats{requests: int(f.requests.Load()), docs: f.docs, coalesced: f.coalesced, redelivered: f.redelivered}
}

// check says whether the service applied the run correctly: every one of
// the events covered by exactly one applied document (none missing, none
// applied twice) and, when latest is given (the source's last version of
// each resource: a fetching design), every applied document carrying its
// resource's current object, no resource's state going back, and each
// resource ending at its latest version.
func (f *forwardService) check(events int, latest map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bad) > 0 {
		return fmt.Errorf("forward design: %d bad requests, the first: %s", len(f.bad), f.bad[0])
	}
	var twice []string
	for k, n := range f.covered {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", k, n))
		}
	}
	if len(twice) > 0 {
		sort.Strings(twice)
		return fmt.Errorf("forward design: %d events applied more than once, e.g. %s", len(twice), twice[0])
	}
	if len(f.covered) != events {
		return fmt.Errorf("forward design: the service applied %d of %d events (%d documents, %d requests)", len(f.covered), events, f.docs, f.requests.Load())
	}
	if latest == nil {
		return nil
	}
	var wrong []string
	for res, want := range latest {
		vs := f.states[res]
		if len(vs) == 0 {
			wrong = append(wrong, fmt.Sprintf("%s: no document applied", res))
			continue
		}
		for i, v := range vs {
			if v < 0 {
				wrong = append(wrong, fmt.Sprintf("%s: document %d had no current version", res, i+1))
				break
			}
			if i > 0 && v < vs[i-1] {
				wrong = append(wrong, fmt.Sprintf("%s: state went back from version %d to %d", res, vs[i-1], v))
				break
			}
		}
		if got := vs[len(vs)-1]; got != want {
			wrong = append(wrong, fmt.Sprintf("%s: ended at version %d, the latest is %d", res, got, want))
		}
	}
	for res := range f.states {
		if _, ok := latest[res]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s: a resource the run did not send", res))
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		return fmt.Errorf("forward design: %d wrong states: %s", len(wrong), strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
	return nil
}

// startForwardService serves a forwardService answering after latency on
// loopback and adds design's forward routes to it.
func startForwardService(ctx context.Context, st *store.Store, design string, latency time.Duration) (func(), *forwardService, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	svc := newForwardService(latency)
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
	routes := []forwards.Route{
		{Name: "bench-invoices", EventType: "invoice.paid"},
		{Name: "bench-subscriptions", EventType: "customer.subscription.*"},
	}
	if fetches(design) {
		routes = []forwards.Route{{Name: "bench-subscriptions", EventType: "customer.subscription.*",
			FetchCurrent: true, Coalesce: design == DesignForwardCoalesce}}
	}
	for _, r := range routes {
		r.Provider, r.URL, r.Secret, r.Timeout, r.ReplacesHandler, r.AllowPrivate, r.Enabled = "stripe", url, secret, 10*time.Second, true, true, true
		if err := forwards.Insert(ctx, st.Pool, kr, r); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return stop, svc, nil
}
