package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestRecordedHistoriesReplay replays histories recorded from the real dev
// server (e2e TestRealHistoriesReplayDeterministically with
// HOOKINBOX_RECORD_HISTORIES=1, and e2e
// TestACreditNoteWokenByItsBackfilledGrantIsDoneInTheSameRun likewise):
// events handled, a second event for one invoice, an outbox send, a
// reconcile, continue-as-new, a credit note woken by its invoice's grant
// and loaded again in the same run. A change to
// ResourceWorkflow that would break workflows already running fails here;
// guard such a change with workflow.GetVersion, or, before any release,
// re-record.
func TestRecordedHistoriesReplay(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflow(ResourceWorkflow)
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f), f)
	}
}
