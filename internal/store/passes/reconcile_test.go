package passes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestBeginPassResumesAnUnfinishedPassAndFencesPages(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const name = "subscriptions/stripe/ep/acct_1/test"

	cp, resumed, err := passes.BeginPass(ctx, s, name, "run-1", false)
	require.NoError(t, err)
	require.False(t, resumed)
	require.True(t, cp.Unfinished())
	require.Equal(t, "", cp.Cursor)

	cp2, _, err := passes.AdvancePass(ctx, s.Pool, name, passes.PageProgress{Owner: "run-1", Pages: 0, Next: "sub_2", Seen: 2, Divergences: 1})
	require.NoError(t, err)
	require.EqualValues(t, 1, cp2.Pages)
	require.Equal(t, "sub_2", cp2.Cursor)

	// The same page recorded again (a retry whose answer was lost) is a no-op.
	again, repeated, err := passes.AdvancePass(ctx, s.Pool, name, passes.PageProgress{Owner: "run-1", Pages: 0, Next: "sub_2", Seen: 2, Divergences: 1})
	require.NoError(t, err)
	require.True(t, repeated)
	require.EqualValues(t, 1, again.Pages)
	require.EqualValues(t, 2, again.Seen, "counted once")

	// The same owner beginning again gets its own pass back.
	same, resumed, err := passes.BeginPass(ctx, s, name, "run-1", true)
	require.NoError(t, err)
	require.False(t, resumed)
	require.Equal(t, "sub_2", same.Cursor)

	// A new run (the first was killed) takes the pass over at its cursor.
	taken, resumed, err := passes.BeginPass(ctx, s, name, "run-2", false)
	require.NoError(t, err)
	require.True(t, resumed)
	require.Equal(t, "sub_2", taken.Cursor)
	require.EqualValues(t, 1, taken.Pages)
	require.Equal(t, cp.StartedAt, taken.StartedAt, "the pass keeps its start")

	// The killed run's late page loses.
	_, _, err = passes.AdvancePass(ctx, s.Pool, name, passes.PageProgress{Owner: "run-1", Pages: 1, Next: "sub_4", Seen: 2})
	var moved *passes.CheckpointMovedError
	require.ErrorAs(t, err, &moved)
	require.Contains(t, moved.Error(), "taken over by run-2")

	// A page that does not follow the recorded one loses too.
	_, _, err = passes.AdvancePass(ctx, s.Pool, name, passes.PageProgress{Owner: "run-2", Pages: 3, Next: "sub_9"})
	require.ErrorAs(t, err, &moved)

	// The last page completes the pass and moves the watermark to its start.
	done, _, err := passes.AdvancePass(ctx, s.Pool, name, passes.PageProgress{Owner: "run-2", Pages: 1, Done: true, Seen: 1})
	require.NoError(t, err)
	require.False(t, done.Unfinished())
	require.Equal(t, "", done.Cursor)
	require.EqualValues(t, 2, done.Pages)
	require.EqualValues(t, 3, done.Seen)
	require.EqualValues(t, 1, done.Divergences)
	require.NotNil(t, done.Watermark)
	require.True(t, done.Watermark.Equal(*cp.StartedAt))

	// The next pass starts over, keeping the watermark.
	next, resumed, err := passes.BeginPass(ctx, s, name, "run-3", false)
	require.NoError(t, err)
	require.False(t, resumed)
	require.EqualValues(t, 0, next.Pages)
	require.Equal(t, "", next.Cursor)
	require.True(t, next.Watermark.Equal(*cp.StartedAt))
	require.True(t, next.StartedAt.After(*cp.StartedAt) || next.StartedAt.Equal(*cp.StartedAt))
}

func TestBeginPassRestartDiscardsAnotherRunsUnfinishedPass(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	_, _, err := passes.BeginPass(ctx, s, "p", "run-1", false)
	require.NoError(t, err)
	_, _, err = passes.AdvancePass(ctx, s.Pool, "p", passes.PageProgress{Owner: "run-1", Pages: 0, Next: "c1", Seen: 5})
	require.NoError(t, err)
	cp, resumed, err := passes.BeginPass(ctx, s, "p", "run-2", true)
	require.NoError(t, err)
	require.False(t, resumed)
	require.Equal(t, "", cp.Cursor)
	require.EqualValues(t, 0, cp.Seen)
}

func TestListScopesOncePerAccountThroughTheFirstEndpointWithAKey(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	for _, e := range []endpoints.NewEndpoint{
		{Slug: "b-keyed", Provider: "stripe", Environment: "test", APIKey: "sk_b", Secrets: []string{"whsec_b"}},
		{Slug: "a-keyed", Provider: "stripe", Environment: "test", APIKey: "sk_a", Secrets: []string{"whsec_a"}},
		{Slug: "no-key", Provider: "stripe", Environment: "test", Secrets: []string{"whsec_n"}},
		{Slug: "fb", Provider: "standard", Environment: "test", APIKey: "k", Secrets: []string{"whsec_Zm9v"}},
	} {
		require.NoError(t, endpoints.InsertEndpoint(ctx, s, e))
	}
	require.NoError(t, endpoints.LinkAccount(ctx, s, "a-keyed", "acct_1", "ws_1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "b-keyed", "acct_1", "ws_1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "b-keyed", "acct_2", "ws_2"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "no-key", "acct_3", "ws_3"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "fb", "proj_1", "ws_1"))

	all, err := passes.ListScopes(ctx, s.Pool, "stripe", "")
	require.NoError(t, err)
	require.Equal(t, []keys.Scope{
		{Provider: "stripe", Endpoint: "a-keyed", Account: "acct_1", Environment: "test", WorkspaceID: "ws_1"},
		{Provider: "stripe", Endpoint: "b-keyed", Account: "acct_2", Environment: "test", WorkspaceID: "ws_2"},
	}, all)
	one, err := passes.ListScopes(ctx, s.Pool, "stripe", "b-keyed")
	require.NoError(t, err)
	require.Len(t, one, 2)
	require.Equal(t, "b-keyed", one[0].Endpoint)
}
