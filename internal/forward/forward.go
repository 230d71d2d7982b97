// Package forward sends the events of forward routes to a team's own HTTP
// service (issue 23): one JSON document per operation, POSTed by the
// resource workflow (so one resource's forwards never overlap nor pass each
// other), signed with Standard Webhooks under the route's secret, with
// webhook-id and Idempotency-Key set to the operation key. A 2xx completes
// the row; 408, 425, 429, 5xx, timeouts and connection errors are retried
// with the workflow's full-jitter backoff (Retry-After honoured) within the
// route's budget; any other 4xx fails the event at once with the answer's
// status and a clipped body. A send whose outcome is unknown is sent again
// with the same keys: the receiver's dedup on them is the contract.
package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/providers"
)

// Document is what a route's service receives, one per operation.
type Document struct {
	OperationKey string          `json:"operation_key"`
	EventKey     string          `json:"event_key"`
	Route        string          `json:"route"`
	Provider     string          `json:"provider"`
	EventType    string          `json:"event_type"`
	Resource     DocResource     `json:"resource"`
	Account      string          `json:"account"`
	Environment  string          `json:"environment"`
	Workspace    string          `json:"workspace"`
	ReceivedAt   time.Time       `json:"received_at"`
	Payload      json.RawMessage `json:"payload"`
	// Current is the provider's object fetched just before the send
	// (--fetch-current): the state to apply when there is no version.
	Current json.RawMessage `json:"current,omitempty"`
	// Coalesced, on a coalescing route's document that covers more than
	// one event, lists every event it covers in the resource's order, the
	// last being the one EventKey, EventType, ReceivedAt and Payload are
	// of. The operation key then names the route, the resource and that
	// last event.
	Coalesced []forwards.Covered `json:"coalesced,omitempty"`
}

// CoalescedKey is the operation key of a coalesced document on route
// covering resource res up to event last.
func CoalescedKey(route string, res keys.Resource, last keys.Event) string {
	return keys.Join("forward", route, "coalesced", res.Provider, res.Account, res.Environment, res.Kind, res.ID, last.EventID)
}

// DocResource is the resource an event is about.
type DocResource struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Sender sends forward routes' documents: it reads (and caches) a route
// with its opened secret, signs and POSTs one document, and classifies the
// answer. The handler that drives it per event is the root package's, on
// the public API (a forward route is one more kind of handler).
type Sender struct {
	// Guard refuses private addresses unless a route allows them.
	Guard   outbound.Guard
	Metrics *metrics.Metrics
	// Client replaces the guarded client (tests).
	Client func(timeout time.Duration, allowPrivate bool) *http.Client
	// TTL of the routes read from the database (0: 5 s).
	TTL time.Duration
	// Now is the clock the signature's timestamp is taken from (nil: now).
	Now func() time.Time
	// Routes is the worker's route table: a coalesced send covers only
	// the following events it routes to the same route (nil: none).
	Routes routes.Router

	mu    sync.Mutex
	cache map[string]cachedRoute
}

type cachedRoute struct {
	route *forwards.Route
	at    time.Time
}

// Route reads (and caches for TTL) the route named name with its secret.
// A removed route is a permanent error: nothing to send the event to.
func (s *Sender) Route(ctx context.Context, st *store.Store, name string) (*forwards.Route, error) {
	ttl := s.TTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	s.mu.Lock()
	if r, ok := s.cache[name]; ok && time.Since(r.at) < ttl {
		s.mu.Unlock()
		return r.route, nil
	}
	s.mu.Unlock()
	r, err := forwards.Open(ctx, st, name)
	if fault.IsNotFound(err) {
		return nil, fault.Permanent(fmt.Errorf("forward route %s was removed: nothing to send this event to", name))
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache = map[string]cachedRoute{}
	}
	s.cache[name] = cachedRoute{route: r, at: time.Now()}
	s.mu.Unlock()
	return r, nil
}

// OperationKey is an event's operation key on route r: the event key, or
// with an operation key path the value there, under the route's name.
func OperationKey(r *forwards.Route, ev keys.Event, payload []byte) (string, error) {
	if r.OperationKeyPath == "" {
		return ev.String(), nil
	}
	v := gjson.GetBytes(payload, r.OperationKeyPath)
	if !v.Exists() || strings.TrimSpace(v.String()) == "" || v.IsObject() || v.IsArray() {
		return "", fault.Permanent(fmt.Errorf("the event names no operation at %s (route %s)", r.OperationKeyPath, r.Name))
	}
	return keys.Join("forward", r.Name, ev.Provider, ev.Account, ev.Environment, v.String()), nil
}

// Payload is the document's payload: the verified JSON, or a body that is
// not JSON (GitHub's form-encoded deliveries) as a JSON string.
func Payload(raw []byte) json.RawMessage {
	if json.Valid(raw) {
		return json.RawMessage(raw)
	}
	s, _ := json.Marshal(string(raw))
	return s
}

// Answer is what one send got back.
type Answer struct {
	StatusCode int
	Latency    time.Duration
	// Class names a failure for the metrics (http_5xx, timeout, …); empty
	// after a 2xx.
	Class string
	// Retry: the failure is retried within the budget; false: the event
	// fails at once.
	Retry bool
}

// Send signs and POSTs doc to r's URL under opKey, observes its latency
// and class, and returns the answer; a non-2xx is an *Error.
func (s *Sender) Send(ctx context.Context, r *forwards.Route, opKey string, doc Document) (Answer, error) {
	body, err := json.Marshal(doc)
	if err != nil {
		return Answer{}, fault.Permanent(err)
	}
	return s.SendBody(ctx, r, opKey, body)
}

// SendBody is Send of a document already encoded (a coalesced document,
// recorded before its first send, goes again byte for byte).
func (s *Sender) SendBody(ctx context.Context, r *forwards.Route, opKey string, body []byte) (Answer, error) {
	status, latency, err := s.post(ctx, r, opKey, body)
	a := Answer{StatusCode: status, Latency: latency}
	if s.Metrics != nil && latency > 0 {
		s.Metrics.ForwardSeconds.WithLabelValues(r.Name).Observe(latency.Seconds())
	}
	if err == nil {
		return a, nil
	}
	a.Class, a.Retry = classify(status, err)
	if s.Metrics != nil {
		s.Metrics.ForwardFailures.WithLabelValues(r.Name, a.Class).Inc()
	}
	if !a.Retry {
		return a, fault.Permanent(err)
	}
	return a, err
}

// Error is a forward attempt's failure: the status (0: no answer) and a
// clipped answer.
type Error struct {
	Route      string
	StatusCode int
	Body       string
	Err        error
	retryAfter time.Duration
	hasRetry   bool
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("forward %s: %v", e.Route, e.Err)
	case e.Body != "":
		return fmt.Sprintf("forward %s: HTTP %d: %s", e.Route, e.StatusCode, e.Body)
	}
	return fmt.Sprintf("forward %s: HTTP %d", e.Route, e.StatusCode)
}

func (e *Error) Unwrap() error { return e.Err }

// RetryAfterHint is the service's Retry-After, when it sent one.
func (e *Error) RetryAfterHint() (time.Duration, bool) { return e.retryAfter, e.hasRetry }

// send POSTs body and reports the answer.
func (s *Sender) post(ctx context.Context, r *forwards.Route, opKey string, body []byte) (int, time.Duration, error) {
	wh, err := standardwebhooks.NewWebhook(r.Secret)
	if err != nil {
		return 0, 0, fault.Permanent(fmt.Errorf("route %s secret: %w", r.Name, err))
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	sig, err := wh.Sign(opKey, now, body)
	if err != nil {
		return 0, 0, fault.Permanent(err)
	}
	rctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fault.Permanent(fmt.Errorf("route %s URL: %w", r.Name, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hookinbox-forward/1")
	req.Header.Set("Idempotency-Key", opKey)
	req.Header.Set(standardwebhooks.HeaderWebhookID, opKey)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	status, latency, err := s.do(req, r, traceForward(ctx, r.Name, req.Header))
	return status, latency, err
}

// do sends req and classifies the answer; end ends the POST's span.
func (s *Sender) do(req *http.Request, r *forwards.Route, end func(int, error)) (status int, latency time.Duration, err error) {
	defer func() { end(status, err) }()
	hc := s.client(r)
	start := time.Now()
	resp, err := hc.Do(req)
	latency = time.Since(start)
	if errors.Is(err, outbound.ErrForbiddenAddress) {
		return 0, latency, &Error{Route: r.Name, Err: fmt.Errorf("refused: %w (the route does not allow private or loopback "+
			"addresses: hookinbox routes update %s --allow-private, if the service is beside hookinbox on purpose)", transportError(err), r.Name)}
	}
	if err != nil {
		return 0, latency, &Error{Route: r.Name, Err: transportError(err)}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, latency, nil
	}
	e := &Error{Route: r.Name, StatusCode: resp.StatusCode, Body: clip(string(answer), 300)}
	if r.AllowPrivate || s.Guard.AllowPrivate {
		// The address may be an internal service's: its answer is recorded
		// by its status only (forward_attempts.error is read by viewers).
		e.Body = ""
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Body = ""
		e.Err = fmt.Errorf("HTTP %d redirect to %s refused: a route's URL is where its events go, never elsewhere", resp.StatusCode, outbound.Origin(resp.Header.Get("Location")))
	}
	e.retryAfter, e.hasRetry = providers.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return resp.StatusCode, latency, e
}

func (s *Sender) client(r *forwards.Route) *http.Client {
	if s.Client != nil {
		return s.Client(r.Timeout, r.AllowPrivate)
	}
	g := s.Guard
	if r.AllowPrivate {
		g.AllowPrivate = true
	}
	return g.Client(r.Timeout)
}

// classify says what a failed attempt is and whether it is retried.
func classify(status int, err error) (class string, retry bool) {
	switch {
	case errors.Is(err, outbound.ErrForbiddenAddress):
		return "refused_address", false
	case status >= 300 && status < 400:
		return "redirect", false
	case status == http.StatusTooManyRequests:
		return "http_429", true
	case status == http.StatusRequestTimeout || status == http.StatusTooEarly:
		return "http_408_425", true
	case status >= 500:
		return "http_5xx", true
	case status >= 400:
		return "http_4xx", false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "timeout", true
	}
	return "connection", true
}

// transportError keeps the cause of a failed request without the URL
// (whose path and query may carry the service's tokens).
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(strings.Join(strings.Fields(s), " "), "")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
