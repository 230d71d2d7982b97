package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// ScheduleID is the fixed id of one of hookinbox's schedules, so start-up
// and `schedules apply` update it, never duplicate it. A deployment on a task
// queue other than the default "hookinbox" gets its own set (suffix), so two
// deployments can share a namespace.
func ScheduleID(name, taskQueue string) string {
	id := "hookinbox-" + name
	if taskQueue != "" && taskQueue != "hookinbox" {
		id += "-" + taskQueue
	}
	return id
}

// Schedule names.
const (
	ScheduleSweeper = "sweeper"
)

// ScheduleSpec is one schedule hookinbox keeps.
type ScheduleSpec struct {
	ID       string
	Every    time.Duration
	Workflow any
	Args     []any
	// WorkflowID of each run (the schedule appends a timestamp).
	WorkflowID    string
	TaskQueue     string
	CatchupWindow time.Duration
	Note          string
}

// ApplySchedule creates the schedule or, if it exists, updates its spec and
// action in place (pause state is kept). Overlapping runs are skipped.
func ApplySchedule(ctx context.Context, c client.Client, s ScheduleSpec) (created bool, err error) {
	action := &client.ScheduleWorkflowAction{
		ID: s.WorkflowID, Workflow: s.Workflow, Args: s.Args, TaskQueue: s.TaskQueue,
		WorkflowExecutionTimeout: 0,
		RetryPolicy:              &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: s.Every}}}
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: s.ID, Spec: spec, Action: action,
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: s.CatchupWindow,
		Note:          s.Note,
	})
	if err == nil {
		return true, nil
	}
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) && !errors.As(err, &exists) {
		return false, fmt.Errorf("create schedule %s: %w", s.ID, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, s.ID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		sch := in.Description.Schedule
		sch.Spec = &spec
		sch.Action = action
		if sch.Policy == nil {
			sch.Policy = &client.SchedulePolicies{}
		}
		sch.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
		sch.Policy.CatchupWindow = s.CatchupWindow
		return &client.ScheduleUpdate{Schedule: &sch}, nil
	}})
	if err != nil {
		return false, fmt.Errorf("update schedule %s: %w", s.ID, err)
	}
	return false, nil
}
