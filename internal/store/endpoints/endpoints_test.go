package endpoints_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// TestLinkRefusesASecondWorkspaceForOneAccount: an account linked on two
// endpoints of one provider and environment must map to one workspace, or
// its projections and grants would change tenant with the endpoint asked.
func TestLinkRefusesASecondWorkspaceForOneAccount(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	for _, e := range []endpoints.NewEndpoint{
		{Slug: "a", Provider: "stripe", Environment: "live", Account: "acct_1", APIKey: "sk_a", Secrets: []string{"whsec_a"}},
		{Slug: "b", Provider: "stripe", Environment: "live", Account: "acct_1", APIKey: "sk_b", Secrets: []string{"whsec_b"}},
		{Slug: "t", Provider: "stripe", Environment: "test", Account: "acct_1", Secrets: []string{"whsec_t"}},
	} {
		require.NoError(t, endpoints.InsertEndpoint(ctx, s, e))
	}
	require.NoError(t, endpoints.LinkAccount(ctx, s, "a", "acct_1", "ws_1"))

	err := endpoints.LinkAccount(ctx, s, "b", "acct_1", "ws_2")
	require.ErrorContains(t, err, "account acct_1 is already linked to workspace ws_1 on endpoint a")
	require.ErrorContains(t, err, "hookinbox endpoints link --slug b --account acct_1 --workspace ws_1")
	require.ErrorContains(t, err, "hookinbox endpoints unlink --slug a --account acct_1")
	ep, err := endpoints.GetEndpoint(ctx, s, "b")
	require.NoError(t, err)
	require.Empty(t, ep.Links, "nothing linked")

	require.NoError(t, endpoints.LinkAccount(ctx, s, "b", "acct_1", "ws_1"), "the same workspace is fine")
	require.NoError(t, endpoints.LinkAccount(ctx, s, "t", "acct_1", "ws_test"), "another environment is another key space")
	// Moving it: not one endpoint at a time...
	require.ErrorContains(t, endpoints.LinkAccount(ctx, s, "a", "acct_1", "ws_2"), "on endpoint b")
	// ...but by unlinking the others first.
	require.NoError(t, endpoints.UnlinkAccount(ctx, s, "b", "acct_1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "a", "acct_1", "ws_2"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "b", "acct_1", "ws_2"))
}

// TestASecondLinkKeepsTheOwnAccountsEventsRouted: an endpoint without
// --account attributes events that name no account to its single linked
// account. Linking a second one used to make those events unknown_account
// (answered 202, so the provider stops retrying); the first link is now
// recorded as the endpoint's own account, and the result says so.
func TestASecondLinkKeepsTheOwnAccountsEventsRouted(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "single", Provider: "stripe", Environment: "test", Secrets: []string{"whsec_s"}}))

	res, err := endpoints.Link(ctx, s, "single", "acct_own", "ws_1")
	require.NoError(t, err)
	require.Equal(t, endpoints.LinkResult{OwnAccount: "acct_own", OwnAccountImplicit: true}, res)

	res, err = endpoints.Link(ctx, s, "single", "acct_own", "ws_1b") // relinking the one account changes nothing else
	require.NoError(t, err)
	require.Equal(t, endpoints.LinkResult{OwnAccount: "acct_own", OwnAccountImplicit: true, PreviousWorkspace: "ws_1"}, res)

	res, err = endpoints.Link(ctx, s, "single", "acct_2", "ws_2")
	require.NoError(t, err)
	require.Equal(t, endpoints.LinkResult{OwnAccount: "acct_own", PinnedOwnAccount: true}, res)
	ep, err := endpoints.GetEndpoint(ctx, s, "single")
	require.NoError(t, err)
	require.Equal(t, "acct_own", ep.Account)
	own, ok := ep.OwnAccount()
	require.True(t, ok)
	require.Equal(t, "acct_own", own)

	res, err = endpoints.Link(ctx, s, "single", "acct_3", "ws_3")
	require.NoError(t, err)
	require.Equal(t, endpoints.LinkResult{OwnAccount: "acct_own"}, res)

	_, err = endpoints.Link(ctx, s, "nope", "acct_1", "ws_1")
	require.ErrorIs(t, err, fault.ErrNotFound)
}
