package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testLog writes the console's errors to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type nopBell struct{}

func (nopBell) Ring(context.Context, keys.Resource, string, string) error { return nil }

const payloadMarker = "4242-CARD-IN-PAYLOAD"

type bundle struct {
	t      *testing.T
	ctx    context.Context
	st     *store.Store
	url    string
	tokens map[string]string // role → token
	event  keys.Event
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st := testenv.Store(t) // the schema owner: fixtures and checks
	ctx := context.Background()
	cfg := config.Default()
	// The console as it runs: as hookinbox_console, payloads read as
	// hookinbox_payload_reader. Every act the tests make proves its grants.
	dbURL := st.Pool.Config().ConnString()
	con, err := store.Open(ctx, testenv.RoleURL(t, dbURL, store.RoleConsole), 8)
	require.NoError(t, err)
	con.Keys = st.Keys
	t.Cleanup(con.Close)
	payloads, err := store.Open(ctx, testenv.RoleURL(t, dbURL, store.RolePayloadReader), 2)
	require.NoError(t, err)
	t.Cleanup(payloads.Close)
	svc := &ops.Service{Store: con, Payloads: payloads, Routes: routestest.Builtin(), Handled: routestest.Builtin(), Doorbell: nopBell{}, Config: cfg,
		SignalTimeout: time.Second}
	srv, err := console.New(console.Options{Ops: svc, Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	b := &bundle{t: t, ctx: ctx, st: st, url: hs.URL, tokens: map[string]string{}}
	for _, role := range ops.Roles {
		nt, err := (&ops.Service{Store: st}).CreateToken(ctx, ops.Actor{Name: "setup"}, role+"-token", role) // the CLI's, as the owner
		require.NoError(t, err)
		b.tokens[role] = nt.Token
	}
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "test",
		Account: "acct_1", APIKey: "sk_test_APIKEYVALUE", Secrets: []string{"whsec_SIGNINGSECRET"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "stripe", "acct_1", "ws_1"))
	body := []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","note":"` + payloadMarker + `"}}}`)
	sum := sha256.Sum256(body)
	b.event = keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: "evt_1"}
	_, err = inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: b.event, EndpointSlug: "stripe", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_1", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	_, err = inbox.StopInboxEvent(ctx, st.Pool, b.event, keys.StatusExhausted, "stripe API 503")
	require.NoError(t, err)
	return b
}

// call makes an API request as role ("" for none) and returns the status
// and body.
func (b *bundle) call(role, method, path string, body any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			raw, err := json.Marshal(body)
			require.NoError(b.t, err)
			rd = strings.NewReader(string(raw))
		}
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	require.NoError(b.t, err)
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+b.tokens[role])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(raw)
}

var loginCSRF = regexp.MustCompile(`name="login_csrf" value="([0-9a-f]+)"`)

// webLogin signs in to the console as role's token, as a browser does (the
// login form's pre-session token, then the session cookie), and returns
// the client and the page next led to.
func (b *bundle) webLogin(role, next string) (*http.Client, string) {
	b.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(b.url + "/login")
	require.NoError(b.t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pre := loginCSRF.FindStringSubmatch(string(page))
	require.Len(b.t, pre, 2, "the login form carries its pre-session token")
	resp, err = c.PostForm(b.url+"/login", url.Values{"token": {b.tokens[role]}, "next": {next}, "login_csrf": {pre[1]}})
	require.NoError(b.t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(b.t, http.StatusOK, resp.StatusCode)
	return c, string(raw)
}

func (b *bundle) count(sql string) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.st.Pool.QueryRow(b.ctx, sql).Scan(&n))
	return n
}

// A viewer reads but cannot replay or read payloads; an operator can both
// but cannot manage endpoints; endpoint management is admin-only and
// audited under the admin token's name.
func TestRolesGateEveryActAndAdminActsAreAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := "/api/events/" + url.PathEscape(b.event.String())

	code, _ := b.call("", "GET", "/api/inbox", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	req, _ := http.NewRequest("GET", b.url+"/api/inbox", nil)
	req.Header.Set("Authorization", "Bearer hki_not-a-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	code, body := b.call("viewer", "GET", "/api/inbox?status=exhausted", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, b.event.String())
	require.NotContains(t, body, payloadMarker)

	code, body = b.call("viewer", "GET", ev, nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, payloadMarker)
	require.Contains(t, body, "stripe API 503")
	code, body = b.call("viewer", "GET", ev+"?payload=true", nil)
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, body, payloadMarker)
	code, body = b.call("operator", "GET", ev+"?payload=true", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, payloadMarker)

	replay := map[string]any{"key": b.event.String(), "reason": "provider back"}
	code, body = b.call("viewer", "POST", "/api/replay", replay)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "operator role")
	require.Zero(t, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'replay'`))
	code, body = b.call("viewer", "POST", "/api/replays", map[string]any{"filter": map[string]any{"status": []string{"exhausted"}}, "reason": "x"})
	require.Equal(t, http.StatusForbidden, code, body)
	require.Zero(t, b.count(`SELECT count(*) FROM replay_jobs`))

	code, body = b.call("operator", "POST", "/api/replay", replay)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"replayed": 1`)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'replay' AND actor = 'operator-token'`),
		"audited under the token's name")

	newEndpoint := map[string]any{"slug": "gh", "provider": "github", "environment": "live", "secrets": []string{"ghsecret-ONE-k2oBvwfyqY1Ad5ATpJwQLSYz1f5"},
		"api_key": "ghp_APIKEYTWO", "api_base_url": "https://api.github.com", "reason": "onboarding"}
	for _, role := range []string{"viewer", "operator"} {
		code, body = b.call(role, "POST", "/api/endpoints", newEndpoint)
		require.Equal(t, http.StatusForbidden, code, body)
		code, _ = b.call(role, "PATCH", "/api/endpoints/stripe", map[string]any{"api_base_url": "https://evil.example"})
		require.Equal(t, http.StatusForbidden, code)
		code, _ = b.call(role, "POST", "/api/endpoints/stripe/secrets", map[string]any{"secret": "whsec_NEW"})
		require.Equal(t, http.StatusForbidden, code)
	}
	require.Equal(t, 1, b.count(`SELECT count(*) FROM endpoints`), "nothing stored")

	code, body = b.call("admin", "POST", "/api/endpoints", newEndpoint)
	require.Equal(t, http.StatusCreated, code, body)
	code, body2 := b.call("admin", "PATCH", "/api/endpoints/stripe", map[string]any{"api_key": "sk_test_ROTATEDKEY", "reason": "rotated"})
	require.Equal(t, http.StatusOK, code, body2)
	code, body3 := b.call("admin", "POST", "/api/endpoints/stripe/secrets", map[string]any{"secret": "whsec_ROTATEDSECRETk2oBvwfyqY1Ad5ATpJwQ", "retire_others": true})
	require.Equal(t, http.StatusCreated, code, body3)
	code, list := b.call("viewer", "GET", "/api/endpoints", nil)
	require.Equal(t, http.StatusOK, code)
	code, audit := b.call("viewer", "GET", "/api/audit?actor=admin-token", nil)
	require.Equal(t, http.StatusOK, code)
	var acts []ops.AuditEntry
	require.NoError(t, json.Unmarshal([]byte(audit), &acts))
	var actions []string
	for _, a := range acts {
		actions = append(actions, a.Action)
	}
	require.Equal(t, []string{"endpoint_secret_add", "endpoint_update", "endpoint_add"}, actions)
	for _, out := range []string{body, body2, body3, list, audit} {
		for _, secret := range []string{"ONE", "APIKEYTWO", "APIKEYVALUE", "SIGNINGSECRET", "ROTATEDKEY", "ROTATEDSECRET"} {
			require.NotContains(t, out, secret, "no secret in any answer")
		}
	}
	require.Contains(t, list, ops.APIKeyFingerprint(b.st.Keys, "sk_test_ROTATEDKEY"), "the API key shows as its fingerprint")
}

// Bad input is answered 400 with a message, and nothing is stored.
func TestBadInputIsAnsweredClearlyAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		role, method, path string
		body               any
		want               string
	}{
		{"viewer", "GET", "/api/inbox?status=lost", nil, "status must be one of"},
		{"viewer", "GET", "/api/inbox?since=yesterday", nil, "not a duration"},
		{"viewer", "GET", "/api/inbox?limit=many", nil, "whole number"},
		{"viewer", "GET", "/api/inbox?cursor=zzz", nil, "cursor"},
		{"viewer", "GET", "/api/events/not-a-key", nil, "event key must be"},
		{"viewer", "GET", "/api/replays/abc", nil, "positive whole number"},
		{"viewer", "GET", "/api/explain/invoice/in_1", nil, "kind must be one of"},
		{"operator", "POST", "/api/replay", `{"key": "stripe/acct_1/test/evt_1"}`, "reason"},
		{"operator", "POST", "/api/replay", `{"key": "stripe/acct_1/test/evt_1", "reason": "x", "extra": 1}`, "unknown field"},
		{"operator", "POST", "/api/replay", `not json`, "JSON object"},
		{"operator", "POST", "/api/replays", `{"filter": {}, "reason": "x"}`, "at least one filter"},
		{"operator", "POST", "/api/replays", `{"filter": {"status": ["done"]}, "reason": "x"}`, "force"},
		{"operator", "POST", "/api/replays", `{"filter": {"status": ["exhausted"]}, "reason": "x", "limit": 99999}`, "at most"},
		{"operator", "POST", "/api/quarantine/resolve", `{"ids": [], "action": "discard", "reason": "x"}`, "quarantine ids"},
		{"operator", "POST", "/api/quarantine/resolve", `{"ids": [1], "action": "delete", "reason": "x"}`, "readmit or discard"},
		{"operator", "POST", "/api/outbox/1/release", `{"reason": ""}`, "reason"},
		{"admin", "POST", "/api/endpoints", map[string]any{"slug": "Bad Slug", "provider": "stripe", "environment": "test", "secrets": []string{"whsec_a"}}, "slug must be"},
		{"admin", "POST", "/api/endpoints", map[string]any{"slug": "x", "provider": "paypal", "environment": "test", "secrets": []string{"whsec_a"}}, "provider must be"},
		{"admin", "POST", "/api/endpoints", map[string]any{"slug": "x", "provider": "stripe", "environment": "test"}, "secret is required"},
		{"admin", "PATCH", "/api/endpoints/stripe", map[string]any{"api_base_url": "javascript:alert(1)"}, "http(s) URL"},
		{"admin", "PATCH", "/api/endpoints/stripe", `{}`, "nothing to change"},
		{"admin", "PUT", "/api/workspaces/ws_1/email", map[string]any{"email": "not an address"}, "email"},
	}
	for _, tt := range tests {
		code, body := b.call(tt.role, tt.method, tt.path, tt.body)
		require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", tt.method, tt.path, body)
		var e map[string]string
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		require.Contains(t, e["error"], tt.want, "%s %s", tt.method, tt.path)
		require.NotContains(t, body, "SIGNINGSECRET")
	}
	require.Zero(t, b.count(`SELECT count(*) FROM replay_jobs`))
	require.Equal(t, 1, b.count(`SELECT count(*) FROM endpoints`))
	require.Zero(t, b.count(`SELECT count(*) FROM operator_actions WHERE actor <> 'setup'`))
	require.Equal(t, keys.StatusExhausted, func() string {
		e, err := inbox.GetInboxEvent(b.ctx, b.st.Pool, b.event)
		require.NoError(t, err)
		return e.Status
	}())

	code, body := b.call("viewer", "GET", "/api/events/"+url.PathEscape("stripe/acct_1/test/evt_nope"), nil)
	require.Equal(t, http.StatusNotFound, code, body)
}

func TestOpenAPIDocumentsEveryRouteWithItsLeastRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.call("", "GET", "/api/openapi.json", nil)
	require.Equal(t, http.StatusOK, code)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Equal(t, "3.0.3", doc.OpenAPI)
	want := map[string]string{
		"get /api/inbox": "viewer", "get /api/events/{key}": "viewer", "post /api/replay": "operator",
		"post /api/replays": "operator", "post /api/replays/{id}/cancel": "operator", "post /api/quarantine/resolve": "operator",
		"post /api/outbox/{id}/release": "operator", "post /api/endpoints": "admin", "patch /api/endpoints/{slug}": "admin",
		"post /api/endpoints/{slug}/secrets": "admin", "get /api/explain/{kind}/{ref}": "viewer", "get /api/openapi.json": "public",
		"post /api/workspaces/{id}/adjustments": "admin", "post /api/workspaces/{id}/erase": "admin",
		"put /api/endpoints/{slug}/account": "admin", "post /api/secrets/reseal": "admin",
	}
	n := 0
	for p, ops := range doc.Paths {
		for m, op := range ops {
			n++
			role, ok := op["x-hookinbox-role"].(string)
			require.True(t, ok, "%s %s has a role", m, p)
			if w, ok := want[m+" "+p]; ok {
				require.Equal(t, w, role, "%s %s", m, p)
				delete(want, m+" "+p)
			}
		}
	}
	require.Empty(t, want, "documented")
	require.GreaterOrEqual(t, n, 38)
}

// The console signs in with a token (an HttpOnly cookie), refuses forms
// without the session's CSRF field, and hides nothing behind buttons: a
// viewer's forged replay form is refused by role.
func TestConsoleLoginCookieCSRFAndRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	login := func(role string) *http.Client {
		c, page := b.webLogin(role, "/inbox?workspace=ws_1")
		require.Contains(t, page, b.event.String(), "redirected to the inbox search")
		return c
	}
	get := func(c *http.Client, path string) (int, string) {
		resp, err := c.Get(b.url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	csrfRe := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(b.url + "/inbox")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/login")

	resp, err = http.PostForm(b.url+"/login", url.Values{"token": {"hki_wrong"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no pre-session token: a form from another site")

	op := login("operator")
	code, page := get(op, "/events/"+url.PathEscape(b.event.String()))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `id="replay"`)
	require.Contains(t, page, "resource/stripe/acct_1/test/invoice/in_1")
	require.Contains(t, page, "http://127.0.0.1:8233/namespaces/default/workflows/resource%2Fstripe", "links the workflow in the Temporal UI")
	require.NotContains(t, page, payloadMarker)
	m := csrfRe.FindStringSubmatch(page)
	require.Len(t, m, 2)

	form := url.Values{"key": {b.event.String()}, "reason": {"from the console"}}
	resp, err = op.PostForm(b.url+"/replay", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF field")
	form.Set("csrf", m[1])
	resp, err = op.PostForm(b.url+"/replay", form)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), "Replayed")

	v := login("viewer")
	code, page = get(v, "/events/"+url.PathEscape(b.event.String()))
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, page, `id="replay"`, "a viewer sees no replay button")
	require.NotContains(t, page, `id="show-payload"`)
	code, _ = get(v, "/events/"+url.PathEscape(b.event.String())+"?payload=true")
	require.Equal(t, http.StatusForbidden, code)
	vm := csrfRe.FindStringSubmatch(page)
	require.Len(t, vm, 2)
	form.Set("csrf", vm[1])
	resp, err = v.PostForm(b.url+"/replay", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a viewer's forged form is refused by role")

	// The API does not change state on the console's cookie (CSRF).
	resp, err = op.Post(b.url+"/api/replay", "application/json", strings.NewReader(`{"key":"`+b.event.String()+`","reason":"x"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'replay'`))
}

// The API binds secrets to accounts and refuses weak ones, as the CLI does
// (both through ops): only an admin may, and a weak secret stores nothing.
func TestSecretBindingAndWeakSecretsThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.call("admin", "POST", "/api/endpoints/stripe/secrets", map[string]any{"secret": "whsec_short"})
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM endpoint_secrets`), "nothing stored")

	code, body = b.call("admin", "POST", "/api/endpoints/stripe/secrets",
		map[string]any{"secret": "whsec_BOUNDk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS", "accounts": []string{"acct_1"}})
	require.Equal(t, http.StatusCreated, code, body)
	var added ops.SecretAdded
	require.NoError(t, json.Unmarshal([]byte(body), &added))
	path := "/api/endpoints/stripe/secrets/" + strconv.FormatInt(added.ID, 10) + "/accounts"
	for _, role := range []string{"viewer", "operator"} {
		code, _ = b.call(role, "PUT", path, map[string]any{"accounts": []string{"acct_2"}})
		require.Equal(t, http.StatusForbidden, code)
	}
	code, body = b.call("admin", "PUT", path, map[string]any{"accounts": []string{"acct_1", "acct_2"}, "reason": "two accounts"})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"acct_2"`)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM endpoint_secrets WHERE accounts = '{acct_1,acct_2}'`))
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'endpoint_secret_bind'`))
}

// GET /api/status gives the oldest pending age in seconds, with the unit
// in the field's name; the nanoseconds it gave before stay one release
// under the old name, marked deprecated in the OpenAPI document.
func TestStatusGivesAgesInSecondsAndTheOpenAPIDocumentDeprecatesTheNanoseconds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	late := keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: "evt_late"}
	body := []byte(`{"id":"evt_late"}`)
	sum := sha256.Sum256(body)
	_, err := inbox.InsertInboxEvent(b.ctx, b.st.Pool, &inbox.InboxEvent{Key: late, EndpointSlug: "stripe", WorkspaceID: "ws_1",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_2", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	_, err = b.st.Pool.Exec(b.ctx, `UPDATE webhook_inbox SET pending_since = now() - interval '90 seconds' WHERE event_id = 'evt_late'`)
	require.NoError(t, err)

	code, raw := b.call("viewer", "GET", "/api/status", nil)
	require.Equal(t, http.StatusOK, code, raw)
	var st struct {
		Backlog struct {
			Pending    int64   `json:"pending"`
			AgeSeconds float64 `json:"oldest_pending_age_seconds"`
			AgeNanos   int64   `json:"oldest_pending_age"`
		} `json:"backlog"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &st))
	require.EqualValues(t, 1, st.Backlog.Pending)
	require.GreaterOrEqual(t, st.Backlog.AgeSeconds, 90.0, raw)
	require.Less(t, st.Backlog.AgeSeconds, 86400.0, "seconds, not milli- or nanoseconds: %s", raw)
	require.InDelta(t, st.Backlog.AgeSeconds, float64(st.Backlog.AgeNanos)/1e9, 1e-6, "the deprecated field is the same age in nanoseconds")

	code, raw = b.call("", "GET", "/api/openapi.json", nil)
	require.Equal(t, http.StatusOK, code)
	var doc struct {
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &doc))
	backlog := doc.Components.Schemas["Backlog"].Properties
	require.Equal(t, true, backlog["oldest_pending_age"]["deprecated"])
	require.Contains(t, backlog["oldest_pending_age"]["description"], "oldest_pending_age_seconds")
	require.Equal(t, "number", backlog["oldest_pending_age_seconds"]["type"])
	require.Nil(t, backlog["oldest_pending_age_seconds"]["deprecated"])
	status := doc.Paths["/api/status"]["get"]["responses"].(map[string]any)["200"].(map[string]any)
	require.Equal(t, "#/components/schemas/Status",
		status["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"])
}
