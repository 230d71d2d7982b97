package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Retention steps, in the order the retention workflow runs them.
const (
	// RetentionRedact redacts old payloads: settled inbox rows, resolved
	// quarantine entries, sent outbox rows (ports.Retention.RedactPayloads).
	RetentionRedact = "redact_payloads"
	// RetentionDeleteInbox deletes finished inbox rows past the dedup window.
	RetentionDeleteInbox = "delete_inbox_rows"
	// RetentionDeleteQuarantine deletes quarantine entries resolved long ago.
	RetentionDeleteQuarantine = "delete_resolved_quarantine"
)

// RetentionStepInput runs some batches of one retention step.
type RetentionStepInput struct {
	Step string `json:"step"`
	// OlderThan is the step's window.
	OlderThan time.Duration `json:"older_than"`
	// BatchSize rows per statement; MaxBatches statements per activity.
	BatchSize  int `json:"batch_size"`
	MaxBatches int `json:"max_batches"`
}

// RetentionStepResult counts what the batches did.
type RetentionStepResult struct {
	Affected int64 `json:"affected"`
	Batches  int   `json:"batches"`
	// Done: the last batch was not full, nothing is left for now.
	Done bool `json:"done"`
}

// RetentionStep runs up to MaxBatches statements of one retention step
// (SPEC R21), each touching at most BatchSize rows in its own short
// transaction, heartbeating its progress. A retry simply runs the step
// again: each statement selects what is still left.
func (a *ControlActivities) RetentionStep(ctx context.Context, in RetentionStepInput) (RetentionStepResult, error) {
	var run func(context.Context, time.Duration, int) (int64, error)
	switch in.Step {
	case RetentionRedact:
		run = a.Retention.RedactPayloads
	case RetentionDeleteInbox:
		// Refused (permanently) inside the dedup window.
		run = a.Retention.DeleteInboxRows
	case RetentionDeleteQuarantine:
		run = a.Retention.DeleteResolvedQuarantine
	default:
		return RetentionStepResult{}, temporal.NewNonRetryableApplicationError("unknown retention step "+in.Step, "InvalidRetention", nil)
	}
	if in.OlderThan <= 0 || in.BatchSize <= 0 {
		return RetentionStepResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("retention step %s: window %s and batch size %d must be positive", in.Step, in.OlderThan, in.BatchSize), "InvalidRetention", nil)
	}
	var res RetentionStepResult
	for res.Batches < max(in.MaxBatches, 1) {
		n, err := run(ctx, in.OlderThan, in.BatchSize)
		if fault.IsPermanent(err) {
			return res, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidRetention", err)
		}
		if err != nil {
			return res, err
		}
		res.Batches++
		res.Affected += n
		activity.RecordHeartbeat(ctx, res)
		if n < int64(in.BatchSize) {
			res.Done = true
			break
		}
	}
	if res.Affected > 0 {
		logger(ctx, a.Logger).Info("retention step", "step", in.Step, "older_than", in.OlderThan.String(), "rows", res.Affected, "batches", res.Batches)
	}
	return res, nil
}
