package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers/github"
)

// simulate --github-slug: the hook's deliveries reach the target once
// each, signed with the hook's secret, except the dropped ones; the
// registration it prints is what 'hookinbox endpoints add' accepts.
func TestSimulateSendsGitHubDeliveriesOnceLessTheDropped(t *testing.T) {
	t.Parallel()
	require.NoError(t, github.Provider{}.CheckSecret(simDefaultGitHubSecret), "the default secret passes the operator's check")
	var mu sync.Mutex
	pushes := map[string]int{}
	intake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/webhooks/gh-sim" {
			mu.Lock()
			defer mu.Unlock()
			if r.Header.Get("X-GitHub-Event") != "push" || r.Header.Get("X-Hub-Signature-256") != simulator.SignGitHub(body, simDefaultGitHubSecret) {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			pushes[r.Header.Get("X-GitHub-Delivery")]++
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(intake.Close)

	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"simulate", "--listen", "127.0.0.1:0", "--target", intake.URL, "--exit", "--quiet",
		"--customers", "1", "--invoices", "1", "--updates", "0", "--feedback-slug", "",
		"--github-slug", "gh-sim", "--github-deliveries", "6", "--github-drops", "2", "--github-lose-answers", "1"})
	require.NoError(t, root.ExecuteContext(context.Background()), out.String())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, pushes, 4, "six deliveries, two dropped:\n%s", out.String())
	for guid, n := range pushes {
		require.Equal(t, 1, n, "delivery %s sent once (GitHub never retries)", guid)
	}
	for _, want := range []string{
		"hookinbox endpoints add --slug gh-sim --provider github --environment test --secret " + simDefaultGitHubSecret,
		"--github-hook repo:sim-owner/widgets --github-hook-id 1",
		"--allow-custom-api-host --api-key", // the simulator is not GitHub's API
		"hookinbox endpoints link --slug gh-sim --account sim-owner --workspace ws_sim-owner",
		"github: 6 deliveries to /webhooks/gh-sim, 2 dropped, 1 answers lost",
		`dropped, logged "failed to connect to host"`, `answer lost, logged "timed out"`,
	} {
		require.Contains(t, out.String(), want)
	}
}
