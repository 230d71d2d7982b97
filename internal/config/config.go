// Package config loads hookinbox's configuration once, at start-up: defaults
// that point at the local stack `make run` starts, then environment variables.
// Nothing else reads the environment.
package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// Local stack defaults. `make run` and the tests start the services there.
const (
	DefaultIntakePort   = 8080
	DefaultPostgresPort = 55432
	DefaultTemporalPort = 7233
	DefaultTemporalUI   = 8233
	DefaultMailpitSMTP  = 1025
	DefaultMailpitHTTP  = 8025
)

// Config is every setting of the binary. Each field documents its variable.
type Config struct {
	// DATABASE_URL: PostgreSQL connection string of the schema's owner (the
	// migrator): what `migrate`, `db roles` and the operator's write commands
	// (endpoints, replay, quarantine resolve, outbox release, …) use, and
	// what each process URL below falls back to.
	DatabaseURL string
	// HOOKINBOX_INTAKE_DATABASE_URL: the intake's (`webhook`) connection
	// string, as role hookinbox_intake (see `hookinbox db roles`); empty:
	// DATABASE_URL.
	IntakeDatabaseURL string
	// HOOKINBOX_WORKER_DATABASE_URL: the worker's, as hookinbox_worker;
	// empty: DATABASE_URL.
	WorkerDatabaseURL string
	// HOOKINBOX_OPERATOR_DATABASE_URL: the read-only operator commands'
	// (inbox list/show, quarantine list/show, outbox list/show, status), as
	// hookinbox_operator (payloads only when also granted
	// hookinbox_payload_reader); empty: DATABASE_URL.
	OperatorDatabaseURL string
	// HOOKINBOX_CONSOLE_DATABASE_URL: the operator console's and API's
	// (`hookinbox console`), as hookinbox_console (the operator's reads and
	// its acts' writes, no secret, no token hash, no payload); empty:
	// DATABASE_URL (the schema owner, with a warning).
	ConsoleDatabaseURL string
	// HOOKINBOX_PAYLOAD_DATABASE_URL: the console's payload pool, as
	// hookinbox_payload_reader (an operator's ?payload=true reads, and
	// re-admission's body); empty: the console's own URL.
	PayloadDatabaseURL string
	// HOOKINBOX_INTAKE_DB_PASSWORD, HOOKINBOX_WORKER_DB_PASSWORD,
	// HOOKINBOX_OPERATOR_DB_PASSWORD, HOOKINBOX_CONSOLE_DB_PASSWORD,
	// HOOKINBOX_PAYLOAD_READER_DB_PASSWORD: passwords `hookinbox db roles`
	// sets on the roles (empty: leaves the role's password as it is). Never
	// printed.
	IntakeDBPassword        string
	WorkerDBPassword        string
	OperatorDBPassword      string
	ConsoleDBPassword       string
	PayloadReaderDBPassword string
	// TEMPORAL_ADDRESS: host:port of the Temporal frontend.
	TemporalAddress string
	// TEMPORAL_NAMESPACE: namespace for workflows and schedules.
	TemporalNamespace string
	// TEMPORAL_API_KEY: API key for Temporal Cloud (implies TLS).
	TemporalAPIKey string
	// TEMPORAL_TLS: "true" to dial Temporal with TLS using system roots.
	TemporalTLS bool
	// TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY: client certificate for mTLS.
	TemporalTLSCert string
	TemporalTLSKey  string
	// TEMPORAL_TLS_CA: CA bundle for the server certificate.
	TemporalTLSCA string
	// TEMPORAL_TLS_SERVER_NAME: overrides the TLS server name.
	TemporalTLSServerName string
	// HOOKINBOX_TASK_QUEUE: task queue of the resource workflows and activities.
	TaskQueue string
	// HOOKINBOX_WORKFLOW_ID_PREFIX is prepended to every workflow and
	// schedule id this deployment makes (resource workflows, schedules and
	// their runs), so deployments sharing a namespace never share a
	// workflow, even for the same resource (hookintest gives each stack its
	// own). Default none.
	WorkflowIDPrefix string

	// HOOKINBOX_HTTP_ADDR: listen address of the webhook intake's public
	// port (POST /webhooks/:endpoint and /healthz only).
	HTTPAddr string
	// HOOKINBOX_INTERNAL_ADDR: listen address of the intake's internal
	// listener (/metrics, the detailed /readyz). Loopback by default: it
	// names endpoints and the database, so it is never the public port.
	InternalAddr string
	// HOOKINBOX_WORKER_ADDR: listen address of the worker's /metrics and
	// health (loopback by default, like the intake's internal listener).
	WorkerAddr string
	// HOOKINBOX_REQUEST_TIMEOUT: deadline of one webhook delivery (body
	// read and database calls); past it the answer is 503.
	RequestTimeout time.Duration
	// HOOKINBOX_MAX_BODY_BYTES: largest webhook body accepted (413 above).
	MaxBodyBytes int64
	// HOOKINBOX_SIGNATURE_TOLERANCE: accepted clock skew for timestamped schemes.
	SignatureTolerance time.Duration
	// HOOKINBOX_ENDPOINT_CACHE_TTL: how long the intake caches endpoints,
	// secrets and account links. A miss or a failed check reloads at once.
	EndpointCacheTTL time.Duration
	// HOOKINBOX_INTAKE_WRITERS: inbox commits the intake has in flight at
	// once; deliveries that arrive meanwhile share the next commit (group
	// commit: one round trip and one WAL flush per batch). 0: every delivery
	// commits on its own.
	IntakeWriters int
	// HOOKINBOX_HANDOFF_QUEUE: capacity of the intake's hand-off queue.
	HandoffQueue int
	// HOOKINBOX_HANDOFF_WORKERS: goroutines signalling Temporal.
	HandoffWorkers int
	// HOOKINBOX_HANDOFF_TIMEOUT: deadline of one SignalWithStart call.
	HandoffTimeout time.Duration
	// HOOKINBOX_HANDOFF_PACING: pace the hand-off to what Temporal absorbs
	// (AIMD on SignalWithStart latency and errors; at most
	// HOOKINBOX_HANDOFF_WORKERS calls in flight). Off: every worker always
	// sends (the behaviour before pacing).
	HandoffPacing bool

	// HOOKINBOX_SWEEP_INTERVAL: how often the sweeper schedule runs.
	SweepInterval time.Duration
	// HOOKINBOX_SWEEP_AFTER: a pending row older than this is signalled again.
	SweepAfter time.Duration
	// HOOKINBOX_IDLE_TIMEOUT: a resource workflow completes after this long idle.
	IdleTimeout time.Duration
	// HOOKINBOX_IDLE_COMPLETE_KINDS: resource kinds (comma-separated) whose
	// workflow completes as soon as a pass leaves nothing to do, instead of
	// idling HOOKINBOX_IDLE_TIMEOUT: kinds that rarely get a second event
	// (default "invoice"). Empty: every resource lingers.
	IdleCompleteKinds string
	// HOOKINBOX_WORKFLOW_CACHE_SIZE: workflow executions a worker process
	// keeps cached (sticky). An evicted idle workflow is replayed from its
	// history when its next doorbell comes: this bounds the worker's memory.
	WorkflowCacheSize int
	// HOOKINBOX_MAX_EVENTS_PER_RUN: a resource workflow continues-as-new
	// after this many events (or sooner, when Temporal suggests it).
	MaxEventsPerRun int
	// HOOKINBOX_RETRY_BUDGET: attempts per event before it is exhausted.
	RetryBudget int
	// HOOKINBOX_RETRY_INITIAL, HOOKINBOX_RETRY_MAX: backoff base and cap.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// HOOKINBOX_ACTIVITY_TIMEOUT: start-to-close timeout of one handling attempt.
	ActivityTimeout time.Duration
	// HOOKINBOX_HANDLE_MODE: "local" (default) handles each event as a local
	// activity of its resource workflow (one history event, several rows per
	// workflow task); "activity" as a regular activity (each attempt visible
	// as a pending activity in the UI, about six history events per event).
	HandleMode string

	// HOOKINBOX_NEGATIVE_BALANCE_POLICY: what an operator correction
	// (`workspaces adjust`) that would take a balance below zero does by
	// default (the credits domain reads it for credit reversals,
	// domains.OptionsFromEnv; HOOKINBOX_CREDITS_PER_INVOICE and
	// HOOKINBOX_CREDIT_NOTE_WAIT are the domain's own). The domain checks
	// it when the worker starts, the adjust command when it runs:
	// "allow" (default: it goes negative), "clamp" (down to zero, the
	// shortfall recorded) or "hold" (nothing changes; held for review). The
	// decision is recorded with each change.
	NegativeBalancePolicy string

	// HOOKINBOX_MAILER: "smtp" (Mailpit in the local stack) or "http" (an
	// email API taking an Idempotency-Key header).
	Mailer string
	// HOOKINBOX_SMTP_ADDR: host:port of the SMTP server.
	SMTPAddr string
	// HOOKINBOX_EMAIL_FROM: sender address of outbound email.
	EmailFrom string
	// HOOKINBOX_EMAIL_API_URL, HOOKINBOX_EMAIL_API_KEY: the HTTP email API
	// (POST {url}/v1/emails).
	EmailAPIURL string
	EmailAPIKey string
	// HOOKINBOX_EMAIL_API_IDEMPOTENT: the email API dedupes on
	// Idempotency-Key (then uncertain sends are simply repeated).
	EmailAPIIdempotent bool
	// HOOKINBOX_SMTP_LOOKUP_URL: a Mailpit API base URL the SMTP mailer can
	// ask whether an uncertain message arrived (empty: no lookup).
	SMTPLookupURL string
	// HOOKINBOX_SMTP_TLS: "auto" (default: "required" for a relay on
	// another host, "starttls" for one on loopback), "starttls" (upgrade
	// when offered, and never send credentials in the clear; an attacker in
	// the middle can strip the offer), "required" or "off".
	SMTPTLS string
	// HOOKINBOX_SMTP_USERNAME, HOOKINBOX_SMTP_PASSWORD: AUTH PLAIN after
	// the upgrade (empty username: no AUTH).
	SMTPUsername string
	SMTPPassword string
	// HOOKINBOX_OUTBOUND_ALLOW_PRIVATE: let team destinations (webhooks)
	// reach loopback, private and link-local addresses. Off by default
	// (SSRF guard); the local stack and the tests turn it on because every
	// destination there is on loopback.
	OutboundAllowPrivate bool
	// HOOKINBOX_OUTBOX_BUDGET: send attempts per outbox row before it is failed.
	OutboxBudget int
	// HOOKINBOX_OUTBOX_SEND: "local-first" (default) makes the first send
	// attempt of an outbox row a local activity (one history event, in the
	// workflow task that handled the event) and later attempts regular
	// activities; "activity" makes every attempt a regular activity.
	OutboxSend string
	// HOOKINBOX_UNCERTAIN_POLICY: per operation class, what to do when a
	// send's outcome is unknown and the destination does not dedupe:
	// "class=policy,…" with policy retry_same_key, accept_duplicate or
	// hold_for_review (defaults: what each domain declares for its classes, hookinbox.App.OutboxClass).
	UncertainPolicy string

	// Reconciliation, backfill and retention settings follow.

	// HOOKINBOX_RECONCILE_INTERVAL: how often the subscriptions reconciliation
	// schedule runs a pass; 0 disables (deletes) the schedule.
	ReconcileInterval time.Duration
	// HOOKINBOX_RECONCILE_PAGE_SIZE: items per provider list page (1..100), for
	// the reconciliation and the facts backfill.
	ReconcilePageSize int
	// HOOKINBOX_RECONCILE_PAGES_PER_RUN: a reconciliation or backfill run
	// continues-as-new after this many pages (or sooner, when Temporal suggests it).
	ReconcilePagesPerRun int
	// HOOKINBOX_RECONCILE_SIGNAL_ALL: "true" signals every listed subscription's
	// workflow; by default only those whose listed state differs from the
	// projection (or that have none) are signalled.
	ReconcileSignalAll bool
	// HOOKINBOX_BACKFILL_INTERVAL: how often the facts backfill schedule runs;
	// 0 disables (deletes) the schedule.
	BackfillInterval time.Duration
	// HOOKINBOX_BACKFILL_OVERLAP: each backfill pass lists events from the last
	// complete pass's start minus this overlap.
	BackfillOverlap time.Duration
	// HOOKINBOX_BACKFILL_LOOKBACK: how far back the first backfill pass of an
	// account looks.
	BackfillLookback time.Duration
	// HOOKINBOX_GITHUB_RECOVERY_INTERVAL: how often the GitHub delivery
	// recovery schedule runs (GitHub never redelivers on its own); 0
	// disables (deletes) the schedule. Its passes overlap by
	// HOOKINBOX_BACKFILL_OVERLAP.
	GitHubRecoveryInterval time.Duration
	// HOOKINBOX_GITHUB_RECOVERY_LOOKBACK: how far back the first recovery
	// pass of a hook looks (GitHub keeps three days of deliveries).
	GitHubRecoveryLookback time.Duration
	// HOOKINBOX_GITHUB_RECOVERY_ATTEMPTS: how many passes act on one missing
	// delivery before it is abandoned (in redeliver mode the last fetches it).
	GitHubRecoveryAttempts int
	// HOOKINBOX_PROVIDER_RPS: activities per second (whole number) on the
	// provider task queue (<task queue>-provider), where the list and backfill
	// activities run: a task-queue-wide rate limit enforced by Temporal.
	ProviderRPS int
	// HOOKINBOX_RETENTION_INTERVAL: how often the retention schedule runs; 0
	// disables (deletes) the schedule.
	RetentionInterval time.Duration
	// HOOKINBOX_NOTIFY_INTERVAL: how often the notify schedule evaluates
	// the notification rules (docs/notifications.md); 0 disables (deletes)
	// the schedule, and no notice is decided.
	NotifyInterval time.Duration
	// HOOKINBOX_PAYLOAD_RETENTION: payloads of settled (done, ignored,
	// failed, exhausted) inbox rows, resolved quarantine entries and sent
	// outbox rows older than this are redacted (keys and body hashes stay).
	PayloadRetention time.Duration
	// HOOKINBOX_DEDUP_RETENTION: inbox rows (the dedup keys) are kept at least
	// this long, past every sender's retry window; finished rows older than
	// max(this, HOOKINBOX_PAYLOAD_RETENTION) are deleted.
	DedupRetention time.Duration
	// HOOKINBOX_QUARANTINE_RETENTION: resolved quarantine entries older than
	// this are deleted (open ones never are).
	QuarantineRetention time.Duration
	// HOOKINBOX_RETENTION_BATCH: rows per retention statement.
	RetentionBatch int

	// HOOKINBOX_SECRETS_KEY: the key-encryption key of the secrets kept in
	// the database (signing secrets, API keys, destination secrets), base64
	// of 32 random bytes. Or HOOKINBOX_SECRETS_KEY_FILE: a file of
	// `id:base64key` lines, the first sealing and the others only opening
	// (rotation). Not both. The intake and the worker refuse to start with
	// neither; see docs/security.md.
	SecretsKey     string
	SecretsKeyFile string

	// HOOKINBOX_CONSOLE_ADDR: listen address of the operator console and
	// API (`hookinbox console`, and `make run`). Internal like the intake's
	// internal listener: loopback by default, never the public webhook port.
	ConsoleAddr string
	// HOOKINBOX_CONSOLE_SESSION_TTL: how long a console sign-in lasts (its
	// session and cookie); sign-out ends it at once.
	ConsoleSessionTTL time.Duration
	// HOOKINBOX_TEMPORAL_UI_URL: base URL of the Temporal UI the console and
	// `inbox show` link each resource's workflow to.
	TemporalUIURL string
	// HOOKINBOX_CONSOLE_URL: base URL operators reach the console at; each
	// resource workflow's details in the Temporal UI link back to it (empty:
	// http:// plus HOOKINBOX_CONSOLE_ADDR).
	ConsoleURL string

	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT
	// plus /v1/traces: the OTLP/HTTP URL the intake and the worker export
	// their traces to (empty, the default: tracing is off, at no cost). The
	// exporter reads the other OTEL_EXPORTER_OTLP_* variables itself
	// (headers, timeout, compression, certificates). OTEL_SDK_DISABLED=true
	// or OTEL_TRACES_EXPORTER=none turn it off whatever the endpoint.
	TracesEndpoint string
	// OTEL_SERVICE_NAME: the service.name of the spans (empty:
	// hookinbox-intake, hookinbox-worker).
	ServiceName string
	// HOOKINBOX_TRACE_URL: a trace UI's link template, {trace_id} replaced
	// by an event's trace id (e.g. http://localhost:16686/trace/{trace_id}
	// for Jaeger): the console and `explain event` link each event's trace
	// there (empty: they show the id alone).
	TraceURL string

	// HOOKINBOX_LOG_FORMAT: "json" (default) or "text".
	LogFormat string
	// HOOKINBOX_LOG_LEVEL: debug, info, warn, error.
	LogLevel string
}

// Default returns the configuration of the local stack.
func Default() Config {
	return Config{
		DatabaseURL:           fmt.Sprintf("postgres://hookinbox@127.0.0.1:%d/hookinbox?sslmode=disable", DefaultPostgresPort),
		TemporalAddress:       fmt.Sprintf("127.0.0.1:%d", DefaultTemporalPort),
		TemporalNamespace:     "default",
		TaskQueue:             "hookinbox",
		HTTPAddr:              fmt.Sprintf(":%d", DefaultIntakePort),
		InternalAddr:          "127.0.0.1:9090",
		WorkerAddr:            "127.0.0.1:9091",
		RequestTimeout:        5 * time.Second,
		MaxBodyBytes:          1 << 20,
		SignatureTolerance:    5 * time.Minute,
		EndpointCacheTTL:      10 * time.Second,
		IntakeWriters:         4,
		HandoffQueue:          10000,
		HandoffWorkers:        16,
		HandoffTimeout:        5 * time.Second,
		HandoffPacing:         true,
		IdleCompleteKinds:     "invoice",
		WorkflowCacheSize:     2000,
		OutboxSend:            "local-first",
		SweepInterval:         30 * time.Second,
		SweepAfter:            time.Minute,
		IdleTimeout:           10 * time.Minute,
		MaxEventsPerRun:       500,
		HandleMode:            "local",
		RetryBudget:           10,
		RetryInitial:          time.Second,
		RetryMax:              5 * time.Minute,
		ActivityTimeout:       30 * time.Second,
		Mailer:                "smtp",
		SMTPAddr:              "127.0.0.1:1025",
		SMTPTLS:               "auto",
		EmailFrom:             "hookinbox@localhost",
		OutboxBudget:          8,
		EmailAPIIdempotent:    true,
		LogFormat:             "json",
		LogLevel:              "info",
		ConsoleAddr:           "127.0.0.1:9092",
		ConsoleSessionTTL:     12 * time.Hour,
		TemporalUIURL:         fmt.Sprintf("http://127.0.0.1:%d", DefaultTemporalUI),
		NegativeBalancePolicy: keys.BalanceAllow,

		ReconcileInterval:      time.Hour,
		ReconcilePageSize:      100,
		ReconcilePagesPerRun:   50,
		BackfillInterval:       15 * time.Minute,
		BackfillOverlap:        time.Hour,
		BackfillLookback:       72 * time.Hour,
		GitHubRecoveryInterval: 15 * time.Minute,
		GitHubRecoveryLookback: 72 * time.Hour,
		GitHubRecoveryAttempts: 3,
		ProviderRPS:            20,
		RetentionInterval:      24 * time.Hour,
		NotifyInterval:         time.Minute,
		PayloadRetention:       30 * 24 * time.Hour,
		DedupRetention:         7 * 24 * time.Hour,
		QuarantineRetention:    30 * 24 * time.Hour,
		RetentionBatch:         1000,
	}
}

// ConsoleBaseURL is where operators reach the console: HOOKINBOX_CONSOLE_URL,
// else http:// plus HOOKINBOX_CONSOLE_ADDR (":9092" read as 127.0.0.1:9092).
func (c Config) ConsoleBaseURL() string {
	if c.ConsoleURL != "" {
		return strings.TrimRight(c.ConsoleURL, "/")
	}
	addr := c.ConsoleAddr
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr
}

// FromEnv returns Default overridden by the environment.
func FromEnv() (Config, error) {
	return FromLookup(os.LookupEnv)
}

// FromLookup is FromEnv with an injectable lookup, for tests.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	p := parser{lookup: lookup}
	p.str("DATABASE_URL", &c.DatabaseURL)
	p.str("HOOKINBOX_INTAKE_DATABASE_URL", &c.IntakeDatabaseURL)
	p.str("HOOKINBOX_WORKER_DATABASE_URL", &c.WorkerDatabaseURL)
	p.str("HOOKINBOX_OPERATOR_DATABASE_URL", &c.OperatorDatabaseURL)
	p.str("HOOKINBOX_CONSOLE_DATABASE_URL", &c.ConsoleDatabaseURL)
	p.str("HOOKINBOX_PAYLOAD_DATABASE_URL", &c.PayloadDatabaseURL)
	p.str("HOOKINBOX_INTAKE_DB_PASSWORD", &c.IntakeDBPassword)
	p.str("HOOKINBOX_WORKER_DB_PASSWORD", &c.WorkerDBPassword)
	p.str("HOOKINBOX_OPERATOR_DB_PASSWORD", &c.OperatorDBPassword)
	p.str("HOOKINBOX_CONSOLE_DB_PASSWORD", &c.ConsoleDBPassword)
	p.str("HOOKINBOX_PAYLOAD_READER_DB_PASSWORD", &c.PayloadReaderDBPassword)
	p.str("TEMPORAL_ADDRESS", &c.TemporalAddress)
	p.str("TEMPORAL_NAMESPACE", &c.TemporalNamespace)
	p.str("TEMPORAL_API_KEY", &c.TemporalAPIKey)
	p.boolean("TEMPORAL_TLS", &c.TemporalTLS)
	p.str("TEMPORAL_TLS_CERT", &c.TemporalTLSCert)
	p.str("TEMPORAL_TLS_KEY", &c.TemporalTLSKey)
	p.str("TEMPORAL_TLS_CA", &c.TemporalTLSCA)
	p.str("TEMPORAL_TLS_SERVER_NAME", &c.TemporalTLSServerName)
	p.str("HOOKINBOX_TASK_QUEUE", &c.TaskQueue)
	p.str("HOOKINBOX_WORKFLOW_ID_PREFIX", &c.WorkflowIDPrefix)
	p.str("HOOKINBOX_HTTP_ADDR", &c.HTTPAddr)
	p.str("HOOKINBOX_INTERNAL_ADDR", &c.InternalAddr)
	p.str("HOOKINBOX_WORKER_ADDR", &c.WorkerAddr)
	p.duration("HOOKINBOX_REQUEST_TIMEOUT", &c.RequestTimeout)
	p.int64("HOOKINBOX_MAX_BODY_BYTES", &c.MaxBodyBytes)
	p.duration("HOOKINBOX_SIGNATURE_TOLERANCE", &c.SignatureTolerance)
	p.duration("HOOKINBOX_ENDPOINT_CACHE_TTL", &c.EndpointCacheTTL)
	p.integer("HOOKINBOX_INTAKE_WRITERS", &c.IntakeWriters)
	p.integer("HOOKINBOX_HANDOFF_QUEUE", &c.HandoffQueue)
	p.integer("HOOKINBOX_HANDOFF_WORKERS", &c.HandoffWorkers)
	p.duration("HOOKINBOX_HANDOFF_TIMEOUT", &c.HandoffTimeout)
	p.boolean("HOOKINBOX_HANDOFF_PACING", &c.HandoffPacing)
	p.str("HOOKINBOX_IDLE_COMPLETE_KINDS", &c.IdleCompleteKinds)
	p.integer("HOOKINBOX_WORKFLOW_CACHE_SIZE", &c.WorkflowCacheSize)
	p.str("HOOKINBOX_OUTBOX_SEND", &c.OutboxSend)
	p.duration("HOOKINBOX_SWEEP_INTERVAL", &c.SweepInterval)
	p.duration("HOOKINBOX_SWEEP_AFTER", &c.SweepAfter)
	p.duration("HOOKINBOX_IDLE_TIMEOUT", &c.IdleTimeout)
	p.integer("HOOKINBOX_MAX_EVENTS_PER_RUN", &c.MaxEventsPerRun)
	p.integer("HOOKINBOX_RETRY_BUDGET", &c.RetryBudget)
	p.duration("HOOKINBOX_RETRY_INITIAL", &c.RetryInitial)
	p.duration("HOOKINBOX_RETRY_MAX", &c.RetryMax)
	p.duration("HOOKINBOX_ACTIVITY_TIMEOUT", &c.ActivityTimeout)
	p.str("HOOKINBOX_HANDLE_MODE", &c.HandleMode)
	p.str("HOOKINBOX_NEGATIVE_BALANCE_POLICY", &c.NegativeBalancePolicy)
	p.str("HOOKINBOX_MAILER", &c.Mailer)
	p.str("HOOKINBOX_SMTP_ADDR", &c.SMTPAddr)
	p.str("HOOKINBOX_EMAIL_FROM", &c.EmailFrom)
	p.str("HOOKINBOX_EMAIL_API_URL", &c.EmailAPIURL)
	p.str("HOOKINBOX_EMAIL_API_KEY", &c.EmailAPIKey)
	p.boolean("HOOKINBOX_EMAIL_API_IDEMPOTENT", &c.EmailAPIIdempotent)
	p.str("HOOKINBOX_SMTP_LOOKUP_URL", &c.SMTPLookupURL)
	p.str("HOOKINBOX_SMTP_TLS", &c.SMTPTLS)
	p.str("HOOKINBOX_SMTP_USERNAME", &c.SMTPUsername)
	p.str("HOOKINBOX_SMTP_PASSWORD", &c.SMTPPassword)
	p.boolean("HOOKINBOX_OUTBOUND_ALLOW_PRIVATE", &c.OutboundAllowPrivate)
	p.integer("HOOKINBOX_OUTBOX_BUDGET", &c.OutboxBudget)
	p.str("HOOKINBOX_UNCERTAIN_POLICY", &c.UncertainPolicy)
	p.duration("HOOKINBOX_RECONCILE_INTERVAL", &c.ReconcileInterval)
	p.integer("HOOKINBOX_RECONCILE_PAGE_SIZE", &c.ReconcilePageSize)
	p.integer("HOOKINBOX_RECONCILE_PAGES_PER_RUN", &c.ReconcilePagesPerRun)
	p.boolean("HOOKINBOX_RECONCILE_SIGNAL_ALL", &c.ReconcileSignalAll)
	p.duration("HOOKINBOX_BACKFILL_INTERVAL", &c.BackfillInterval)
	p.duration("HOOKINBOX_BACKFILL_OVERLAP", &c.BackfillOverlap)
	p.duration("HOOKINBOX_BACKFILL_LOOKBACK", &c.BackfillLookback)
	p.duration("HOOKINBOX_GITHUB_RECOVERY_INTERVAL", &c.GitHubRecoveryInterval)
	p.duration("HOOKINBOX_GITHUB_RECOVERY_LOOKBACK", &c.GitHubRecoveryLookback)
	p.integer("HOOKINBOX_GITHUB_RECOVERY_ATTEMPTS", &c.GitHubRecoveryAttempts)
	p.integer("HOOKINBOX_PROVIDER_RPS", &c.ProviderRPS)
	p.duration("HOOKINBOX_RETENTION_INTERVAL", &c.RetentionInterval)
	p.duration("HOOKINBOX_NOTIFY_INTERVAL", &c.NotifyInterval)
	p.duration("HOOKINBOX_PAYLOAD_RETENTION", &c.PayloadRetention)
	p.duration("HOOKINBOX_DEDUP_RETENTION", &c.DedupRetention)
	p.duration("HOOKINBOX_QUARANTINE_RETENTION", &c.QuarantineRetention)
	p.integer("HOOKINBOX_RETENTION_BATCH", &c.RetentionBatch)
	p.str("HOOKINBOX_SECRETS_KEY", &c.SecretsKey)
	p.str("HOOKINBOX_SECRETS_KEY_FILE", &c.SecretsKeyFile)
	p.str("HOOKINBOX_CONSOLE_ADDR", &c.ConsoleAddr)
	p.duration("HOOKINBOX_CONSOLE_SESSION_TTL", &c.ConsoleSessionTTL)
	p.str("HOOKINBOX_TEMPORAL_UI_URL", &c.TemporalUIURL)
	p.str("HOOKINBOX_CONSOLE_URL", &c.ConsoleURL)
	p.traces(&c)
	p.str("HOOKINBOX_TRACE_URL", &c.TraceURL)
	p.str("HOOKINBOX_LOG_FORMAT", &c.LogFormat)
	p.str("HOOKINBOX_LOG_LEVEL", &c.LogLevel)
	if p.err != nil {
		return Config{}, p.err
	}
	return c, c.Validate()
}

// IntakeDB is the intake's database URL: HOOKINBOX_INTAKE_DATABASE_URL, else
// DATABASE_URL. The fallback is resolved here, when used, so a caller that
// sets DatabaseURL after loading (the local stack, the tests) moves both.
func (c Config) IntakeDB() string { return orElse(c.IntakeDatabaseURL, c.DatabaseURL) }

// WorkerDB is the worker's database URL: HOOKINBOX_WORKER_DATABASE_URL, else
// DATABASE_URL.
func (c Config) WorkerDB() string { return orElse(c.WorkerDatabaseURL, c.DatabaseURL) }

// OperatorDB is the read-only operator commands' database URL:
// HOOKINBOX_OPERATOR_DATABASE_URL, else DATABASE_URL.
func (c Config) OperatorDB() string { return orElse(c.OperatorDatabaseURL, c.DatabaseURL) }

// ConsoleDB is the console's database URL: HOOKINBOX_CONSOLE_DATABASE_URL,
// else DATABASE_URL.
func (c Config) ConsoleDB() string { return orElse(c.ConsoleDatabaseURL, c.DatabaseURL) }

// PayloadDB is the console's payload pool's URL:
// HOOKINBOX_PAYLOAD_DATABASE_URL, else the console's.
func (c Config) PayloadDB() string { return orElse(c.PayloadDatabaseURL, c.ConsoleDB()) }

func orElse(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}

// Validate rejects settings that cannot work.
func (c Config) Validate() error {
	var errs []string
	if c.DatabaseURL == "" {
		errs = append(errs, "DATABASE_URL is empty")
	}
	if c.TemporalAddress == "" {
		errs = append(errs, "TEMPORAL_ADDRESS is empty")
	}
	if c.ConsoleAddr == c.HTTPAddr || c.ConsoleAddr == c.InternalAddr {
		errs = append(errs, "HOOKINBOX_CONSOLE_ADDR must differ from HOOKINBOX_HTTP_ADDR and HOOKINBOX_INTERNAL_ADDR")
	}
	if c.InternalAddr == c.HTTPAddr {
		errs = append(errs, "HOOKINBOX_INTERNAL_ADDR must differ from HOOKINBOX_HTTP_ADDR (/metrics and /readyz never go on the public port)")
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, "HOOKINBOX_REQUEST_TIMEOUT must be positive")
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, "HOOKINBOX_MAX_BODY_BYTES must be positive")
	}
	if c.SignatureTolerance <= 0 {
		errs = append(errs, "HOOKINBOX_SIGNATURE_TOLERANCE must be positive")
	}
	if c.IntakeWriters < 0 {
		errs = append(errs, "HOOKINBOX_INTAKE_WRITERS must be 0 (no group commit) or more")
	}
	if c.HandoffQueue <= 0 || c.HandoffWorkers <= 0 {
		errs = append(errs, "HOOKINBOX_HANDOFF_QUEUE and HOOKINBOX_HANDOFF_WORKERS must be positive")
	}
	if c.RetryBudget <= 0 {
		errs = append(errs, "HOOKINBOX_RETRY_BUDGET must be positive")
	}
	if c.RetryInitial <= 0 || c.RetryMax < c.RetryInitial {
		errs = append(errs, "HOOKINBOX_RETRY_INITIAL must be positive and at most HOOKINBOX_RETRY_MAX")
	}
	if c.OutboxSend != "local-first" && c.OutboxSend != "activity" {
		errs = append(errs, `HOOKINBOX_OUTBOX_SEND must be "local-first" or "activity"`)
	}
	if c.WorkflowCacheSize <= 0 {
		errs = append(errs, "HOOKINBOX_WORKFLOW_CACHE_SIZE must be positive")
	}
	if c.HandleMode != "local" && c.HandleMode != "activity" {
		errs = append(errs, `HOOKINBOX_HANDLE_MODE must be "local" or "activity"`)
	}
	if c.Mailer != "smtp" && c.Mailer != "http" {
		errs = append(errs, `HOOKINBOX_MAILER must be "smtp" or "http"`)
	}
	if c.Mailer == "http" && c.EmailAPIURL == "" {
		errs = append(errs, "HOOKINBOX_MAILER=http needs HOOKINBOX_EMAIL_API_URL")
	}
	if c.SMTPTLS != "auto" && c.SMTPTLS != "starttls" && c.SMTPTLS != "required" && c.SMTPTLS != "off" {
		errs = append(errs, `HOOKINBOX_SMTP_TLS must be "auto", "starttls", "required" or "off"`)
	}
	if c.OutboxBudget <= 0 {
		errs = append(errs, "HOOKINBOX_OUTBOX_BUDGET must be positive")
	}
	if c.ReconcileInterval < 0 || c.BackfillInterval < 0 || c.RetentionInterval < 0 {
		errs = append(errs, "HOOKINBOX_RECONCILE_INTERVAL, HOOKINBOX_BACKFILL_INTERVAL and HOOKINBOX_RETENTION_INTERVAL must not be negative (0 disables the schedule)")
	}
	if c.ReconcilePageSize < 1 || c.ReconcilePageSize > 100 {
		errs = append(errs, "HOOKINBOX_RECONCILE_PAGE_SIZE must be between 1 and 100")
	}
	if c.ReconcilePagesPerRun <= 0 {
		errs = append(errs, "HOOKINBOX_RECONCILE_PAGES_PER_RUN must be positive")
	}
	if c.BackfillOverlap <= 0 || c.BackfillLookback <= 0 {
		errs = append(errs, "HOOKINBOX_BACKFILL_OVERLAP and HOOKINBOX_BACKFILL_LOOKBACK must be positive")
	}
	if c.NotifyInterval < 0 || (c.NotifyInterval > 0 && c.NotifyInterval < time.Second) {
		errs = append(errs, "HOOKINBOX_NOTIFY_INTERVAL must be 0 (no notifications) or at least 1s")
	}
	if c.GitHubRecoveryInterval < 0 {
		errs = append(errs, "HOOKINBOX_GITHUB_RECOVERY_INTERVAL must not be negative (0 disables the schedule)")
	}
	if c.GitHubRecoveryLookback <= 0 || c.GitHubRecoveryAttempts <= 0 {
		errs = append(errs, "HOOKINBOX_GITHUB_RECOVERY_LOOKBACK and HOOKINBOX_GITHUB_RECOVERY_ATTEMPTS must be positive")
	}
	if c.GitHubRecoveryLookback+c.BackfillOverlap > c.DedupRetention {
		errs = append(errs, "HOOKINBOX_GITHUB_RECOVERY_LOOKBACK plus HOOKINBOX_BACKFILL_OVERLAP must not exceed HOOKINBOX_DEDUP_RETENTION (a delivery whose inbox row is gone would be recovered again)")
	}
	if c.ProviderRPS <= 0 {
		errs = append(errs, "HOOKINBOX_PROVIDER_RPS must be positive")
	}
	if c.DedupRetention < 72*time.Hour { // keys.MinDedupRetention
		errs = append(errs, "HOOKINBOX_DEDUP_RETENTION must be at least 72h (the longest sender retry window: Stripe retries for 3 days)")
	}
	if c.BackfillLookback+c.BackfillOverlap > c.DedupRetention {
		errs = append(errs, "HOOKINBOX_BACKFILL_LOOKBACK plus HOOKINBOX_BACKFILL_OVERLAP must not exceed HOOKINBOX_DEDUP_RETENTION (the backfill must only list events whose keys are still kept)")
	}
	if c.PayloadRetention <= 0 || c.QuarantineRetention <= 0 || c.RetentionBatch <= 0 {
		errs = append(errs, "HOOKINBOX_PAYLOAD_RETENTION, HOOKINBOX_QUARANTINE_RETENTION and HOOKINBOX_RETENTION_BATCH must be positive")
	}
	if c.ConsoleSessionTTL < time.Minute || c.ConsoleSessionTTL > 30*24*time.Hour {
		errs = append(errs, "HOOKINBOX_CONSOLE_SESSION_TTL must be between 1m and 720h")
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, `HOOKINBOX_LOG_FORMAT must be "json" or "text"`)
	}
	for name, u := range map[string]string{"HOOKINBOX_TEMPORAL_UI_URL": c.TemporalUIURL, "HOOKINBOX_CONSOLE_URL": c.ConsoleURL,
		"HOOKINBOX_TRACE_URL": c.TraceURL, "OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT)": c.TracesEndpoint} {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, name+" must be an http:// or https:// URL")
		}
	}
	if (c.TemporalTLSCert == "") != (c.TemporalTLSKey == "") {
		errs = append(errs, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together")
	}
	if len(errs) > 0 {
		return fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return nil
}

type parser struct {
	lookup func(string) (string, bool)
	err    error
}

func (p *parser) get(name string) (string, bool) {
	v, ok := p.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return strings.TrimSpace(v), true
}

func (p *parser) fail(name, v string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("configuration: %s=%q: %w", name, v, err)
	}
}

// traces reads the standard OpenTelemetry variables that decide whether
// traces are exported, and where (the specification's precedence: the
// signal's own endpoint as it is, else the base endpoint plus /v1/traces).
func (p *parser) traces(c *Config) {
	var base, signal, disabled, exporter, protocol string
	p.str("OTEL_EXPORTER_OTLP_PROTOCOL", &protocol)
	p.str("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", &protocol)
	if protocol != "" && protocol != "http/protobuf" {
		p.fail("OTEL_EXPORTER_OTLP_PROTOCOL", protocol, fmt.Errorf("hookinbox exports traces over OTLP/HTTP only: http/protobuf"))
	}
	p.str("OTEL_EXPORTER_OTLP_ENDPOINT", &base)
	p.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &signal)
	p.str("OTEL_SDK_DISABLED", &disabled)
	p.str("OTEL_TRACES_EXPORTER", &exporter)
	p.str("OTEL_SERVICE_NAME", &c.ServiceName)
	switch {
	case strings.EqualFold(strings.TrimSpace(disabled), "true") || strings.EqualFold(strings.TrimSpace(exporter), "none"):
		c.TracesEndpoint = ""
	case signal != "":
		c.TracesEndpoint = signal
	case base != "":
		c.TracesEndpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
}

func (p *parser) str(name string, dst *string) {
	if v, ok := p.get(name); ok {
		*dst = v
	}
}

func (p *parser) boolean(name string, dst *bool) {
	if v, ok := p.get(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			p.fail(name, v, err)
			return
		}
		*dst = b
	}
}

func (p *parser) integer(name string, dst *int) {
	if v, ok := p.get(name); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			p.fail(name, v, err)
			return
		}
		*dst = n
	}
}

func (p *parser) int64(name string, dst *int64) {
	if v, ok := p.get(name); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			p.fail(name, v, err)
			return
		}
		*dst = n
	}
}

func (p *parser) duration(name string, dst *time.Duration) {
	if v, ok := p.get(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			p.fail(name, v, err)
			return
		}
		*dst = d
	}
}

// CompleteKinds lists HOOKINBOX_IDLE_COMPLETE_KINDS.
func (c Config) CompleteKinds() []string {
	var out []string
	for _, k := range strings.Split(c.IdleCompleteKinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
