package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Handoff rings a resource workflow's doorbell after an event is committed.
// It must not block: the answer to the sender never waits on Temporal.
type Handoff = admission.Handoff

// Options configure the intake.
type Options struct {
	Store *store.Store
	// Routes decides which authenticated events are handled (pending) and
	// which are ignored (admission.Options.Routes).
	Routes  routes.Router
	Handoff Handoff
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// MaxBodyBytes: larger bodies are refused with 413.
	MaxBodyBytes int64
	// Tolerance for timestamped signature schemes.
	Tolerance time.Duration
	// CacheTTL of endpoints, secrets and links.
	CacheTTL time.Duration
	// NegativeTTL: the least time between two refreshes of the intake's
	// slug set caused by deliveries to unknown slugs (0:
	// admission.DefaultNegativeTTL or CacheTTL, whichever is shorter).
	NegativeTTL time.Duration
	// InboxWriters: inbox commits in flight at once, with group commit
	// (admission.Options.Writers); 0 commits each delivery on its own.
	InboxWriters int
	// RequestTimeout is each delivery's deadline, from the start of its
	// handling to the answer: reading the body and every database call.
	// Past it the answer is 503 and the sender retries (0:
	// DefaultRequestTimeout).
	RequestTimeout time.Duration
	// TemporalCheck, when set, is reported by Ready (informational: the
	// intake stays ready without Temporal, by design).
	TemporalCheck func(context.Context) error
	// Tracer, when set, traces each delivery: the request's span is the
	// root of the delivery's trace, verification and the inbox commit its
	// children, and its traceparent is stored with the row. Nil (tracing
	// off): no span is started at all.
	Tracer trace.Tracer
	// Now is the clock (tests).
	Now func() time.Time
}

// Server is the webhook intake.
type Server struct {
	o   Options
	adm *admission.Admitter
	log *slog.Logger
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
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	adm := admission.New(admission.Options{Store: o.Store, Routes: o.Routes, Handoff: o.Handoff, Tolerance: o.Tolerance,
		CacheTTL: o.CacheTTL, NegativeTTL: o.NegativeTTL, Writers: o.InboxWriters,
		WriterTimeout: o.RequestTimeout, Tracer: o.Tracer, Now: o.Now})
	return &Server{o: o, adm: adm, log: o.Logger}
}

// Handler returns the public handler, the only one a provider can reach:
// POST /webhooks/:endpoint and a bare GET /healthz. Everything else is 404
// (or 405 for another method on the webhook route); /metrics and the
// detailed readiness are served on the internal listener (Ready, and the
// registry in Options.Metrics).
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
	return r
}

// Ready is the detailed readiness check for the internal listener: the
// database (503 when it does not answer, with the driver's error, which
// names the server, user and database) and Temporal (reported only: the
// intake accepts without it).
func (s *Server) Ready() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		out := map[string]string{}
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
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(out)
	})
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
	outTimeout      = "timeout"
	outBadRequest   = "bad_request"
	outReplied      = "replied"
)

// unknownEndpoint is the endpoint label of every delivery whose slug is not
// a registered endpoint's (or could not be looked up): labels are bounded
// by the endpoints registered, never chosen by the sender.
const unknownEndpoint = "unknown"

// delivery is the state of one request, for the answer, the log and metrics.
type delivery struct {
	start time.Time
	slug  string
	// endpoint is the metrics and log label: the slug once it is known
	// to be a registered endpoint's, unknownEndpoint until then.
	endpoint string
	provider string
	key      keys.Event
	resource keys.Resource
	outcome  string
	detail   string
}

func (s *Server) receive(c *gin.Context) {
	d := &delivery{start: time.Now(), slug: c.Param("endpoint"), endpoint: unknownEndpoint, provider: "unknown"}
	deadline := d.start.Add(s.o.RequestTimeout)
	ctx, cancel := context.WithDeadline(c.Request.Context(), deadline)
	defer cancel()
	// The body is read under the same deadline (a sender trickling its
	// body cannot hold the request open); httptest recorders cannot, and
	// need not.
	_ = http.NewResponseController(c.Writer).SetReadDeadline(deadline)
	var span trace.Span
	if s.o.Tracer != nil {
		// The root of the delivery's trace: a sender's own traceparent, if
		// any, is not followed (no provider sends one, and the trace is
		// hookinbox's delivery, not the sender's request).
		ctx, span = s.o.Tracer.Start(ctx, "POST /webhooks/{endpoint}", trace.WithNewRoot(),
			trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(d.start))
	}
	code, body := s.handle(ctx, c.Request, d)
	if code == http.StatusServiceUnavailable && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d.outcome = outTimeout
	}
	writeReply(c, code, body)
	if span != nil {
		endRequestSpan(span, d, code)
	}
	// The sender has its answer: the metrics and the log line are not on
	// its path.
	s.record(d, code)
}

// endRequestSpan ends a delivery's root span with what it did: the
// endpoint, provider, outcome, event key and the answer's status (a 5xx is
// an error of the span; a 4xx is the sender's).
func endRequestSpan(span trace.Span, d *delivery, code int) {
	span.SetAttributes(attribute.String("http.route", "/webhooks/:endpoint"), attribute.Int("http.response.status_code", code),
		attribute.String("hookinbox.endpoint", d.endpoint), attribute.String("hookinbox.provider", d.provider),
		attribute.String("hookinbox.outcome", d.outcome))
	if d.key.EventID != "" {
		span.SetAttributes(attribute.String("hookinbox.event_key", d.key.String()))
	}
	if code >= 500 {
		span.SetStatus(codes.Error, d.outcome)
	}
	span.End()
}

// writeReply writes the answer with its length and sends it at once
// (rather than when the handler returns), so that what the handler does
// after it is not on the sender's path.
func writeReply(c *gin.Context, code int, r reply) {
	if r.handshake != nil {
		// The provider's answer to its own handshake, as it made it.
		c.Header("Content-Length", strconv.Itoa(len(r.handshake.Body)))
		c.Header("X-Content-Type-Options", "nosniff")
		c.Data(code, r.handshake.ContentType, r.handshake.Body)
		c.Writer.Flush()
		return
	}
	b, err := json.Marshal(r)
	if err != nil { // strings only: cannot happen
		b = []byte(`{"error":"internal error"}`)
	}
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Data(code, "application/json; charset=utf-8", b)
	c.Writer.Flush()
}

func (s *Server) record(d *delivery, code int) {
	took := time.Since(d.start)
	s.o.Metrics.Requests.WithLabelValues(d.endpoint, d.provider, d.outcome).Inc()
	s.o.Metrics.AckSeconds.WithLabelValues(d.provider, d.outcome).Observe(took.Seconds())
	level := slog.LevelInfo
	if code >= 500 {
		level = slog.LevelError
	} else if code >= 400 {
		level = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	// Attrs, not key-value pairs: no value is boxed.
	var buf [9]slog.Attr
	attrs := append(buf[:0], slog.String("endpoint", d.endpoint), slog.String("provider", d.provider),
		slog.String("outcome", d.outcome), slog.Int("status", code),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000))
	if d.endpoint == unknownEndpoint {
		attrs = append(attrs, slog.String("slug", logSlug(d.slug)))
	}
	if d.key.EventID != "" {
		attrs = append(attrs, slog.String("event_key", d.key.String()))
	}
	if d.resource.ID != "" {
		attrs = append(attrs, slog.String("resource", d.resource.String()))
	}
	if d.detail != "" {
		attrs = append(attrs, slog.String("detail", d.detail))
	}
	s.log.LogAttrs(context.Background(), level, "webhook delivery", attrs...)
}

// logSlug is a sender-chosen slug as a log value: valid UTF-8, at most a
// valid slug's length and a marker.
func logSlug(slug string) string {
	const keep = keys.MaxSlugLen
	cut := len(slug) > keep
	if cut {
		slug = slug[:keep]
	}
	slug = strings.ToValidUTF8(slug, "\ufffd")
	if cut {
		slug += "…"
	}
	return slug
}

// reply is the JSON answer to a delivery. Its fields are in the order
// encoding/json gives the keys of a map (sorted), and empty ones are left
// out, so it reads as the gin.H it replaces did, byte for byte; a struct
// is encoded without reflection over a map and its boxed values.
type reply struct {
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
	Event  string `json:"event,omitempty"`
	Reason string `json:"reason,omitempty"`
	Status string `json:"status,omitempty"`
	// handshake, when set, is answered instead of the JSON.
	handshake *providers.Reply
}

func answer(d *delivery, outcome, msg string) reply {
	d.outcome = outcome
	r := reply{Status: outcome, Detail: msg}
	if d.key.EventID != "" {
		r.Event = d.key.String()
	}
	return r
}

func failure(d *delivery, outcome, msg string) reply {
	d.outcome = outcome
	d.detail = msg
	return reply{Error: msg}
}

// handle runs the intake's HTTP steps (endpoint, body limit) and hands the
// delivery to admission (signature, normalization, tenant mapping, commit,
// hand-off), then maps what it did to the answer.
func (s *Server) handle(ctx context.Context, r *http.Request, d *delivery) (int, reply) {
	// A slug no endpoint can have (the schema's CHECK) is unknown without
	// asking the database.
	if !keys.ValidSlug(d.slug) {
		return http.StatusNotFound, failure(d, outNotFound, "unknown endpoint")
	}
	ep, err := s.adm.Endpoint(ctx, d.slug)
	if errors.Is(err, fault.ErrNotFound) {
		return http.StatusNotFound, failure(d, outNotFound, "unknown endpoint")
	}
	if err != nil {
		d.detail = err.Error()
		return http.StatusServiceUnavailable, failure(d, outUnavailable, "database unavailable, retry later")
	}
	d.endpoint, d.provider = ep.Slug, ep.Provider

	if r.ContentLength > s.o.MaxBodyBytes {
		return http.StatusRequestEntityTooLarge, failure(d, outTooLarge, "body larger than the limit")
	}
	raw, err := readBody(r, s.o.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, failure(d, outTooLarge, "body larger than the limit")
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
			return http.StatusServiceUnavailable, failure(d, outTimeout, "request deadline exceeded, retry later")
		}
		return http.StatusBadRequest, failure(d, outBadRequest, "could not read body")
	}

	res, err := s.adm.Admit(ctx, ep, admission.Delivery{Header: r.Header, Body: raw}, keys.OriginWebhook)
	d.key, d.resource = res.Key, res.Resource
	var unauth *providers.Unauthenticated
	switch {
	case errors.As(err, &unauth):
		d.outcome, d.detail = outUnauthorized, err.Error()
		return http.StatusUnauthorized, reply{Error: "invalid or missing signature"}
	case errors.Is(err, admission.ErrNotStored):
		// Commit failed or its outcome is unknown: the sender must retry.
		return http.StatusServiceUnavailable, failure(d, outUnavailable, "could not store the event, retry later")
	case err != nil:
		return http.StatusInternalServerError, failure(d, outUnavailable, "internal error")
	}
	switch res.Outcome {
	case admission.Accepted:
		return http.StatusOK, answer(d, outAccepted, "")
	case admission.Ignored:
		d.detail = res.Detail
		return http.StatusOK, answer(d, outIgnored, res.Detail)
	case admission.Duplicate:
		// The row is left alone (a pending one got another doorbell).
		return http.StatusOK, answer(d, outDuplicate, "already accepted ("+res.Status+")")
	case admission.Replied:
		// A verified handshake: nothing was stored.
		d.outcome = outReplied
		return http.StatusOK, reply{handshake: res.Reply}
	default: // Quarantined.
		d.detail = res.Reason + ": " + res.Detail
		switch res.Reason {
		case inbox.ReasonMalformed:
			d.outcome = outMalformed
			return http.StatusBadRequest, reply{Error: res.Detail, Status: "quarantined", Reason: res.Reason}
		case inbox.ReasonConflictingDuplicate:
			return http.StatusOK, quarantined(d, res)
		default:
			return http.StatusAccepted, quarantined(d, res)
		}
	}
}

// quarantined is the 2xx answer to a delivery kept in the quarantine.
func quarantined(d *delivery, res admission.Result) reply {
	r := answer(d, outQuarantined, res.Detail)
	r.Reason = res.Reason
	return r
}

// readBody reads the whole body, at most limit bytes: into one buffer of
// its declared length when it declares one (no buffer grown and copied as
// it is read), else as it comes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(nil, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		// The server never reads past the declared length, and a body
		// that ends before it is an error, as with io.ReadAll.
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}
