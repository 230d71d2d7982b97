package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/github"
)

func objectsSim(t *testing.T) (*simulator.Simulator, string) {
	t.Helper()
	sim := simulator.New(simulator.Config{Seed: 4})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("acme", "widgets", simulator.GitHubIssues, 12),
		[]byte(`{"number":12,"state":"closed","title":"Fix the widget","updated_at":"2026-12-02T10:00:01Z"}`)))
	require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("acme", "widgets", simulator.GitHubPulls, 13),
		[]byte(`{"number":13,"state":"open","merged":false}`)))
	require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("acme", "widgets", simulator.GitHubCheckSuites, 99),
		[]byte(`{"id":99,"status":"completed","conclusion":"success"}`)))
	require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("acme", "widgets", simulator.GitHubRuns, 42),
		[]byte(`{"id":42,"status":"in_progress"}`)))
	return sim, api.URL
}

// TestFetchObjectsWithAToken: the current issue, pull request, check suite
// and workflow run, by the resource Normalize gives their events, with a
// fine-grained token; a wrong token, an unknown object, another kind.
func TestFetchObjectsWithAToken(t *testing.T) {
	t.Parallel()
	sim, url := objectsSim(t)
	ctx := context.Background()
	c, err := github.Provider{}.NewClient(providers.ClientConfig{APIKey: simulator.DefaultAPIKey, BaseURL: url})
	require.NoError(t, err)
	f := c.(providers.ObjectFetcher)
	for _, tt := range []struct{ kind, id, field, want string }{
		{github.KindIssue, "acme/widgets#12", "state", "closed"},
		{github.KindPullRequest, "acme/widgets#13", "state", "open"},
		{github.KindCheckSuite, "acme/widgets/99", "conclusion", "success"},
		{github.KindWorkflowRun, "acme/widgets/42", "status", "in_progress"},
	} {
		raw, err := f.FetchObject(ctx, "7", tt.kind, tt.id)
		require.NoError(t, err, tt.kind)
		require.Equal(t, tt.want, gjson.GetBytes(raw, tt.field).String(), tt.kind)
	}
	require.Equal(t, 4, sim.GitHubObjectReads())

	_, err = f.FetchObject(ctx, "7", github.KindIssue, "acme/widgets#404")
	require.ErrorIs(t, err, providers.ErrNotFound)
	_, err = f.FetchObject(ctx, "7", github.KindRelease, "acme/widgets/3")
	require.ErrorIs(t, err, providers.ErrPermanent)

	bad, err := github.Provider{}.NewClient(providers.ClientConfig{APIKey: "not-the-token", BaseURL: url})
	require.NoError(t, err)
	_, err = bad.(providers.ObjectFetcher).FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
	require.ErrorIs(t, err, providers.ErrPermanent, "401 will not change")
}

// TestFetchAsAnAppInstallation: with the App's id and its PEM private key,
// the client mints an installation token for the event's installation
// once, and reuses it.
func TestFetchAsAnAppInstallation(t *testing.T) {
	t.Parallel()
	sim, url := objectsSim(t)
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	c, err := github.Provider{}.NewClient(providers.ClientConfig{APIKey: pemKey, BaseURL: url,
		Settings: hookintype.EndpointSettings{GitHubAppID: simulator.DefaultGitHubAppID}})
	require.NoError(t, err)
	f := c.(providers.ObjectFetcher)
	for range 3 {
		raw, err := f.FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
		require.NoError(t, err)
		require.Equal(t, "closed", gjson.GetBytes(raw, "state").String())
	}
	require.Equal(t, 1, sim.GitHubTokensMinted())
	_, err = f.FetchObject(ctx, "acme", github.KindIssue, "acme/widgets#12")
	require.ErrorIs(t, err, providers.ErrPermanent, "an App fetches for an installation id")

	other, err := github.Provider{}.NewClient(providers.ClientConfig{APIKey: pemKey, BaseURL: url,
		Settings: hookintype.EndpointSettings{GitHubAppID: simulator.DefaultGitHubAppID + 1}})
	require.NoError(t, err)
	_, err = other.(providers.ObjectFetcher).FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
	require.ErrorIs(t, err, providers.ErrPermanent, "another App's JWT is refused")
}

// TestFetchWaitsForTheRateLimitReset: a 403 with X-RateLimit-Remaining 0
// is waited out until its reset, then asked once more; the client asks
// nothing in between, and a reset beyond the wait it may take is a
// retryable error carrying the wait.
func TestFetchWaitsForTheRateLimitReset(t *testing.T) {
	t.Parallel()
	sim, url := objectsSim(t)
	ctx := context.Background()
	c, err := github.NewClient(providers.ClientConfig{APIKey: simulator.DefaultAPIKey, BaseURL: url}, &http.Client{Timeout: 5 * time.Second})
	require.NoError(t, err)
	sim.LimitGitHubRate(1, time.Second)
	start := time.Now()
	raw, err := c.FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
	require.NoError(t, err)
	require.Equal(t, "closed", gjson.GetBytes(raw, "state").String())
	require.GreaterOrEqual(t, time.Since(start), time.Second, "waited for the reset")
	require.Equal(t, 1, sim.GitHubObjectReads())

	c.MaxRateLimitWait = time.Second
	sim.LimitGitHubRate(1, time.Hour)
	_, err = c.FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
	require.ErrorIs(t, err, providers.ErrRetryable)
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.True(t, pe.HasRetryAfter)
	require.Greater(t, pe.RetryAfter, 50*time.Minute)
	wait, limited := pe.RateLimitWait()
	require.True(t, limited, "the worker leaves the event pending until the reset, no attempt counted")
	require.Equal(t, pe.RetryAfter, wait)
	// go-github remembers the spent budget: the next fetch asks nothing.
	before := sim.Stats().API.Requests
	_, err = c.FetchObject(ctx, "7", github.KindIssue, "acme/widgets#12")
	require.ErrorIs(t, err, providers.ErrRetryable)
	require.Equal(t, before, sim.Stats().API.Requests, "no request spent before the reset")
}
