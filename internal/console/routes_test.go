package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/store/forwards"
)

const forwardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Forward routes name where events go and carry a secret: viewers read
// them (never the secret), only admins change them, and bad input is a 400
// that changes nothing.
func TestForwardRoutesAreReadByViewersAndChangedByAdmins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	add := map[string]any{"name": "billing", "provider": "stripe", "event_type": "charge.*", "url": "https://billing.example.com/hooks?token=tok_route_9f2",
		"secret": forwardSecret, "operation_key_path": "data.object.id", "timeout": "2s", "reason": "billing service"}
	for _, role := range []string{"", "viewer", "operator"} {
		code, body := b.call(role, "POST", "/api/routes", add)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, "%s: %s", role, body)
	}
	require.Zero(t, b.count(`SELECT count(*) FROM forward_routes`))

	bad := map[string]any{}
	for k, v := range add {
		bad[k] = v
	}
	bad["timeout"] = "soon"
	code, body := b.call("admin", "POST", "/api/routes", bad)
	require.Equal(t, http.StatusBadRequest, code, body)
	bad["timeout"], bad["url"] = "2s", "http://10.0.0.1/"
	code, body = b.call("admin", "POST", "/api/routes", bad)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "--allow-private")
	bad["url"], bad["event_type"] = "https://billing.example.com/hooks", "invoice.paid"
	code, body = b.call("admin", "POST", "/api/routes", bad)
	require.Equal(t, http.StatusConflict, code, "a handler's type: %s", body)
	require.Zero(t, b.count(`SELECT count(*) FROM forward_routes`))

	code, body = b.call("admin", "POST", "/api/routes", add)
	require.Equal(t, http.StatusCreated, code, body)
	require.NotContains(t, body, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	code, body = b.call("viewer", "GET", "/api/routes", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "never the secret")
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list, 1)
	require.Equal(t, "2s", list[0]["timeout"])
	require.Contains(t, list[0], "oldest_pending_age_seconds")
	for _, path := range []string{"/api/routes", "/api/routes/billing", "/routes"} {
		code, body = b.call("viewer", "GET", path, nil)
		require.Equal(t, http.StatusOK, code, body)
		require.NotContains(t, body, "tok_route_9f2", "%s: a viewer sees the receiver's origin only", path)
		require.Contains(t, body, "billing.example.com", path)
		code, body = b.call("operator", "GET", path, nil)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "tok_route_9f2", "%s: an operator sees the whole URL", path)
	}

	code, body = b.call("operator", "PATCH", "/api/routes/billing", map[string]any{"enabled": false})
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = b.call("admin", "PATCH", "/api/routes/billing", map[string]any{"enabled": false, "reason": "maintenance"})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"enabled": false`)
	code, _ = b.call("admin", "PATCH", "/api/routes/nope", map[string]any{"enabled": false})
	require.Equal(t, http.StatusNotFound, code)

	code, body = b.call("viewer", "GET", "/routes", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "billing.example.com")
	require.Contains(t, body, "paused")

	// The lineage shows each forward attempt.
	require.NoError(t, forwards.InsertAttempt(b.ctx, b.st.Pool, forwards.Attempt{Route: "billing", Event: b.event,
		OperationKey: "op-1", Attempt: 1, Outcome: forwards.OutcomeRetry, StatusCode: 503, Latency: 42 * time.Millisecond,
		Error: "forward billing: HTTP 503: busy"}))
	code, body = b.call("viewer", "GET", "/explain?kind=event&ref="+url.QueryEscape(b.event.String()), nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Forward attempts")
	require.Contains(t, body, "HTTP 503: busy")
	require.Contains(t, body, "42ms")

	code, _ = b.call("operator", "DELETE", "/api/routes/billing", nil)
	require.Equal(t, http.StatusForbidden, code)
	code, _ = b.call("admin", "DELETE", "/api/routes/billing?reason=retired", nil)
	require.Equal(t, http.StatusNoContent, code)
	require.Equal(t, 3, b.count(`SELECT count(*) FROM operator_actions WHERE action LIKE 'route_%' AND actor = 'admin-token'`),
		"add, update and remove, each audited under the admin token's name")
}

// The Routes page: an admin adds and pauses a route with the page's forms
// (CSRF field, fixed notices), an operator's forged form is refused.
func TestRoutesPageFormsAreAdminsAndCSRFChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	admin, page := b.webLogin("admin", "/routes")
	require.Contains(t, page, "No forward route")
	m := csrf.FindStringSubmatch(page)
	require.Len(t, m, 2)
	form := url.Values{"name": {"billing"}, "provider": {"stripe"}, "event_type": {"charge.*"}, "url": {"https://billing.example.com/hooks"},
		"secret": {forwardSecret}, "timeout": {"3s"}, "reason": {"billing service"}}
	resp, err := admin.PostForm(b.url+"/routes", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF field")
	require.Zero(t, b.count(`SELECT count(*) FROM forward_routes`))
	form.Set("csrf", m[1])
	resp, err = admin.PostForm(b.url+"/routes", form)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), "Forward route added")
	require.Contains(t, string(raw), "billing.example.com/hooks")
	require.NotContains(t, string(raw), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	resp, err = admin.PostForm(b.url+"/routes/billing/state", url.Values{"csrf": {m[1]}, "enabled": {"false"}})
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(raw), "Forward route paused")
	require.Equal(t, 0, b.count(`SELECT count(*) FROM forward_routes WHERE enabled`))

	op, page := b.webLogin("operator", "/routes")
	require.NotContains(t, page, "Add a forward route", "an operator sees no admin form")
	om := csrf.FindStringSubmatch(page)
	require.Len(t, om, 2)
	resp, err = op.PostForm(b.url+"/routes/billing/remove", url.Values{"csrf": {om[1]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an operator's forged form is refused by role")
	require.Equal(t, 1, b.count(`SELECT count(*) FROM forward_routes`))
}
