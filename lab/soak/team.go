package soak

import (
	"io"
	"math/rand/v2"
	"net/http"
	"sync"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TeamReceiver is a team's alert endpoint: it verifies each delivery's
// Standard Webhooks signature (401 when it does not verify), answers 503 to
// a share of the valid ones (a flaky receiver, so the outbox retries), and
// counts the distinct webhook-ids it accepted.
type TeamReceiver struct {
	verifier *standardwebhooks.Webhook
	failRate float64

	mu       sync.Mutex
	rng      *rand.Rand
	accepted map[string]int
	rejected int
	refused  int
}

// TeamStats counts what a TeamReceiver saw.
type TeamStats struct {
	// Distinct webhook-ids accepted; Accepted counts every accepted POST
	// (a repeat is the same id again).
	Distinct int `json:"distinct"`
	Accepted int `json:"accepted"`
	// Rejected: bad signatures. Refused: valid ones answered 503 on purpose.
	Rejected int `json:"rejected"`
	Refused  int `json:"refused"`
}

// NewTeamReceiver verifies with secret (whsec_<base64>).
func NewTeamReceiver(secret string, failRate float64, seed uint64) (*TeamReceiver, error) {
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return &TeamReceiver{verifier: v, failRate: failRate, rng: rand.New(rand.NewPCG(seed, 9)), accepted: map[string]int{}}, nil
}

// ServeHTTP receives one alert.
func (t *TeamReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.verifier.Verify(body, r.Header); err != nil {
		t.rejected++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if t.rng.Float64() < t.failRate {
		t.refused++
		http.Error(w, "try again later", http.StatusServiceUnavailable)
		return
	}
	t.accepted[r.Header.Get(standardwebhooks.HeaderWebhookID)]++
	w.WriteHeader(http.StatusNoContent)
}

// Stats returns the running counts.
func (t *TeamReceiver) Stats() TeamStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := TeamStats{Distinct: len(t.accepted), Rejected: t.rejected, Refused: t.refused}
	for _, n := range t.accepted {
		st.Accepted += n
	}
	return st
}
