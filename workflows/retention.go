package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// Defaults of the retention run.
const (
	DefaultPayloadRetention    = 30 * 24 * time.Hour
	DefaultDedupRetention      = 7 * 24 * time.Hour
	DefaultQuarantineRetention = 30 * 24 * time.Hour
	DefaultRetentionBatch      = 1000
	// DefaultBatchesPerActivity statements per RetentionStep activity.
	DefaultBatchesPerActivity = 50
	// retentionCallsPerRun: continue-as-new after this many activities.
	retentionCallsPerRun = 200
)

// RetentionInput configures a retention run.
type RetentionInput struct {
	// PayloadRetention: payloads of finished rows older than this are redacted.
	PayloadRetention time.Duration `json:"payload_retention,omitempty"`
	// DedupRetention: inbox rows are kept at least this long (never less
	// than keys.MinDedupRetention); finished rows older than
	// max(DedupRetention, PayloadRetention) are deleted.
	DedupRetention time.Duration `json:"dedup_retention,omitempty"`
	// QuarantineRetention: entries resolved longer ago are deleted.
	QuarantineRetention time.Duration `json:"quarantine_retention,omitempty"`
	// BatchSize rows per statement; BatchesPerActivity statements per activity.
	BatchSize          int            `json:"batch_size,omitempty"`
	BatchesPerActivity int            `json:"batches_per_activity,omitempty"`
	Carry              RetentionCarry `json:"carry"`
}

// RetentionCarry is what a retention run hands to its continuation.
type RetentionCarry struct {
	// Step is the index of the step in progress.
	Step   int             `json:"step"`
	Totals RetentionResult `json:"totals"`
	Runs   int             `json:"runs"`
}

// RetentionResult counts what a retention run did.
type RetentionResult struct {
	Redacted          int64 `json:"redacted"`
	DeletedRows       int64 `json:"deleted_rows"`
	DeletedQuarantine int64 `json:"deleted_quarantine"`
	Batches           int   `json:"batches"`
}

type retentionStep struct {
	name      string
	olderThan time.Duration
	count     *int64
	what      string
}

// RetentionWorkflow applies the retention policy (SPEC R21), run by the
// daily retention schedule: it redacts the payloads of settled (done,
// ignored, failed, exhausted) inbox rows, resolved quarantine entries and
// sent outbox rows past the payload window (one step, "redact_payloads",
// whose activity covers every kind, so recorded histories replay), deletes finished rows past
// max(dedup window, payload window) so an event key is never forgotten
// while a sender may still retry it, and deletes quarantine entries resolved
// long ago. Failed, exhausted and pending rows and open quarantine entries
// are never deleted; pending rows, open entries, unsent outbox rows and the
// business records are never redacted. Work goes in batches (one short
// statement each), with progress in the current details.
func RetentionWorkflow(ctx workflow.Context, in RetentionInput) (RetentionResult, error) {
	payload := orDuration(in.PayloadRetention, DefaultPayloadRetention)
	dedup := max(orDuration(in.DedupRetention, DefaultDedupRetention), keys.MinDedupRetention)
	quarantine := orDuration(in.QuarantineRetention, DefaultQuarantineRetention)
	batch, perActivity := in.BatchSize, in.BatchesPerActivity
	if batch <= 0 {
		batch = DefaultRetentionBatch
	}
	if perActivity <= 0 {
		perActivity = DefaultBatchesPerActivity
	}
	carry := in.Carry
	t := &carry.Totals
	steps := []retentionStep{
		{activities.RetentionRedact, payload, &t.Redacted, "payloads redacted"},
		{activities.RetentionDeleteInbox, max(dedup, payload), &t.DeletedRows, "inbox rows deleted"},
		{activities.RetentionDeleteQuarantine, quarantine, &t.DeletedQuarantine, "resolved quarantine entries deleted"},
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	details := func(note string) {
		d := fmt.Sprintf("**Retention** (run #%d)\n\npayloads of finished rows older than %s redacted: %d\n\n"+
			"finished rows older than %s deleted: %d\n\nquarantine entries resolved over %s ago deleted: %d\n\nbatches: %d",
			carry.Runs+1, payload, t.Redacted, max(dedup, payload), t.DeletedRows, quarantine, t.DeletedQuarantine, t.Batches)
		if note != "" {
			d += "\n\nnow: " + note
		}
		workflow.SetCurrentDetails(ctx, d)
	}
	calls := 0
	for carry.Step < len(steps) {
		st := steps[carry.Step]
		details(st.what)
		if calls >= retentionCallsPerRun || (calls > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			carry.Runs++
			next := in
			next.Carry = carry
			return carry.Totals, workflow.NewContinueAsNewError(ctx, RetentionWorkflow, next)
		}
		var res activities.RetentionStepResult
		err := workflow.ExecuteActivity(actx, onControl.RetentionStep, activities.RetentionStepInput{
			Step: st.name, OlderThan: st.olderThan, BatchSize: batch, MaxBatches: perActivity,
		}).Get(ctx, &res)
		if err != nil {
			return carry.Totals, fmt.Errorf("retention step %s: %w", st.name, err)
		}
		calls++
		*st.count += res.Affected
		t.Batches += res.Batches
		if res.Done {
			carry.Step++
		}
	}
	details("finished")
	return carry.Totals, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
