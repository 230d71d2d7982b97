package e2e

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/workflows"
)

// TestGitHubRecoveryRedeliversDroppedDeliveriesExactlyOnce: GitHub never
// retries. Of five deliveries, two never reach the intake and one reaches
// it but GitHub logs a timeout. The recovery pass reads the hook's delivery
// log through the simulated REST API, asks GitHub to redeliver exactly the
// two the inbox lacks (they arrive signed, through the public intake), and
// a second pass asks for nothing: every delivery is in the inbox once.
func TestGitHubRecoveryRedeliversDroppedDeliveriesExactlyOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{configure: noPassSchedules})
	n := accountSeq.Add(1)
	owner, workspace := fmt.Sprintf("acme-e2e%d", n), fmt.Sprintf("ws_gh%d", n)
	sim := simulator.New(simulator.Config{Seed: uint64(n)})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	const secret = "gh-e2e-hook-secret"
	require.NoError(t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{Slug: "gh-sim", Provider: "github", Environment: "test",
		Secrets: []string{secret}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey,
		Settings: keys.EndpointSettings{GitHubHook: "repo:" + owner + "/widgets", GitHubHookID: 7}}))
	require.NoError(t, endpoints.LinkAccount(s.ctx, s.store, "gh-sim", owner, workspace))
	hook := simulator.GitHubRepoHook(owner, "widgets", 7)
	sim.AddGitHubHook(hook, simulator.Endpoint{URL: s.url + "/webhooks/gh-sim", Secrets: []string{secret}})

	// Pushes run on the repository; an issue's and a pull request's events
	// on their object (issue #33): the dropped ones come back onto it.
	repo := owner + "/widgets"
	var all []simulator.GitHubDelivery
	resourceOf := map[string]string{}
	for i, d := range []struct{ fate, event, kind, id string }{
		{"ok", "push", "repository", repo},
		{"dropped", "issues", "issue", repo + "#3"},
		{"ok", "push", "repository", repo},
		{"timed out", "issues", "issue", repo + "#3"},
		{"dropped", "pull_request", "pull_request", repo + "#4"},
	} {
		if d.fate == "timed out" {
			sim.LoseNextGitHubAnswers(1)
		}
		body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":%q,"owner":{"login":%q}}}`, i, repo, owner)
		switch d.event {
		case "issues":
			body = fmt.Appendf(nil, `{"action":"edited","issue":{"number":3,"updated_at":"2026-12-03T10:00:0%dZ"},"repository":{"full_name":%q,"owner":{"login":%q}}}`, i, repo, owner)
		case "pull_request":
			body = fmt.Appendf(nil, `{"action":"synchronize","number":4,"pull_request":{"number":4},"repository":{"full_name":%q,"owner":{"login":%q}}}`, repo, owner)
		}
		dl, err := sim.GitHubDeliver(s.ctx, hook, d.event, body, d.fate == "dropped")
		require.NoError(t, err)
		all = append(all, dl)
		resourceOf[dl.GUID] = d.kind + " " + d.id
	}
	count := func(sql string, args ...any) int {
		var c int
		require.NoError(t, s.store.Pool.QueryRow(s.ctx, sql, args...).Scan(&c))
		return c
	}
	require.Equal(t, 3, count(`SELECT count(*) FROM webhook_inbox WHERE provider = 'github'`), "two deliveries were dropped")

	in := workflows.RecoverDeliveriesInput{PassSettings: workflows.PassSettings{Endpoint: "gh-sim", PageSize: 2}}
	var first workflows.PassTotals
	s.run(t, "recover-github-1-"+owner, workflows.RecoverDeliveriesWorkflow, in, &first)
	require.Equal(t, 1, first.Scopes)
	require.Equal(t, 3, first.Pages, "five attempts, two per page")
	require.Equal(t, 5, first.Seen)
	require.Equal(t, 2, first.Redelivered, "only the two the inbox lacks, not the one GitHub logged as timed out")
	require.Empty(t, first.Failed)
	require.Equal(t, 2, sim.GitHubRedeliveries())
	for _, d := range all {
		require.Equal(t, 1, count(`SELECT count(*) FROM webhook_inbox WHERE provider = 'github' AND event_id = $1 AND origin = 'webhook'`, d.GUID),
			"delivery %s is in the inbox once, as a verified webhook", d.GUID)
		var resource string
		require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT resource_kind || ' ' || resource_id FROM webhook_inbox
			WHERE provider = 'github' AND event_id = $1`, d.GUID).Scan(&resource))
		require.Equal(t, resourceOf[d.GUID], resource, "delivery %s runs on the object it is about", d.GUID)
	}
	cp, err := passes.GetCheckpoint(s.ctx, s.store.Pool, activities.CheckpointName(activities.PassDeliveries,
		keys.Scope{Provider: "github", Endpoint: "gh-sim", Account: "repo:" + owner + "/widgets", Environment: "test"}, ""))
	require.NoError(t, err)
	require.False(t, cp.Unfinished())
	require.NotNil(t, cp.Watermark)

	// The second pass lists the redeliveries too and finds nothing missing.
	var second workflows.PassTotals
	s.run(t, "recover-github-2-"+owner, workflows.RecoverDeliveriesWorkflow, in, &second)
	require.Equal(t, 7, second.Seen)
	require.Zero(t, second.Redelivered+second.Inserted+second.Abandoned)
	require.Equal(t, 2, sim.GitHubRedeliveries(), "nothing redelivered twice")
	require.Equal(t, 5, count(`SELECT count(*) FROM webhook_inbox WHERE provider = 'github'`))
	require.Zero(t, count(`SELECT count(*) FROM inbox_quarantine`))
	require.Equal(t, 2, count(`SELECT count(*) FROM hook_recoveries WHERE endpoint_slug = 'gh-sim' AND action = 'redeliver'`))
}
