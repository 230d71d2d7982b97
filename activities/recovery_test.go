package activities_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers/github"
)

const ghSecret = "gh-e2e-secret"

// ghPass is a GitHub endpoint "gh" whose hook the simulator keeps, an
// intake for it that admits through admission.Admit, and the recovery
// activity.
type ghPass struct {
	*passActivities
	hook  string
	api   string
	scope keys.Scope
}

func newGHPass(t *testing.T, mode string) *ghPass {
	t.Helper()
	p := newPass(t, simulator.Config{})
	p.acts.Hooks = p.provs
	p.acts.Recoveries = storeports.Recoveries{Store: p.store}
	api := httptest.NewServer(p.sim.Handler())
	t.Cleanup(api.Close)
	require.NoError(t, endpoints.InsertEndpoint(p.ctx, p.store, endpoints.NewEndpoint{Slug: "gh", Provider: "github", Environment: "test",
		Secrets: []string{ghSecret}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey,
		Settings: keys.EndpointSettings{GitHubHook: "repo:acme/widgets", GitHubHookID: 7, GitHubRecovery: mode}}))
	require.NoError(t, endpoints.LinkAccount(p.ctx, p.store, "gh", "acme", "ws"))
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: p.store})
	intake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ep, err := adm.Endpoint(r.Context(), "gh")
		if err == nil {
			_, err = adm.Admit(r.Context(), ep, admission.Delivery{Header: r.Header, Body: body}, keys.OriginWebhook)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
	}))
	t.Cleanup(intake.Close)
	hook := simulator.GitHubRepoHook("acme", "widgets", 7)
	p.sim.AddGitHubHook(hook, simulator.Endpoint{URL: intake.URL, Secrets: []string{ghSecret}})
	return &ghPass{passActivities: p, hook: hook, api: api.URL,
		scope: keys.Scope{Provider: "github", Endpoint: "gh", Account: "repo:acme/widgets", Environment: "test"}}
}

func (g *ghPass) deliver(t *testing.T, n int, fail bool) simulator.GitHubDelivery {
	t.Helper()
	return g.deliverAs(t, "acme", n, fail)
}

func (g *ghPass) deliverAs(t *testing.T, owner string, n int, fail bool) simulator.GitHubDelivery {
	t.Helper()
	body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"%s/widgets","owner":{"login":"%s"}}}`, n, owner, owner)
	d, err := g.sim.GitHubDeliver(g.ctx, g.hook, "push", body, fail)
	require.NoError(t, err)
	return d
}

// pass runs one whole recovery pass as owner, two attempts per page.
func (g *ghPass) pass(t *testing.T, owner string, attempts int) activities.PageResult {
	t.Helper()
	name := activities.CheckpointName(activities.PassDeliveries, g.scope, "")
	cp := g.begin(t, name, owner)
	var total activities.PageResult
	in := activities.RecoverPageInput{PageInput: activities.PageInput{Scope: g.scope, Checkpoint: name, Owner: owner, Limit: 2, Pages: cp.Pages},
		Since: time.Now().Add(-time.Hour), Attempts: attempts}
	for range 20 {
		v, err := g.env.ExecuteActivity(g.acts.RecoverDeliveriesPage, in)
		require.NoError(t, err)
		var res activities.PageResult
		require.NoError(t, v.Get(&res))
		total.Listed += res.Listed
		total.Redelivered += res.Redelivered
		total.Inserted += res.Inserted
		total.Duplicates += res.Duplicates
		total.Rejected += res.Rejected
		total.Abandoned += res.Abandoned
		if res.Done {
			return total
		}
		in.Cursor, in.Pages = res.Next, res.Checkpoint.Pages
	}
	t.Fatal("the pass never ended")
	return total
}

func (g *ghPass) inbox(t *testing.T, origin string) int {
	return g.count(t, `SELECT count(*) FROM webhook_inbox WHERE provider = 'github' AND origin = '`+origin+`'`)
}

func TestRecoverDeliveriesRedeliversEachMissingDeliveryOncePerPass(t *testing.T) {
	t.Parallel()
	g := newGHPass(t, "")
	g.deliver(t, 0, false)
	lost1 := g.deliver(t, 1, true)
	lost2 := g.deliver(t, 2, true)
	require.Equal(t, 1, g.inbox(t, keys.OriginWebhook))

	// The redelivery of lost2 fails again (the receiver still unreachable):
	// it is a new failed attempt in the log, above the pass's cursor.
	g.sim.FailNextGitHubRedeliveries(1)
	first := g.pass(t, "run-1", 3)
	require.Equal(t, 3, first.Listed)
	require.Equal(t, 2, first.Redelivered)
	require.Equal(t, 2, g.sim.GitHubRedeliveries())
	require.Equal(t, 2, g.inbox(t, keys.OriginWebhook), "lost1 came back signed; lost2's redelivery failed")

	// The next pass lists lost2 twice (its failed redelivery and the
	// original) and asks for it once.
	second := g.pass(t, "run-2", 3)
	require.Equal(t, 5, second.Listed, "three deliveries and two redeliveries")
	require.Equal(t, 1, second.Redelivered)
	require.Equal(t, 3, g.sim.GitHubRedeliveries())
	require.Equal(t, 3, g.inbox(t, keys.OriginWebhook))
	for _, d := range []simulator.GitHubDelivery{lost1, lost2} {
		require.Equal(t, 1, g.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = '`+d.GUID+`'`))
	}

	// Everything is in the inbox: nothing is asked again.
	third := g.pass(t, "run-3", 3)
	require.Zero(t, third.Redelivered)
	require.Equal(t, 3, g.sim.GitHubRedeliveries())
	rs, err := passes.ListHookRecoveries(g.ctx, g.store.Pool, "gh")
	require.NoError(t, err)
	require.Len(t, rs, 2)
	require.Zero(t, g.count(t, `SELECT count(*) FROM inbox_quarantine`))
}

func TestRecoverDeliveriesFetchesOnTheLastAttemptAndALateCopyIsADuplicate(t *testing.T) {
	t.Parallel()
	g := newGHPass(t, keys.RecoverRedeliver)
	lost := g.deliver(t, 1, true)
	g.sim.FailNextGitHubRedeliveries(10) // GitHub cannot reach the receiver at all

	first := g.pass(t, "run-1", 2)
	require.Equal(t, 1, first.Redelivered)
	require.Zero(t, g.inbox(t, keys.OriginWebhook))
	second := g.pass(t, "run-2", 2)
	require.Zero(t, second.Redelivered, "the last allowed pass fetches instead")
	require.Equal(t, 1, second.Inserted)
	require.Equal(t, 1, g.inbox(t, keys.OriginBackfill))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = '`+lost.GUID+`' AND status = 'ignored'`))

	// The receiver is reachable again and a copy arrives after all (someone
	// pressed Redeliver): the same event, a duplicate, not a conflict.
	g.sim.FailNextGitHubRedeliveries(0)
	c, err := github.NewHookClient(github.Hook{Scope: github.HookRepo, Owner: "acme", Repo: "widgets", ID: 7}, simulator.DefaultAPIKey, g.api, nil)
	require.NoError(t, err)
	require.NoError(t, c.Redeliver(g.ctx, lost.ID))
	log := g.sim.GitHubDeliveries(g.hook)
	require.Equal(t, 200, log[len(log)-1].StatusCode, "the intake answered the late copy 200")
	third := g.pass(t, "run-3", 2)
	require.Zero(t, third.Redelivered+third.Inserted+third.Abandoned)
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM webhook_inbox`))
	require.Zero(t, g.count(t, `SELECT count(*) FROM inbox_quarantine`))
}

func TestRecoverDeliveriesFetchModeGivesUpOnADeliveryItCannotAdmit(t *testing.T) {
	t.Parallel()
	g := newGHPass(t, keys.RecoverFetch)
	g.deliverAs(t, "stranger", 1, true) // an account no workspace is linked to
	ok := g.deliver(t, 2, true)

	first := g.pass(t, "run-1", 2)
	require.Equal(t, 1, first.Inserted)
	require.Equal(t, 1, first.Rejected)
	require.Zero(t, first.Redelivered)
	require.Zero(t, g.sim.GitHubRedeliveries(), "fetch mode never asks GitHub to redeliver")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = '`+ok.GUID+`' AND origin = 'backfill'`))

	second := g.pass(t, "run-2", 2)
	require.Equal(t, 1, second.Rejected, "tried again: its account may have been linked since")
	third := g.pass(t, "run-3", 2)
	require.Equal(t, 1, third.Abandoned)
	fourth := g.pass(t, "run-4", 2)
	require.Zero(t, fourth.Abandoned+fourth.Rejected+fourth.Inserted, "abandoned once, then left alone")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM hook_recoveries WHERE action = 'abandoned'`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM webhook_inbox`))
}

func TestRecoverDeliveriesPageOfAnUnknownHookFailsForGood(t *testing.T) {
	t.Parallel()
	g := newGHPass(t, "")
	_, err := g.store.Pool.Exec(g.ctx, `UPDATE endpoints SET settings = settings || '{"github_hook_id": 8}' WHERE slug = 'gh'`)
	require.NoError(t, err)
	name := activities.CheckpointName(activities.PassDeliveries, g.scope, "")
	g.begin(t, name, "run-1")
	_, err = g.env.ExecuteActivity(g.acts.RecoverDeliveriesPage, activities.RecoverPageInput{
		PageInput: activities.PageInput{Scope: g.scope, Checkpoint: name, Owner: "run-1", Limit: 2}})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable(), "a 404 on the hook itself is not retried: %v", err)
	require.Contains(t, err.Error(), "HTTP 404")
}
