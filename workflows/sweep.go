package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
)

// SweepInput configures one sweeper run.
type SweepInput struct {
	// OlderThan: pending rows due for longer than this are signalled again.
	OlderThan time.Duration `json:"older_than"`
	// Limit bounds the resources signalled per page.
	Limit int `json:"limit"`
	// Budget, when positive, lets the inbox sweep go on to further pages
	// while each one is full, for up to this long (activities.SweepInput).
	// 0: one page per run.
	Budget time.Duration `json:"budget,omitempty"`
	// MaxBacklog holds the inbox sweep back while Temporal holds this
	// many workflow tasks for the workers (activities.SweepInput); 0: never.
	MaxBacklog int `json:"max_backlog,omitempty"`
}

// SweepWorkflow is run by the sweeper schedule (SPEC R16): it finds inbox
// rows still pending past the threshold, whatever lost their doorbell (an
// intake that died between commit and signal, Temporal down), and outbox
// rows left unsent (a terminated or reset workflow), and rings their
// resources' workflows again; their next pass handles or sends them.
func SweepWorkflow(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var res SweepResult
	sin := activities.SweepInput{OlderThan: in.OlderThan, Limit: in.Limit, Budget: in.Budget, MaxBacklog: in.MaxBacklog}
	inboxErr := workflow.ExecuteActivity(ctx, onControl.SweepInbox, sin).Get(ctx, &res.Inbox)
	outboxErr := workflow.ExecuteActivity(ctx, onControl.SweepOutbox, activities.SweepInput{OlderThan: in.OlderThan, Limit: in.Limit}).Get(ctx, &res.Outbox)
	return res, errors.Join(inboxErr, outboxErr)
}

// SweepResult counts what one sweep re-signalled.
type SweepResult struct {
	Inbox  activities.SweepResult `json:"inbox"`
	Outbox activities.SweepResult `json:"outbox"`
}
