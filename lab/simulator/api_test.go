package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

type apiBundle struct {
	sim *simulator.Simulator
	srv *httptest.Server
}

func setupAPI(t *testing.T, cfg simulator.Config) apiBundle {
	t.Helper()
	sim := simulator.New(cfg)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return apiBundle{sim: sim, srv: srv}
}

type apiAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

func (b apiBundle) get(t *testing.T, path, key, account string) apiAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if account != "" {
		req.Header.Set("Stripe-Account", account)
	}
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(raw, &body), string(raw))
	return apiAnswer{status: resp.StatusCode, header: resp.Header, body: body}
}

func errorOf(a apiAnswer) map[string]any {
	e, _ := a.body["error"].(map[string]any)
	return e
}

func TestAPIAuthScopeAndErrors(t *testing.T) {
	t.Parallel()

	b := setupAPI(t, simulator.Config{Seed: 11, Connect: true})
	accts := b.sim.Accounts()
	inv, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1]})
	require.NoError(t, err)
	key := simulator.DefaultAPIKey

	tests := []struct {
		name    string
		path    string
		key     string
		account string
		status  int
		errType string
		code    string
	}{
		{name: "found", path: "/v1/invoices/" + inv.ID, key: key, account: accts[1], status: 200},
		{name: "wrong key", path: "/v1/invoices/" + inv.ID, key: "sk_test_wrong", account: accts[1], status: 401, errType: "invalid_request_error"},
		{name: "no key", path: "/v1/invoices/" + inv.ID, account: accts[1], status: 401, errType: "invalid_request_error"},
		{name: "unknown account", path: "/v1/invoices/" + inv.ID, key: key, account: "acct_nope", status: 403, errType: "invalid_request_error"},
		{name: "another account's invoice", path: "/v1/invoices/" + inv.ID, key: key, account: accts[0], status: 404, code: "resource_missing"},
		{name: "platform scope owns nothing", path: "/v1/invoices/" + inv.ID, key: key, status: 404, code: "resource_missing"},
		{name: "missing", path: "/v1/subscriptions/sub_nope", key: key, account: accts[1], status: 404, code: "resource_missing"},
		{name: "bad limit", path: "/v1/events?limit=1000", key: key, account: accts[1], status: 400, errType: "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := b.get(t, tt.path, tt.key, tt.account)
			require.Equal(t, tt.status, a.status)
			if tt.status == 200 {
				require.Equal(t, inv.ID, a.body["id"])
				require.Equal(t, "invoice", a.body["object"])
				return
			}
			e := errorOf(a)
			require.NotNil(t, e, "Stripe's error shape")
			require.NotEmpty(t, e["message"])
			if tt.errType != "" {
				require.Equal(t, tt.errType, e["type"])
			}
			if tt.code != "" {
				require.Equal(t, tt.code, e["code"])
			}
		})
	}
}

func TestAPIInjectedAndRandomFaults(t *testing.T) {
	t.Parallel()

	b := setupAPI(t, simulator.Config{Seed: 12})
	inv, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	path := "/v1/invoices/" + inv.ID
	key := simulator.DefaultAPIKey

	b.sim.InjectAPIFault(simulator.Fault{Path: path, Status: 429, RetryAfter: 7 * time.Second})
	b.sim.InjectAPIFault(simulator.Fault{Path: path, Status: 503, Times: 2})
	b.sim.InjectAPIFault(simulator.Fault{Path: "/v1/subscriptions", Status: 404})

	a := b.get(t, path, key, "")
	require.Equal(t, 429, a.status)
	require.Equal(t, "7", a.header.Get("Retry-After"))
	require.Equal(t, "rate_limit", errorOf(a)["code"])
	for range 2 {
		a = b.get(t, path, key, "")
		require.Equal(t, 503, a.status)
		require.Equal(t, "api_error", errorOf(a)["type"])
	}
	require.Equal(t, 200, b.get(t, path, key, "").status, "faults are used up")

	// Random faults at a rate of 1 always fire.
	r := setupAPI(t, simulator.Config{Seed: 12, API: simulator.APIKnobs{ForbiddenRate: 1}})
	a = r.get(t, "/v1/events", key, "")
	require.Equal(t, 403, a.status)
	require.Equal(t, 1, r.sim.Stats().API.Forbidden)
}

func TestAPIListsPageWithCursors(t *testing.T) {
	t.Parallel()

	b := setupAPI(t, simulator.Config{Seed: 13, Versions: true})
	var subIDs []string
	for range 5 {
		sub, _ := b.sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
		subIDs = append(subIDs, sub.ID)
	}
	_, err := b.sim.CancelSubscription(subIDs[0], false)
	require.NoError(t, err)
	key := simulator.DefaultAPIKey

	list := func(query string) (ids []string, more bool) {
		a := b.get(t, "/v1/subscriptions?"+query, key, "")
		require.Equal(t, 200, a.status)
		require.Equal(t, "list", a.body["object"])
		for _, d := range a.body["data"].([]any) {
			obj := d.(map[string]any)
			require.NotNil(t, obj["version"], "versions on: API answers carry them too")
			ids = append(ids, obj["id"].(string))
		}
		return ids, a.body["has_more"].(bool)
	}
	first, more := list("limit=2&status=all")
	require.True(t, more)
	require.Equal(t, []string{subIDs[4], subIDs[3]}, first, "newest first")
	second, more := list("limit=2&status=all&starting_after=" + first[1])
	require.True(t, more)
	third, more := list("limit=2&status=all&starting_after=" + second[1])
	require.False(t, more)
	require.Equal(t, []string{subIDs[0]}, third)

	active, _ := list("limit=100")
	require.NotContains(t, active, subIDs[0], "the default list leaves canceled out")
	require.Len(t, active, 4)

	// Events: 5 created + 1 deleted; filter by type and time.
	a := b.get(t, "/v1/events?limit=100&type=customer.subscription.deleted", key, "")
	require.Len(t, a.body["data"], 1)
	a = b.get(t, "/v1/events?limit=100&type=customer.subscription.*", key, "")
	require.Len(t, a.body["data"], 6)
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	a = b.get(t, "/v1/events?"+url.Values{"created[gte]": {future}}.Encode(), key, "")
	require.Empty(t, a.body["data"])
	a = b.get(t, "/v1/events?limit=4", key, "")
	require.True(t, a.body["has_more"].(bool))
	require.Len(t, a.body["data"], 4)
}

func postEmail(t *testing.T, srv *httptest.Server, key, to string) (int, map[string]any, error) {
	t.Helper()
	body := `{"from":"credits@hookinbox.test","to":"` + to + `","subject":"Credits","text":"100 credits"}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/emails", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

func TestEmailAPI(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		knobs      simulator.EmailKnobs
		loseFirst  bool
		wantEmails int
		wantPosts  int
		firstFails bool
	}{
		{name: "dedupes on the key", wantEmails: 1, wantPosts: 2},
		{name: "lost answer (closed) still recorded", loseFirst: true, firstFails: true, wantEmails: 1, wantPosts: 2},
		{name: "lost answer (5xx) still recorded", knobs: simulator.EmailKnobs{LoseMode: simulator.Lose5xx}, loseFirst: true, wantEmails: 1, wantPosts: 2},
		{name: "lost answer (timeout) still recorded", knobs: simulator.EmailKnobs{LoseMode: simulator.LoseTimeout}, loseFirst: true, firstFails: true, wantEmails: 1, wantPosts: 2},
		{name: "without idempotency every post is an email", knobs: simulator.EmailKnobs{NoIdempotency: true}, wantEmails: 2, wantPosts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupAPI(t, simulator.Config{Seed: 14, Email: tt.knobs})
			if tt.loseFirst {
				b.sim.LoseNextEmailAnswers(1)
			}
			status, first, err := postEmail(t, b.srv, "op-1:confirmation", "a@example.test")
			if tt.firstFails {
				require.Error(t, err, "the answer is lost")
			} else if tt.loseFirst {
				require.NoError(t, err)
				require.Equal(t, http.StatusBadGateway, status)
			} else {
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
			}
			status, second, err := postEmail(t, b.srv, "op-1:confirmation", "a@example.test")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)

			emails := b.sim.Emails()
			require.Len(t, emails, tt.wantEmails)
			require.Equal(t, tt.wantPosts, emails[0].Posts)
			require.Equal(t, emails[len(emails)-1].ID, second["id"])
			if !tt.knobs.NoIdempotency && first != nil && !tt.loseFirst {
				require.Equal(t, first["id"], second["id"], "the repeat returns the original result")
			}

			a := b.get(t, "/v1/emails", "", "")
			require.Len(t, a.body["data"], tt.wantEmails)
		})
	}
}

func TestEmailKeyReuseWithOtherContentConflicts(t *testing.T) {
	t.Parallel()

	b := setupAPI(t, simulator.Config{Seed: 15})
	status, _, err := postEmail(t, b.srv, "k", "a@example.test")
	require.NoError(t, err)
	require.Equal(t, 200, status)
	status, _, err = postEmail(t, b.srv, "k", "b@example.test")
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, status)
	require.Len(t, b.sim.Emails(), 1)
}

func TestTruthEndpoint(t *testing.T) {
	t.Parallel()

	b := setupAPI(t, simulator.Config{Seed: 16, Versions: true})
	plan := b.sim.Generate()
	require.NotEmpty(t, plan.Deliveries)
	resp, err := b.srv.Client().Get(b.srv.URL + "/_sim/truth")
	require.NoError(t, err)
	defer resp.Body.Close()
	var truth simulator.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&truth))
	require.Equal(t, b.sim.Truth().PaidInvoices, truth.PaidInvoices)
	require.Len(t, truth.Subscriptions, 3)
	require.Len(t, truth.DroppedEvents, len(b.sim.Events()), "nothing was sent yet")
	for _, s := range truth.Subscriptions {
		require.NotNil(t, s.Version)
	}
}
