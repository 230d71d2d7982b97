package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
)

// SweepInput configures one sweeper run.
type SweepInput struct {
	// OlderThan: pending rows due for longer than this are signalled again.
	OlderThan time.Duration `json:"older_than"`
	// Limit bounds the resources signalled per run.
	Limit int `json:"limit"`
}

// SweepWorkflow is run by the sweeper schedule (SPEC R16): it finds inbox
// rows still pending past the threshold, whatever lost their doorbell (an
// intake that died between commit and signal, Temporal down), and rings
// their resources' workflows again. Later issues add the outbox here.
func SweepWorkflow(ctx workflow.Context, in SweepInput) (activities.SweepResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var res activities.SweepResult
	err := workflow.ExecuteActivity(ctx, a.SweepInbox, activities.SweepInput{OlderThan: in.OlderThan, Limit: in.Limit}).Get(ctx, &res)
	return res, err
}
