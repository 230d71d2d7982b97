package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// A schedule moved to another task queue (an upgrade did it: scheduled
// workflows moved to the control queue) must not keep a run started by its
// old action: that run waits forever on a queue no worker serves for it, and
// with overlap SKIP the schedule would skip every later run.
func TestApplyingAMovedScheduleEndsItsStrandedRun(t *testing.T) {
	t.Parallel()
	c := testenv.TemporalClient(t, testenv.TemporalAddress(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "hookinbox-test-moved-" + t.Name()
	spec := starter.ScheduleSpec{ID: id, Every: time.Hour, Workflow: "SweepWorkflow", WorkflowID: id + "-run",
		TaskQueue: id + "-old", CatchupWindow: time.Minute}
	t.Cleanup(func() { _, _ = starter.DeleteSchedule(context.Background(), c, id) })

	created, err := starter.ApplySchedule(ctx, c, spec)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, starter.TriggerSchedule(ctx, c, id))
	var stranded string
	eventually(t, 30*time.Second, "the triggered run to start on the old queue", func() bool {
		st, err := starter.DescribeSchedule(ctx, c, starter.ScheduleSweeper, id)
		if err != nil || len(st.Running) != 1 {
			return false
		}
		stranded = st.Running[0]
		return true
	})

	// Applied again unchanged: the run is on the schedule's queue, kept.
	_, err = starter.ApplySchedule(ctx, c, spec)
	require.NoError(t, err)
	w, err := c.DescribeWorkflow(ctx, stranded, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, w.Status)

	// Moved: the run left on the old queue is ended, and the next one
	// starts on the new queue.
	spec.TaskQueue = id + "-new"
	created, err = starter.ApplySchedule(ctx, c, spec)
	require.NoError(t, err)
	require.False(t, created)
	w, err = c.DescribeWorkflow(ctx, stranded, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, w.Status)
	eventually(t, 30*time.Second, "the schedule to see no run in progress", func() bool {
		st, err := starter.DescribeSchedule(ctx, c, starter.ScheduleSweeper, id)
		return err == nil && len(st.Running) == 0
	})
	require.NoError(t, starter.TriggerSchedule(ctx, c, id))
	eventually(t, 30*time.Second, "the next run to start on the new queue", func() bool {
		st, err := starter.DescribeSchedule(ctx, c, starter.ScheduleSweeper, id)
		if err != nil || len(st.Running) != 1 {
			return false
		}
		w, err := c.DescribeWorkflow(ctx, st.Running[0], "")
		return err == nil && w.TaskQueueName == spec.TaskQueue
	})
	st, err := starter.DescribeSchedule(ctx, c, starter.ScheduleSweeper, id)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), st.Running[0], "", "test done") })
}
