package workflows

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

var hookScope = keys.Scope{Provider: "github", Endpoint: "gh", Account: "repo:acme/widgets", Environment: "live"}

// recoveryEnv fakes a delivery log of n attempts per page run, two
// redeliveries requested per page.
func recoveryEnv(t *testing.T, n int, cp keys.Checkpoint) (*testsuite.TestWorkflowEnvironment, *[]activities.RecoverPageInput, *[]activities.ListScopesInput) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(RecoverDeliveriesWorkflow)
	var mu sync.Mutex
	var pages []activities.RecoverPageInput
	var lists []activities.ListScopesInput
	env.OnActivity(onControl.ListScopes, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ListScopesInput) ([]keys.Scope, error) {
			mu.Lock()
			defer mu.Unlock()
			lists = append(lists, in)
			return []keys.Scope{hookScope}, nil
		})
	env.OnActivity(onControl.BeginPass, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BeginPassInput) (activities.BeginPassResult, error) {
			c := cp
			c.Name, c.Owner = in.Checkpoint, in.Owner
			return activities.BeginPassResult{Checkpoint: c}, nil
		})
	env.OnActivity(onProvider.RecoverDeliveriesPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecoverPageInput) (activities.PageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			pages = append(pages, in)
			first := 0
			if in.Cursor != "" {
				_, _ = fmt.Sscanf(in.Cursor, "v1_%d", &first)
			}
			last := min(first+in.Limit, n)
			res := activities.PageResult{Listed: last - first, Done: last >= n, Redelivered: 2}
			if !res.Done {
				res.Next = fmt.Sprintf("v1_%d", last)
			}
			res.Checkpoint = keys.Checkpoint{Name: in.Checkpoint, Owner: in.Owner, Pages: in.Pages + 1, Cursor: res.Next}
			return res, nil
		})
	return env, &pages, &lists
}

func TestRecoverDeliveriesPagesEachHookFromItsWindow(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	env, pages, lists := recoveryEnv(t, 5, keys.Checkpoint{StartedAt: &started})
	env.ExecuteWorkflow(RecoverDeliveriesWorkflow, RecoverDeliveriesInput{PassSettings: PassSettings{PageSize: 2}, Attempts: 4})
	require.NoError(t, env.GetWorkflowError())
	var out PassTotals
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, []activities.ListScopesInput{{Kind: activities.PassDeliveries}}, *lists, "the hooks of GitHub endpoints, not Stripe accounts")
	require.Len(t, *pages, 3)
	for i, p := range *pages {
		require.Equal(t, started.Add(-DefaultRecoveryLookback), p.Since, "a first pass looks back three days")
		require.Equal(t, 4, p.Attempts)
		require.Equal(t, activities.CheckpointName(activities.PassDeliveries, hookScope, ""), p.Checkpoint)
		require.EqualValues(t, i, p.Pages)
	}
	require.Equal(t, "v1_2", (*pages)[1].Cursor)
	require.Equal(t, 1, out.Scopes)
	require.Equal(t, 3, out.Pages)
	require.Equal(t, 5, out.Seen)
	require.Equal(t, 6, out.Redelivered)
}

func TestRecoverDeliveriesCarriesItsWindowAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	watermark := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	started := watermark.Add(time.Hour)
	env, pages, _ := recoveryEnv(t, 3, keys.Checkpoint{StartedAt: &started, Watermark: &watermark})
	env.ExecuteWorkflow(RecoverDeliveriesWorkflow, RecoverDeliveriesInput{PassSettings: PassSettings{PageSize: 1, PagesPerRun: 1},
		Overlap: 10 * time.Minute})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next RecoverDeliveriesInput
	require.NoError(t, converterFrom(t).FromPayloads(can.Input, &next))
	require.Equal(t, watermark.Add(-10*time.Minute), (*pages)[0].Since)
	require.Equal(t, watermark.Add(-10*time.Minute), next.Carry.Since)
	require.Equal(t, "v1_1", next.Carry.Cursor)
	require.Equal(t, 2, next.Carry.Totals.Redelivered)
}
