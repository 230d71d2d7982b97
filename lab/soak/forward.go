package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookinbox/hookinbox/lab/verify"
)

// ForwardReceiver is a team's service behind a forward route, as
// docs/forward-routes.md asks one to be: it verifies each document's
// Standard Webhooks signature (401 when it does not verify), requires its
// Idempotency-Key to be its webhook-id, the operation key (400 otherwise),
// and applies each operation key once: a resend of an applied key is
// answered 200 and applied no more. Under the chaos it misbehaves: it
// answers 503 to a share of the valid documents before applying them,
// applies another share and then drops the connection without an answer
// (a crash between its commit and its answer: hookinbox cannot know, and
// must resend under the same key), and Kill makes it die for a while (its
// listener closed, every connection cut; the route's URL refuses).
type ForwardReceiver struct {
	verifier           *standardwebhooks.Webhook
	failRate, loseRate float64

	mu      sync.Mutex
	rng     *rand.Rand
	applied map[string]bool
	log     []verify.Applied
	// current is the last applied document's current, per resource id.
	current map[string]json.RawMessage
	stats   ForwardStats
	addr    string
	srv     *http.Server
	closed  bool
}

// ForwardStats counts what a ForwardReceiver saw.
type ForwardStats struct {
	// Posts are every request that reached it; Applied the operations it
	// applied (once each); Repeats the resends of an applied key.
	Posts   int `json:"posts"`
	Applied int `json:"applied"`
	Repeats int `json:"repeats"`
	// Refused: valid documents answered 503 on purpose; Lost: applied,
	// then the connection dropped without an answer; Rejected: bad
	// signatures or keys.
	Refused  int `json:"refused"`
	Lost     int `json:"lost"`
	Rejected int `json:"rejected"`
	// Coalesced: applied documents that covered more than one event
	// (a coalescing route's); Covered: the events they covered.
	Coalesced int `json:"coalesced"`
	Covered   int `json:"covered"`
	// Kills: times it died; Down: how long it was dead in all.
	Kills int           `json:"kills"`
	Down  time.Duration `json:"down"`
}

// NewForwardReceiver verifies with secret (whsec_<base64>), refusing
// failRate of the valid documents with 503 and losing the answer of
// loseRate of those it applies.
func NewForwardReceiver(secret string, failRate, loseRate float64, seed uint64) (*ForwardReceiver, error) {
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return &ForwardReceiver{verifier: v, failRate: failRate, loseRate: loseRate, rng: rand.New(rand.NewPCG(seed, 13)),
		applied: map[string]bool{}, current: map[string]json.RawMessage{}}, nil
}

// Start serves on a free local port and returns the base URL (the same
// across Kill).
func (f *ForwardReceiver) Start(ctx context.Context) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	f.addr = ln.Addr().String()
	f.serveLocked(ln)
	f.mu.Unlock()
	return "http://" + f.addr, nil
}

func (f *ForwardReceiver) serveLocked(ln net.Listener) {
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	f.srv = srv
	go func() { _ = srv.Serve(ln) }()
}

// Kill makes the receiver die: its listener closes and every connection is
// cut at once; it comes back on the same address after down.
func (f *ForwardReceiver) Kill(ctx context.Context, down time.Duration) error {
	f.mu.Lock()
	if f.srv == nil || f.closed {
		f.mu.Unlock()
		return nil
	}
	_ = f.srv.Close()
	f.srv = nil
	f.stats.Kills++
	f.stats.Down += down
	addr := f.addr
	f.mu.Unlock()
	sleep(ctx, down)
	// The port was ours a moment ago; retry while the kernel lets it go.
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", addr); err == nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.closed {
				return ln.Close()
			}
			f.serveLocked(ln)
			return nil
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("forward receiver: listen again on %s: %w", addr, err)
}

// Close stops it for good.
func (f *ForwardReceiver) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.srv != nil {
		_ = f.srv.Close()
	}
}

// forwardDoc is what the receiver reads of a document.
type forwardDoc struct {
	OperationKey string `json:"operation_key"`
	EventKey     string `json:"event_key"`
	Resource     struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
	} `json:"resource"`
	// Current: the provider's object (--fetch-current); Coalesced: every
	// event a coalescing route's document covers, in order.
	Current   json.RawMessage `json:"current"`
	Coalesced []struct {
		EventKey string `json:"event_key"`
	} `json:"coalesced"`
}

// ServeHTTP receives one document.
func (f *ForwardReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.Posts++
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if err := f.verifier.Verify(body, r.Header); err != nil {
		f.stats.Rejected++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var doc forwardDoc
	key := r.Header.Get("Idempotency-Key")
	if err := json.Unmarshal(body, &doc); err != nil || key == "" || key != r.Header.Get(standardwebhooks.HeaderWebhookID) ||
		key != doc.OperationKey {
		f.stats.Rejected++
		http.Error(w, "the Idempotency-Key must be the webhook-id and the document's operation_key", http.StatusBadRequest)
		return
	}
	if f.applied[key] {
		f.stats.Repeats++
		_, _ = io.WriteString(w, "already applied\n")
		return
	}
	if f.rng.Float64() < f.failRate {
		f.stats.Refused++
		http.Error(w, "try again later", http.StatusServiceUnavailable)
		return
	}
	f.applied[key] = true
	f.stats.Applied++
	if len(doc.Coalesced) > 0 {
		// One document for a run of the resource's events: each is applied
		// by it (the receiver takes current and dedups on the key).
		f.stats.Coalesced++
		f.stats.Covered += len(doc.Coalesced)
		for _, c := range doc.Coalesced {
			f.log = append(f.log, verify.Applied{OperationKey: key, EventKey: c.EventKey, ResourceKind: doc.Resource.Kind, ResourceID: doc.Resource.ID})
		}
	} else {
		f.log = append(f.log, verify.Applied{OperationKey: key, EventKey: doc.EventKey, ResourceKind: doc.Resource.Kind, ResourceID: doc.Resource.ID})
	}
	if len(doc.Current) > 0 && string(doc.Current) != "null" {
		f.current[doc.Resource.ID] = doc.Current
	}
	if f.rng.Float64() < f.loseRate {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				f.stats.Lost++
				_ = conn.Close() // applied, and no answer
				return
			}
		}
	}
	_, _ = io.WriteString(w, "applied\n")
}

// Applied is every operation applied, once each, in the order applied.
func (f *ForwardReceiver) Applied() []verify.Applied {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]verify.Applied(nil), f.log...)
}

// LastCurrent is, per resource id, the current object of the last document
// applied that carried one.
func (f *ForwardReceiver) LastCurrent() map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]json.RawMessage, len(f.current))
	for id, c := range f.current {
		out[id] = append(json.RawMessage(nil), c...)
	}
	return out
}

// Stats returns the running counts.
func (f *ForwardReceiver) Stats() ForwardStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}
