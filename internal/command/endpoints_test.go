package command

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// TestLinkSaysWhereEventsWithoutAnAccountGo: linking a second account on an
// endpoint without --account keeps its own-account events routed, and the
// command says so (and how to change it); set-account names it explicitly.
// A link giving an account a second workspace is refused with the fix.
func TestLinkSaysWhereEventsWithoutAnAccountGo(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "s", Provider: "stripe", Environment: "live", Secrets: []string{"whsec_s"}}))
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "other", Provider: "stripe", Environment: "live", Secrets: []string{"whsec_o"}}))
	var out bytes.Buffer

	require.NoError(t, linkAccount(ctx, st, &out, "s", "acct_own", "ws_1"))
	require.Contains(t, out.String(), "endpoint s: account acct_own → workspace ws_1\n")
	require.Contains(t, out.String(), "events that name no account go to acct_own (workspace ws_1), the endpoint's only link")

	out.Reset()
	require.NoError(t, linkAccount(ctx, st, &out, "s", "acct_conn", "ws_2"))
	require.Contains(t, out.String(), "events that name no account keep going to acct_own (workspace ws_1): it is now recorded as the endpoint's own account")
	require.Contains(t, out.String(), "hookinbox endpoints set-account --slug s --account ACCOUNT")

	out.Reset()
	require.NoError(t, linkAccount(ctx, st, &out, "s", "acct_conn", "ws_3"))
	require.Contains(t, out.String(), "account acct_conn → workspace ws_3 (moved from workspace ws_2)")
	require.Contains(t, out.String(), "go to the endpoint's own account acct_own (workspace ws_1)")

	out.Reset()
	require.NoError(t, setOwnAccount(ctx, st, &out, "s", "acct_platform"))
	require.Contains(t, out.String(), "own account acct_platform, not linked: its events are quarantined as unknown_account")
	out.Reset()
	require.NoError(t, setOwnAccount(ctx, st, &out, "s", "acct_own"))
	require.Contains(t, out.String(), "events that name no account go to acct_own (workspace ws_1)")

	out.Reset()
	err := linkAccount(ctx, st, &out, "other", "acct_conn", "ws_elsewhere")
	require.ErrorContains(t, err, "account acct_conn is already linked to workspace ws_3 on endpoint s")
	require.Empty(t, out.String())
}

// linkAccount is what `endpoints link` does: the audited link through ops,
// then what it did to the endpoint's routing.
func linkAccount(ctx context.Context, st *store.Store, out io.Writer, slug, account, workspace string) error {
	svc := &ops.Service{Store: st}
	res, err := svc.LinkAccount(ctx, ops.Actor{Name: "test"}, slug, account, workspace, "")
	if err != nil {
		return err
	}
	describeLink(ctx, svc, out, slug, account, workspace, res)
	return nil
}

// setOwnAccount is what `endpoints set-account` does: the audited change
// through ops, then where the events that name no account go.
func setOwnAccount(ctx context.Context, st *store.Store, out io.Writer, slug, account string) error {
	v, err := (&ops.Service{Store: st}).SetOwnAccount(ctx, ops.Actor{Name: "test"}, slug, account, "")
	if err != nil {
		return err
	}
	describeOwnAccount(out, v)
	return nil
}

// TestUpdateGivesAGitHubEndpointItsHook: update changes only what it is
// given, checks the hook, and refuses hook settings on other providers.
func TestUpdateGivesAGitHubEndpointItsHook(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "gh", Provider: "github", Environment: "live",
		Secrets: []string{"s3cret"}, APIBaseURL: "http://ghe.example/api/v3"}))
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "st", Provider: "stripe", Environment: "live", Secrets: []string{"whsec_s"}}))
	var out bytes.Buffer
	key := "github_pat_x"
	hook := func(h string, id int64, mode string) ops.EndpointChange {
		c := ops.EndpointChange{GitHubHook: &h, GitHubHookID: &id}
		if mode != "" {
			c.GitHubRecovery = &mode
		}
		return c
	}

	require.NoError(t, updateEndpoint(ctx, st, &out, "gh", hook("repo:acme/widgets", 7, "")))
	require.Contains(t, out.String(), "hook repo:acme/widgets#7: not recovered until the endpoint has an API key")
	out.Reset()
	require.NoError(t, updateEndpoint(ctx, st, &out, "gh", ops.EndpointChange{APIKey: &key}))
	require.Contains(t, out.String(), "hook repo:acme/widgets#7: deliveries that never reach the inbox are recovered by the recover-github schedule (redeliver)")
	ep, err := endpoints.GetEndpoint(ctx, st, "gh")
	require.NoError(t, err)
	require.Equal(t, key, ep.APIKey)
	require.Equal(t, "http://ghe.example/api/v3", ep.APIBaseURL, "not given, so unchanged")
	require.Equal(t, int64(7), ep.Settings.GitHubHookID)

	err = updateEndpoint(ctx, st, &out, "gh", hook("repo:acme", 7, ""))
	require.ErrorContains(t, err, "repo:OWNER/NAME")
	err = updateEndpoint(ctx, st, &out, "gh", hook("repo:acme/widgets", 7, "poll"))
	require.ErrorContains(t, err, "--github-recovery")
	err = updateEndpoint(ctx, st, &out, "st", hook("org:acme", 8, ""))
	require.ErrorContains(t, err, "are for github endpoints")
	ep, err = endpoints.GetEndpoint(ctx, st, "gh")
	require.NoError(t, err)
	require.Equal(t, "repo:acme/widgets", ep.Settings.GitHubHook, "a refused update changes nothing")
	scopes, err := passes.ListHookScopes(ctx, st.Pool, "github", "")
	require.NoError(t, err)
	require.Len(t, scopes, 1)
}

// updateEndpoint is what `endpoints update` does: the audited change
// through ops, then whether the hook is recovered.
func updateEndpoint(ctx context.Context, st *store.Store, out io.Writer, slug string, c ops.EndpointChange) error {
	v, err := (&ops.Service{Store: st}).UpdateEndpoint(ctx, ops.Actor{Name: "test"}, slug, c, "")
	if err != nil {
		return err
	}
	describeRecovery(out, v)
	return nil
}
