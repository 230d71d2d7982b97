package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/webhook"
	"github.com/hookinbox/hookinbox/worker"
)

// Designs compared end to end.
const (
	// DesignHookinbox is the product: intake, coalescing hand-off,
	// ResourceWorkflow loading pending rows from the inbox.
	DesignHookinbox = "hookinbox"
	// DesignNaive is NaiveWorkflow: one SignalWithStart and one activity
	// per event.
	DesignNaive = "naive"
	// DesignActivity is the product with HOOKINBOX_HANDLE_MODE=activity:
	// HandleEvent as a regular activity instead of a local one.
	DesignActivity = "hookinbox-activity"
	// DesignV1 is the product as it was before issue #17, kept as the
	// baseline of the end to end: every resource lingers
	// HOOKINBOX_IDLE_TIMEOUT after its last event
	// (HOOKINBOX_IDLE_COMPLETE_KINDS empty), every outbox send is a regular
	// activity (HOOKINBOX_OUTBOX_SEND=activity), the hand-off is not paced
	// (HOOKINBOX_HANDOFF_PACING=false, HOOKINBOX_HANDOFF_WORKERS=8) and the
	// workflow cache is the SDK's default (10,000). What it shares with the
	// product: the sweeper's per-row backoff (a database query) and eager
	// activities (the dev server's and the SDK's settings).
	DesignV1 = "hookinbox-v1"
	// DesignUnpaced is the product with HOOKINBOX_HANDOFF_PACING=false: the
	// share of the hand-off's pacing in a difference.
	DesignUnpaced = "hookinbox-unpaced"
)

// Designs lists every design RunOnce knows.
var Designs = []string{DesignNaive, DesignV1, DesignHookinbox, DesignUnpaced, DesignActivity, DesignForward, DesignForwardFetch, DesignForwardCoalesce, DesignFloor}

// Kinds of resource a load's events are about.
const (
	// KindSubscription: customer.subscription.updated events, handled by
	// the cheap handler (one effect row).
	KindSubscription = "subscription"
	// KindInvoice: invoice.paid events, handled by the cheap handler with
	// a confirmation email: one effect row and one outbox row in the same
	// transaction, sent to an in-process HTTP email API.
	KindInvoice = "invoice"
)

// Load is a set of events: Resources distinct resources with PerResource
// events each, sent in a shuffled order.
type Load struct {
	Name        string `json:"name"`
	Resources   int    `json:"resources"`
	PerResource int    `json:"events_per_resource"`
	// Kind is KindSubscription (default) or KindInvoice.
	Kind string `json:"kind,omitempty"`
}

func (l Load) kind() string {
	if l.Kind == "" {
		return KindSubscription
	}
	return l.Kind
}

// Events is the number of events of the load.
func (l Load) Events() int { return l.Resources * l.PerResource }

// E2ESuite configures RunE2E.
type E2ESuite struct {
	Loads   []Load
	Designs []string
	// Senders is the number of concurrent HTTP senders (default 16).
	Senders int
	// Timeout bounds one run (default: 30 minutes plus 50 ms per event).
	Timeout time.Duration
	// HistorySample is how many workflows' histories are read back to count
	// history events per event (default 50).
	HistorySample int
	// FreshTemporal restarts a dev server started by Env before each run,
	// so every run starts on an empty server (ignored for a given address).
	FreshTemporal bool
	// Repeat runs every load this many times (default 1), alternating the
	// order of the designs, so a slow spell on a shared machine does not
	// fall on one design only.
	Repeat int
	// Configure, when set, adjusts the product configuration of a run
	// (e.g. HOOKINBOX_SWEEP_AFTER) after the benchmark's defaults.
	Configure func(*config.Config)
	// Drain, when positive, keeps each run going after its last effect
	// until every workflow on the run's task queue has closed (at most
	// this long), so the server work a design defers past its last effect
	// (an idle timer firing, the close and its visibility record) is
	// counted in E2EResult.TemporalMsPerEventDrained.
	Drain time.Duration
	// HeapProfile, when set, is a file each run writes its heap profile to
	// once it has settled (after the live heap is read): what the process
	// keeps, for go tool pprof. Each run overwrites the one before.
	HeapProfile string
	// ReceiverLatency is how long the forward designs' service waits before
	// its 2xx (0: it answers at once).
	ReceiverLatency time.Duration
	// HoldWorker starts each run's worker only once every event has been
	// acknowledged, so a resource's events are all pending together when
	// its workflow first runs (the product designs only; not the naive).
	HoldWorker bool
	Progress   io.Writer
}

// usesSource says whether a run of s takes its subscription events from
// the bench's Stripe (stripeSource): when any of its designs fetches, every
// design of the suite runs on the same simulated bursts.
func (s E2ESuite) usesSource(design string) bool {
	return fetches(design) || slices.ContainsFunc(s.Designs, fetches)
}

// E2EResult is one design on one load.
type E2EResult struct {
	Load        string `json:"load"`
	Resources   int    `json:"resources"`
	PerResource int    `json:"events_per_resource"`
	Events      int    `json:"events"`
	Design      string `json:"design"`
	// Engine is the Temporal server of the run: dev, postgres (Env.Engine)
	// or given.
	Engine string `json:"temporal_engine"`
	Repeat int    `json:"repeat"`
	// AckPerSec: acknowledged deliveries per second while sending.
	AckPerSec float64 `json:"acks_per_sec"`
	Kind      string  `json:"kind,omitempty"`
	// Seconds from the first acknowledgement (received_at) to the last
	// business effect (processed_at, or an email's sent_at), both read
	// from the database.
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	// Per event, acknowledgement to effect.
	LatencyP50ms float64 `json:"latency_p50_ms"`
	LatencyP99ms float64 `json:"latency_p99_ms"`
	// History events per event, over SampledWorkflows workflows, and by type.
	HistoryPerEvent  float64            `json:"history_events_per_event"`
	HistoryByType    map[string]float64 `json:"history_by_type_per_event,omitempty"`
	SampledWorkflows int                `json:"sampled_workflows"`
	// Signals the intake sent to Temporal per event (coalesced doorbells
	// are not sent), and those the sweeper sent for rows pending longer
	// than HOOKINBOX_SWEEP_AFTER.
	SignalsPerEvent        float64 `json:"signals_per_event"`
	SweeperSignalsPerEvent float64 `json:"sweeper_signals_per_event"`
	// TemporalCores is the Temporal server's CPU use in cores (when started
	// here; on the postgres engine without its PostgreSQL work, which runs
	// in the database server); MachineBusy the fraction of all cores busy.
	TemporalCores float64 `json:"temporal_cores"`
	MachineBusy   float64 `json:"machine_busy"`
	// TemporalMsPerEvent is the Temporal server's CPU per event from the
	// first delivery to the last effect (same caveat as TemporalCores).
	// With E2ESuite.Drain, TemporalMsPerEventDrained runs on until every
	// workflow of the run has closed, less the server's idle use over the
	// DrainSeconds that took (measured for IdleSample after): what the
	// server spends per event in all, the cost a sustained load pays.
	TemporalMsPerEvent        float64 `json:"temporal_cpu_ms_per_event"`
	TemporalMsPerEventDrained float64 `json:"temporal_cpu_ms_per_event_drained,omitempty"`
	DrainSeconds              float64 `json:"drain_seconds,omitempty"`
	// DrainLimitSeconds is E2ESuite.Drain when the run drained; Drained is
	// false when it ran out with workflows still open (the drained cost
	// is then a lower bound).
	DrainLimitSeconds float64 `json:"drain_limit_seconds,omitempty"`
	Drained           bool    `json:"drained,omitempty"`
	// Peak memory of this process (intake, worker and senders in one
	// process): Go heap sampled every 200 ms, and the kernel's VmHWM.
	PeakHeapMiB float64 `json:"peak_heap_mib"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// What the process keeps once every resource has finished, the
	// worker still running and the senders idle (AfterSettle after the
	// last effect, one GC): the live Go heap and the resident set (VmRSS;
	// no memory handed back by force).
	AfterHeapMiB float64 `json:"after_heap_mib"`
	AfterRSSMiB  float64 `json:"after_rss_mib"`
	// Where the rest of the Go runtime's memory is at that moment: heap
	// it holds free (idle spans not yet returned to the kernel, and the
	// unused part of spans in use), heap it has returned, and its stacks
	// and metadata. RSS above heap + free + runtime is memory outside Go.
	AfterHeapFreeMiB     float64 `json:"after_heap_free_mib"`
	AfterHeapReleasedMiB float64 `json:"after_heap_released_mib"`
	AfterRuntimeMiB      float64 `json:"after_runtime_mib"`
	// AfterOpenFiles is the process's open file descriptors then (sockets
	// mostly: its database pools, Temporal and idle HTTP connections).
	AfterOpenFiles int `json:"after_open_files"`
	NotDone        int `json:"not_done"`
	// EndPollMs is how long the last poll for the run's end took to answer
	// (the floor: a count of its closed workflows on the Temporal server;
	// a design: a count over its inbox on PostgreSQL), polled every
	// pollEvery.
	EndPollMs float64 `json:"end_poll_ms,omitempty"`
	// Emails sent (outbox rows of invoice loads) and those left unsent.
	Emails      int    `json:"emails,omitempty"`
	LoadAverage string `json:"load_average"`
	// ReceiverLatencyMs is the forward service's wait before its 2xx.
	ReceiverLatencyMs float64 `json:"receiver_latency_ms,omitempty"`
	// FetchSource says the events came from the bench's Stripe (the lab
	// simulator, its state changed just before each event was sent).
	FetchSource bool `json:"fetch_source,omitempty"`
	// HeldWorker: the worker started once every event was acknowledged,
	// HeldSeconds after the first. DrainEventsPerSec is the events over
	// the time from that start to the last effect.
	HeldWorker        bool    `json:"held_worker,omitempty"`
	HeldSeconds       float64 `json:"held_seconds,omitempty"`
	DrainEventsPerSec float64 `json:"drain_events_per_sec,omitempty"`
	// FirstEffectSeconds is from the worker's start to the first effect:
	// the start-up (schedules, pollers, the first workflow tasks) that the
	// drained window includes.
	FirstEffectSeconds float64 `json:"first_effect_seconds,omitempty"`
	// A held coalescing run's documents: when the first and the last were
	// recorded (planned: pending list read, current fetched), in seconds
	// from the worker's start, and from that record to the head row's
	// completion (the send, and the commit of every row it covers), p50
	// and max in ms.
	FirstSendRecordedSeconds float64 `json:"first_send_recorded_seconds,omitempty"`
	LastSendRecordedSeconds  float64 `json:"last_send_recorded_seconds,omitempty"`
	SendCommitP50ms          float64 `json:"send_commit_p50_ms,omitempty"`
	SendCommitMaxMs          float64 `json:"send_commit_max_ms,omitempty"`
	// What the forward service saw: requests, documents applied (one per
	// operation key), those of them that covered more than one event, and
	// requests for a key it had applied before (answered, not applied).
	// EventsPerDocument is events ÷ documents. LatestChecked counts the
	// resources whose final state was checked to be the source's latest.
	ForwardRequests    int     `json:"forward_requests,omitempty"`
	ForwardDocuments   int     `json:"forward_documents,omitempty"`
	CoalescedDocuments int     `json:"coalesced_documents,omitempty"`
	Redelivered        int     `json:"forward_redelivered,omitempty"`
	EventsPerDocument  float64 `json:"events_per_document,omitempty"`
	LatestChecked      int     `json:"latest_checked,omitempty"`
}

// RunE2E runs every load with every design, one run at a time.
func RunE2E(ctx context.Context, env *Env, s E2ESuite) ([]E2EResult, error) {
	if s.Senders <= 0 {
		s.Senders = 16
	}
	if s.HistorySample <= 0 {
		s.HistorySample = 50
	}
	if s.Progress == nil {
		s.Progress = io.Discard
	}
	var out []E2EResult
	for _, l := range s.Loads {
		for rep := range max(1, s.Repeat) {
			designs := slices.Clone(s.Designs)
			if rep%2 == 1 {
				slices.Reverse(designs)
			}
			for _, d := range designs {
				if d == DesignFloor && l.PerResource != 1 {
					continue // the floor is of one event per resource
				}
				if s.usesSource(d) && l.kind() != KindSubscription {
					fmt.Fprintf(s.Progress, "e2e: %s, %s: skipped (a fetching suite runs subscription loads only)\n", l.Name, d)
					continue
				}
				if s.FreshTemporal {
					if err := env.FreshTemporal(ctx); err != nil {
						return out, err
					}
				}
				fmt.Fprintf(s.Progress, "e2e: %s, %s: %d resources × %d events (load %s)\n", l.Name, d, l.Resources, l.PerResource, LoadAverage())
				r, err := RunOnce(ctx, env, d, l, s)
				if err != nil {
					return out, fmt.Errorf("%s on %s: %w", d, l.Name, err)
				}
				r.Repeat = rep
				fmt.Fprintf(s.Progress, "e2e: %s, %s: %.1f events/s (%d in %.1fs), %.1f history events/event, p50 %.0f ms\n",
					l.Name, d, r.EventsPerSec, r.Events, r.Seconds, r.HistoryPerEvent, r.LatencyP50ms)
				if r.ForwardDocuments > 0 {
					fmt.Fprintf(s.Progress, "e2e: %s, %s: %d documents for %d events (%d coalesced, %d requests), %d resources at their latest state\n",
						l.Name, d, r.ForwardDocuments, r.Events, r.CoalescedDocuments, r.ForwardRequests, r.LatestChecked)
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// system is one design running: intake, hand-off and worker.
type system struct {
	design  string
	url     string
	queue   string
	client  client.Client
	signals func() float64
	sweeps  func() float64
	stop    func()
	// release starts the worker of a system started held (sysOptions.hold).
	release func() error
	// forward is the forward designs' service: check says whether the
	// run's effects are real (every event applied once and, when latest is
	// given, each resource's final state the latest).
	forward *forwardService
}

// sysOptions are what startSystem needs beyond the configuration.
type sysOptions struct {
	// apiURL is the bench's Stripe (stripeSource), "" for none.
	apiURL string
	// latency is the forward service's answer time.
	latency time.Duration
	// hold: the worker starts at release, not at once.
	hold bool
}

// benchHandler is the cheap business handler every design runs: one short
// transaction that locks the pending inbox row, inserts one effect row and
// completes the inbox row (engine.InPendingTx), no network. With email,
// the same transaction records a confirmation email in the outbox (as the
// credits handler does), which the workflow then sends.
func benchHandler(st *store.Store, email bool) engine.Handler {
	return engine.HandlerFunc(func(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
		return engine.InPendingTx(ctx, st, c.Event.Key, func(tx pgx.Tx, ev *inbox.StoredEvent) (engine.Outcome, error) {
			_, err := tx.Exec(ctx, `INSERT INTO bench_effects (event_key, resource) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
				ev.Key.String(), ev.Resource().String())
			if err != nil || !email {
				return engine.Outcome{Status: keys.StatusDone}, err
			}
			id, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{
				OperationKey: "bench:" + ev.Key.String() + ":confirmation", Class: keys.ClassCreditsConfirmation,
				Kind: "email", Destination: "billing@example.com", WorkspaceID: benchWorkspace,
				ResourceKey: ev.Resource().String(),
				Payload: map[string]any{"to": "billing@example.com", "subject": "100 credits added",
					"text": "Invoice " + ev.Resource().ID + " was paid: 100 credits were added."},
			})
			return engine.Outcome{Status: keys.StatusDone, Outbox: []int64{id}}, err
		})
	})
}

// startMailAPI is an in-process HTTP email API (POST /v1/emails) that
// accepts every message at once.
func startMailAPI(ctx context.Context) (string, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var n atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d"}`, n.Add(1))
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// benchConfig is the product's default configuration pointed at the
// benchmark's servers; schedules that run hourly or daily are off.
func benchConfig(dbURL, temporal string) config.Config {
	cfg := config.Default()
	cfg.DatabaseURL, cfg.TemporalAddress = dbURL, temporal
	cfg.TaskQueue = "bench-" + runID()
	cfg.ReconcileInterval, cfg.BackfillInterval, cfg.RetentionInterval = 0, 0, 0
	return cfg
}

func startSystem(ctx context.Context, design string, cfg config.Config, opts sysOptions) (_ *system, err error) {
	log := benchLogger()
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	kr := benchKeys()
	wst, err := store.Open(ctx, cfg.DatabaseURL, 0)
	if err != nil {
		return nil, err
	}
	wst.Keys = kr
	closers = append(closers, wst.Close)
	wc, err := starter.Dial(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, wc.Close)
	wm := metrics.New()
	biz, err := builtin.Business()
	if err != nil {
		return nil, err
	}
	acts, err := app.NewActivities(cfg, wst, wc, wm, log, biz)
	if err != nil {
		return nil, err
	}
	acts.Handlers[credits.NameGrants] = benchHandler(wst, true)
	acts.Handlers[subscriptions.Name] = benchHandler(wst, false)

	ist, err := store.Open(ctx, cfg.DatabaseURL, 0)
	if err != nil {
		return nil, err
	}
	ist.Keys = kr
	closers = append(closers, ist.Close)
	if err := registerSourceEndpoint(ctx, ist, opts.apiURL); err != nil {
		return nil, err
	}
	var svc *forwardService
	if isForward(design) {
		stop, s, err := startForwardService(ctx, ist, design, opts.latency)
		if err != nil {
			return nil, err
		}
		closers = append(closers, stop)
		svc = s
	}
	ic, err := starter.DialLazy(cfg, log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, ic.Close)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sys := &system{design: design, url: "http://" + ln.Addr().String() + "/webhooks/" + benchSlug, queue: cfg.TaskQueue, client: wc, forward: svc,
		sweeps: func() float64 { return testutil.ToFloat64(wm.SweepResignals) }}
	im := metrics.New()
	wctx, wcancel := context.WithCancel(context.Background())
	ictx, icancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	werr := make(chan error, 1)

	switch design {
	case DesignHookinbox, DesignActivity, DesignV1, DesignUnpaced, DesignForward, DesignForwardFetch, DesignForwardCoalesce:
		startWorker := func() {
			wg.Add(1)
			go func() { defer wg.Done(); werr <- app.RunWorker(wctx, cfg, wc, acts, wm, "", log) }()
		}
		if opts.hold {
			sys.release = func() error {
				startWorker()
				return workerStarted(werr)
			}
		} else {
			startWorker()
		}
		in := app.NewIntake(cfg, ist, ic, im, log, biz.Router(cfg, ist, log))
		in.InternalAddr = "" // the benchmark reads the registry itself
		wg.Add(1)
		go func() { defer wg.Done(); _ = in.Run(ictx, "", ln, log) }()
		sys.signals = func() float64 {
			return testutil.ToFloat64(im.HandoffSignals.WithLabelValues("sent")) + testutil.ToFloat64(im.HandoffSignals.WithLabelValues("failed"))
		}
	case DesignNaive:
		if opts.hold {
			wcancel()
			icancel()
			ln.Close()
			return nil, errors.New("the naive design cannot hold its worker")
		}
		w := worker.New(wc, acts.Resource, cfg)
		w.RegisterWorkflow(NaiveWorkflow)
		if err := w.Start(); err != nil {
			wcancel()
			icancel()
			ln.Close()
			return nil, err
		}
		wg.Add(1)
		go func() { defer wg.Done(); <-wctx.Done(); w.Stop(); werr <- nil }()
		h := newNaiveHandoff(ic, cfg.TaskQueue, app.WorkflowSettings(cfg), cfg.HandoffWorkers, cfg.HandoffTimeout, log)
		srv := webhook.New(app.IntakeOptions(cfg, ist, h, im, log, biz.Routes))
		wg.Add(2)
		go func() { defer wg.Done(); h.Run(ictx) }()
		go func() { defer wg.Done(); _ = app.Serve(ictx, "", ln, srv.Handler(), log) }()
		sys.signals = func() float64 {
			h.mu.Lock()
			defer h.mu.Unlock()
			return float64(h.sent + h.failed)
		}
	default:
		wcancel()
		icancel()
		ln.Close()
		return nil, fmt.Errorf("unknown design %q", design)
	}
	stopped := false
	sys.stop = func() {
		if stopped {
			return
		}
		stopped = true
		icancel()
		wcancel()
		wg.Wait()
		if design != DesignNaive {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			for _, s := range worker.Schedules(cfg) {
				_, _ = starter.DeleteSchedule(dctx, wc, s.ID)
			}
			cancel()
		}
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if opts.hold {
		return sys, nil
	}
	if err := workerStarted(werr); err != nil {
		sys.stop()
		return nil, err
	}
	return sys, nil
}

// workerStarted says whether a worker failed at start-up (schedules,
// search attributes): it waits 500 ms for its error.
func workerStarted(werr chan error) error {
	select {
	case err := <-werr:
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	case <-time.After(500 * time.Millisecond):
	}
	return nil
}

// templateOf is the event template of a kind: %[1]s event id, %[2]s
// resource id, %[3]d time.
func templateOf(kind string) string {
	if kind == KindInvoice {
		return invoiceTemplate
	}
	return subscriptionTemplate
}

// subscriptionTemplate is a Stripe customer.subscription.updated event
// (about 0.9 KB): %[1]s event id, %[2]s subscription id, %[3]d time.
const subscriptionTemplate = `{"id":"%[1]s","object":"event","api_version":"2025-09-30.clover","created":%[3]d,` +
	`"data":{"object":{"id":"%[2]s","object":"subscription","billing_cycle_anchor":%[3]d,"cancel_at":null,` +
	`"cancel_at_period_end":false,"canceled_at":null,"collection_method":"charge_automatically","created":%[3]d,` +
	`"currency":"usd","customer":"cus_Rb3nch0000000","default_payment_method":"pm_1Bench",` +
	`"items":{"object":"list","data":[{"id":"si_%[2]s","object":"subscription_item","current_period_end":%[3]d,` +
	`"current_period_start":%[3]d,"price":{"id":"price_1Pro","object":"price","currency":"usd",` +
	`"recurring":{"interval":"month","interval_count":1},"unit_amount":2000},"quantity":1}],"has_more":false},` +
	`"latest_invoice":"in_1Bench","livemode":false,"status":"active"},` +
	`"previous_attributes":{"items":{"data":[{"quantity":2}]}}},"livemode":false,"pending_webhooks":1,` +
	`"request":{"id":"req_bench","idempotency_key":null},"type":"customer.subscription.updated"}`

type plannedEvent struct {
	eventID, subID string
}

// plan lists the events of l, shuffled: resource r's id is subs[r] when
// subs is given (the bench's Stripe's subscriptions), or made of run.
func plan(run string, l Load, subs []string) []plannedEvent {
	evs := make([]plannedEvent, 0, l.Events())
	prefix := "sub_"
	if l.kind() == KindInvoice {
		prefix = "in_"
	}
	for r := range l.Resources {
		sub := prefix + run + "_" + strconv.Itoa(r)
		if subs != nil {
			sub = subs[r]
		}
		for k := range l.PerResource {
			evs = append(evs, plannedEvent{eventID: "evt_" + run + "_" + strconv.Itoa(r) + "_" + strconv.Itoa(k), subID: sub})
		}
	}
	rng := rand.New(rand.NewPCG(uint64(l.Resources), uint64(l.PerResource)))
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}

func resourceOf(kind, id string) keys.Resource {
	return keys.Resource{Provider: keys.ProviderStripe, Account: benchAccount, Environment: keys.EnvTest, Kind: kind, ID: id}
}

// bodyFunc is the body of a planned event sent at now.
type bodyFunc func(ev plannedEvent, now time.Time) ([]byte, error)

// fromTemplate is the body of each event made from template (templateOf).
func fromTemplate(template string) bodyFunc {
	return func(ev plannedEvent, now time.Time) ([]byte, error) {
		return fmt.Appendf(nil, template, ev.eventID, ev.subID, now.Unix()), nil
	}
}

// send posts every planned event from n senders and returns the rate of
// acknowledgements.
func send(ctx context.Context, url string, bodyOf bodyFunc, evs []plannedEvent, n int) (float64, error) {
	c := httpClient(n)
	defer c.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(evs) || ctx.Err() != nil {
					return
				}
				body, err := bodyOf(evs[i], time.Now())
				if err != nil {
					errc <- err
					return
				}
				for attempt := 0; attempt < 5; attempt++ { // a sender retries, as providers do
					if err = post(ctx, c, url, body, simulator.SignStripe(body, time.Now(), benchSecret)); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(len(evs)) / time.Since(start).Seconds(), nil
}

// RunOnce runs one design on one load on a fresh database.
func RunOnce(ctx context.Context, env *Env, design string, l Load, s E2ESuite) (E2EResult, error) {
	if design == DesignFloor {
		return runFloor(ctx, env, l, s)
	}
	res := newResult(env, design, l)
	taddr, err := env.Temporal(ctx)
	if err != nil {
		return res, err
	}
	dbURL, drop, err := env.Database(ctx, "e2e")
	if err != nil {
		return res, err
	}
	defer drop()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30*time.Minute + time.Duration(l.Events())*50*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	mem := StartMemory()
	cfg := benchConfig(dbURL, taddr)
	switch design {
	case DesignActivity:
		cfg.HandleMode = "activity"
	case DesignV1:
		cfg.IdleCompleteKinds, cfg.OutboxSend, cfg.HandoffPacing = "", "activity", false
		cfg.HandoffWorkers = 8        // the default before pacing
		cfg.WorkflowCacheSize = 10000 // the SDK's default sticky cache
	case DesignUnpaced:
		cfg.HandoffPacing = false
	}
	mailURL, stopMail, err := startMailAPI(ctx)
	if err != nil {
		mem.Stop()
		return res, err
	}
	defer stopMail()
	cfg.Mailer, cfg.EmailAPIURL, cfg.EmailAPIIdempotent = "http", mailURL, true
	if s.Configure != nil {
		s.Configure(&cfg)
	}
	opts := sysOptions{latency: s.ReceiverLatency, hold: s.HoldWorker}
	var src *stripeSource
	if s.usesSource(design) {
		if l.kind() != KindSubscription {
			mem.Stop()
			return res, fmt.Errorf("%s: the bench's Stripe holds subscriptions only, not a %s load", design, l.kind())
		}
		if src, err = startStripeSource(ctx, l.Resources); err != nil {
			mem.Stop()
			return res, err
		}
		defer src.stop()
		opts.apiURL = src.url
		res.FetchSource = true
	}
	if isForward(design) {
		res.ReceiverLatencyMs = float64(s.ReceiverLatency.Microseconds()) / 1000
	}
	res.HeldWorker = s.HoldWorker
	sys, err := startSystem(ctx, design, cfg, opts)
	if err != nil {
		mem.Stop()
		return res, err
	}
	defer sys.stop()
	obs, err := store.Open(ctx, dbURL, 2)
	if err != nil {
		mem.Stop()
		return res, err
	}
	defer obs.Close()

	run := runID()
	bodyOf := fromTemplate(templateOf(l.kind()))
	var subs []string
	if src != nil {
		subs = src.subs
		bodyOf = func(ev plannedEvent, _ time.Time) ([]byte, error) { return src.update(ev.subID) }
	}
	evs := plan(run, l, subs)
	cpu := StartCPU(env.TemporalPID())
	res.AckPerSec, err = send(ctx, sys.url, bodyOf, evs, s.Senders)
	if err != nil {
		mem.Stop()
		return res, fmt.Errorf("send: %w", err)
	}
	var released time.Time
	if sys.release != nil {
		released = time.Now()
		if err := sys.release(); err != nil {
			mem.Stop()
			return res, err
		}
	}
	if res.EndPollMs, err = waitDone(ctx, obs, len(evs)); err != nil {
		mem.Stop()
		return res, err
	}
	if sys.forward != nil {
		var latest map[string]int64
		if fetches(design) {
			if latest, err = src.latest(); err != nil {
				mem.Stop()
				return res, err
			}
		}
		if err := sys.forward.check(len(evs), latest); err != nil {
			mem.Stop()
			return res, err
		}
		fs := sys.forward.stats()
		res.ForwardRequests, res.ForwardDocuments, res.CoalescedDocuments, res.Redelivered = fs.requests, fs.docs, fs.coalesced, fs.redelivered
		if fs.docs > 0 {
			res.EventsPerDocument = float64(len(evs)) / float64(fs.docs)
		}
		res.LatestChecked = len(latest)
	}
	res.MachineBusy, res.TemporalCores = cpu.Stop()
	res.PeakHeapMiB, res.PeakRSSMiB = mem.Stop()
	res.TemporalMsPerEvent = cpu.ProcessMs() / float64(len(evs))
	if s.Drain > 0 && cpu.pid > 0 {
		d, err := drain(ctx, sys.client, sys.queue, cpu, s.Drain, IdleSample, s.Progress)
		if err != nil {
			return res, fmt.Errorf("drain: %w", err)
		}
		res.Drained, res.DrainSeconds, res.DrainLimitSeconds = d.closed, d.seconds, s.Drain.Seconds()
		res.TemporalMsPerEventDrained = d.ms / float64(len(evs))
	}
	after := memoryAfter(ctx, AfterSettle)
	res.AfterHeapMiB, res.AfterRSSMiB = after.heap, after.rss
	res.AfterHeapFreeMiB, res.AfterHeapReleasedMiB, res.AfterRuntimeMiB = after.free, after.released, after.runtime
	res.AfterOpenFiles = openFiles()
	if s.HeapProfile != "" {
		if err := writeHeapProfile(s.HeapProfile); err != nil {
			return res, err
		}
	}
	res.SignalsPerEvent = sys.signals() / float64(len(evs))
	res.SweeperSignalsPerEvent = sys.sweeps() / float64(len(evs))

	var first, last, firstEffect time.Time
	var p50, p99 float64
	// An event's effect is its row's completion, or its email's sending
	// when it has one.
	err = obs.Pool.QueryRow(ctx, `
		WITH done AS (
			SELECT w.received_at, greatest(w.processed_at, o.sent_at) AS effect_at, w.status
			  FROM webhook_inbox w
			  LEFT JOIN outbox o ON o.operation_key = 'bench:' || w.provider || '/' || w.source_account || '/' ||
			                        w.environment || '/' || w.event_id || ':confirmation'
		)
		SELECT min(received_at), max(effect_at), min(effect_at),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM effect_at - received_at)),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM effect_at - received_at)),
		       count(*) FILTER (WHERE status <> 'done'),
		       (SELECT count(*) FROM outbox WHERE status = 'sent')
		  FROM done`).Scan(&first, &last, &firstEffect, &p50, &p99, &res.NotDone, &res.Emails)
	if err != nil {
		return res, err
	}
	res.Seconds = last.Sub(first).Seconds()
	res.EventsPerSec = float64(len(evs)) / res.Seconds
	if !released.IsZero() {
		res.HeldSeconds = released.Sub(first).Seconds()
		res.DrainEventsPerSec = float64(len(evs)) / last.Sub(released).Seconds()
		res.FirstEffectSeconds = firstEffect.Sub(released).Seconds()
	}
	if design == DesignForwardCoalesce && !released.IsZero() {
		// Each coalesced send is recorded (forward_coalesced.created_at)
		// after its plan (the pending list and the fetch) and before it
		// goes; its head row's completion is after its send and the commit
		// of every row it covers.
		err = obs.Pool.QueryRow(ctx, `
			SELECT extract(epoch FROM min(c.created_at) - $1::timestamptz), extract(epoch FROM max(c.created_at) - $1::timestamptz),
			       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM w.processed_at - c.created_at)),
			       max(extract(epoch FROM w.processed_at - c.created_at))
			  FROM forward_coalesced c
			  JOIN webhook_inbox w ON (w.provider, w.source_account, w.environment, w.event_id) = (c.provider, c.source_account, c.environment, c.event_id)`,
			released).Scan(&res.FirstSendRecordedSeconds, &res.LastSendRecordedSeconds, &res.SendCommitP50ms, &res.SendCommitMaxMs)
		if err != nil {
			return res, err
		}
		res.SendCommitP50ms, res.SendCommitMaxMs = res.SendCommitP50ms*1000, res.SendCommitMaxMs*1000
	}
	res.LatencyP50ms, res.LatencyP99ms = p50*1000, p99*1000

	hist, err := countHistory(ctx, sys.client, design, evs, l, s.HistorySample)
	if err != nil {
		return res, fmt.Errorf("read histories: %w", err)
	}
	res.HistoryPerEvent, res.HistoryByType, res.SampledWorkflows = hist.perEvent, hist.byType, hist.workflows
	return res, nil
}

// IdleSample is how long drain measures the server's idle CPU use after
// the last workflow closed.
const IdleSample = 20 * time.Second

// drainPoll is how often drain counts the open workflows.
var drainPoll = 5 * time.Second

type drained struct {
	closed  bool
	seconds float64
	// ms of server CPU from the start of the run to the last close, less
	// the idle use over the drain.
	ms float64
}

// drain waits until no workflow on queue is running (at most limit),
// then samples the server's (cpu's process) idle CPU use for idle and
// returns the CPU spent since cpu started less that idle rate over the
// drain.
func drain(ctx context.Context, c client.Client, queue string, cpu *CPUMeter, limit, idle time.Duration, progress io.Writer) (drained, error) {
	start := time.Now()
	var d drained
	lastSay := start
	for {
		resp, err := c.CountWorkflow(ctx, countRunning(queue))
		if err != nil {
			return d, err
		}
		if resp.GetCount() == 0 {
			d.closed = true
			break
		}
		if time.Since(start) >= limit {
			break
		}
		if time.Since(lastSay) >= time.Minute {
			fmt.Fprintf(progress, "e2e: draining, %d workflows still open after %s\n", resp.GetCount(), time.Since(start).Round(time.Second))
			lastSay = time.Now()
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(drainPoll):
		}
	}
	d.seconds = time.Since(start).Seconds()
	closedAt := cpu.ProcessMs()
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-time.After(idle):
	}
	idlePerSec := (cpu.ProcessMs() - closedAt) / idle.Seconds()
	d.ms = max(0, closedAt-idlePerSec*d.seconds)
	return d, nil
}

// countRunning counts the running workflows on queue.
func countRunning(queue string) *workflowservice.CountWorkflowExecutionsRequest {
	return countQuery(fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue))
}

// newResult is the result of design on l before it runs.
func newResult(env *Env, design string, l Load) E2EResult {
	return E2EResult{Load: l.Name, Resources: l.Resources, PerResource: l.PerResource, Events: l.Events(), Design: design,
		Engine: env.Engine(), Kind: l.kind(), LoadAverage: LoadAverage()}
}

// waitDone polls, every pollEvery(n), until every one of n inbox rows left
// pending and every outbox row left pending or uncertain, and returns how
// long the last poll took to answer (ms).
func waitDone(ctx context.Context, st *store.Store, n int) (lastPollMs float64, err error) {
	for {
		var total, pending int
		t0 := time.Now()
		err := st.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'pending') +
			(SELECT count(*) FROM outbox WHERE status IN ('pending', 'uncertain')) FROM webhook_inbox`).Scan(&total, &pending)
		lastPollMs = float64(time.Since(t0).Microseconds()) / 1000
		if err != nil {
			return 0, err
		}
		if total >= n && pending == 0 {
			return lastPollMs, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for %d events: %d stored, %d still pending: %w", n, total, pending, ctx.Err())
		case <-time.After(pollEvery(n)):
		}
	}
}

type historyCount struct {
	perEvent  float64
	byType    map[string]float64
	workflows int
}

// countHistory reads the histories of up to sample workflows of the load
// (every run of each, following continue-as-new) and divides their events
// by the events those resources received.
func countHistory(ctx context.Context, c client.Client, design string, evs []plannedEvent, l Load, sample int) (historyCount, error) {
	subs := map[string]bool{}
	var order []string
	for _, e := range evs {
		if !subs[e.subID] {
			subs[e.subID] = true
			order = append(order, e.subID)
		}
	}
	sort.Strings(order)
	step := max(1, len(order)/sample)
	var hc historyCount
	byType := map[string]int{}
	total, events := 0, 0
	for i := 0; i < len(order) && hc.workflows < sample; i += step {
		r := resourceOf(l.kind(), order[i])
		id := keys.ResourceWorkflowID(r)
		if design == DesignNaive {
			id = NaiveWorkflowID(r)
		}
		n, err := historyOf(ctx, c, id, byType)
		if err != nil {
			return hc, err
		}
		total += n
		events += l.PerResource
		hc.workflows++
	}
	if events == 0 {
		return hc, errors.New("no workflow sampled")
	}
	hc.perEvent = float64(total) / float64(events)
	hc.byType = map[string]float64{}
	for k, v := range byType {
		hc.byType[k] = float64(v) / float64(events)
	}
	return hc, nil
}

// historyOf counts the events of every run of workflow id, newest back
// to the first (through each run's continued-from link).
func historyOf(ctx context.Context, c client.Client, id string, byType map[string]int) (int, error) {
	total := 0
	runID := ""
	for {
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		prev := ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return total, fmt.Errorf("history of %s: %w", id, err)
			}
			total++
			byType[shortType(ev.GetEventType())]++
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
		}
		if prev == "" {
			return total, nil
		}
		runID = prev
	}
}

func shortType(t enumspb.EventType) string {
	s := t.String()
	const p = "EVENT_TYPE_"
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
