package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
)

// NotifyInput configures one notification evaluation (nothing yet: the
// rules are in the database).
type NotifyInput struct{}

// NotifyWorkflow is run by the notify schedule (HOOKINBOX_NOTIFY_INTERVAL):
// one EvaluateNotifications activity observes every rule's triggers, commits
// each notice due with its outbox intent, and rings the workflows that send
// them. It holds no state of its own: the notification states are in the
// database, so a run that fails or is skipped loses nothing (the next one
// decides on the same states).
func NotifyWorkflow(ctx workflow.Context, _ NotifyInput) (activities.NotifyResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
		Summary:             "evaluate notification rules",
	})
	var res activities.NotifyResult
	err := workflow.ExecuteActivity(ctx, onControl.EvaluateNotifications, activities.NotifyInput{}).Get(ctx, &res)
	return res, err
}
