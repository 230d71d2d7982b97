package soak

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Relay is the load balancer in front of the intake processes: it forwards
// each request to the next live backend in turn and, like a flaky network,
// loses a share of the answers after the backend answered 2xx (it answers
// 504 instead, so the sender retries an event the intake already committed).
// A backend that cannot be reached (a killed process) gives 502.
type Relay struct {
	loseRate float64
	client   *http.Client

	mu       sync.Mutex
	rng      *rand.Rand
	backends []string // host:port; "" while the slot's process is down
	next     int

	forwarded, lost, failed atomic.Int64
}

// RelayStats counts what the relay did.
type RelayStats struct {
	Forwarded   int64 `json:"forwarded"`
	LostAnswers int64 `json:"lost_answers"`
	Unreachable int64 `json:"unreachable"`
}

// NewRelay builds a relay with slots backends (all down until SetBackend)
// that loses loseRate of the 2xx answers.
func NewRelay(slots int, loseRate float64, seed uint64) *Relay {
	return &Relay{
		loseRate: loseRate,
		rng:      rand.New(rand.NewPCG(seed, 7)),
		backends: make([]string, slots),
		client: &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
			},
		},
	}
}

// SetBackend points slot at addr ("" marks it down).
func (r *Relay) SetBackend(slot int, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backends[slot] = addr
}

// Stats returns the running counts.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Forwarded: r.forwarded.Load(), LostAnswers: r.lost.Load(), Unreachable: r.failed.Load()}
}

func (r *Relay) pick() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range r.backends {
		b := r.backends[r.next%len(r.backends)]
		r.next++
		if b != "" {
			return b, r.rng.Float64() < r.loseRate
		}
	}
	return "", false
}

// ServeHTTP forwards one request.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "relay: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	backend, lose := r.pick()
	if backend == "" {
		r.failed.Add(1)
		http.Error(w, "relay: no intake is up", http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, "http://"+backend+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "relay: "+err.Error(), http.StatusInternalServerError)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Do(out)
	if err != nil {
		r.failed.Add(1)
		http.Error(w, "relay: intake unreachable: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		r.failed.Add(1)
		http.Error(w, "relay: answer cut: "+err.Error(), http.StatusBadGateway)
		return
	}
	r.forwarded.Add(1)
	if lose && resp.StatusCode/100 == 2 {
		r.lost.Add(1)
		http.Error(w, "relay: the intake's answer was lost", http.StatusGatewayTimeout)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}
