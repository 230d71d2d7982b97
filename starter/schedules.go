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
	return PrefixedScheduleID("", name, taskQueue)
}

// PrefixedScheduleID is ScheduleID after a deployment's workflow-id prefix
// (HOOKINBOX_WORKFLOW_ID_PREFIX): the id of its schedules and, with a
// suffix, of their runs.
func PrefixedScheduleID(prefix, name, taskQueue string) string {
	id := prefix + "hookinbox-" + name
	if taskQueue != "" && taskQueue != "hookinbox" {
		id += "-" + taskQueue
	}
	return id
}

// Schedule names.
const (
	ScheduleSweeper = "sweeper"
	// ScheduleReconcile runs the subscriptions reconciliation (SPEC R19).
	ScheduleReconcile = "reconcile-subscriptions"
	// ScheduleBackfill runs the facts backfill (SPEC R19).
	ScheduleBackfill = "backfill-facts"
	// ScheduleRetention runs the retention policy (SPEC R21).
	ScheduleRetention = "retention"
	// ScheduleGitHubRecovery recovers the GitHub deliveries that never
	// reached the inbox (GitHub does not redeliver; SPEC R16, R19).
	ScheduleGitHubRecovery = "recover-github"
	// ScheduleNotify evaluates the notification rules (issue 26).
	ScheduleNotify = "notify"
)

// ScheduleNames lists every schedule hookinbox keeps.
func ScheduleNames() []string {
	return []string{ScheduleSweeper, ScheduleReconcile, ScheduleBackfill, ScheduleRetention, ScheduleGitHubRecovery, ScheduleNotify}
}

// ReconcilePassWorkflowID is the fixed ID of an operator's reconciliation
// pass over one endpoint (hookinbox reconcile --endpoint), so two cannot
// run at once.
func ReconcilePassWorkflowID(endpoint, taskQueue string) string {
	return PrefixedReconcilePassWorkflowID("", endpoint, taskQueue)
}

// PrefixedReconcilePassWorkflowID is ReconcilePassWorkflowID after a
// deployment's workflow-id prefix.
func PrefixedReconcilePassWorkflowID(prefix, endpoint, taskQueue string) string {
	return PrefixedScheduleID(prefix, ScheduleReconcile, taskQueue) + "-endpoint-" + endpoint
}

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
// action in place (pause state is kept) and ends the runs it left on
// another task queue (endStrandedRuns). Overlapping runs are skipped.
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
	var running []client.ScheduleWorkflowExecution
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		running = in.Description.Info.RunningWorkflows
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
	if err := endStrandedRuns(ctx, c, s, running); err != nil {
		return false, err
	}
	return false, nil
}

// endStrandedRuns terminates those of the schedule's running workflows (as
// the update read them) still going on a task queue other than s.TaskQueue. After an upgrade that moves a schedule (the
// scheduled workflows moved to the control queue), runs started by the old
// action wait on a queue whose workers no longer know the workflow type,
// forever (no execution timeout), and with overlap SKIP the schedule then
// skips every later run: a sweeper that silently never sweeps. Every
// scheduled workflow of hookinbox is a pass that is safe to end (the
// reconciliation resumes from its checkpoint in PostgreSQL), so the next
// run on the right queue takes over.
func endStrandedRuns(ctx context.Context, c client.Client, s ScheduleSpec, running []client.ScheduleWorkflowExecution) error {
	for _, r := range running {
		w, err := c.DescribeWorkflow(ctx, r.WorkflowID, "")
		if err != nil {
			return fmt.Errorf("describe scheduled run %s: %w", r.WorkflowID, err)
		}
		if w.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		tq := w.TaskQueueName
		if tq == "" || tq == s.TaskQueue {
			continue
		}
		reason := fmt.Sprintf("stranded on task queue %q: schedule %s now runs on %q", tq, s.ID, s.TaskQueue)
		err = c.TerminateWorkflow(ctx, r.WorkflowID, "", reason)
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			return fmt.Errorf("end stranded run %s: %w", r.WorkflowID, err)
		}
	}
	return nil
}

// DeleteSchedule removes a schedule (one disabled by configuration); it
// reports whether the schedule existed.
func DeleteSchedule(ctx context.Context, c client.Client, id string) (bool, error) {
	err := c.ScheduleClient().GetHandle(ctx, id).Delete(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete schedule %s: %w", id, err)
	}
	return true, nil
}

// ScheduleStatus is what an operator sees of one schedule.
type ScheduleStatus struct {
	Name   string `json:"name"`
	ID     string `json:"id"`
	Exists bool   `json:"exists"`
	// Every is the interval of the schedule's spec (Interval in JSON).
	Every    time.Duration `json:"-"`
	Interval string        `json:"every,omitempty"`
	Workflow string        `json:"workflow,omitempty"`
	Paused   bool          `json:"paused"`
	Note     string        `json:"note,omitempty"`
	// LastRun is when the most recent action started; NextRun when the next will.
	LastRun *time.Time `json:"last_run,omitempty"`
	NextRun *time.Time `json:"next_run,omitempty"`
	// Running lists the workflow IDs of the runs in progress.
	Running []string `json:"running,omitempty"`
	// Skipped counts actions skipped because a run was still going.
	Skipped int `json:"skipped_overlap"`
	Actions int `json:"actions"`
}

// DescribeSchedule reads one schedule's state; a missing schedule is
// reported with Exists false, not as an error.
func DescribeSchedule(ctx context.Context, c client.Client, name, id string) (ScheduleStatus, error) {
	st := ScheduleStatus{Name: name, ID: id}
	d, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("describe schedule %s: %w", id, err)
	}
	st.Exists = true
	if sp := d.Schedule.Spec; sp != nil && len(sp.Intervals) > 0 {
		st.Every = sp.Intervals[0].Every
		st.Interval = st.Every.String()
	}
	if act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		if name, ok := act.Workflow.(string); ok {
			st.Workflow = name
		}
	}
	if d.Schedule.State != nil {
		st.Paused, st.Note = d.Schedule.State.Paused, d.Schedule.State.Note
	}
	if n := len(d.Info.RecentActions); n > 0 {
		t := d.Info.RecentActions[n-1].ActualTime
		st.LastRun = &t
	}
	if len(d.Info.NextActionTimes) > 0 {
		t := d.Info.NextActionTimes[0]
		st.NextRun = &t
	}
	for _, r := range d.Info.RunningWorkflows {
		st.Running = append(st.Running, r.WorkflowID)
	}
	st.Skipped, st.Actions = d.Info.NumActionsSkippedOverlap, d.Info.NumActions
	return st, nil
}

// PauseSchedule pauses a schedule with a note (who and why).
func PauseSchedule(ctx context.Context, c client.Client, id, note string) error {
	if err := c.ScheduleClient().GetHandle(ctx, id).Pause(ctx, client.SchedulePauseOptions{Note: note}); err != nil {
		return fmt.Errorf("pause schedule %s: %w", id, err)
	}
	return nil
}

// UnpauseSchedule resumes a paused schedule with a note.
func UnpauseSchedule(ctx context.Context, c client.Client, id, note string) error {
	if err := c.ScheduleClient().GetHandle(ctx, id).Unpause(ctx, client.ScheduleUnpauseOptions{Note: note}); err != nil {
		return fmt.Errorf("unpause schedule %s: %w", id, err)
	}
	return nil
}

// TriggerSchedule starts a run of the schedule now. The schedule's overlap
// policy applies: while a run is in progress the trigger is skipped.
func TriggerSchedule(ctx context.Context, c client.Client, id string) error {
	if err := c.ScheduleClient().GetHandle(ctx, id).Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		return fmt.Errorf("trigger schedule %s: %w", id, err)
	}
	return nil
}
