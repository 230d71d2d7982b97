package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
)

// The demo's forward route: GitHub's push deliveries go on to a small
// service the demo starts, as a team's own service in any language would
// get them: one signed document per operation, each applied once by its
// Idempotency-Key.

// forwardReceiver is the team's service: it verifies every document with
// the standard-webhooks library and applies each operation key once.
type forwardReceiver struct {
	wh *standardwebhooks.Webhook

	mu         sync.Mutex
	requests   int
	unverified int
	applied    map[string]forward.Document // by operation key
}

func newForwardReceiver(secret string) (*forwardReceiver, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return &forwardReceiver{wh: wh, applied: map[string]forward.Document{}}, nil
}

func (f *forwardReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if err != nil || f.wh.Verify(body, r.Header) != nil {
		f.unverified++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var d forward.Document
	if err := json.Unmarshal(body, &d); err != nil {
		http.Error(w, "bad document", http.StatusUnprocessableEntity)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if _, ok := f.applied[key]; !ok {
		f.applied[key] = d // the service's effect, once per key
	}
	w.WriteHeader(http.StatusOK)
}

// seen returns how many requests came, how many failed verification and
// the applied documents' event ids by operation key.
func (f *forwardReceiver) seen() (requests, unverified int, events map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	events = make(map[string]string, len(f.applied))
	for k, d := range f.applied {
		events[k] = d.EventKey
	}
	return f.requests, f.unverified, events
}

// forwardDemo is the route the demo adds for GitHub's push events.
type forwardDemo struct {
	route    string
	url      string
	secret   string
	receiver *forwardReceiver
	// reload is how long the running intake and worker take to see the
	// route (their HOOKINBOX_ENDPOINT_CACHE_TTL).
	reload time.Duration
}

// install adds the route as 'hookinbox routes add' would (replacing one a
// previous demo run left), then waits for the route table's reload.
func (fd *forwardDemo) install(ctx context.Context, out io.Writer, st *store.Store) error {
	kr, err := st.Keyring()
	if err != nil {
		return err
	}
	if err := forwards.Delete(ctx, st.Pool, fd.route); err != nil && !fault.IsNotFound(err) {
		return err
	}
	if err := forwards.Insert(ctx, st.Pool, kr, forwards.Route{Name: fd.route, Provider: "github", EventType: "push", URL: fd.url,
		Secret: fd.secret, Timeout: 10 * time.Second, AllowPrivate: true, Enabled: true}); err != nil {
		return fmt.Errorf("add the forward route: %w", err)
	}
	fmt.Fprintf(out, "  forward route %s: github push → %s (a team's service the demo runs; signature verified, each operation applied once)\n",
		fd.route, fd.url)
	fmt.Fprintf(out, "  waiting %s for the intake and the worker to reload their route tables\n", fd.reload.Round(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(fd.reload):
	}
	return nil
}

// remove takes the route away again: its service stops with the demo.
func (fd *forwardDemo) remove(ctx context.Context, st *store.Store) error {
	if err := forwards.Delete(ctx, st.Pool, fd.route); err != nil && !fault.IsNotFound(err) {
		return err
	}
	return nil
}
