// Package worker builds and runs hookinbox's Temporal worker: it registers
// the workflows and the activities, sets worker options, registers search
// attributes and applies the schedules at start-up.
package worker

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	tworker "go.temporal.io/sdk/worker"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/workflows"
)

// New builds a worker on cfg.TaskQueue with every workflow and activity.
func New(c client.Client, a *activities.Activities, cfg config.Config) tworker.Worker {
	w := tworker.New(c, cfg.TaskQueue, tworker.Options{
		// Local activities (short database reads and writes) share the
		// worker with regular ones; both are bounded.
		MaxConcurrentActivityExecutionSize:      64,
		MaxConcurrentLocalActivityExecutionSize: 64,
	})
	w.RegisterWorkflow(workflows.ResourceWorkflow)
	w.RegisterWorkflow(workflows.SweepWorkflow)
	w.RegisterActivity(a)
	return w
}

// Schedules are the schedules the worker keeps applied.
func Schedules(cfg config.Config) []starter.ScheduleSpec {
	return []starter.ScheduleSpec{{
		ID:            starter.ScheduleID(starter.ScheduleSweeper, cfg.TaskQueue),
		Every:         cfg.SweepInterval,
		Workflow:      workflows.SweepWorkflow,
		Args:          []any{workflows.SweepInput{OlderThan: cfg.SweepAfter, Limit: 1000}},
		WorkflowID:    starter.ScheduleID(starter.ScheduleSweeper, cfg.TaskQueue) + "-run",
		TaskQueue:     cfg.TaskQueue,
		CatchupWindow: cfg.SweepInterval,
		Note:          "Re-signals resource workflows of inbox rows pending past HOOKINBOX_SWEEP_AFTER (SPEC R16).",
	}}
}

// Prepare registers search attributes (best effort: a managed cluster may
// forbid it and have them already) and applies the schedules.
func Prepare(ctx context.Context, c client.Client, cfg config.Config, log *slog.Logger) error {
	if err := starter.EnsureSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		log.Warn("could not register search attributes; register them on the namespace by hand", "error", err.Error())
	}
	for _, s := range Schedules(cfg) {
		created, err := starter.ApplySchedule(ctx, c, s)
		if err != nil {
			return err
		}
		log.Info("schedule applied", "schedule_id", s.ID, "created", created, "every", s.Every.String())
	}
	return nil
}

// Run prepares, then runs the worker until ctx ends.
func Run(ctx context.Context, c client.Client, a *activities.Activities, cfg config.Config, log *slog.Logger) error {
	if err := Prepare(ctx, c, cfg, log); err != nil {
		return err
	}
	w := New(c, a, cfg)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	log.Info("worker started", "task_queue", cfg.TaskQueue, "namespace", cfg.TemporalNamespace)
	<-ctx.Done()
	w.Stop()
	return nil
}
