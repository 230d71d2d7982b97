package starter

import (
	"sort"
	"time"

	"github.com/hookinbox/hookinbox/internal/config"
)

// Which schedules configuration turns on lives here, beside their names,
// so that who only reports on them (status, the console) need not import
// the worker, which holds every workflow and activity.

// appliedOrder is the order a worker applies the schedules in (and status
// reports a missing one in).
var appliedOrder = []string{ScheduleSweeper, ScheduleReconcile, ScheduleBackfill, ScheduleGitHubRecovery, ScheduleRetention, ScheduleNotify}

// ScheduleInterval is how often the named schedule runs under cfg: its
// HOOKINBOX_*_INTERVAL. 0 turns it off (except the sweeper's, which is
// always on); an unknown name has none.
func ScheduleInterval(name string, cfg config.Config) time.Duration {
	switch name {
	case ScheduleSweeper:
		return cfg.SweepInterval
	case ScheduleReconcile:
		return cfg.ReconcileInterval
	case ScheduleBackfill:
		return cfg.BackfillInterval
	case ScheduleRetention:
		return cfg.RetentionInterval
	case ScheduleGitHubRecovery:
		return cfg.GitHubRecoveryInterval
	case ScheduleNotify:
		return cfg.NotifyInterval
	}
	return 0
}

// ScheduleEnabled reports whether cfg keeps the named schedule: the
// sweeper always, the others when their interval is not 0.
func ScheduleEnabled(name string, cfg config.Config) bool {
	return name == ScheduleSweeper || ScheduleInterval(name, cfg) > 0
}

// EnabledScheduleIDs are the ids of the schedules a worker keeps applied
// under cfg, in the order it applies them.
func EnabledScheduleIDs(cfg config.Config) []string {
	var ids []string
	for _, n := range appliedOrder {
		if ScheduleEnabled(n, cfg) {
			ids = append(ids, ScheduleIDOf(cfg, n))
		}
	}
	return ids
}

// DisabledScheduleIDs are the ids of the schedules cfg turns off (an
// interval of 0), sorted: a worker deletes them, so turning one off takes
// effect.
func DisabledScheduleIDs(cfg config.Config) []string {
	var ids []string
	for _, n := range appliedOrder {
		if !ScheduleEnabled(n, cfg) {
			ids = append(ids, ScheduleIDOf(cfg, n))
		}
	}
	sort.Strings(ids)
	return ids
}

// ScheduleIDOf is the id of schedule name in the deployment cfg configures:
// after its workflow-id prefix, suffixed by its task queue.
func ScheduleIDOf(cfg config.Config, name string) string {
	return PrefixedScheduleID(cfg.WorkflowIDPrefix, name, cfg.TaskQueue)
}
