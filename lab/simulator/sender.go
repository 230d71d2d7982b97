package simulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookinbox/hookinbox/providers/standard"
	providerstripe "github.com/hookinbox/hookinbox/providers/stripe"
)

// Targets are where the sender posts events.
type Targets struct {
	// Stripe receives Stripe events, e.g. http://127.0.0.1:8080/webhooks/stripe-sim.
	Stripe Endpoint
	// Standard receives Standard Webhooks (feedback) messages.
	Standard Endpoint
	// Client, when set, is used for every POST (its Timeout included).
	Client *http.Client
}

// Endpoint is one receiving URL and the secrets to sign for it. With two or
// more secrets (a rotation), every request carries one signature per secret.
type Endpoint struct {
	URL     string
	Secrets []string
}

func (t Targets) endpoint(provider string) Endpoint {
	if provider == ProviderStandard {
		return t.Standard
	}
	return t.Stripe
}

// Outcomes of a delivery.
const (
	OutcomeAcked     = "acked"     // a 2xx answer
	OutcomeExhausted = "exhausted" // every attempt failed
	OutcomeDropped   = "dropped"   // never sent on purpose
	OutcomeCanceled  = "canceled"  // the context ended first
	OutcomeSkipped   = "skipped"   // a conflicting copy whose original was never acknowledged
)

// DeliveryResult is what became of one planned delivery.
type DeliveryResult struct {
	Delivery
	Attempts int
	// Statuses holds each attempt's HTTP status; 0 for a connection error or timeout.
	Statuses  []int
	Outcome   string
	LastError string
}

// Report is the result of Deliver, Send or Run.
type Report struct {
	Results []DeliveryResult
	// Stats counts this call only; Simulator.Stats has the running totals.
	Stats   Stats
	Elapsed time.Duration
}

// AttemptResult is the receiver's answer to one POST.
type AttemptResult struct {
	Status int
	Header http.Header
	Body   []byte // at most 4 KiB
}

// SignStripe returns a Stripe-Signature header value for body at time at:
// t=<unix>,v1=<hex> with one v1 per secret (several during a secret roll),
// as the Stripe provider signs it (stripe.Signature, stripe-go's
// webhook.ComputeSignature).
func SignStripe(body []byte, at time.Time, secrets ...string) string {
	return providerstripe.Signature(body, at, secrets...)
}

// StandardHeaders returns the webhook-id, webhook-timestamp and
// webhook-signature headers for a message, signed as the Standard Webhooks
// provider signs it (standard.Signature, the standard-webhooks library),
// one space-separated v1 signature per secret (whsec_<base64>).
func StandardHeaders(msgID string, body []byte, at time.Time, secrets ...string) (http.Header, error) {
	sig, err := standard.Signature(msgID, body, at, secrets...)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, msgID)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return h, nil
}

// StandardSecret turns any key material into a Standard Webhooks secret
// (whsec_ followed by its base64).
func StandardSecret(key string) string {
	return "whsec_" + base64.StdEncoding.EncodeToString([]byte(key))
}

// Attempt sends ev once, signed for its target, with no retries.
func (s *Simulator) Attempt(ctx context.Context, t Targets, ev Event) (AttemptResult, error) {
	if err := checkTarget(t, ev); err != nil {
		return AttemptResult{}, err
	}
	var local Stats
	return s.attempt(ctx, s.client(t), t, ev, &local)
}

// Send delivers events one after the other, in the order given, each with the
// configured retries (a retried event may then land after the next one).
func (s *Simulator) Send(ctx context.Context, t Targets, events ...Event) (Report, error) {
	p := Plan{Concurrency: 1}
	for _, ev := range events {
		p.Deliveries = append(p.Deliveries, Delivery{Event: ev})
	}
	return s.Deliver(ctx, t, p)
}

// Copies is a plan that sends n copies of ev at the same moment, n at once.
func Copies(ev Event, n int) Plan {
	p := Plan{Concurrency: n}
	for i := range n {
		p.Deliveries = append(p.Deliveries, Delivery{Event: ev, Duplicate: i > 0})
	}
	return p
}

// Run generates a scenario (Generate) and delivers it (Deliver).
func (s *Simulator) Run(ctx context.Context, t Targets) (Report, error) {
	return s.Deliver(ctx, t, s.Generate())
}

func checkTarget(t Targets, ev Event) error {
	ep := t.endpoint(ev.Provider)
	if ep.URL == "" || len(ep.Secrets) == 0 {
		return fmt.Errorf("simulator: no %s target URL and secret for %s", ev.Provider, ev.ID)
	}
	return nil
}

func (s *Simulator) client(t Targets) *http.Client {
	if t.Client != nil {
		return t.Client
	}
	return &http.Client{Timeout: s.cfg.Delivery.AttemptTimeout}
}

// Deliver sends a plan: each delivery waits for its At, then is posted with
// retries on non-2xx answers and errors (exponential schedule, capped, scaled
// by TimeScale) by Concurrency workers; late deliveries go after the rest.
// It returns when every delivery has an outcome or ctx ends.
func (s *Simulator) Deliver(ctx context.Context, t Targets, plan Plan) (Report, error) {
	for _, d := range plan.Deliveries {
		if d.Dropped {
			continue
		}
		if err := checkTarget(t, d.Event); err != nil {
			return Report{}, err
		}
	}
	conc := plan.Concurrency
	if conc <= 0 {
		conc = s.cfg.Delivery.Concurrency
	}
	r := &run{
		s: s, t: t, client: s.client(t), jobs: make(chan int),
		results: make([]DeliveryResult, len(plan.Deliveries)),
		total:   len(plan.Deliveries),
	}
	for i, d := range plan.Deliveries {
		r.results[i].Delivery = d
	}
	start := time.Now()
	var workers sync.WaitGroup
	for range conc {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range r.jobs {
				r.handle(ctx, i)
			}
		}()
	}
	r.phase(ctx, start, false)
	r.phase(ctx, time.Now(), true)
	close(r.jobs)
	workers.Wait()
	return Report{Results: r.results, Stats: r.stats.clone(), Elapsed: time.Since(start)}, ctx.Err()
}

type run struct {
	s           *Simulator
	t           Targets
	client      *http.Client
	jobs        chan int
	results     []DeliveryResult
	outstanding sync.WaitGroup
	stats       Stats // this run; guarded by s.mu
	total       int
	finished    int // guarded by s.mu
}

func (r *run) phase(ctx context.Context, start time.Time, late bool) {
	for i := range r.results {
		res := &r.results[i]
		if res.Late != late {
			continue
		}
		r.count(func(st *Stats) {
			st.Planned++
			if res.Duplicate {
				st.Duplicates++
			}
			if res.Event.Conflicting {
				st.Conflicts++
			}
			if res.Delayed {
				st.Delayed++
			}
			if res.Reordered {
				st.Reordered++
			}
		})
		switch {
		case res.Dropped:
			r.s.mu.Lock()
			r.s.fate(res.Event.ID).dropped = true
			r.s.mu.Unlock()
			r.finish(res, OutcomeDropped)
			continue
		case late && res.Event.Conflicting && !r.s.acked(res.Event.ID):
			r.finish(res, OutcomeSkipped)
			continue
		}
		if !sleepUntil(ctx, start.Add(res.At)) {
			r.finish(res, OutcomeCanceled)
			continue
		}
		r.outstanding.Add(1)
		select {
		case r.jobs <- i:
		case <-ctx.Done():
			r.finish(res, OutcomeCanceled)
			r.outstanding.Done()
		}
	}
	r.outstanding.Wait()
}

func (r *run) handle(ctx context.Context, i int) {
	res := &r.results[i]
	ar, err := r.s.attempt(ctx, r.client, r.t, res.Event, &r.stats)
	res.Attempts++
	res.Statuses = append(res.Statuses, ar.Status)
	if err == nil && ar.Status/100 == 2 {
		r.finish(res, OutcomeAcked)
		r.outstanding.Done()
		return
	}
	if err != nil {
		res.LastError = err.Error()
	} else {
		res.LastError = fmt.Sprintf("HTTP %d: %s", ar.Status, bytes.TrimSpace(ar.Body))
	}
	switch {
	case ctx.Err() != nil:
		r.finish(res, OutcomeCanceled)
		r.outstanding.Done()
		return
	case res.Attempts >= r.s.cfg.Delivery.MaxAttempts:
		r.finish(res, OutcomeExhausted)
		r.outstanding.Done()
		return
	}
	r.count(func(st *Stats) { st.Retries++ })
	wait := r.s.scaled(r.s.backoff(res.Event.ID, res.Attempts))
	go func() {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
			select {
			case r.jobs <- i:
				return
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		r.finish(res, OutcomeCanceled)
		r.outstanding.Done()
	}()
}

func (r *run) finish(res *DeliveryResult, outcome string) {
	res.Outcome = outcome
	r.s.mu.Lock()
	for _, st := range []*Stats{&r.stats, &r.s.stats} {
		switch outcome {
		case OutcomeAcked:
			st.Acked++
		case OutcomeExhausted:
			st.Exhausted++
		case OutcomeDropped:
			st.Dropped++
		case OutcomeCanceled:
			st.Canceled++
		case OutcomeSkipped:
			st.Skipped++
		}
	}
	r.finished++
	n := r.finished
	r.s.mu.Unlock()
	flags := ""
	for _, f := range []struct {
		on   bool
		name string
	}{{res.Duplicate, "duplicate"}, {res.Event.Conflicting, "conflicting"}, {res.Delayed, "delayed"}, {res.Reordered, "reordered"}} {
		if f.on {
			flags += " " + f.name
		}
	}
	r.s.logf("[%d/%d] %s %s %s → %s after %d attempt(s) %v%s", n, r.total, res.Event.ID, res.Event.Type,
		res.Event.ResourceID, outcome, res.Attempts, res.Statuses, flags)
}

func (r *run) count(f func(*Stats)) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	f(&r.stats)
	f(&r.s.stats)
}

func (s *Simulator) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is the provider-time wait after the n-th failed attempt:
// RetryBase·2^(n-1), ±25% jitter derived from the seed, event and attempt,
// capped at RetryCap.
func (s *Simulator) backoff(eventID string, n int) time.Duration {
	d := s.cfg.Delivery
	wait := float64(d.RetryBase) * math.Pow(2, float64(n-1))
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", s.cfg.Seed, eventID, n)
	u := float64(h.Sum64()%10000) / 10000
	wait *= 0.75 + 0.5*u
	return min(time.Duration(wait), d.RetryCap)
}

// attempt posts ev once and records the result in the totals and in local.
func (s *Simulator) attempt(ctx context.Context, client *http.Client, t Targets, ev Event, local *Stats) (AttemptResult, error) {
	ep := t.endpoint(ev.Provider)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return AttemptResult{}, fmt.Errorf("request for %s: %w", ev.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	now := time.Now()
	switch ev.Provider {
	case ProviderStandard:
		h, err := StandardHeaders(ev.ID, ev.Body, now, ep.Secrets...)
		if err != nil {
			return AttemptResult{}, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", "hookinbox-simulator/standard-webhooks")
	default:
		req.Header.Set("Stripe-Signature", SignStripe(ev.Body, now, ep.Secrets...))
		req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	}
	s.mu.Lock()
	s.fate(ev.ID).attempted = true
	s.mu.Unlock()
	resp, err := client.Do(req)
	var ar AttemptResult
	if err == nil {
		ar.Status = resp.StatusCode
		ar.Header = resp.Header
		ar.Body, _ = io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range []*Stats{local, &s.stats} {
		st.Attempts++
		switch {
		case err != nil:
			st.TransportErrors++
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				st.Timeouts++
			}
		case ar.Status/100 == 2:
			st.Responses2xx++
		default:
			st.ResponsesNon2xx++
		}
		if err == nil {
			if st.StatusCodes == nil {
				st.StatusCodes = map[int]int{}
			}
			st.StatusCodes[ar.Status]++
		}
	}
	if err != nil {
		return ar, fmt.Errorf("post %s: %w", ev.ID, err)
	}
	if ar.Status/100 == 2 && !ev.Conflicting {
		s.fate(ev.ID).acked = true
	}
	return ar, nil
}

// fate returns the delivery record of an event id. Callers hold mu.
func (s *Simulator) fate(id string) *eventFate {
	f, ok := s.delivered[id]
	if !ok {
		f = &eventFate{}
		s.delivered[id] = f
	}
	return f
}

func (s *Simulator) acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.delivered[id]
	return ok && f.acked
}
