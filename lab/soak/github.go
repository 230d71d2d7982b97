package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/verify"
)

// The soak's GitHub part (issue 33): a repository's issues, each with a
// few issues events delivered one after another over the whole send (so an
// upgrade finds some of them pending under the old release's rule, where
// the repository was the resource, and newer ones arrive under this
// build's, where the issue is), forwarded by a route to the forward
// receiver. GitHub never retries: a delivery the relay could not hand to a
// live intake is redelivered, as an operator does from the hook's page
// (the recover-github schedule is not what is under test here).
const (
	slugGitHub         = "soak-github"
	githubInstallation = "4242"
	githubOwner        = "soak-org"
	githubRepo         = "monorepo"
	githubRoute        = "soak-issues"
	// githubIssues × githubActions events in all.
	githubIssues = 6
)

var (
	secretGitHub  = "soak-github-hook-secret-Pq3Xw8Lm2Zc7Rv5Tn0By"
	githubActions = []string{"opened", "edited", "labeled", "edited", "closed", "reopened", "edited"}
	githubHook    = simulator.GitHubRepoHook(githubOwner, githubRepo, 1)
)

// githubRouteArgs adds the route (plain: one document per event, as the
// previous release has it in an upgrade run).
func githubRouteArgs(url string) []string {
	return []string{"routes", "add", "--name", githubRoute, "--provider", "github", "--event-type", "issues.*",
		"--forward", url + "/issues", "--secret-env", "SOAK_SECRET_FORWARD", "--allow-private", "--retry-budget", "60", "--timeout", "5s"}
}

// githubCoalesceArgs makes the route coalescing (Options.Coalesce): each
// send fetches the issue from the simulator's GitHub, and a run of an
// issue's pending events goes as one document.
func githubCoalesceArgs() []string {
	return []string{"routes", "update", githubRoute, "--fetch-current", "--coalesce", "--coalesce-max", "4", "--reason", "soak: coalesce"}
}

// githubCLI registers the hook's endpoint with the versions simulator's
// API as its GitHub (the issues a coalescing route fetches).
func githubCLI(apiV string) [][]string {
	return [][]string{
		{"endpoints", "add", "--slug", slugGitHub, "--provider", "github", "--environment", "test", "--secret-env", "SOAK_SECRET_GITHUB",
			"--api-base-url", apiV, "--allow-custom-api-host", "--api-key-env", "SOAK_API_KEY"},
		{"endpoints", "link", "--slug", slugGitHub, "--account", githubInstallation, "--workspace", wsVersions},
	}
}

func (h *harness) registerGitHub(ctx context.Context, apiV string) error {
	if err := endpoints.InsertEndpoint(ctx, h.st, endpoints.NewEndpoint{Slug: slugGitHub, Provider: keys.ProviderGitHub, Environment: "test",
		Secrets: []string{secretGitHub}, APIBaseURL: apiV, APIKey: simulator.DefaultAPIKey}); err != nil {
		return err
	}
	return endpoints.LinkAccount(ctx, h.st, slugGitHub, githubInstallation, wsVersions)
}

// githubIssueJSON is issue n as GitHub serves it after its i-th action.
func githubIssueJSON(n, i int, action string) string {
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	return fmt.Sprintf(`{"number":%d,"title":"soak issue %d","state":%q,"updated_at":"2026-12-03T08:%02d:%02dZ"}`, n, n, state, n, i)
}

// githubIssue is OWNER/REPO#N, the resource this build gives issue n's events.
func githubIssue(n int) string { return fmt.Sprintf("%s/%s#%d", githubOwner, githubRepo, n) }

// sendGitHub delivers every issue's events, the issues side by side, each
// issue's one after another spread over over, and returns each issue's
// delivery ids in the order they reached an intake.
func (h *harness) sendGitHub(ctx context.Context, over time.Duration) (map[string][]string, error) {
	gap := over / time.Duration(len(githubActions))
	var mu sync.Mutex
	delivered := map[string][]string{}
	errs := make(chan error, githubIssues)
	var wg sync.WaitGroup
	for n := 1; n <= githubIssues; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, action := range githubActions {
				issue := githubIssueJSON(n, i, action)
				body := fmt.Appendf(nil, `{"action":%q,"issue":%s,`+
					`"repository":{"full_name":"%s/%s","owner":{"login":%q}},"installation":{"id":%s},"sender":{"login":"octocat"}}`,
					action, issue, githubOwner, githubRepo, githubOwner, githubInstallation)
				// The issue changes at GitHub, then the hook tells of it.
				if err := h.simV.SetGitHubObject(simulator.GitHubObjectPath(githubOwner, githubRepo, simulator.GitHubIssues, int64(n)), json.RawMessage(issue)); err != nil {
					errs <- err
					return
				}
				d, err := h.simV.GitHubDeliver(ctx, githubHook, "issues", body, false)
				for tries := 0; err == nil && d.StatusCode/100 != 2; tries++ {
					if tries == 200 {
						err = fmt.Errorf("github delivery %s of %s: no intake took it in 200 redeliveries (last %q)", d.GUID, githubIssue(n), d.Status)
						break
					}
					select {
					case <-ctx.Done():
						err = ctx.Err()
					case <-time.After(500 * time.Millisecond):
						d, err = h.simV.GitHubRedeliver(ctx, githubHook, d.GUID)
						h.githubRedeliveries.Add(1)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				delivered[githubIssue(n)] = append(delivered[githubIssue(n)], d.GUID)
				mu.Unlock()
				select {
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				case <-time.After(gap):
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return delivered, <-errs
}

// githubCheck is the verify input of the GitHub part. A coalescing route's
// documents carry the fetched issue: the last one the receiver applied for
// each issue must be the issue's final state (every issue's, unless the
// route became coalescing only at the upgrade).
func (h *harness) githubCheck(delivered map[string][]string, applied []verify.Applied) *verify.GitHubIssues {
	in := &verify.GitHubIssues{Route: githubRoute, Delivered: delivered, Applied: applied}
	if !h.o.Coalesce {
		return in
	}
	in.Final, in.Current = map[string]string{}, map[string]string{}
	in.EveryCurrent = h.o.UpgradeFrom == ""
	last := len(githubActions) - 1
	for n := 1; n <= githubIssues; n++ {
		in.Final[githubIssue(n)] = gjson.Get(githubIssueJSON(n, last, githubActions[last]), "updated_at").String()
	}
	for id, cur := range h.forward.LastCurrent() {
		in.Current[id] = gjson.GetBytes(cur, "updated_at").String()
	}
	return in
}
