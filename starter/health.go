package starter

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/notify"
)

// ScheduleRuns reads how the latest finished runs of hookinbox's schedules
// ended: what the schedule_failed notifications observe. It implements the
// notification evaluation's port (activities/ports.ScheduleRuns).
type ScheduleRuns struct {
	Client client.Client
	// IDs are the schedules to read (EnabledScheduleIDs).
	IDs []string
}

// Health describes each schedule and, newest first, the workflows of its
// recent actions until one that completed: the failed or timed-out ones
// before it are counted. A run still going, terminated or canceled (an
// operator's act) says nothing either way and is passed over. A schedule
// that does not exist is reported healthy (nothing runs, nothing fails).
func (s *ScheduleRuns) Health(ctx context.Context) ([]notify.ScheduleHealth, error) {
	out := make([]notify.ScheduleHealth, 0, len(s.IDs))
	for _, id := range s.IDs {
		h, err := scheduleHealth(ctx, s.Client, id)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func scheduleHealth(ctx context.Context, c client.Client, id string) (notify.ScheduleHealth, error) {
	h := notify.ScheduleHealth{ID: id}
	d, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("describe schedule %s: %w", id, err)
	}
	acts := d.Info.RecentActions
	for i := len(acts) - 1; i >= 0; i-- {
		run := acts[i].StartWorkflowResult
		if run == nil || run.WorkflowID == "" {
			continue
		}
		// The latest run of the action's workflow id (a pass that continued
		// as new ends in its last run).
		w, err := c.DescribeWorkflow(ctx, run.WorkflowID, "")
		if errors.As(err, &notFound) {
			continue // deleted by the namespace's retention
		}
		if err != nil {
			return h, fmt.Errorf("describe run %s of schedule %s: %w", run.WorkflowID, id, err)
		}
		switch w.Status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			return h, nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
			if h.Failed == 0 {
				h.LastWorkflowID = run.WorkflowID
				h.LastFailedAt = acts[i].ActualTime
				h.LastStatus = "failed"
				if w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT {
					h.LastStatus = "timed_out"
				}
			}
			h.Failed++
		}
	}
	return h, nil
}
