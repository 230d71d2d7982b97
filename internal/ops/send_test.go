package ops_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// TestSigningKeySignsWithTheNewestSecretForTheAccountAuditedAndNeverShown:
// the key signs with the newest active secret that may sign for the
// account (what Verify with every secret accepts under that secret's id),
// its read is audited once with the secret's id and fingerprint, and
// neither the audit nor the key, however it is printed, shows the secret.
func TestSigningKeySignsWithTheNewestSecretForTheAccountAuditedAndNeverShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	added, err := b.svc.AddSecret(b.ctx, alice, "stripe", ops.NewSecret{Secret: "whsec_9pQ2rLmX4vT7sK1nB8cJ5hF3gD6aZ0wE"}, "")
	require.NoError(t, err)
	// A newer secret bound to another account is not one to sign acct_1's deliveries with.
	_, err = endpoints.InsertSecret(b.ctx, b.st.Pool, b.st.Keys, "stripe", "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m", []string{"acct_2"})
	require.NoError(t, err)

	k, err := b.svc.SigningKey(b.ctx, alice, ops.SigningKeyRequest{Slug: "stripe", Account: "acct_1", Reason: "try a delivery"})
	require.NoError(t, err)
	require.Equal(t, added.ID, k.SecretID, "the newest secret that may sign for acct_1")
	require.Equal(t, added.Fingerprint, k.Fingerprint)
	require.Equal(t, "ws_1", k.Workspace)

	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false,"created":1}`)
	h := http.Header{}
	require.NoError(t, k.Sign(h, body, time.Now()))
	ep, err := endpoints.GetIntakeEndpoint(b.ctx, b.st, "stripe")
	require.NoError(t, err)
	p, _ := providers.Lookup("stripe")
	v, err := p.Verifier(ep.Secrets).Verify(h, body, 5*time.Minute, time.Now())
	require.NoError(t, err)
	require.Equal(t, added.ID, v.SecretID)

	acts := b.actions(t, ops.ActionSigningSecretRead)
	require.Len(t, acts, 1)
	require.Equal(t, k.ActionID, acts[0].ID)
	require.Equal(t, "alice", acts[0].Actor)
	require.Equal(t, "endpoint:stripe", acts[0].Target)
	require.Equal(t, "try a delivery", acts[0].Reason)
	require.EqualValues(t, added.ID, acts[0].Details["secret_id"])
	require.Equal(t, added.Fingerprint, acts[0].Details["fingerprint"])
	require.Equal(t, "acct_1", acts[0].Details["account"])

	js, err := json.Marshal(k)
	require.NoError(t, err)
	audit, err := json.Marshal(acts[0])
	require.NoError(t, err)
	for _, shown := range []string{string(js), string(audit), fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", *k, *k, *k, k)} {
		require.NotContains(t, shown, "whsec_9pQ2rLmX4vT7sK1nB8cJ5hF3gD6aZ0wE", "the secret is never shown")
		require.NotContains(t, shown, "9pQ2rLmX4vT7")
	}
	require.Contains(t, fmt.Sprint(k), added.Fingerprint)
}

func TestSigningKeyRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.st, endpoints.NewEndpoint{Slug: "live", Provider: "stripe", Environment: keys.EnvLive,
		Secrets: []string{"whsec_LIVESECRET"}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.st, "live", "acct_live", "ws_live"))
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.st, endpoints.NewEndpoint{Slug: "bound", Provider: "stripe", Environment: keys.EnvTest,
		Secrets: []string{"whsec_BOUND"}, SecretAccounts: []string{"acct_a"}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.st, "bound", "acct_b", "ws_b"))

	tests := []struct {
		name  string
		who   ops.Actor
		req   ops.SigningKeyRequest
		check func(error) bool
		msg   string
	}{
		{"a live endpoint without AllowLive", alice, ops.SigningKeyRequest{Slug: "live", Account: "acct_live"}, ops.IsInvalid,
			"endpoint live is a live endpoint: sending made-up events is for local and staging work (give --live to send to it anyway)"},
		{"an unknown endpoint", alice, ops.SigningKeyRequest{Slug: "nope", Account: "acct_1"}, ops.IsNotFound, `endpoint "nope"`},
		{"an account not linked", alice, ops.SigningKeyRequest{Slug: "stripe", Account: "acct_9"}, ops.IsInvalid,
			"account acct_9 is not linked to endpoint stripe"},
		{"no secret may sign for the account", alice, ops.SigningKeyRequest{Slug: "bound", Account: "acct_b"}, ops.IsConflict,
			"no signing secret of endpoint bound may sign for account acct_b"},
		{"no account", alice, ops.SigningKeyRequest{Slug: "stripe"}, ops.IsInvalid, "the account the deliveries name is required"},
		{"nobody", ops.Actor{}, ops.SigningKeyRequest{Slug: "stripe", Account: "acct_1"}, ops.IsInvalid, "who acts must be named"},
	}
	for _, tt := range tests {
		_, err := b.svc.SigningKey(b.ctx, tt.who, tt.req)
		require.Error(t, err, tt.name)
		require.True(t, tt.check(err), "%s: %v", tt.name, err)
		require.ErrorContains(t, err, tt.msg, tt.name)
	}
	require.Empty(t, b.actions(t, ops.ActionSigningSecretRead), "a refused read reads nothing and audits nothing")

	k, err := b.svc.SigningKey(b.ctx, alice, ops.SigningKeyRequest{Slug: "live", Account: "acct_live", AllowLive: true})
	require.NoError(t, err)
	require.Equal(t, keys.EnvLive, k.Environment)
	require.Len(t, b.actions(t, ops.ActionSigningSecretRead), 1)
}

func TestConsolePaths(t *testing.T) {
	t.Parallel()
	svc := &ops.Service{}
	svc.Config.ConsoleURL = "http://console.example:9092/"
	require.Equal(t, "http://console.example:9092/events/stripe%2Facct_1%2Ftest%2Fevt_1",
		svc.ConsoleURL(ops.ConsoleEventPath("stripe/acct_1/test/evt_1")))
	require.Equal(t, "http://console.example:9092/quarantine/42", svc.ConsoleURL(ops.ConsoleQuarantinePath(42)))
}
