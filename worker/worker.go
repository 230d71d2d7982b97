// Package worker builds and runs hookinbox's Temporal workers, one per task
// queue: it registers each queue's workflows and only that queue's
// activities struct, sets worker options, registers search attributes and
// applies the schedules at start-up.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tworker "go.temporal.io/sdk/worker"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/workflows"
)

// Activities are the worker's activities, one struct per task queue; each
// is registered only on its own queue.
type Activities struct {
	Resource *activities.ResourceActivities
	Control  *activities.ControlActivities
	Provider *activities.ProviderActivities
}

// New builds the worker of cfg.TaskQueue: the resource workflows and the
// activities they call (as regular or local activities).
//
// With tracing on (a.Tracing), the worker runs the Temporal SDK's
// OpenTelemetry interceptor: the workflow's StartActivity and the worker's
// RunActivity spans, in each delivery's trace (workflows.TracingInterceptor).
func New(c client.Client, a *activities.ResourceActivities, cfg config.Config) tworker.Worker {
	BoundWorkflowCache(cfg)
	var interceptors []interceptor.WorkerInterceptor
	if a.Tracing != nil {
		// (The SDK's NewTracer reports no error today; were it to, the
		// worker would run untraced rather than not at all.)
		if ti, err := workflows.TracingInterceptor(a.Tracing); err == nil {
			interceptors = append(interceptors, ti)
		}
	}
	w := tworker.New(c, cfg.TaskQueue, tworker.Options{
		Interceptors: interceptors,
		// Local activities (short database reads and writes) share the
		// worker with regular ones; both are bounded.
		MaxConcurrentActivityExecutionSize:      64,
		MaxConcurrentLocalActivityExecutionSize: 64,
		// Eager activity execution: a regular activity scheduled by a
		// workflow task (an outbox send retried, a reconcile) comes back in
		// the answer to that task's completion, without a trip through the
		// matching service, when the server allows it (the dev server is
		// started with system.enableActivityEagerExecution=true).
		// (DisableEagerActivities stays false; 3 reservations per task.)
	})
	w.RegisterWorkflow(workflows.ResourceWorkflow)
	w.RegisterActivity(a)
	return w
}

// BoundWorkflowCache bounds the workflow executions this process keeps in
// the SDK's sticky cache (HOOKINBOX_WORKFLOW_CACHE_SIZE; the SDK default is
// 10,000): an idle resource workflow costs tens of KiB in the cache, and one
// that is evicted is replayed from its history on its next workflow task.
// Completed workflows leave the cache at once. The cache is shared by every
// worker of the process and sized when the first one starts (again after
// all have stopped): a call while workers run changes nothing.
func BoundWorkflowCache(cfg config.Config) {
	if cfg.WorkflowCacheSize > 0 {
		tworker.SetStickyWorkflowCacheSize(cfg.WorkflowCacheSize)
	}
}

// NewControl builds the worker of the control task queue
// (workflows.ControlTaskQueue): the scheduled workflows and their
// activities, kept off the resource queue so that the sweeper is never
// queued behind the backlog it exists to recover.
func NewControl(c client.Client, a *activities.ControlActivities, cfg config.Config) tworker.Worker {
	w := tworker.New(c, workflows.ControlTaskQueue(cfg.TaskQueue), tworker.Options{MaxConcurrentActivityExecutionSize: 8})
	w.RegisterWorkflow(workflows.SweepWorkflow)
	w.RegisterWorkflow(workflows.ReconcileSubscriptionsWorkflow)
	w.RegisterWorkflow(workflows.BackfillFactsWorkflow)
	w.RegisterWorkflow(workflows.RetentionWorkflow)
	w.RegisterWorkflow(workflows.RecoverDeliveriesWorkflow)
	w.RegisterWorkflow(workflows.NotifyWorkflow)
	w.RegisterActivity(a)
	return w
}

// NewProvider builds the worker of the provider task queue
// (workflows.ProviderTaskQueue), where the activities that page through a
// provider's list APIs run. Temporal rate-limits the whole queue to
// HOOKINBOX_PROVIDER_RPS activities per second, however many workers poll
// it, so reconciliation and backfill stay inside the provider's quota
// (429s are honoured besides: their Retry-After becomes the next retry delay).
func NewProvider(c client.Client, a *activities.ProviderActivities, cfg config.Config) tworker.Worker {
	w := tworker.New(c, workflows.ProviderTaskQueue(cfg.TaskQueue), tworker.Options{
		TaskQueueActivitiesPerSecond:       float64(cfg.ProviderRPS),
		MaxConcurrentActivityExecutionSize: 4,
	})
	w.RegisterActivity(a)
	return w
}

// SweepBudget is how long one sweeper run may go on ringing further pages
// of 1,000 stale resources while each page is full: under a backlog the
// sweeper then rings as fast as Temporal answers (paced as the intake's
// hand-off is), not 1,000 resources per HOOKINBOX_SWEEP_INTERVAL. It stays
// well inside the sweep activity's two-minute start-to-close timeout; the
// schedule skips the ticks that fall while a run is still going.
const SweepBudget = 90 * time.Second

// SweepMaxBacklog holds the sweeper back while the resource task queue
// already has this many workflow tasks waiting for a worker (a page's worth,
// half a minute of work for the dev server on 2 cores): under a backlog the
// rows pending past HOOKINBOX_SWEEP_AFTER mostly have their doorbell there
// already, and ringing them again costs the server a signal or a workflow
// task each. The lost ones are rung as the queue drains.
const SweepMaxBacklog = 1000

// Schedules are the schedules the worker keeps applied: the sweeper, and
// those of reconciliation, facts backfill, retention, the GitHub delivery
// recovery and the notifications whose interval is not 0 (starter.ScheduleEnabled; their
// ids, in this order, are starter.EnabledScheduleIDs).
func Schedules(cfg config.Config) []starter.ScheduleSpec {
	all := []starter.ScheduleSpec{{
		ID:            starter.ScheduleIDOf(cfg, starter.ScheduleSweeper),
		Every:         cfg.SweepInterval,
		Workflow:      workflows.SweepWorkflow,
		Args:          []any{workflows.SweepInput{OlderThan: cfg.SweepAfter, Limit: 1000, Budget: SweepBudget, MaxBacklog: SweepMaxBacklog}},
		WorkflowID:    starter.ScheduleIDOf(cfg, starter.ScheduleSweeper) + "-run",
		TaskQueue:     workflows.ControlTaskQueue(cfg.TaskQueue),
		CatchupWindow: cfg.SweepInterval,
		Note:          "Re-signals resource workflows of inbox rows pending past HOOKINBOX_SWEEP_AFTER (SPEC R16).",
	}}
	pass := workflows.PassSettings{
		PageSize: cfg.ReconcilePageSize, PagesPerRun: cfg.ReconcilePagesPerRun,
		ProviderTaskQueue: workflows.ProviderTaskQueue(cfg.TaskQueue),
		// Each doorbell costs its resource one fetch: the same budget.
		SignalRate: float64(cfg.ProviderRPS),
	}
	if starter.ScheduleEnabled(starter.ScheduleReconcile, cfg) {
		id := starter.ScheduleIDOf(cfg, starter.ScheduleReconcile)
		all = append(all, starter.ScheduleSpec{
			ID: id, Every: cfg.ReconcileInterval, WorkflowID: id + "-run", TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue),
			Workflow: workflows.ReconcileSubscriptionsWorkflow,
			Args:     []any{workflows.ReconcileSubscriptionsInput{PassSettings: pass, SignalAll: cfg.ReconcileSignalAll}},
			// A pass missed while the service was down runs once when it is back.
			CatchupWindow: cfg.ReconcileInterval,
			Note:          "Pages through the provider's subscriptions and reconciles those that differ (SPEC R19); see docs/reconciliation.md.",
		})
	}
	if starter.ScheduleEnabled(starter.ScheduleBackfill, cfg) {
		id := starter.ScheduleIDOf(cfg, starter.ScheduleBackfill)
		all = append(all, starter.ScheduleSpec{
			ID: id, Every: cfg.BackfillInterval, WorkflowID: id + "-run", TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue),
			Workflow: workflows.BackfillFactsWorkflow,
			Args: []any{workflows.BackfillFactsInput{PassSettings: pass,
				Overlap: cfg.BackfillOverlap, Lookback: cfg.BackfillLookback}},
			CatchupWindow: cfg.BackfillInterval,
			Note:          "Lists provider events and inserts those whose webhook never came, marked backfilled (SPEC R19).",
		})
	}
	if starter.ScheduleEnabled(starter.ScheduleGitHubRecovery, cfg) {
		id := starter.ScheduleIDOf(cfg, starter.ScheduleGitHubRecovery)
		all = append(all, starter.ScheduleSpec{
			ID: id, Every: cfg.GitHubRecoveryInterval, WorkflowID: id + "-run", TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue),
			Workflow: workflows.RecoverDeliveriesWorkflow,
			Args: []any{workflows.RecoverDeliveriesInput{PassSettings: pass, Overlap: cfg.BackfillOverlap,
				Lookback: cfg.GitHubRecoveryLookback, Attempts: cfg.GitHubRecoveryAttempts}},
			CatchupWindow: cfg.GitHubRecoveryInterval,
			Note:          "Reads each GitHub hook's delivery log and redelivers (or fetches) the deliveries the inbox never got; see docs/reconciliation.md.",
		})
	}
	if starter.ScheduleEnabled(starter.ScheduleRetention, cfg) {
		id := starter.ScheduleIDOf(cfg, starter.ScheduleRetention)
		all = append(all, starter.ScheduleSpec{
			ID: id, Every: cfg.RetentionInterval, WorkflowID: id + "-run", TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue),
			Workflow: workflows.RetentionWorkflow,
			Args: []any{workflows.RetentionInput{PayloadRetention: cfg.PayloadRetention, DedupRetention: cfg.DedupRetention,
				QuarantineRetention: cfg.QuarantineRetention, BatchSize: cfg.RetentionBatch}},
			CatchupWindow: cfg.RetentionInterval,
			Note:          "Redacts old payloads, deletes inbox rows past the dedup window and old resolved quarantine entries (SPEC R21).",
		})
	}
	if starter.ScheduleEnabled(starter.ScheduleNotify, cfg) {
		id := starter.ScheduleIDOf(cfg, starter.ScheduleNotify)
		all = append(all, starter.ScheduleSpec{
			ID: id, Every: cfg.NotifyInterval, WorkflowID: id + "-run", TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue),
			Workflow: workflows.NotifyWorkflow, Args: []any{workflows.NotifyInput{}},
			// A missed evaluation is not caught up: the next one sees the same states.
			CatchupWindow: cfg.NotifyInterval,
			Note:          "Evaluates the notification rules and sends their notices and recovery notices through the outbox; see docs/notifications.md.",
		})
	}
	return all
}

// Disabled lists the ids of the schedules configuration turns off (an
// interval of 0): Prepare deletes them, so turning one off takes effect.
func Disabled(cfg config.Config) []string { return starter.DisabledScheduleIDs(cfg) }

// Prepare registers search attributes (best effort: a managed cluster may
// forbid it and have them already) and applies the schedules.
func Prepare(ctx context.Context, c client.Client, cfg config.Config, log *slog.Logger) error {
	if err := starter.EnsureSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		log.Warn("could not register search attributes; register them on the namespace by hand", "error", err.Error())
	}
	changes, err := ApplySchedules(ctx, c, cfg)
	for _, ch := range changes {
		switch ch.Action {
		case ScheduleDeleted:
			log.Info("schedule deleted: disabled by configuration", "schedule_id", ch.ID)
		case ScheduleCreated, ScheduleUpdated:
			log.Info("schedule applied", "schedule_id", ch.ID, "created", ch.Action == ScheduleCreated, "every", ch.Every.String())
		}
	}
	return err
}

// What ApplySchedules did to a schedule.
const (
	ScheduleCreated = "created"
	ScheduleUpdated = "updated"
	// ScheduleDeleted: disabled by configuration, and it existed.
	ScheduleDeleted = "deleted"
	// ScheduleAbsent: disabled by configuration, and it did not exist.
	ScheduleAbsent = "absent"
)

// ScheduleChange is what applying one schedule did.
type ScheduleChange struct {
	ID     string        `json:"id"`
	Action string        `json:"action"`
	Every  time.Duration `json:"-"`
	// Interval is Every as text (JSON).
	Interval string `json:"every,omitempty"`
}

// ApplySchedules creates or updates every configured schedule in place
// (fixed ids, pause state kept) and deletes those configuration disables:
// what the worker does at start-up and `hookinbox schedules apply` does.
func ApplySchedules(ctx context.Context, c client.Client, cfg config.Config) ([]ScheduleChange, error) {
	var out []ScheduleChange
	for _, s := range Schedules(cfg) {
		created, err := starter.ApplySchedule(ctx, c, s)
		if err != nil {
			return out, err
		}
		ch := ScheduleChange{ID: s.ID, Action: ScheduleUpdated, Every: s.Every, Interval: s.Every.String()}
		if created {
			ch.Action = ScheduleCreated
		}
		out = append(out, ch)
	}
	for _, id := range Disabled(cfg) {
		existed, err := starter.DeleteSchedule(ctx, c, id)
		if err != nil {
			return out, err
		}
		ch := ScheduleChange{ID: id, Action: ScheduleAbsent}
		if existed {
			ch.Action = ScheduleDeleted
		}
		out = append(out, ch)
	}
	return out, nil
}

// Run prepares, then runs the worker until ctx ends.
func Run(ctx context.Context, c client.Client, a Activities, cfg config.Config, log *slog.Logger) error {
	if err := Prepare(ctx, c, cfg, log); err != nil {
		return err
	}
	w := New(c, a.Resource, cfg)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	pw := NewProvider(c, a.Provider, cfg)
	if err := pw.Start(); err != nil {
		w.Stop()
		return fmt.Errorf("start provider worker: %w", err)
	}
	cw := NewControl(c, a.Control, cfg)
	if err := cw.Start(); err != nil {
		pw.Stop()
		w.Stop()
		return fmt.Errorf("start control worker: %w", err)
	}
	log.Info("worker started", "task_queue", cfg.TaskQueue, "control_task_queue", workflows.ControlTaskQueue(cfg.TaskQueue),
		"provider_task_queue", workflows.ProviderTaskQueue(cfg.TaskQueue), "provider_rps", cfg.ProviderRPS, "namespace", cfg.TemporalNamespace)
	<-ctx.Done()
	cw.Stop()
	pw.Stop()
	w.Stop()
	return nil
}
