package activities

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
)

// ControlActivities are the activities of the control task queue, called
// by the scheduled workflows: SweepInbox, SweepOutbox, ListScopes,
// BeginPass, RetentionStep and EvaluateNotifications. Register them with
// worker.RegisterActivity on that queue only.
type ControlActivities struct {
	Sweeps    ports.Sweeps
	Passes    ports.Passes
	Retention ports.Retention
	// Notifications evaluates the notification rules; Schedules says how
	// the schedules' latest runs ended (nil: the schedule_failed trigger
	// is not evaluated).
	Notifications ports.Notifications
	Schedules     ports.ScheduleRuns
	Doorbell      keys.Doorbell
	Metrics       *metrics.Metrics
	Logger        *slog.Logger
}

// SweepInput configures SweepInbox.
type SweepInput struct {
	OlderThan time.Duration `json:"older_than"`
	Limit     int           `json:"limit"`
}

// SweepResult counts what a sweep did.
type SweepResult struct {
	Stale     int `json:"stale"`
	Signalled int `json:"signalled"`
	Failed    int `json:"failed"`
}

// SweepInbox signals the workflows of resources whose pending rows have
// been due for longer than OlderThan (SPEC R16). It first records the
// minute's sample of the console's trends: a sample that fails is logged,
// and the sweep goes on (its doorbells matter more than a chart's point).
func (a *ControlActivities) SweepInbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	log := logger(ctx, a.Logger)
	if err := a.Sweeps.SampleTrends(ctx); err != nil {
		log.Warn("sweeper could not sample the console's trends", "error", err.Error())
	}
	stale, err := a.Sweeps.StalePending(ctx, in.OlderThan, limit)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Stale: len(stale)}
	for i, r := range stale {
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, "sweeper"); err != nil {
			res.Failed++
			log.Warn("sweeper could not signal", "resource", r.String(), "error", err.Error())
		} else {
			res.Signalled++
			if a.Metrics != nil {
				a.Metrics.SweepResignals.Inc()
			}
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	if res.Stale > 0 {
		log.Info("sweeper re-signalled stale resources", "stale", res.Stale, "signalled", res.Signalled, "failed", res.Failed)
	}
	if res.Failed > 0 && res.Signalled == 0 {
		return res, fmt.Errorf("sweeper signalled none of %d stale resources", res.Stale)
	}
	return res, nil
}

// SweepOutbox rings the workflows of resources whose outbox rows have been
// unsent for longer than OlderThan (a terminated or reset workflow left
// them): their next pass sends them through SendOutbox.
func (a *ControlActivities) SweepOutbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	stale, err := a.Sweeps.StaleOutbox(ctx, in.OlderThan, limit)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Stale: len(stale)}
	for i, rk := range stale {
		r, err := keys.ParseResource(rk)
		if err == nil {
			err = a.Doorbell.Ring(ctx, r, keys.SignalEvent, "outbox sweeper")
		}
		if err != nil {
			res.Failed++
			logger(ctx, a.Logger).Warn("outbox sweeper could not signal", "resource", rk, "error", err.Error())
			continue
		}
		res.Signalled++
		if a.Metrics != nil {
			a.Metrics.SweepResignals.Inc()
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	return res, nil
}
