package simulator_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// received is one request the test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a stand-in intake that records requests and answers with
// status(n, req), n counting from 0.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int, r received) int
}

func newReceiver(t *testing.T, status func(n int, r received) int) *receiver {
	t.Helper()
	rc := &receiver{status: status}
	if rc.status == nil {
		rc.status = func(int, received) int { return http.StatusOK }
	}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{header: r.Header.Clone(), body: body}
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, rec)
		rc.mu.Unlock()
		w.WriteHeader(rc.status(n, rec))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

const (
	stripeSecret = "whsec_test_stripe_secret"
)

var (
	fbSecret    = simulator.StandardSecret("feedback-secret-one-0123456789ab")
	fbSecretNew = simulator.StandardSecret("feedback-secret-two-0123456789ab")
)

func targets(rc *receiver) simulator.Targets {
	return simulator.Targets{
		Stripe:   simulator.Endpoint{URL: rc.URL + "/webhooks/stripe", Secrets: []string{stripeSecret}},
		Standard: simulator.Endpoint{URL: rc.URL + "/webhooks/feedback", Secrets: []string{fbSecret}},
	}
}

// fast is a config whose retries take microseconds.
func fast(cfg simulator.Config) simulator.Config {
	cfg.Clock = fixedClock
	cfg.Delivery.TimeScale = 1e-6
	return cfg
}
