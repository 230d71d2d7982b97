package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// The acts the CLI had and the API lacked (balance corrections, erasure,
// an endpoint's own account, the key rotation's reseal): admin-only, audited
// under the token's name, and refused to a lower role with nothing done.

func TestWorkspaceAdjustmentsAreAdminOnlyAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/api/workspaces/ws_1/adjustments"
	body := map[string]any{"credits": 50, "operation_id": "TICKET-1", "reason": "goodwill"}
	for _, role := range []string{"viewer", "operator"} {
		code, out := b.call(role, "POST", path, body)
		require.Equal(t, http.StatusForbidden, code, out)
	}
	require.Zero(t, b.count(`SELECT count(*) FROM credit_adjustments`), "nothing done")

	code, out := b.call("admin", "POST", path, body)
	require.Equal(t, http.StatusCreated, code, out)
	var a ops.AdjustmentView
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	require.True(t, a.Adjusted)
	require.EqualValues(t, 50, a.BalanceAfter)
	require.Equal(t, 50, b.count(`SELECT credits_balance FROM workspaces WHERE id = 'ws_1'`))
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'workspace_adjust' AND actor = 'admin-token'
		AND target = 'workspace:ws_1' AND reason = 'goodwill'`), "audited once, under the token's name")

	code, out = b.call("admin", "POST", path, body)
	require.Equal(t, http.StatusOK, code, out)
	require.Contains(t, out, `"adjusted": false`, "a retried request changes nothing")
	code, out = b.call("admin", "POST", path, map[string]any{"credits": -7, "operation_id": "TICKET-1", "reason": "typo"})
	require.Equal(t, http.StatusConflict, code, out)
	require.Contains(t, out, "nothing changed")
	for _, bad := range []any{
		map[string]any{"credits": 0, "operation_id": "T-2", "reason": "x"},
		map[string]any{"credits": 5, "operation_id": "T-2"},
		map[string]any{"credits": 5, "operation_id": "T-2", "reason": "x", "policy": "generous"},
		`{"credits": "many"}`,
	} {
		code, out = b.call("admin", "POST", path, bad)
		require.Equal(t, http.StatusBadRequest, code, out)
	}
	code, out = b.call("admin", "POST", "/api/workspaces/ws_nope/adjustments", body)
	require.Equal(t, http.StatusNotFound, code, out)
	require.Equal(t, 50, b.count(`SELECT credits_balance FROM workspaces WHERE id = 'ws_1'`))
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'workspace_adjust'`))
}

func TestWorkspaceErasureIsAdminOnlyAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/api/workspaces/ws_1/erase"
	payloads := `SELECT count(*) FROM webhook_inbox WHERE payload IS NOT NULL`
	for _, role := range []string{"viewer", "operator"} {
		code, out := b.call(role, "POST", path, map[string]any{"reason": "GDPR request 7"})
		require.Equal(t, http.StatusForbidden, code, out)
	}
	code, out := b.call("admin", "POST", path, map[string]any{"reason": " "})
	require.Equal(t, http.StatusBadRequest, code, out)
	require.Equal(t, 1, b.count(payloads), "nothing redacted")
	require.Zero(t, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'workspace_erase'`))

	code, out = b.call("admin", "POST", path, map[string]any{"reason": "GDPR request 7"})
	require.Equal(t, http.StatusOK, code, out)
	var res ops.ErasureView
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.EqualValues(t, 1, res.Counts.InboxPayloads)
	require.NotContains(t, out, payloadMarker)
	require.Zero(t, b.count(payloads))
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'workspace_erase' AND actor = 'admin-token'
		AND target = 'workspace:ws_1' AND reason = 'GDPR request 7'`))

	code, out = b.call("admin", "POST", "/api/workspaces/ws_nope/erase", map[string]any{"reason": "x"})
	require.Equal(t, http.StatusNotFound, code, out)
}

func TestEndpointOwnAccountIsAdminOnlyAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t) // endpoint stripe, own account acct_1, linked to ws_1
	path := "/api/endpoints/stripe/account"
	own := func() string {
		var a string
		require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT coalesce(account, '') FROM endpoints WHERE slug = 'stripe'`).Scan(&a))
		return a
	}
	for _, role := range []string{"viewer", "operator"} {
		code, out := b.call(role, "PUT", path, map[string]any{"account": "acct_platform"})
		require.Equal(t, http.StatusForbidden, code, out)
	}
	for _, bad := range []any{`{}`, map[string]any{"account": "acct a"}, map[string]any{"account": "x", "extra": 1}} {
		code, out := b.call("admin", "PUT", path, bad)
		require.Equal(t, http.StatusBadRequest, code, out)
	}
	require.Equal(t, "acct_1", own(), "nothing changed")

	code, out := b.call("admin", "PUT", path, map[string]any{"account": "acct_platform", "reason": "Connect platform"})
	require.Equal(t, http.StatusOK, code, out)
	var v ops.OwnAccountView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, ops.OwnAccountView{Slug: "stripe", Account: "acct_platform", OwnAccount: "acct_platform"}, v)
	require.Equal(t, "acct_platform", own())
	code, out = b.call("admin", "PUT", path, map[string]any{"account": ""})
	require.Equal(t, http.StatusOK, code, out)
	require.Contains(t, out, `"workspace": "ws_1"`, "none set: the single link, and where its events go")
	require.Empty(t, own())
	require.Equal(t, 2, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'endpoint_set_account' AND actor = 'admin-token'`))

	code, out = b.call("admin", "PUT", "/api/endpoints/nope/account", map[string]any{"account": "acct_2"})
	require.Equal(t, http.StatusNotFound, code, out)
}

func TestResealIsAdminOnlyAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t) // a signing secret and an API key, sealed under the tests' key
	old := b.st.Keys
	rotated, err := secretbox.ParseKeyFile([]byte(secretbox.GenerateKeyLine("k2") + "\n" + old.CurrentID() + ":" + testenv.SecretsKey() + "\n"))
	require.NoError(t, err)
	// The console restarted with the new key first in its key file.
	srv, err := console.New(console.Options{Ops: &ops.Service{Store: &store.Store{Pool: b.st.Pool, Keys: rotated}, Config: config.Default()}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	b.url = hs.URL
	underOld := `SELECT (SELECT count(*) FROM endpoint_secrets WHERE secret_key_id = $1) + (SELECT count(*) FROM endpoints WHERE api_key_key_id = $1)`
	sealedUnder := func(id string) int {
		var n int
		require.NoError(t, b.st.Pool.QueryRow(b.ctx, underOld, id).Scan(&n))
		return n
	}
	require.Equal(t, 2, sealedUnder(old.CurrentID()))

	for _, role := range []string{"viewer", "operator"} {
		code, out := b.call(role, "POST", "/api/secrets/reseal", map[string]any{"reason": "rotation"})
		require.Equal(t, http.StatusForbidden, code, out)
	}
	require.Equal(t, 2, sealedUnder(old.CurrentID()), "nothing re-encrypted")

	// The console as its own role (hookinbox_console) never opens a secret,
	// so it cannot re-encrypt them: it says what to run instead.
	con, err := store.Open(b.ctx, testenv.RoleURL(t, b.st.Pool.Config().ConnString(), store.RoleConsole), 2)
	require.NoError(t, err)
	t.Cleanup(con.Close)
	srv, err = console.New(console.Options{Ops: &ops.Service{Store: &store.Store{Pool: con.Pool, Keys: rotated}, Config: config.Default()}})
	require.NoError(t, err)
	asRole := httptest.NewServer(srv.Handler())
	t.Cleanup(asRole.Close)
	b.url = asRole.URL
	code, out := b.call("admin", "POST", "/api/secrets/reseal", map[string]any{"reason": "rotation"})
	require.Equal(t, http.StatusConflict, code, out)
	require.Contains(t, out, "hookinbox secrets rotate-key")
	require.Equal(t, 2, sealedUnder(old.CurrentID()), "nothing re-encrypted")
	b.url = hs.URL

	code, out = b.call("admin", "POST", "/api/secrets/reseal", map[string]any{"reason": "rotation SEC-9"})
	require.Equal(t, http.StatusOK, code, out)
	var res ops.ResealResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "k2", res.KeyID)
	require.Equal(t, 2, sealedUnder("k2"))
	require.Zero(t, sealedUnder(old.CurrentID()))
	require.NotContains(t, out, "SIGNINGSECRET")
	require.Equal(t, 1, b.count(`SELECT count(*) FROM operator_actions WHERE action = 'secrets_reseal' AND actor = 'admin-token'
		AND target = 'keyring:k2' AND reason = 'rotation SEC-9'`))

	// Without a keyring (never the case of a console that started) it says so.
	srv, err = console.New(console.Options{Ops: &ops.Service{Store: &store.Store{Pool: b.st.Pool}, Config: config.Default()}})
	require.NoError(t, err)
	keyless := httptest.NewServer(srv.Handler())
	t.Cleanup(keyless.Close)
	b.url = keyless.URL
	code, out = b.call("admin", "POST", "/api/secrets/reseal", nil)
	require.Equal(t, http.StatusServiceUnavailable, code, out)
	require.Contains(t, out, "no secrets key configured")
}
