package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Handoff rings a resource workflow's doorbell after an event is committed.
// It must not block: the answer to the sender never waits on Temporal.
type Handoff interface {
	Notify(r keys.Resource, e keys.Event)
}

// Options configure the intake.
type Options struct {
	Store   *store.Store
	Handoff Handoff
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// MaxBodyBytes: larger bodies are refused with 413.
	MaxBodyBytes int64
	// Tolerance for timestamped signature schemes.
	Tolerance time.Duration
	// CacheTTL of endpoints, secrets and links.
	CacheTTL time.Duration
	// TemporalCheck, when set, is reported by /readyz (informational: the
	// intake stays ready without Temporal, by design).
	TemporalCheck func(context.Context) error
	// Now is the clock (tests).
	Now func() time.Time
}

// Server is the webhook intake.
type Server struct {
	o     Options
	cache *endpointCache
	log   *slog.Logger
}

// New builds the intake.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	return &Server{o: o, cache: newEndpointCache(o.Store, o.CacheTTL), log: o.Logger}
}

// Handler returns the HTTP handler: POST /webhooks/:endpoint, /healthz,
// /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, err any) {
		s.log.Error("intake panic recovered", "path", c.FullPath(), "panic", err)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
	}))
	r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "not found"}) })
	r.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "method not allowed"}) })
	r.POST("/webhooks/:endpoint", s.receive)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.o.Metrics.Registry, promhttp.HandlerOpts{})))
	return r
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	out := gin.H{}
	code := http.StatusOK
	if err := s.o.Store.Ping(ctx); err != nil {
		out["database"] = "unavailable: " + err.Error()
		code = http.StatusServiceUnavailable
	} else {
		out["database"] = "ok"
	}
	if s.o.TemporalCheck != nil {
		if err := s.o.TemporalCheck(ctx); err != nil {
			out["temporal"] = "unavailable (events are accepted and handed off when it returns): " + err.Error()
		} else {
			out["temporal"] = "ok"
		}
	}
	c.JSON(code, out)
}

// Outcomes of a delivery (metrics label and answer status).
const (
	outAccepted     = "accepted"
	outDuplicate    = "duplicate"
	outIgnored      = "ignored"
	outQuarantined  = "quarantined"
	outUnauthorized = "unauthorized"
	outNotFound     = "not_found"
	outTooLarge     = "too_large"
	outMalformed    = "malformed"
	outUnavailable  = "unavailable"
	outBadRequest   = "bad_request"
)

// delivery is the state of one request, for the answer, the log and metrics.
type delivery struct {
	start    time.Time
	slug     string
	provider string
	key      keys.Event
	resource keys.Resource
	outcome  string
	detail   string
}

func (s *Server) receive(c *gin.Context) {
	ctx := c.Request.Context()
	d := &delivery{start: time.Now(), slug: c.Param("endpoint"), provider: "unknown"}
	code, body := s.handle(ctx, c.Request, d)
	c.JSON(code, body)
	s.record(d, code)
}

func (s *Server) record(d *delivery, code int) {
	endpoint := d.slug
	if d.outcome == outNotFound {
		endpoint = "unknown" // bounded label: never an attacker-chosen slug
	}
	s.o.Metrics.Requests.WithLabelValues(endpoint, d.provider, d.outcome).Inc()
	s.o.Metrics.AckSeconds.WithLabelValues(d.provider, d.outcome).Observe(time.Since(d.start).Seconds())
	attrs := []any{"endpoint", endpoint, "provider", d.provider, "outcome", d.outcome, "status", code,
		"duration_ms", float64(time.Since(d.start).Microseconds()) / 1000}
	if d.key.EventID != "" {
		attrs = append(attrs, "event_key", d.key.String())
	}
	if d.resource.ID != "" {
		attrs = append(attrs, "resource", d.resource.String())
	}
	if d.detail != "" {
		attrs = append(attrs, "detail", d.detail)
	}
	level := slog.LevelInfo
	if code >= 500 {
		level = slog.LevelError
	} else if code >= 400 {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "webhook delivery", attrs...)
}

func answer(d *delivery, outcome, msg string) gin.H {
	d.outcome = outcome
	h := gin.H{"status": outcome}
	if msg != "" {
		h["detail"] = msg
	}
	if d.key.EventID != "" {
		h["event"] = d.key.String()
	}
	return h
}

func failure(d *delivery, outcome, msg string) gin.H {
	d.outcome = outcome
	d.detail = msg
	return gin.H{"error": msg}
}

// handle runs the intake steps in order: endpoint, body, signature,
// normalization, tenant mapping, commit, hand-off.
func (s *Server) handle(ctx context.Context, r *http.Request, d *delivery) (int, gin.H) {
	ep, err := s.cache.get(ctx, d.slug, false)
	if errors.Is(err, store.ErrNotFound) {
		return http.StatusNotFound, failure(d, outNotFound, "unknown endpoint")
	}
	if err != nil {
		d.detail = err.Error()
		return http.StatusServiceUnavailable, failure(d, outUnavailable, "database unavailable, retry later")
	}
	d.provider = ep.Provider

	if r.ContentLength > s.o.MaxBodyBytes {
		return http.StatusRequestEntityTooLarge, failure(d, outTooLarge, "body larger than the limit")
	}
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.o.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, failure(d, outTooLarge, "body larger than the limit")
		}
		return http.StatusBadRequest, failure(d, outBadRequest, "could not read body")
	}

	v, err := verify(ep, r.Header, raw, s.o.Tolerance, s.o.Now())
	if err != nil {
		// The secret may have just been added: reload once and retry.
		if fresh, ferr := s.cache.get(ctx, d.slug, true); ferr == nil && fresh != ep {
			ep = fresh
			v, err = verify(ep, r.Header, raw, s.o.Tolerance, s.o.Now())
		}
	}
	if err != nil {
		d.outcome, d.detail = outUnauthorized, err.Error()
		return http.StatusUnauthorized, gin.H{"error": "invalid or missing signature"}
	}

	ev, err := Derive(ep.Endpoint, r.Header, v.payload, raw)
	var rej *Rejection
	if errors.As(err, &rej) && rej.Reason == store.ReasonUnknownAccount {
		// The link may have just been added: reload once and derive again.
		if fresh, ferr := s.cache.get(ctx, d.slug, true); ferr == nil && fresh != ep {
			ep = fresh
			ev, err = Derive(ep.Endpoint, r.Header, v.payload, raw)
		}
	}
	d.key = ev.Key
	if err != nil {
		if !errors.As(err, &rej) {
			d.detail = err.Error()
			return http.StatusInternalServerError, failure(d, outUnavailable, "internal error")
		}
		q := quarantineEntry(ev, r.Header, rej)
		if rej.Reason == store.ReasonMalformed {
			return s.quarantine(ctx, d, q, http.StatusBadRequest, outMalformed)
		}
		return s.quarantine(ctx, d, q, http.StatusAccepted, outQuarantined)
	}
	ev.SecretID, ev.Origin = v.secretID, keys.OriginWebhook
	d.resource = ev.Resource()
	handled := ev.Status == keys.StatusPending

	res, err := store.InsertInboxEvent(ctx, s.o.Store.Pool, ev)
	if err != nil {
		// Commit failed or its outcome is unknown: the sender must retry.
		d.detail = err.Error()
		return http.StatusServiceUnavailable, failure(d, outUnavailable, "could not store the event, retry later")
	}
	switch res.Outcome {
	case store.Inserted:
		if !handled {
			d.detail = ev.LastError
			return http.StatusOK, answer(d, outIgnored, ev.LastError)
		}
		s.o.Handoff.Notify(d.resource, d.key)
		return http.StatusOK, answer(d, outAccepted, "")
	case store.Duplicate:
		// Leave the row alone; a pending one gets another doorbell in case
		// the first hand-off was lost (it is coalesced if still queued).
		if res.ExistingStatus == keys.StatusPending {
			s.o.Handoff.Notify(d.resource, d.key)
		}
		return http.StatusOK, answer(d, outDuplicate, "already accepted ("+res.ExistingStatus+")")
	default: // Conflict: same event key, different body.
		q := quarantineEntry(ev, r.Header, &Rejection{Reason: store.ReasonConflictingDuplicate,
			Detail: "event key already accepted with a different body; the original is kept"})
		return s.quarantine(ctx, d, q, http.StatusOK, outQuarantined)
	}
}

// quarantine stores the delivery for investigation and answers code, or 503
// if it could not be stored (so the sender retries and nothing is lost).
func (s *Server) quarantine(ctx context.Context, d *delivery, q *store.QuarantineEntry, code int, outcome string) (int, gin.H) {
	if _, err := store.InsertQuarantine(ctx, s.o.Store.Pool, q); err != nil {
		d.detail = err.Error()
		return http.StatusServiceUnavailable, failure(d, outUnavailable, "could not store the event, retry later")
	}
	d.detail = q.Reason + ": " + q.Detail
	if code >= 400 {
		return code, gin.H{"error": q.Detail, "status": "quarantined", "reason": q.Reason}
	}
	h := answer(d, outcome, q.Detail)
	h["reason"] = q.Reason
	return code, h
}

// quarantineEntry is the quarantine row of a delivery derived as ev.
func quarantineEntry(ev *store.InboxEvent, h http.Header, rej *Rejection) *store.QuarantineEntry {
	return &store.QuarantineEntry{EndpointSlug: ev.EndpointSlug, Provider: ev.Key.Provider, Account: ev.Key.Account,
		Environment: ev.Key.Environment, EventID: ev.Key.EventID, Reason: rej.Reason, Detail: rej.Detail,
		Payload: ev.Payload, BodySHA256: ev.BodySHA256, Headers: keptHeaders(h)}
}

// keptHeaders are the delivery headers a quarantined event needs to be
// re-admitted later (never signatures or secrets).
func keptHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for name, vals := range h {
		lower := strings.ToLower(name)
		keep := lower == "content-type" || lower == "user-agent" || lower == "webhook-id" || lower == "webhook-timestamp" ||
			(strings.HasPrefix(lower, "x-github-") && lower != "x-github-hook-installation-target-id") ||
			(strings.HasPrefix(lower, "x-shopify-") && lower != "x-shopify-hmac-sha256")
		if keep && len(vals) > 0 {
			out[name] = vals[0]
		}
	}
	return out
}
