package app_test

// Issue #32, "least privilege that holds in the database": one test per
// finding (M1, L1–L4 here; L5 in the root package, L6 in internal/store),
// each played against the real component, on a real PostgreSQL and real
// HTTP, as the role the component runs as. docs/security.md lists them.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// M1: a notification webhook's URL carries its token in the path and the
// query. A viewer's listing of rules shows the origin only; the audit log,
// which viewers read too, must not hold more (the add and the test of the
// rule both used to store the whole URL).
func TestLeastPrivilegeViewerAuditHoldsNoURLPathOrQuery(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	code, body := a.api(t, "admin", http.MethodPost, "/api/notifications", `{"name":"oncall","triggers":["event_failed"],
		"webhook_url":"`+rcv.URL+`/hooks/PATHtoken77?token=QUERYtoken88","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"allow_private":true,"reason":"pager"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = a.api(t, "admin", http.MethodPost, "/api/notifications/oncall/test", `{"reason":"does it reach?"}`)
	require.Equal(t, http.StatusOK, code, body)

	code, audit := a.api(t, "viewer", http.MethodGet, "/api/audit", "")
	require.Equal(t, http.StatusOK, code, audit)
	require.Contains(t, audit, "notification_add")
	require.Contains(t, audit, "notification_test")
	require.Contains(t, audit, rcv.URL, "the origin stays: it says where notices go")
	require.NotContains(t, audit, "PATHtoken77", "a viewer reads a URL's path from the audit")
	require.NotContains(t, audit, "QUERYtoken88", "a viewer reads a URL's query from the audit")
}

// L1: an API key stored before sealing (the plain column) is a key too: a
// new base URL without the key again is refused, and the worker never sends
// the old key to the new host.
func TestLeastPrivilegeLegacyPlainAPIKeyDoesNotFollowTheBaseURL(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	catcher := &keyCatcher{}
	elsewhere := httptest.NewServer(catcher)
	defer elsewhere.Close()
	const legacy = "sk_live_LEGACYplainKEY0123456789abcd"
	require.NoError(t, endpoints.InsertEndpoint(a.ctx, a.owner, endpoints.NewEndpoint{Slug: "billing", Provider: "stripe",
		Environment: "live", Secrets: []string{"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAb"}}))
	require.NoError(t, endpoints.LinkAccount(a.ctx, a.owner, "billing", "acct_1", "ws_1"))
	// As a release before sealing left it: the key in the plain column.
	_, err := a.owner.Pool.Exec(a.ctx, `UPDATE endpoints SET api_key = $1 WHERE slug = 'billing'`, legacy)
	require.NoError(t, err)

	_, body := a.api(t, "viewer", http.MethodGet, "/api/endpoints/billing", "")
	require.Contains(t, body, `"api_key_set": true`, "a plain key is a key")
	code, body := a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing",
		`{"api_base_url":"`+elsewhere.URL+`","allow_custom_api_host":true,"reason":"move"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "API key")

	p := &engine.EndpointProviders{Store: a.owner, TTL: time.Nanosecond}
	if c, err := p.For(a.ctx, "billing"); err == nil {
		ctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
		_, _ = c.FetchInvoice(ctx, "acct_1", "in_1")
		cancel()
	}
	require.False(t, catcher.sawKey(legacy), "the legacy key went to another host")
}

// L2: the rule "a secret never follows its address" holds in the database:
// connected as hookinbox_console, as a flaw in the console would be, an
// UPDATE of an endpoint's API base URL, a forward route's URL or a team
// destination's target fails or leaves no secret for the new address.
func TestLeastPrivilegeConsoleRoleCannotPointASecretElsewhereInSQL(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	require.NoError(t, endpoints.InsertEndpoint(a.ctx, a.owner, endpoints.NewEndpoint{Slug: "billing", Provider: "stripe",
		Environment: "live", Secrets: []string{"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAb"}, APIKey: "sk_live_SEALEDkey0123456789abcdef"}))
	require.NoError(t, endpoints.InsertEndpoint(a.ctx, a.owner, endpoints.NewEndpoint{Slug: "legacy", Provider: "stripe",
		Environment: "live", Secrets: []string{"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAc"}}))
	_, err := a.owner.Pool.Exec(a.ctx, `UPDATE endpoints SET api_key = 'sk_live_PLAINkey0123456789abcdef' WHERE slug = 'legacy'`)
	require.NoError(t, err)
	_, err = a.svc.AddRoute(a.ctx, ops.Actor{Name: "audit"}, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid",
		URL: "https://billing.team.example/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ReplaceHandler: true}, "setup")
	require.NoError(t, err)
	require.NoError(t, outbox.UpsertDestination(a.ctx, a.owner.Pool, a.owner.Keys, outbox.Destination{WorkspaceID: "ws_1", Name: "team",
		Kind: "webhook", Target: "https://hooks.team.example/in", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Enabled: true}))

	console, err := pgx.Connect(a.ctx, a.cfg.ConsoleDatabaseURL)
	require.NoError(t, err)
	defer console.Close(a.ctx)
	var user string
	require.NoError(t, console.QueryRow(a.ctx, `SELECT current_user`).Scan(&user))
	require.Equal(t, "hookinbox_console", user)

	// Each statement either fails, or leaves no secret behind it.
	try := func(sql string) error {
		_, err := console.Exec(a.ctx, sql)
		return err
	}
	for _, slug := range []string{"billing", "legacy"} {
		if err := try(`UPDATE endpoints SET api_base_url = 'https://evil.example' WHERE slug = '` + slug + `'`); err == nil {
			var keyLeft bool
			require.NoError(t, a.owner.Pool.QueryRow(a.ctx, `SELECT api_key IS NOT NULL OR api_key_sealed IS NOT NULL
				OR api_key_key_id IS NOT NULL OR api_key_fingerprint IS NOT NULL FROM endpoints WHERE slug = $1`, slug).Scan(&keyLeft))
			require.False(t, keyLeft, "%s: the API key follows a base URL changed in SQL", slug)
		}
	}
	if err := try(`UPDATE forward_routes SET url = 'https://evil.example/hook' WHERE name = 'billing'`); err == nil {
		var url string
		var secretLeft bool
		require.NoError(t, a.owner.Pool.QueryRow(a.ctx, `SELECT url, secret_sealed IS NOT NULL AND octet_length(secret_sealed) > 0
			FROM forward_routes WHERE name = 'billing'`).Scan(&url, &secretLeft))
		require.False(t, secretLeft && url == "https://evil.example/hook", "the route's secret follows a URL changed in SQL")
	}
	if err := try(`UPDATE team_destinations SET target = 'https://evil.example/in' WHERE name = 'team'`); err == nil {
		var target string
		var secretLeft bool
		require.NoError(t, a.owner.Pool.QueryRow(a.ctx, `SELECT target, secret IS NOT NULL OR secret_sealed IS NOT NULL
			FROM team_destinations WHERE name = 'team'`).Scan(&target, &secretLeft))
		require.False(t, secretLeft && target == "https://evil.example/in", "the destination's secret follows a target changed in SQL")
	}
	// Enabling a disabled destination is no console act either.
	require.Error(t, try(`UPDATE team_destinations SET enabled = true`))

	// The console's own acts still work, and say what they did.
	code, body := a.api(t, "admin", http.MethodPatch, "/api/routes/billing", `{"url":"https://billing2.team.example/hook","reason":"move"}`)
	require.Equal(t, http.StatusBadRequest, code, "a route's URL without its secret again: %s", body)
	require.Contains(t, body, "secret")
	code, body = a.api(t, "admin", http.MethodPatch, "/api/routes/billing",
		`{"url":"https://billing2.team.example/hook","secret":"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAb","reason":"move"}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing", `{"api_base_url":"https://api.stripe.com",
		"api_key":"sk_live_NEWkey0123456789abcdefgh","reason":"move"}`)
	require.Equal(t, http.StatusOK, code, body)
	v, err := a.svc.ShowEndpoint(a.ctx, "billing")
	require.NoError(t, err)
	require.True(t, v.APIKeySet, "a key given with the URL is kept")
}

// L3: testing a notification used to replace the Transport of the
// process-wide guarded client (a data race, a growing chain of wrappers,
// and every forward of the process going through the test's recorder).
func TestLeastPrivilegeNotificationTestLeavesTheSharedClientAlone(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	code, body := a.api(t, "admin", http.MethodPost, "/api/notifications", `{"name":"oncall","triggers":["event_failed"],
		"webhook_url":"`+rcv.URL+`/in","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","allow_private":true,"reason":"pager"}`)
	require.Equal(t, http.StatusCreated, code, body)
	shared := outbound.Guard{AllowPrivate: true}.Client(10 * time.Second)
	before := shared.Transport
	for range 3 {
		code, body = a.api(t, "admin", http.MethodPost, "/api/notifications/oncall/test", `{"reason":"again"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"ok": true`)
	}
	_, still := shared.Transport.(*http.Transport)
	require.True(t, still && shared.Transport == before, "the shared client was rewired: its Transport is now %T", shared.Transport)
}

// L4: an answer from a private or loopback address (a rule or a route
// that allows them, the only way to reach one) is internal: an admin's
// notification test and a forward's recorded error (read by viewers) say
// its status, never its body.
func TestLeastPrivilegeInternalAnswersAreNotReported(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"db_password":"INTERNALanswer42"}`)
	}))
	defer internal.Close()
	code, body := a.api(t, "admin", http.MethodPost, "/api/notifications", `{"name":"oncall","triggers":["event_failed"],
		"webhook_url":"`+internal.URL+`/in","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","allow_private":true,"reason":"pager"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = a.api(t, "admin", http.MethodPost, "/api/notifications/oncall/test", `{"reason":"x"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"ok": false`)
	require.Contains(t, body, "HTTP 500")
	require.NotContains(t, body, "INTERNALanswer42", "the test reports an internal answer's body")

	s := &forward.Sender{}
	_, err := s.Send(a.ctx, &forwards.Route{Name: "billing", URL: internal.URL + "/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Timeout: 5 * time.Second, AllowPrivate: true, Enabled: true}, "op_1", forward.Document{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "HTTP 500")
	require.False(t, strings.Contains(err.Error(), "INTERNALanswer42"), "a forward's error (forward_attempts.error) holds an internal body: %v", err)
}
