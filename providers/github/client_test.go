package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v72/github"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/github"
)

const hookSecret = "gh-hook-secret"

// received is a stand-in intake: it verifies each delivery with go-github
// and records the delivery ids it accepted.
type received struct {
	mu   sync.Mutex
	guid []string
	bad  int
}

func (rv *received) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, err := gogithub.ValidatePayload(r, []byte(hookSecret))
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if err != nil {
		rv.bad++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rv.guid = append(rv.guid, r.Header.Get("X-GitHub-Delivery"))
}

func (rv *received) ids() []string {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]string(nil), rv.guid...)
}

type bundle struct {
	sim    *simulator.Simulator
	api    *httptest.Server
	intake *received
	path   string
	client *github.HookClient
}

func setup(t *testing.T) bundle {
	t.Helper()
	sim := simulator.New(simulator.Config{Seed: 3})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	rv := &received{}
	intake := httptest.NewServer(rv)
	t.Cleanup(intake.Close)
	path := simulator.GitHubRepoHook("acme", "widgets", 7)
	sim.AddGitHubHook(path, simulator.Endpoint{URL: intake.URL, Secrets: []string{hookSecret}})
	c, err := github.NewHookClient(github.Hook{Scope: github.HookRepo, Owner: "acme", Repo: "widgets", ID: 7},
		simulator.DefaultAPIKey, api.URL, &http.Client{Timeout: 2 * time.Second})
	require.NoError(t, err)
	return bundle{sim: sim, api: api, intake: rv, path: path, client: c}
}

func push(n int) []byte {
	return fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"acme/widgets","owner":{"login":"acme"}}}`, n)
}

func TestHookDeliveriesListPagesNewestFirstAndRedeliverResendsSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var all []simulator.GitHubDelivery
	for i := range 5 {
		d, err := b.sim.GitHubDeliver(ctx, b.path, "push", push(i), i == 1 || i == 3)
		require.NoError(t, err)
		all = append(all, d)
	}
	require.Equal(t, []string{all[0].GUID, all[2].GUID, all[4].GUID}, b.intake.ids(), "failed deliveries never reach the intake")

	var listed []providers.HookDelivery
	q := providers.ListQuery{Limit: 2}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		page, err := b.client.ListDeliveries(ctx, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), 2)
		listed = append(listed, page.Items...)
		if !page.HasMore {
			break
		}
		q.Cursor = page.NextCursor
	}
	require.Len(t, listed, 5)
	for i, d := range listed {
		want := all[len(all)-1-i]
		require.Equal(t, want.GUID, d.GUID)
		require.Equal(t, want.ID, d.ID)
		require.Equal(t, "push", d.Event)
		require.Equal(t, want.StatusCode == 200, d.OK(), d.Status)
	}

	req, err := b.client.GetDelivery(ctx, all[1].ID)
	require.NoError(t, err)
	require.Equal(t, all[1].GUID, req.Header.Get("X-GitHub-Delivery"))
	require.Equal(t, "push", req.Header.Get("X-GitHub-Event"))
	require.JSONEq(t, string(push(1)), string(req.Payload))

	require.NoError(t, b.client.Redeliver(ctx, all[1].ID), "202 Accepted is success")
	require.Equal(t, []string{all[0].GUID, all[2].GUID, all[4].GUID, all[1].GUID}, b.intake.ids())
	require.Zero(t, b.intake.bad, "the redelivery carries a valid signature")
	log := b.sim.GitHubDeliveries(b.path)
	last := log[len(log)-1]
	require.True(t, last.Redelivery)
	require.Equal(t, all[1].GUID, last.GUID)
	require.Equal(t, 200, last.StatusCode)
}

func TestHookClientErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	d, err := b.sim.GitHubDeliver(ctx, b.path, "push", push(0), true)
	require.NoError(t, err)

	_, err = b.client.GetDelivery(ctx, 99)
	require.True(t, providers.IsNotFound(err), "%v", err)

	b.sim.InjectAPIFault(simulator.Fault{Path: "/repos/acme/widgets/hooks/7/deliveries", Status: 429, RetryAfter: 7 * time.Second})
	_, err = b.client.ListDeliveries(ctx, providers.ListQuery{})
	require.True(t, providers.IsRetryable(err), "%v", err)
	after, ok := providers.RetryAfter(err)
	require.True(t, ok)
	require.Equal(t, 7*time.Second, after)

	b.sim.InjectAPIFault(simulator.Fault{Path: "/repos/acme/widgets/hooks/7/deliveries", Status: 503})
	err = b.client.Redeliver(ctx, d.ID)
	require.True(t, providers.IsRetryable(err), "%v", err)

	b.sim.InjectAPIFault(simulator.Fault{Path: "/repos/acme/widgets/hooks/7/deliveries", Status: 403})
	_, err = b.client.ListDeliveries(ctx, providers.ListQuery{})
	require.True(t, providers.IsPermanent(err), "%v", err)

	bad, err := github.NewHookClient(github.Hook{Scope: github.HookRepo, Owner: "acme", Repo: "widgets", ID: 7}, "wrong", b.api.URL, nil)
	require.NoError(t, err)
	_, err = bad.ListDeliveries(ctx, providers.ListQuery{})
	require.True(t, providers.IsPermanent(err), "401 is permanent: %v", err)

	other, err := github.NewHookClient(github.Hook{Scope: github.HookOrg, Org: "acme", ID: 8}, simulator.DefaultAPIKey, b.api.URL, nil)
	require.NoError(t, err)
	_, err = other.ListDeliveries(ctx, providers.ListQuery{})
	require.True(t, providers.IsNotFound(err), "an unknown hook: %v", err)

	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "not json")
	}))
	t.Cleanup(dead.Close)
	junk, err := github.NewHookClient(github.Hook{Scope: github.HookRepo, Owner: "acme", Repo: "widgets", ID: 7}, "k", dead.URL, nil)
	require.NoError(t, err)
	_, err = junk.ListDeliveries(ctx, providers.ListQuery{})
	require.True(t, providers.IsPermanent(err), "a malformed answer: %v", err)
}

func TestAppHookAuthenticatesWithAJWT(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Config{Seed: 4})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	sim.AddGitHubHook(simulator.GitHubAppHook, simulator.Endpoint{URL: "http://127.0.0.1:1/unused", Secrets: []string{hookSecret}})
	d, err := sim.GitHubDeliver(context.Background(), simulator.GitHubAppHook, "installation", []byte(`{"action":"created","installation":{"id":5}}`), true)
	require.NoError(t, err)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	p := github.Provider{}
	cfg := providers.ClientConfig{APIKey: pemKey, BaseURL: api.URL,
		Settings: hookintype.EndpointSettings{GitHubHook: "app", GitHubAppID: simulator.DefaultGitHubAppID}}
	c, err := p.NewHookClient(cfg)
	require.NoError(t, err)
	page, err := c.ListDeliveries(context.Background(), providers.ListQuery{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, d.GUID, page.Items[0].GUID)
	require.Equal(t, "created", page.Items[0].Action)

	cfg.Settings.GitHubAppID = 1
	wrong, err := p.NewHookClient(cfg)
	require.NoError(t, err)
	_, err = wrong.ListDeliveries(context.Background(), providers.ListQuery{})
	require.True(t, providers.IsPermanent(err), "another App's JWT: %v", err)

	_, err = p.NewHookClient(providers.ClientConfig{APIKey: "not a pem", Settings: cfg.Settings})
	require.Error(t, err)
}

func TestHookFromSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    hookintype.EndpointSettings
		want string
		ok   bool
		err  bool
	}{
		{s: hookintype.EndpointSettings{}, ok: false},
		{s: hookintype.EndpointSettings{GitHubHook: "repo:acme/widgets", GitHubHookID: 7}, want: "repo:acme/widgets#7", ok: true},
		{s: hookintype.EndpointSettings{GitHubHook: "org:acme", GitHubHookID: 8}, want: "org:acme#8", ok: true},
		{s: hookintype.EndpointSettings{GitHubHook: "app", GitHubAppID: 9}, want: "app:9", ok: true},
		{s: hookintype.EndpointSettings{GitHubHook: "repo:acme", GitHubHookID: 7}, ok: true, err: true},
		{s: hookintype.EndpointSettings{GitHubHook: "repo:acme/widgets"}, ok: true, err: true},
		{s: hookintype.EndpointSettings{GitHubHook: "org:acme/x", GitHubHookID: 1}, ok: true, err: true},
		{s: hookintype.EndpointSettings{GitHubHook: "app"}, ok: true, err: true},
		{s: hookintype.EndpointSettings{GitHubHook: "user:me", GitHubHookID: 1}, ok: true, err: true},
	} {
		h, ok, err := github.HookFromSettings(tt.s)
		require.Equal(t, tt.ok, ok, tt.s.GitHubHook)
		if tt.err {
			require.Error(t, err, tt.s.GitHubHook)
			continue
		}
		require.NoError(t, err)
		if ok {
			require.Equal(t, tt.want, h.String())
		}
	}
	_, err := github.RecoveryMode(hookintype.EndpointSettings{GitHubRecovery: "poll"})
	require.Error(t, err)
	m, err := github.RecoveryMode(hookintype.EndpointSettings{})
	require.NoError(t, err)
	require.Equal(t, github.RecoverRedeliver, m)
}
