package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// TestGitHubIssuesOfOneRepositoryRunAtOnceEachInOrder (issue 33): the
// resource of an issues or issue_comment event is the issue, not the
// repository. Two issues of one repository are forwarded to a team's
// service that stalls on the first issue's first document: the second
// issue's events (a comment among them) are all forwarded and done while
// that send is held, and once the receiver answers, the first issue's
// events follow in their intake order. Under the old rule (the repository
// as the resource) the second issue would wait behind the stalled send.
func TestGitHubIssuesOfOneRepositoryRunAtOnceEachInOrder(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{configure: func(c *config.Config) {
		noPassSchedules(c)
		c.ActivityTimeout = time.Minute // the held send must outlast the wait, not the activity
	}})
	n := accountSeq.Add(1)
	owner, workspace, installation := fmt.Sprintf("acme-obj%d", n), fmt.Sprintf("ws_ghobj%d", n), fmt.Sprintf("%d", 90000+n)
	repo := owner + "/widgets"
	sim := simulator.New(simulator.Config{Seed: uint64(n)})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	const secret = "gh-e2e-objects-secret"
	require.NoError(t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{Slug: "gh-objects", Provider: "github", Environment: "test",
		Secrets: []string{secret}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey}))
	require.NoError(t, endpoints.LinkAccount(s.ctx, s.store, "gh-objects", installation, workspace))
	hook := simulator.GitHubRepoHook(owner, "widgets", 11)
	sim.AddGitHubHook(hook, simulator.Endpoint{URL: s.url + "/webhooks/gh-objects", Secrets: []string{secret}})

	first, second := repo+"#1", repo+"#2"
	release := make(chan struct{})
	var releaseOnce sync.Once
	unstall := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unstall)
	stalledAt := make(chan time.Time, 1)
	var stalled atomic.Bool
	rcv := newReceiver(t)
	rcv.answer = func(n int, d forward.Document) (int, http.Header, string) {
		if gjson.GetBytes(d.Payload, "issue.number").Int() == 1 && n == 1 && stalled.CompareAndSwap(false, true) {
			stalledAt <- time.Now()
			select { // the team's service hangs on this document
			case <-release:
			case <-time.After(40 * time.Second):
			}
		}
		return http.StatusOK, nil, "ok"
	}
	w := &simWorld{stack: s}
	for _, typ := range []string{"issues.*", "issue_comment.*"} {
		w.addRoute(t, ops.RouteSpec{Name: fmt.Sprintf("gh-%d-%s", n, typ[:len(typ)-2]), Provider: "github", EventType: typ,
			URL: rcv.srv.URL + "/hooks", AllowPrivate: true, Timeout: 45 * time.Second})
	}

	deliver := func(event, action string, issue int, extra string) simulator.GitHubDelivery {
		t.Helper()
		body := fmt.Appendf(nil, `{"action":%q,"issue":{"number":%d,"title":"issue %d","updated_at":"2026-12-03T08:00:0%dZ"},%s"repository":{"full_name":%q,"owner":{"login":%q}},"installation":{"id":%s},"sender":{"login":"octocat"}}`,
			action, issue, issue, issue, extra, repo, owner, installation)
		d, err := sim.GitHubDeliver(s.ctx, hook, event, body, false)
		require.NoError(t, err)
		return d
	}
	// Issue 1's three events first, one after another, so its first send
	// is already held when issue 2's arrive.
	var ones []simulator.GitHubDelivery
	for _, a := range []string{"opened", "edited", "closed"} {
		ones = append(ones, deliver("issues", a, 1, ""))
	}
	select {
	case <-stalledAt:
	case <-time.After(60 * time.Second):
		t.Fatal("issue 1's first document never reached the receiver")
	}
	var twos []simulator.GitHubDelivery
	for _, step := range []struct{ event, action, extra string }{
		{"issues", "opened", ""}, {"issue_comment", "created", `"comment":{"id":7,"body":"+1"},`}, {"issues", "labeled", `"label":{"name":"bug"},`}, {"issues", "closed", ""},
	} {
		twos = append(twos, deliver(step.event, step.action, 2, step.extra))
	}
	key := func(d simulator.GitHubDelivery) keys.Event {
		return keys.Event{Provider: "github", Account: installation, Environment: "test", EventID: d.GUID}
	}
	eventually(t, 35*time.Second, "issue 2's four events forwarded while issue 1's send is held", func() bool {
		for _, d := range twos {
			if s.statusOf(key(d)) != keys.StatusDone {
				return false
			}
		}
		return true
	})
	for _, d := range ones {
		require.NotEqual(t, keys.StatusDone, s.statusOf(key(d)), "issue 1 still waits for its held send")
	}
	unstall()
	eventually(t, 60*time.Second, "issue 1's events forwarded once the receiver answers", func() bool {
		for _, d := range ones {
			if s.statusOf(key(d)) != keys.StatusDone {
				return false
			}
		}
		return true
	})

	got := rcv.requests()
	require.Len(t, got, len(ones)+len(twos), "each event forwarded once")
	require.Zero(t, rcv.unverified)
	arrived := map[string][]string{}
	for _, r := range got {
		require.Equal(t, "issue", r.doc.Resource.Kind, "an issues or issue_comment event is about its issue")
		require.Equal(t, workspace, r.doc.Workspace)
		k, err := keys.ParseEvent(r.doc.EventKey)
		require.NoError(t, err)
		arrived[r.doc.Resource.ID] = append(arrived[r.doc.Resource.ID], k.EventID)
	}
	ids := func(ds []simulator.GitHubDelivery) (out []string) {
		for _, d := range ds {
			out = append(out, d.GUID)
		}
		return out
	}
	require.Equal(t, map[string][]string{first: ids(ones), second: ids(twos)}, arrived, "each issue's events arrive in the order they were delivered")
	require.Equal(t, map[string][]string{"issue/" + first: ids(ones), "issue/" + second: ids(twos)}, w.inboxOrder(t, "issue"),
		"the intake recorded each event on its issue, in delivery order")
	rcv.mu.Lock()
	require.Empty(t, rcv.overlapped, "one issue's forwards never overlap")
	rcv.mu.Unlock()
}
