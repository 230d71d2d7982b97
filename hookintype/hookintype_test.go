package hookintype_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintype"
)

// The JSON of the identities is in recorded workflow histories (and the
// settings' in the endpoints table): its exact shape is the contract.
func TestTheJSONShapesAreTheRecordedOnes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"event key", hookintype.EventKey{Provider: "stripe", Account: "acct_1", Environment: hookintype.Test, EventID: "evt_1"},
			`{"provider":"stripe","account":"acct_1","environment":"test","event_id":"evt_1"}`},
		{"resource", hookintype.Resource{Provider: "stripe", Account: "acct_1", Environment: hookintype.Live, Kind: "invoice", ID: "in_1"},
			`{"provider":"stripe","account":"acct_1","environment":"live","kind":"invoice","id":"in_1"}`},
		{"divergence", hookintype.Divergence{Field: "status", LocalValue: "active", ProviderValue: "canceled", Corrected: true},
			`{"field":"status","local_value":"active","provider_value":"canceled","corrected":true}`},
		{"same-version divergence", hookintype.Divergence{Field: "status", SameVersion: true},
			`{"field":"status","local_value":"","provider_value":"","corrected":false,"same_version":true}`},
		{"scope", hookintype.Scope{Provider: "stripe", Endpoint: "ep", Account: "acct_1", Environment: "test", WorkspaceID: "ws"},
			`{"provider":"stripe","endpoint":"ep","account":"acct_1","environment":"test","workspace_id":"ws"}`},
		{"settings", hookintype.EndpointSettings{TypePath: "t", ResourcePath: "r", ResourceKind: "k", AccountPath: "a", VersionPath: "v",
			GitHubHook: "app", GitHubHookID: 2, GitHubAppID: 3, GitHubRecovery: "fetch"},
			`{"type_path":"t","resource_path":"r","resource_kind":"k","account_path":"a","version_path":"v","github_hook":"app","github_hook_id":2,"github_app_id":3,"github_recovery":"fetch"}`},
		{"empty settings", hookintype.EndpointSettings{}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.in)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(b))
			require.Equal(t, tt.want, string(b), "the field order too")
		})
	}
}

func TestKeysRoundTripAndCannotBeForged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   hookintype.Resource
		want string
	}{
		{"plain", hookintype.Resource{Provider: "stripe", Account: "acct_1", Environment: "live", Kind: "subscription", ID: "sub_9"}, "stripe/acct_1/live/subscription/sub_9"},
		{"slash in id", hookintype.Resource{Provider: "github", Account: "42", Environment: "live", Kind: "repository", ID: "octo/hello"}, "github/42/live/repository/octo%2Fhello"},
		{"percent in id", hookintype.Resource{Provider: "shopify", Account: "a.myshopify.com", Environment: "live", Kind: "order", ID: "1%2F2"}, "shopify/a.myshopify.com/live/order/1%252F2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.in.String())
			back, err := hookintype.ParseResource(tt.in.String())
			require.NoError(t, err)
			require.Equal(t, tt.in, back)
			require.True(t, back.Valid())
		})
	}
	forged := hookintype.Resource{Provider: "stripe", Account: "acct_1", Environment: "live", Kind: "invoice", ID: "x/live/subscription/sub_9"}
	require.NotEqual(t, "stripe/acct_1/live/subscription/sub_9", forged.String())
	require.False(t, hookintype.Resource{Provider: "stripe"}.Valid())

	k := hookintype.EventKey{Provider: "standard", Account: "proj_1", Environment: "test", EventID: "msg_1/2"}
	back, err := hookintype.ParseEventKey(k.String())
	require.NoError(t, err)
	require.Equal(t, k, back)
	for _, s := range []string{"", "a/b/c", "a/b/c/d/e", "a//c/d", "a/b/c/%zz"} {
		_, err := hookintype.ParseEventKey(s)
		require.Error(t, err, s)
	}
	_, err = hookintype.ParseResource("a/b/c/d")
	require.Error(t, err)
	require.Equal(t, "a%2Fb/c", hookintype.JoinKey("a/b", "c"))
}

// A secret's value never reaches a log line or an error, however it is
// printed.
func TestASecretNeverPrintsItsValue(t *testing.T) {
	t.Parallel()
	const value = "whsec_the-value-itself-0123456789"
	s := hookintype.Secret{ID: 7, Value: value, Fingerprint: "fp:ab12", Accounts: []string{"acct_1"}, CreatedAt: time.Unix(1, 0)}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "secret", s, "secrets", []hookintype.Secret{s})
	asJSON, err := json.Marshal(map[string]any{"secrets": []hookintype.Secret{s}, "one": &s})
	require.NoError(t, err)
	require.Contains(t, string(asJSON), `"Fingerprint":"fp:ab12"`, "what is not secret is kept")
	for _, out := range []string{string(asJSON), fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), fmt.Sprintf("%+v", []hookintype.Secret{s}),
		fmt.Sprintf("%#v", []hookintype.Secret{s}), fmt.Sprintf("%v", &s), logged.String()} {
		require.NotContains(t, out, value)
		require.Contains(t, out, "fp:ab12")
	}
	require.Equal(t, "secret#8", hookintype.Secret{ID: 8, Value: value}.String())
}

func TestASecretClaimsItsAccountsOnly(t *testing.T) {
	t.Parallel()
	require.True(t, hookintype.Secret{}.MayClaim("anything"), "an unbound secret signs for any linked account")
	bound := hookintype.Secret{Accounts: []string{"a", "b"}}
	require.True(t, bound.MayClaim("b"))
	require.False(t, bound.MayClaim("c"))
	require.False(t, bound.MayClaim(""))
}

func ExampleEventKey_String() {
	k := hookintype.EventKey{Provider: "slack", Account: "T123", Environment: hookintype.Live, EventID: "Ev0PV52K25"}
	fmt.Println(k)
	back, _ := hookintype.ParseEventKey(k.String())
	fmt.Println(back == k)
	// Output:
	// slack/T123/live/Ev0PV52K25
	// true
}

func ExampleResource_String() {
	// A '/' inside an id is escaped: it can never forge another resource.
	r := hookintype.Resource{Provider: "github", Account: "42", Environment: hookintype.Live, Kind: "repository", ID: "octo/hello"}
	fmt.Println(r)
	// Output: github/42/live/repository/octo%2Fhello
}
