// Package app wires hookinbox's parts into the two processes it runs, the
// intake and the worker, the same way for the binary, `make run` and the
// end-to-end tests. It owns no logic of its own.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/internal/tracing"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/webhook"
	"github.com/hookinbox/hookinbox/worker"
)

// NewLogger builds the process logger: JSON by default, text for humans.
func NewLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

// WorkflowSettings are the resource workflow settings from configuration.
func WorkflowSettings(cfg config.Config) keys.Settings {
	return keys.Settings{
		IdleTimeout: cfg.IdleTimeout, MaxEventsPerRun: cfg.MaxEventsPerRun, RetryBudget: cfg.RetryBudget,
		RetryInitial: cfg.RetryInitial, RetryMax: cfg.RetryMax, ActivityTimeout: cfg.ActivityTimeout,
		OutboxBudget: cfg.OutboxBudget, Handling: cfg.HandleMode, Send: outboxSend(cfg),
	}
}

// outboxSend is Settings.Send for HOOKINBOX_OUTBOX_SEND ("activity" is the
// Settings' empty value: every attempt a regular activity).
func outboxSend(cfg config.Config) string {
	if cfg.OutboxSend == "local-first" {
		return keys.SendLocalFirst
	}
	return ""
}

// Resources is the resource signaller for cfg.
func Resources(cfg config.Config, c client.Client) *starter.Resources {
	return &starter.Resources{Client: c, TaskQueue: cfg.TaskQueue, Namespace: cfg.TemporalNamespace, Settings: WorkflowSettings(cfg), ConsoleURL: cfg.ConsoleBaseURL(),
		CompleteKinds: cfg.CompleteKinds(), IDPrefix: cfg.WorkflowIDPrefix}
}

// Intake is the intake process: the public HTTP server, the internal
// listener and the hand-off queue.
type Intake struct {
	Server  *webhook.Server
	Handoff *starter.Handoff
	Metrics *metrics.Metrics
	// InternalAddr is where the internal listener listens
	// (HOOKINBOX_INTERNAL_ADDR); InternalListener, when set, is used
	// instead (tests). Neither: no internal listener.
	InternalAddr     string
	InternalListener net.Listener
	// Internal are the internal listener's routes besides /metrics:
	// NewIntake puts the detailed /readyz here; append others (the
	// operator console) before Run.
	Internal []Route
	// Tracing is the intake's tracer provider (nil: tracing off); Run
	// flushes and stops it when it returns.
	Tracing *tracing.Provider
}

// NewTracing is process's tracer provider from cfg (nil when no OTLP
// endpoint is configured). A provider that cannot be built is logged and
// left off: tracing never stops a process from running.
func NewTracing(cfg config.Config, process string, log *slog.Logger) *tracing.Provider {
	p, err := tracing.New(context.Background(), tracing.Options{Endpoint: cfg.TracesEndpoint, Service: cfg.ServiceName, Process: process})
	if err != nil {
		log.Error("tracing off: the OTLP exporter could not be built", "error", err.Error())
		return nil
	}
	if p != nil {
		log.Info("exporting traces", "endpoint", cfg.TracesEndpoint, "process", process)
	}
	return p
}

// shutdownTracing flushes p's buffered spans, for at most 5 s.
func shutdownTracing(p *tracing.Provider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("could not flush the last spans", "error", err.Error())
	}
}

// NewIntake builds the intake on a store and a (lazy) Temporal client.
func NewIntake(cfg config.Config, st *store.Store, c client.Client, m *metrics.Metrics, log *slog.Logger, rt routes.Router) *Intake {
	h := NewHandoff(cfg, Resources(cfg, c), m, log)
	if l, ok := rt.(*routes.Layered); ok {
		ApplyRoutesAtOnce(l, st, h, log)
	}
	o := IntakeOptions(cfg, st, h, m, log, rt)
	tp := NewTracing(cfg, "intake", log)
	o.Tracer = tp.Tracer()
	o.TemporalCheck = func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
	srv := webhook.New(o)
	return &Intake{Server: srv, Handoff: h, Metrics: m, InternalAddr: cfg.InternalAddr, Tracing: tp,
		Internal: []Route{{Pattern: "GET /readyz", Handler: srv.Ready()}}}
}

// ApplyRoutesAtOnce makes an intake's route table apply a forward route
// to every event accepted after the route was committed (issue 34): a miss
// reloads the table when it is a second old, and each reload re-queues the
// rows an intake recorded ignored for a young route's types since it began
// to apply (they were routed by a table of before), ringing their
// resources through h. Only rows ignored for want of a route are re-queued,
// so an event a replaced handler took is never forwarded as well.
func ApplyRoutesAtOnce(l *routes.Layered, st *store.Store, h webhook.Handoff, log *slog.Logger) {
	l.OnMiss = time.Second
	l.Applied = func(ctx context.Context, young []routes.Route) {
		for _, r := range young {
			rows, err := forwards.RequeueIgnored(ctx, st.Pool, r.Provider, r.Type, r.Since)
			if err != nil {
				if log != nil {
					log.Warn("could not re-queue the events a new route missed; the next reload tries again", "route", r.Name, "error", err.Error())
				}
				continue
			}
			for _, q := range rows {
				if h != nil {
					h.Notify(q.Resource, q.Key)
				}
			}
			if len(rows) > 0 && log != nil {
				log.Info("re-queued the events a new route missed", "route", r.Name, "events", len(rows))
			}
		}
	}
}

// HandoffTarget is the SignalWithStart latency above which the paced
// hand-off narrows its window: a few times what one call costs on an idle
// dev server (about 30 ms), well under what a busy cluster answers in.
const HandoffTarget = 150 * time.Millisecond

// NewHandoff is the intake's hand-off queue sized by cfg, ringing through s
// (paced unless HOOKINBOX_HANDOFF_PACING is off).
func NewHandoff(cfg config.Config, s keys.Doorbell, m *metrics.Metrics, log *slog.Logger) *starter.Handoff {
	o := starter.HandoffOptions{
		Capacity: cfg.HandoffQueue, Workers: cfg.HandoffWorkers, Timeout: cfg.HandoffTimeout, Metrics: m, Logger: log,
	}
	if cfg.HandoffPacing {
		o.Pacer = starter.NewPacer(1, cfg.HandoffWorkers, HandoffTarget)
	}
	return starter.NewHandoff(s, o)
}

// IntakeOptions are the intake server's options from cfg, with h as its
// hand-off and rt as its route table (no Temporal health check: NewIntake
// adds it).
func IntakeOptions(cfg config.Config, st *store.Store, h webhook.Handoff, m *metrics.Metrics, log *slog.Logger, rt routes.Router) webhook.Options {
	return webhook.Options{
		Store: st, Routes: rt, Handoff: h, Metrics: m, Logger: log,
		MaxBodyBytes: cfg.MaxBodyBytes, Tolerance: cfg.SignatureTolerance, CacheTTL: cfg.EndpointCacheTTL,
		RequestTimeout: cfg.RequestTimeout, InboxWriters: cfg.IntakeWriters,
	}
}

// Route is one thing an internal listener serves: an http.ServeMux
// pattern ("GET /readyz", "/console/") and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// InternalHandler builds an internal listener's handler: GET /metrics of
// g, then routes. It is for operators and Prometheus, never for providers:
// it is served on HOOKINBOX_INTERNAL_ADDR (or the worker's
// HOOKINBOX_WORKER_ADDR), never on the public port.
func InternalHandler(g prometheus.Gatherer, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}

// InternalHandler is the intake's internal handler: /metrics and i.Internal.
func (i *Intake) InternalHandler() http.Handler {
	return InternalHandler(i.Metrics.Registry, i.Internal...)
}

// Run serves the public port on ln (or addr when ln is nil) and the
// internal listener until ctx ends or either fails.
func (i *Intake) Run(ctx context.Context, addr string, ln net.Listener, log *slog.Logger) error {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	hctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { i.Handoff.Run(hctx); close(done) }()
	internal := make(chan error, 1)
	if i.InternalAddr != "" || i.InternalListener != nil {
		h := i.InternalHandler()
		go func() {
			err := Serve(sctx, i.InternalAddr, i.InternalListener, h, log.With("listener", "internal"))
			stop() // the intake does not run without its internal listener
			internal <- err
		}()
	} else {
		internal <- nil
	}
	err := Serve(sctx, addr, ln, i.Server.Handler(), log.With("listener", "public"))
	stop()
	if ierr := <-internal; err == nil && ierr != nil {
		err = fmt.Errorf("internal listener: %w", ierr)
	}
	// Give queued doorbells a moment to go out; the rest is the sweeper's.
	deadline := time.Now().Add(2 * time.Second)
	for i.Handoff.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	shutdownTracing(i.Tracing, log)
	return err
}

// Activities are the worker's activities, one struct per task queue, over
// the store-backed ports, and the business handlers the resource
// activities route events to.
type Activities struct {
	worker.Activities
	Store *store.Store
	// Handlers by route name (the Business's); tests and benchmarks
	// replace or remove some before the worker starts.
	Handlers engine.Set
	// Tracing is the worker's tracer provider (nil: tracing off);
	// RunWorker flushes and stops it when it returns.
	Tracing *tracing.Provider
}

// NewActivities builds the worker's activities with b's handlers and
// reconcilers and the configured mailer.
func NewActivities(cfg config.Config, st *store.Store, c client.Client, m *metrics.Metrics, log *slog.Logger, b Business) (*Activities, error) {
	defaults := map[string]string{notify.ClassNotification: activities.PolicyAcceptDuplicate}
	for class, p := range b.Policies {
		defaults[class] = p
	}
	policies, err := activities.ParsePolicies(cfg.UncertainPolicy, defaults)
	if err != nil {
		return nil, fmt.Errorf("HOOKINBOX_UNCERTAIN_POLICY: %w", err)
	}
	provs := &engine.EndpointProviders{Store: st}
	env := engine.Env{Store: st, Providers: provs}
	rt := b.Router(cfg, st, log)
	// A routed row the worker's table does not route yet (a route just
	// added, or enabled) reloads it rather than waiting minutes.
	rt.OnMiss = time.Millisecond
	guard := outbound.Guard{AllowPrivate: cfg.OutboundAllowPrivate}
	set := engine.Set{}
	for k, v := range b.Handlers {
		set[k] = v
	}
	recs := map[string]ports.Reconciler{}
	for kind, r := range b.Reconcilers {
		recs[kind] = engine.BindReconciler(r, env)
	}
	var projections ports.Projections
	if b.Projections != nil {
		projections = engine.BindLister(b.Projections, env)
	}
	passes := storeports.Passes{Store: st}
	doorbell := Resources(cfg, c)
	tp := NewTracing(cfg, "worker", log)
	return &Activities{Store: st, Handlers: set, Tracing: tp, Activities: worker.Activities{
		Resource: &activities.ResourceActivities{
			Events: &engine.Events{Store: st, Providers: provs, Routes: rt, Handlers: set, WaitLimits: b.WaitLimits,
				WaitInitial: cfg.RetryInitial, WaitMax: cfg.RetryMax, Forwarder: b.ForwardHandler(&forward.Sender{Guard: guard, Metrics: m, TTL: cfg.EndpointCacheTTL, Routes: rt})},
			Reconcilers: recs,
			Outbox:      &storeports.Outbox{Store: st, Mailer: Mailer(cfg), Guard: guard},
			Policies:    policies,
			Doorbell:    doorbell,
			Metrics:     m, Logger: log, RetryInitial: cfg.RetryInitial, RetryMax: cfg.RetryMax,
			Tracing: tp.TracerProvider(),
		},
		Control: &activities.ControlActivities{
			Sweeps: storeports.Sweeps{Store: st}, Passes: passes, Retention: storeports.Retention{Store: st},
			Notifications: &storeports.Notifications{Store: st, ConsoleURL: cfg.ConsoleBaseURL(), TemporalUIURL: cfg.TemporalUIURL,
				Namespace: cfg.TemporalNamespace, TaskQueue: cfg.TaskQueue},
			Schedules: &starter.ScheduleRuns{Client: c, IDs: starter.EnabledScheduleIDs(cfg)},
			Doorbell:  doorbell, Metrics: m, Logger: log,
			// The sweeper's rings follow what Temporal absorbs, as the
			// intake's hand-off does.
			Pace:        starter.NewPacer(1, cfg.HandoffWorkers, HandoffTarget),
			Backlog:     doorbell.Backlog,
			StartIfIdle: doorbell.StartIfIdle,
		},
		Provider: &activities.ProviderActivities{
			Providers: provs, Passes: passes, Projections: projections, Facts: storeports.Facts{Store: st, Routes: rt},
			Hooks: provs, Recoveries: storeports.Recoveries{Store: st},
			Doorbell: doorbell, Logger: log, RetryInitial: cfg.RetryInitial, RetryMax: cfg.RetryMax,
		},
	}}, nil
}

// Mailer is the configured email sender.
func Mailer(cfg config.Config) outbound.Sender {
	if cfg.Mailer == "http" {
		return &outbound.HTTPMailer{BaseURL: cfg.EmailAPIURL, APIKey: cfg.EmailAPIKey, From: cfg.EmailFrom, Dedupes: cfg.EmailAPIIdempotent}
	}
	return &outbound.SMTPMailer{Addr: cfg.SMTPAddr, From: cfg.EmailFrom, LookupURL: cfg.SMTPLookupURL, Timeout: cfg.ActivityTimeout,
		TLS: cfg.SMTPTLS, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword}
}

// RunWorker runs the Temporal worker and, when addr is set, its /metrics
// and /healthz until ctx ends.
func RunWorker(ctx context.Context, cfg config.Config, c client.Client, a *Activities, m *metrics.Metrics, addr string, log *slog.Logger) error {
	errc := make(chan error, 1)
	if err := m.Registry.Register(&metrics.DBStats{Logger: log, Query: func(ctx context.Context) (keys.Backlog, error) {
		return inbox.ReadBacklog(ctx, a.Store.Pool)
	}}); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) { // a restarted worker on the same registry
			return fmt.Errorf("register backlog gauges: %w", err)
		}
	}
	if addr != "" {
		h := InternalHandler(m.Registry, Route{Pattern: "GET /healthz", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok\n"))
		})})
		go func() { errc <- Serve(ctx, addr, nil, h, log.With("listener", "worker")) }()
	}
	err := worker.Run(ctx, c, a.Activities, cfg, log)
	if addr != "" {
		if serr := <-errc; err == nil {
			err = serr
		}
	}
	shutdownTracing(a.Tracing, log)
	return err
}

// Serve runs an HTTP server (webhook.NewHTTPServer: bounded headers and
// times) until ctx ends, then shuts it down gracefully.
func Serve(ctx context.Context, addr string, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := webhook.NewHTTPServer(h)
	if ln == nil {
		var err error
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", addr); err != nil {
			return err
		}
	}
	log.Info("listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// DisplayAddr turns a listen address like ":8080" into a URL host.
func DisplayAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}
