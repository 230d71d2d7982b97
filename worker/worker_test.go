package worker_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/worker"
)

// What status and the console expect (starter.EnabledScheduleIDs, which
// they read without importing the worker) is exactly what the worker
// applies, in its order, and what it deletes is the rest.
func TestStarterNamesTheSchedulesTheWorkerApplies(t *testing.T) {
	t.Parallel()
	none := config.Default()
	none.ReconcileInterval, none.BackfillInterval, none.RetentionInterval, none.GitHubRecoveryInterval, none.NotifyInterval = 0, 0, 0, 0, 0
	some := config.Default()
	some.BackfillInterval, some.GitHubRecoveryInterval = 0, 0
	other := config.Default()
	other.TaskQueue = "staging"
	tests := []struct {
		name    string
		cfg     config.Config
		enabled int
	}{
		{"defaults", config.Default(), 6},
		{"all but the sweeper off", none, 1},
		{"backfill and recovery off", some, 4},
		{"another task queue", other, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var applied []string
			for _, s := range worker.Schedules(tt.cfg) {
				applied = append(applied, s.ID)
			}
			require.Len(t, applied, tt.enabled)
			require.Equal(t, applied, starter.EnabledScheduleIDs(tt.cfg))
			deleted := worker.Disabled(tt.cfg)
			require.Len(t, deleted, len(starter.ScheduleNames())-tt.enabled)
			for _, n := range starter.ScheduleNames() {
				id := starter.ScheduleID(n, tt.cfg.TaskQueue)
				require.NotEqual(t, slices.Contains(applied, id), slices.Contains(deleted, id), "%s is applied or deleted, not both", id)
			}
		})
	}
}
