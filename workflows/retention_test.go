package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// retentionFake answers RetentionStep with left[step] rows to work off.
type retentionFake struct {
	left  map[string]int64
	calls []activities.RetentionStepInput
}

func newRetentionEnv(t *testing.T, f *retentionFake) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(RetentionWorkflow)
	env.OnActivity(onControl.RetentionStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RetentionStepInput) (activities.RetentionStepResult, error) {
			f.calls = append(f.calls, in)
			var res activities.RetentionStepResult
			for res.Batches < in.MaxBatches {
				n := min(f.left[in.Step], int64(in.BatchSize))
				f.left[in.Step] -= n
				res.Affected += n
				res.Batches++
				if n < int64(in.BatchSize) {
					res.Done = true
					break
				}
			}
			return res, nil
		})
	return env
}

func TestRetentionWorksOffEachStepInBatchesWithItsWindow(t *testing.T) {
	t.Parallel()
	f := &retentionFake{left: map[string]int64{
		activities.RetentionRedact: 25, activities.RetentionDeleteInbox: 7, activities.RetentionDeleteQuarantine: 0,
	}}
	env := newRetentionEnv(t, f)
	env.ExecuteWorkflow(RetentionWorkflow, RetentionInput{
		PayloadRetention: 48 * time.Hour, DedupRetention: 7 * 24 * time.Hour, QuarantineRetention: 24 * time.Hour,
		BatchSize: 10, BatchesPerActivity: 2,
	})
	require.NoError(t, env.GetWorkflowError())
	var out RetentionResult
	require.NoError(t, env.GetWorkflowResult(&out))
	require.EqualValues(t, 25, out.Redacted)
	require.EqualValues(t, 7, out.DeletedRows)
	require.EqualValues(t, 0, out.DeletedQuarantine)
	windows := map[string]time.Duration{}
	var steps []string
	for _, c := range f.calls {
		windows[c.Step] = c.OlderThan
		steps = append(steps, c.Step)
		require.Equal(t, 10, c.BatchSize)
	}
	require.Equal(t, []string{activities.RetentionRedact, activities.RetentionRedact,
		activities.RetentionDeleteInbox, activities.RetentionDeleteQuarantine}, steps)
	require.Equal(t, 48*time.Hour, windows[activities.RetentionRedact])
	require.Equal(t, 7*24*time.Hour, windows[activities.RetentionDeleteInbox], "rows go after max(dedup, payload)")
	require.Equal(t, 24*time.Hour, windows[activities.RetentionDeleteQuarantine])
}

func TestRetentionNeverDeletesInsideTheDedupWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		payload, dedup   time.Duration
		wantDeleteWindow time.Duration
	}{
		{"payload window longer than dedup", 30 * 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour},
		{"dedup below the floor is raised to it", time.Hour, time.Hour, keys.MinDedupRetention},
		{"defaults", 0, 0, DefaultPayloadRetention},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &retentionFake{left: map[string]int64{}}
			env := newRetentionEnv(t, f)
			env.ExecuteWorkflow(RetentionWorkflow, RetentionInput{PayloadRetention: tt.payload, DedupRetention: tt.dedup})
			require.NoError(t, env.GetWorkflowError())
			for _, c := range f.calls {
				if c.Step == activities.RetentionDeleteInbox {
					require.Equal(t, tt.wantDeleteWindow, c.OlderThan)
					require.GreaterOrEqual(t, c.OlderThan, keys.MinDedupRetention)
				}
			}
			require.Len(t, f.calls, 3)
		})
	}
}

func TestRetentionContinuesAsNewWithItsProgress(t *testing.T) {
	t.Parallel()
	f := &retentionFake{left: map[string]int64{activities.RetentionRedact: 1_000_000}}
	env := newRetentionEnv(t, f)
	env.ExecuteWorkflow(RetentionWorkflow, RetentionInput{BatchSize: 10, BatchesPerActivity: 1})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next RetentionInput
	require.NoError(t, converterFrom(t).FromPayloads(can.Input, &next))
	require.Equal(t, 0, next.Carry.Step, "still redacting")
	require.EqualValues(t, 10*retentionCallsPerRun, next.Carry.Totals.Redacted)
	require.Equal(t, 1, next.Carry.Runs)
}
