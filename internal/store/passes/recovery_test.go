package passes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/lab/storetest"
)

func TestListHookScopesOnlyGitHubEndpointsWithAKeyAndAHook(t *testing.T) {
	t.Parallel()
	s, ctx := storetest.Setup(t)
	hook := keys.EndpointSettings{GitHubHook: "repo:acme/widgets", GitHubHookID: 7}
	for _, e := range []endpoints.NewEndpoint{
		{Slug: "gh-a", Provider: "github", Environment: "live", APIKey: "ghp_a", Settings: hook},
		{Slug: "gh-nokey", Provider: "github", Environment: "live", Settings: hook},
		{Slug: "gh-nohook", Provider: "github", Environment: "live", APIKey: "ghp_b"},
		{Slug: "stripe-a", Provider: "stripe", Environment: "live", APIKey: "sk_a", Settings: hook},
	} {
		e.Secrets = []string{"s3cret"}
		require.NoError(t, endpoints.InsertEndpoint(ctx, s, e))
	}
	all, err := passes.ListHookScopes(ctx, s.Pool, "github", "")
	require.NoError(t, err)
	require.Equal(t, []keys.Scope{{Provider: "github", Endpoint: "gh-a", Account: "repo:acme/widgets", Environment: "live"}}, all)
	none, err := passes.ListHookScopes(ctx, s.Pool, "github", "gh-nohook")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestReceivedDeliveriesSeesTheInboxUnderAnyAccountAndTheQuarantine(t *testing.T) {
	t.Parallel()
	s, ctx := storetest.Setup(t)
	in := storetest.Event("guid-inbox", `{"zen":"x"}`)
	in.Key.Provider, in.Key.Account, in.EndpointSlug = "github", "12345", "gh"
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, in)
	require.NoError(t, err)
	_, err = inbox.InsertQuarantine(ctx, s.Pool, &inbox.QuarantineEntry{EndpointSlug: "gh", Provider: "github",
		EventID: "guid-quarantined", Reason: inbox.ReasonUnknownAccount, Payload: []byte("{}"), BodySHA256: []byte{1}})
	require.NoError(t, err)

	got, err := passes.ReceivedDeliveries(ctx, s.Pool, "github", "test", "gh", []string{"guid-inbox", "guid-quarantined", "guid-missing"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"guid-inbox": true, "guid-quarantined": true}, got)

	other, err := passes.ReceivedDeliveries(ctx, s.Pool, "github", "live", "gh-other", []string{"guid-inbox", "guid-quarantined"})
	require.NoError(t, err)
	require.Empty(t, other, "another environment's inbox and another endpoint's quarantine are not this hook's")
}

func TestClaimRecoveryOncePerPassCountingPasses(t *testing.T) {
	t.Parallel()
	s, ctx := storetest.Setup(t)
	n, claimed, err := passes.ClaimRecovery(ctx, s.Pool, "ep", "guid-1", 10, "pass-1")
	require.NoError(t, err)
	require.True(t, claimed)
	require.Equal(t, 1, n)
	_, claimed, err = passes.ClaimRecovery(ctx, s.Pool, "ep", "guid-1", 11, "pass-1")
	require.NoError(t, err)
	require.False(t, claimed, "one pass acts on a delivery once")
	n, claimed, err = passes.ClaimRecovery(ctx, s.Pool, "ep", "guid-1", 12, "pass-2")
	require.NoError(t, err)
	require.True(t, claimed)
	require.Equal(t, 2, n)
	require.NoError(t, passes.SetRecoveryAction(ctx, s.Pool, "ep", "guid-1", passes.RecoveryFetch))
	rs, err := passes.ListHookRecoveries(ctx, s.Pool, "ep")
	require.NoError(t, err)
	require.Equal(t, []passes.HookRecovery{{Endpoint: "ep", GUID: "guid-1", DeliveryID: 12, Attempts: 2, Action: passes.RecoveryFetch, Pass: "pass-2"}}, rs)
	require.ErrorIs(t, passes.SetRecoveryAction(ctx, s.Pool, "ep", "guid-none", passes.RecoveryFetch), fault.ErrNotFound)
}
