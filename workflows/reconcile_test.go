package workflows

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

var (
	scopeA = keys.Scope{Provider: "stripe", Endpoint: "ep", Account: "acct_a", Environment: "test", WorkspaceID: "ws"}
	scopeB = keys.Scope{Provider: "stripe", Endpoint: "ep", Account: "acct_b", Environment: "test", WorkspaceID: "ws"}
)

// passFake stands in for the pass activities: a provider listing n items per
// scope, pageSize at a time, cursors being the last item's id, and a
// checkpoint table.
type passFake struct {
	mu      sync.Mutex
	items   map[string]int // scope account → number of items
	fail    map[string]bool
	begun   []activities.BeginPassInput
	pages   []activities.PageInput
	reasons []string
	since   []time.Time
	types   [][]string
	// checkpoints returned by BeginPass, by account (default: a fresh pass).
	checkpoints map[string]keys.Checkpoint
	resumed     map[string]bool
}

func newPassEnv(t *testing.T, f *passFake, scopes ...keys.Scope) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ReconcileSubscriptionsWorkflow)
	env.RegisterWorkflow(BackfillFactsWorkflow)
	env.OnActivity(onControl.ListScopes, mock.Anything, mock.Anything).Return(scopes, nil).Maybe()
	env.OnActivity(onControl.BeginPass, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BeginPassInput) (activities.BeginPassResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.begun = append(f.begun, in)
			for acct, cp := range f.checkpoints {
				if activities.CheckpointName(activities.PassSubscriptions, keys.Scope{Provider: "stripe", Endpoint: "ep", Account: acct, Environment: "test"}, "") == in.Checkpoint ||
					activities.CheckpointName(activities.PassFacts, keys.Scope{Provider: "stripe", Endpoint: "ep", Account: acct, Environment: "test"}, "") == in.Checkpoint {
					cp.Name, cp.Owner = in.Checkpoint, in.Owner
					return activities.BeginPassResult{Checkpoint: cp, Resumed: f.resumed[acct]}, nil
				}
			}
			started := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			return activities.BeginPassResult{Checkpoint: keys.Checkpoint{Name: in.Checkpoint, Owner: in.Owner, StartedAt: &started}}, nil
		}).Maybe()
	page := func(in activities.PageInput) (activities.PageResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pages = append(f.pages, in)
		if f.fail[in.Scope.Account] {
			return activities.PageResult{}, temporal.NewNonRetryableApplicationError("HTTP 403", "ProviderPermanent", nil)
		}
		first := 0
		if in.Cursor != "" {
			_, _ = fmt.Sscanf(in.Cursor, "item_%d", &first)
		}
		last := min(first+in.Limit, f.items[in.Scope.Account])
		res := activities.PageResult{Listed: last - first, Done: last >= f.items[in.Scope.Account], Signalled: 1, Differing: 1}
		if !res.Done {
			res.Next = fmt.Sprintf("item_%d", last)
		}
		res.Checkpoint = keys.Checkpoint{Name: in.Checkpoint, Owner: in.Owner, Pages: in.Pages + 1, Cursor: res.Next}
		return res, nil
	}
	env.OnActivity(onProvider.ReconcilePage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcilePageInput) (activities.PageResult, error) {
			f.mu.Lock()
			f.reasons = append(f.reasons, in.Reason)
			f.mu.Unlock()
			return page(in.PageInput)
		}).Maybe()
	env.OnActivity(onProvider.BackfillPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BackfillPageInput) (activities.PageResult, error) {
			f.mu.Lock()
			f.since = append(f.since, in.Since)
			f.types = append(f.types, in.Types)
			f.mu.Unlock()
			return page(in.PageInput)
		}).Maybe()
	return env
}

func TestReconcilePagesEveryScopeAndCarriesTheCursorAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	f := &passFake{items: map[string]int{"acct_a": 5, "acct_b": 1}}
	env := newPassEnv(t, f, scopeA, scopeB)
	in := ReconcileSubscriptionsInput{PassSettings: PassSettings{PageSize: 2, PagesPerRun: 2}}
	env.ExecuteWorkflow(ReconcileSubscriptionsWorkflow, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next ReconcileSubscriptionsInput
	require.NoError(t, converterFrom(t).FromPayloads(can.Input, &next))
	c := next.Carry
	require.Equal(t, []keys.Scope{scopeA, scopeB}, c.Scopes)
	require.True(t, c.InPass)
	require.Equal(t, 0, c.Index)
	require.Equal(t, "item_4", c.Cursor, "the cursor after two pages of two")
	require.EqualValues(t, 2, c.Pages)
	require.Equal(t, 2, c.Totals.Pages)
	require.Equal(t, 4, c.Totals.Seen)
	require.Equal(t, 1, c.Runs)
	require.Len(t, f.begun, 1)

	// The continuation resumes at the carried cursor: no second listing of
	// scopes, no second BeginPass for the scope in progress.
	f2 := &passFake{items: f.items}
	env2 := newPassEnv(t, f2)
	env2.ExecuteWorkflow(ReconcileSubscriptionsWorkflow, next)
	require.NoError(t, env2.GetWorkflowError())
	var out PassTotals
	require.NoError(t, env2.GetWorkflowResult(&out))
	require.Equal(t, "item_4", f2.pages[0].Cursor)
	require.EqualValues(t, 2, f2.pages[0].Pages)
	require.Equal(t, "acct_a", f2.pages[0].Scope.Account)
	require.Len(t, f2.begun, 1, "only the next scope's pass is begun")
	require.Equal(t, "acct_b", f2.pages[1].Scope.Account)
	require.Equal(t, 2, out.Scopes)
	require.Equal(t, 4, out.Pages, "3 pages of acct_a, 1 of acct_b, over both runs")
	require.Equal(t, 6, out.Seen)
	env2.AssertActivityNotCalled(t, "ListScopes", mock.Anything, mock.Anything)
	for _, r := range append(f.reasons, f2.reasons...) {
		require.Contains(t, r, "scheduled pass ")
	}
}

func TestReconcileResumesAPassTakenOverFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)
	f := &passFake{items: map[string]int{"acct_a": 12},
		checkpoints: map[string]keys.Checkpoint{"acct_a": {Cursor: "item_10", Pages: 5, StartedAt: &started}},
		resumed:     map[string]bool{"acct_a": true}}
	env := newPassEnv(t, f, scopeA)
	env.ExecuteWorkflow(ReconcileSubscriptionsWorkflow, ReconcileSubscriptionsInput{PassSettings: PassSettings{PageSize: 2}})
	require.NoError(t, env.GetWorkflowError())
	var out PassTotals
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Len(t, f.pages, 1, "only the last page is listed again")
	require.Equal(t, "item_10", f.pages[0].Cursor)
	require.EqualValues(t, 5, f.pages[0].Pages, "the page count fences the checkpoint update")
	require.Equal(t, 1, out.Resumed)
	require.Equal(t, 1, out.Scopes)
}

func TestReconcileSkipsAScopeWhosePageFailsForGood(t *testing.T) {
	t.Parallel()
	f := &passFake{items: map[string]int{"acct_a": 3, "acct_b": 3}, fail: map[string]bool{"acct_a": true}}
	env := newPassEnv(t, f, scopeA, scopeB)
	env.ExecuteWorkflow(ReconcileSubscriptionsWorkflow, ReconcileSubscriptionsInput{PassSettings: PassSettings{PageSize: 2, PageAttempts: 1}})
	require.NoError(t, env.GetWorkflowError())
	var out PassTotals
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, 1, out.Scopes)
	require.Len(t, out.Failed, 1)
	require.Contains(t, out.Failed[0], "acct_a")
	require.Contains(t, out.Failed[0], "HTTP 403")
	require.Equal(t, 2, out.Pages, "acct_b was still reconciled")
}

func TestBackfillListsFromTheWatermarkMinusTheOverlapOrTheLookback(t *testing.T) {
	t.Parallel()
	watermark := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	started := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f := &passFake{items: map[string]int{"acct_a": 1, "acct_b": 1},
		checkpoints: map[string]keys.Checkpoint{"acct_a": {Watermark: &watermark, StartedAt: &started}}}
	env := newPassEnv(t, f, scopeA, scopeB)
	env.ExecuteWorkflow(BackfillFactsWorkflow, BackfillFactsInput{Overlap: 30 * time.Minute, Lookback: 48 * time.Hour})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []time.Time{watermark.Add(-30 * time.Minute), started.Add(-48 * time.Hour)}, f.since)
	require.Equal(t, activities.BackfillTypes(), f.types[0])
	var out PassTotals
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, 2, out.Scopes)
}

func TestBackfillCarriesItsWindowAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	f := &passFake{items: map[string]int{"acct_a": 3}}
	env := newPassEnv(t, f, scopeA)
	env.ExecuteWorkflow(BackfillFactsWorkflow, BackfillFactsInput{PassSettings: PassSettings{PageSize: 1, PagesPerRun: 1}, Lookback: time.Hour})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next BackfillFactsInput
	require.NoError(t, converterFrom(t).FromPayloads(can.Input, &next))
	require.Equal(t, f.since[0], next.Carry.Since)
	require.Equal(t, "item_1", next.Carry.Cursor)

	f2 := &passFake{items: f.items}
	env2 := newPassEnv(t, f2)
	env2.ExecuteWorkflow(BackfillFactsWorkflow, next)
	var can2 *workflow.ContinueAsNewError
	require.ErrorAs(t, env2.GetWorkflowError(), &can2, "one page per run")
	require.Equal(t, []time.Time{f.since[0]}, f2.since, "the same window, not recomputed")
	require.Empty(t, f2.begun)
}
