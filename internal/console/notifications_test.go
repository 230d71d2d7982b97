package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/storeports"
)

const notifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Notification rules say where operators' notices go and may hold a
// secret: viewers read them (never the secret), only admins add, test and
// remove them, and bad input is a 400 that stores nothing.
func TestNotificationRulesAreReadByViewersAndChangedByAdmins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	add := map[string]any{"name": "oncall", "triggers": []string{"event_failed", "quarantine_opened"}, "webhook_url": rcv.URL + "/in?token=tok_pager_7c1",
		"secret": notifySecret, "allow_private": true, "window": "30m", "reason": "pager"}
	for _, role := range []string{"", "viewer", "operator"} {
		code, body := b.call(role, "POST", "/api/notifications", add)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, "%s: %s", role, body)
	}
	for field, bad := range map[string]any{"triggers": []string{"event_failed", "disk_full"}, "webhook_url": "https://10.0.0.1/in",
		"secret": "hunter2", "window": "soon"} {
		m := map[string]any{}
		for k, v := range add {
			m[k] = v
		}
		m[field] = bad
		if field == "webhook_url" {
			m["allow_private"] = false
		}
		code, body := b.call("admin", "POST", "/api/notifications", m)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", field, body)
	}
	require.Zero(t, b.count(`SELECT count(*) FROM notification_rules`))

	code, body := b.call("admin", "POST", "/api/notifications", add)
	require.Equal(t, http.StatusCreated, code, body)
	require.NotContains(t, body, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	code, body = b.call("admin", "POST", "/api/notifications", add)
	require.Equal(t, http.StatusConflict, code, body)

	// The worker's evaluation (here called directly) fires on the exhausted
	// event the setup left: the rule's page and listing show it.
	out, err := (&storeports.Notifications{Store: b.st}).Evaluate(b.ctx, ports.NotifyInput{})
	require.NoError(t, err)
	require.Len(t, out.Notices, 1)
	code, body = b.call("viewer", "GET", "/api/notifications", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "never the secret")
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list, 1)
	require.Equal(t, "30m0s", list[0]["window"])
	require.Len(t, list[0]["firing"], 1)
	require.Len(t, list[0]["recent"], 1)
	code, body = b.call("viewer", "GET", "/notifications", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "oncall")
	require.Contains(t, body, "event_failed")
	require.Contains(t, body, "outbox pending", "the notice's outbox row, not sent by this test")
	require.NotContains(t, body, "tok_pager_7c1", "a viewer sees the webhook's origin only")
	for _, path := range []string{"/api/notifications", "/api/notifications/oncall"} {
		code, body = b.call("viewer", "GET", path, nil)
		require.Equal(t, http.StatusOK, code, body)
		require.NotContains(t, body, "tok_pager_7c1", "%s: a viewer sees the webhook's origin only", path)
		require.Contains(t, body, rcv.URL, path)
		code, body = b.call("operator", "GET", path, nil)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "tok_pager_7c1", "%s: an operator sees the whole URL", path)
	}

	code, body = b.call("operator", "POST", "/api/notifications/oncall/test", map[string]any{"reason": "x"})
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = b.call("admin", "POST", "/api/notifications/oncall/test", map[string]any{"reason": "does it reach?"})
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"ok": true`)
	require.Contains(t, body, `"answer": "HTTP 204"`)
	require.EqualValues(t, 1, hits.Load())

	code, _ = b.call("operator", "DELETE", "/api/notifications/oncall", nil)
	require.Equal(t, http.StatusForbidden, code)
	code, _ = b.call("admin", "DELETE", "/api/notifications/oncall?reason=done", nil)
	require.Equal(t, http.StatusNoContent, code)
	code, _ = b.call("admin", "DELETE", "/api/notifications/oncall", nil)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, 3, b.count(`SELECT count(*) FROM operator_actions WHERE action IN ('notification_add', 'notification_test', 'notification_remove')
		AND actor = 'admin-token'`))
}
