package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

// TestGitHubHookLogsEveryAttemptAndRedeliversTheSameDelivery: a dropped
// delivery never reaches the target; a lost answer reaches it but is logged
// as a timeout; a redelivery re-sends the same delivery id and bytes with a
// valid signature as a new attempt; failed redeliveries are logged too.
func TestGitHubHookLogsEveryAttemptAndRedeliversTheSameDelivery(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		entry := r.Header.Get("X-GitHub-Delivery") + " " + string(body)
		if simulator.SignGitHub(body, "s") != r.Header.Get("X-Hub-Signature-256") {
			entry = "bad signature: " + entry
		}
		mu.Lock()
		got = append(got, entry)
		mu.Unlock()
	}))
	t.Cleanup(target.Close)
	b := setupAPI(t, simulator.Config{Seed: 9})
	hook := simulator.GitHubOrgHook("acme", 3)
	b.sim.AddGitHubHook(hook, simulator.Endpoint{URL: target.URL, Secrets: []string{"s"}})
	ctx := context.Background()
	dropped, err := b.sim.GitHubDeliver(ctx, hook, "issues", []byte(`{"action":"opened"}`), true)
	require.NoError(t, err)
	b.sim.LoseNextGitHubAnswers(1)
	late, err := b.sim.GitHubDeliver(ctx, hook, "issues", []byte(`{"action":"closed"}`), false)
	require.NoError(t, err)
	require.Equal(t, 0, late.StatusCode)
	require.Equal(t, "timed out", late.Status)
	require.Equal(t, 0, dropped.StatusCode)
	require.False(t, dropped.Sent)
	require.Equal(t, []string{late.GUID + ` {"action":"closed"}`}, got)
	require.NotEqual(t, dropped.GUID, late.GUID)

	redeliver := func(id int64, key string) int {
		req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/orgs/acme/hooks/3/deliveries/"+itoa(id)+"/attempts", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, redeliver(dropped.ID, "wrong"))
	require.Equal(t, http.StatusNotFound, redeliver(424242, simulator.DefaultAPIKey))
	b.sim.FailNextGitHubRedeliveries(1)
	require.Equal(t, http.StatusAccepted, redeliver(dropped.ID, simulator.DefaultAPIKey))
	require.Len(t, got, 1, "the failed redelivery did not reach the target")
	require.Equal(t, http.StatusAccepted, redeliver(dropped.ID, simulator.DefaultAPIKey))
	require.Equal(t, dropped.GUID+` {"action":"opened"}`, got[1])
	require.Equal(t, 2, b.sim.GitHubRedeliveries())

	log := b.sim.GitHubDeliveries(hook)
	require.Len(t, log, 4)
	require.True(t, log[2].Redelivery)
	require.Equal(t, 0, log[2].StatusCode)
	require.True(t, log[3].Redelivery)
	require.Equal(t, 200, log[3].StatusCode)
	require.Equal(t, dropped.GUID, log[3].GUID)

	// The list is newest first, with a cursor in the Link header.
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/orgs/acme/hooks/3/deliveries?per_page=3", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+simulator.DefaultAPIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var page []simulator.GitHubDelivery
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	require.Len(t, page, 3)
	require.Equal(t, log[3].ID, page[0].ID)
	require.Contains(t, resp.Header.Get("Link"), `cursor=v1_`+itoa(page[2].ID))
	require.Contains(t, resp.Header.Get("Link"), `rel="next"`)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
