// Package metrics defines hookinbox's Prometheus metrics. One Metrics value
// is created per process and passed to the parts that record; names and
// labels follow Prometheus conventions, and no label ever carries a payload,
// a secret or an unbounded id (event ids, resource ids).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector.
type Metrics struct {
	Registry *prometheus.Registry

	// Intake.
	Requests   *prometheus.CounterVec   // endpoint, provider, outcome
	AckSeconds *prometheus.HistogramVec // provider, outcome

	// Hand-off to Temporal.
	HandoffSignals   *prometheus.CounterVec // result: sent, failed, coalesced, dropped
	HandoffQueueSize prometheus.Gauge
	HandoffWindow    prometheus.Gauge

	// Processing.
	EventsHandled *prometheus.CounterVec // kind (handler), outcome
	EventRetries  *prometheus.CounterVec // kind
	// EffectLatency: from an event's receipt to its effect's commit.
	EffectLatency  *prometheus.HistogramVec // provider, event_type
	SweepResignals prometheus.Counter
	Divergences    *prometheus.CounterVec // kind, field
	// SameVersionDivergences: provider, field.
	SameVersionDivergences *prometheus.CounterVec
	OutboxSends            *prometheus.CounterVec // class, result

	// Forward routes.
	ForwardSeconds  *prometheus.HistogramVec // route
	ForwardFailures *prometheus.CounterVec   // route, class
	// ForwardCoalesced counts the events a coalescing route completed
	// under another event's send (covered, not sent on their own).
	ForwardCoalesced *prometheus.CounterVec // route

	// Notifications.
	NotificationsDecided *prometheus.CounterVec // trigger, phase
	NotificationsSent    *prometheus.CounterVec // channel, trigger
	NotificationsFailed  *prometheus.CounterVec // channel, trigger
}

// New registers the collectors (and the Go and process collectors) on a
// fresh registry.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_intake_requests_total",
			Help: "Webhook deliveries by endpoint, provider and outcome (accepted, duplicate, ignored, quarantined, replied (a provider's handshake, nothing stored), unauthorized, not_found, too_large, malformed, unavailable, timeout); endpoint is \"unknown\" for a slug that is not a registered endpoint's.",
		}, []string{"endpoint", "provider", "outcome"}),
		AckSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_intake_ack_seconds",
			Help:    "Time from request start to the answer, by provider and outcome.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"provider", "outcome"}),
		HandoffSignals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_handoff_signals_total",
			Help: "Doorbells to resource workflows after an intake commit: sent, failed (Temporal error; the sweeper recovers), coalesced (one already queued), dropped (queue full).",
		}, []string{"result"}),
		HandoffWindow: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookinbox_handoff_window",
			Help: "SignalWithStart calls the paced hand-off allows in flight (AIMD on their latency and errors).",
		}),
		HandoffQueueSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookinbox_handoff_queue_length",
			Help: "Doorbells waiting in the intake's hand-off queue.",
		}),
		EventsHandled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_events_handled_total",
			Help: "Inbox events finished by the worker, by handler and final status; status no_handler counts each look at an event left pending because this worker has no handler for its routed type.",
		}, []string{"handler", "status"}),
		EventRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_event_retries_total",
			Help: "Failed handling attempts that will be retried, by handler.",
		}, []string{"handler"}),
		EffectLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_effect_latency_seconds",
			Help:    "Time from an event's receipt (received_at) to the commit of its business effect, observed by the worker after the handler's commit, by provider and event type (only handled types: bounded).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600},
		}, []string{"provider", "event_type"}),
		SweepResignals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookinbox_sweeper_resignals_total",
			Help: "Resource workflows signalled again by the sweeper for stale pending rows.",
		}),
		Divergences: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_reconcile_divergences_total",
			Help: "Differences reconciliation found between local state and the provider, by resource kind and field.",
		}, []string{"kind", "field"}),
		SameVersionDivergences: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_same_version_divergences_total",
			Help: "Snapshots whose content differs from the projection at the same provider version (not applied; recorded in reconcile_divergences to investigate), by provider and field.",
		}, []string{"provider", "field"}),
		OutboxSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_outbox_sends_total",
			Help: "Outbox send attempts by operation class and result (sent, found, pending: not delivered, uncertain: outcome unknown, held, rejected).",
		}, []string{"class", "result"}),
		ForwardSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_forward_seconds",
			Help:    "Time of one forward attempt to a route's service, from the request to its answer (or failure), by route.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		ForwardFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_forward_failures_total",
			Help: "Failed forward attempts by route and class: http_4xx (failed at once), http_429, http_5xx, http_408_425, timeout, connection (retried), redirect, refused_address (failed at once).",
		}, []string{"route", "class"}),
		ForwardCoalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_forward_coalesced_total",
			Help: "Events a coalescing route completed done under another event's send (listed in its coalesced document, not sent on their own), by route.",
		}, []string{"route"}),
		NotificationsDecided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_notifications_decided_total",
			Help: "Notices the notification evaluation committed (with their outbox intents), by trigger and phase (firing, recovered).",
		}, []string{"trigger", "phase"}),
		NotificationsSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_notifications_sent_total",
			Help: "Notices delivered (or found delivered after an uncertain attempt), by channel (email, slack, webhook) and trigger.",
		}, []string{"channel", "trigger"}),
		NotificationsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_notifications_failed_total",
			Help: "Failed attempts to send a notice (retried, rejected, or held for review), by channel and trigger.",
		}, []string{"channel", "trigger"}),
	}
	r.MustRegister(m.Requests, m.AckSeconds, m.HandoffSignals, m.HandoffQueueSize, m.HandoffWindow,
		m.EventsHandled, m.EventRetries, m.EffectLatency, m.SweepResignals, m.Divergences, m.SameVersionDivergences, m.OutboxSends,
		m.ForwardSeconds, m.ForwardFailures, m.ForwardCoalesced, m.NotificationsDecided, m.NotificationsSent, m.NotificationsFailed)
	return m
}
