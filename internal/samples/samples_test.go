package samples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/samples"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all"
)

var secrets = map[string]string{
	keys.ProviderStripe:   "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m",
	keys.ProviderGitHub:   "c2VjcmV0LWZvci1naXRodWItMjQtYnl0ZXMhIQ",
	keys.ProviderStandard: "whsec_c3RhbmRhcmQtc2VjcmV0LW9uZS0zMi1ieXRlcyEhISE=",
	keys.ProviderShopify:  "shpss_0123456789abcdef0123456789abcdef",
}

// endpoint is a test endpoint of provider that links acct_own (its own
// account) and acct_other.
func endpoint(provider, env string) samples.Endpoint {
	e := samples.Endpoint{Slug: "s", Provider: provider, Environment: env, OwnAccount: "acct_own",
		Links: map[string]string{"acct_own": "ws_1", "acct_other": "ws_2"}}
	if provider == keys.ProviderStandard {
		e.Settings = keys.EndpointSettings{AccountPath: "data.project_id", ResourcePath: "data.id"}
	}
	if provider == keys.ProviderShopify {
		e.OwnAccount = "own.myshopify.com"
		e.Links = map[string]string{"own.myshopify.com": "ws_1", "other.myshopify.com": "ws_2"}
	}
	return e
}

// received is what the provider makes of a delivery: verified with the
// secret it was signed with, then normalized as the intake normalizes it.
func received(t *testing.T, e samples.Endpoint, d samples.Delivery) providers.Normalized {
	t.Helper()
	p, ok := providers.Lookup(e.Provider)
	require.True(t, ok)
	h := d.Header.Clone()
	now := time.Now()
	require.NoError(t, providers.Sign(p, secrets[e.Provider], h, d.Body, now))
	v, err := p.Verifier([]keys.Secret{{ID: 1, Value: secrets[e.Provider]}}).Verify(h, d.Body, 5*time.Minute, now)
	require.NoError(t, err)
	require.True(t, gjson.ValidBytes(v.Payload))
	n, err := p.Normalize(e.Settings, h, gjson.ParseBytes(v.Payload))
	require.NoError(t, err)
	return n
}

// TestEveryBuiltInDeliveryIsWhatItsProviderReads: each built-in template,
// in both environments and for the endpoint's own account and another
// linked one, makes a delivery its provider verifies and reads as that
// event: the delivery's id and type, the account chosen, the environment,
// a resource. Two deliveries are two events: new ids and, for the
// providers that sign the body only, another body.
func TestEveryBuiltInDeliveryIsWhatItsProviderReads(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{keys.ProviderStripe, keys.ProviderGitHub, keys.ProviderStandard, keys.ProviderShopify} {
		types := samples.Types(provider)
		require.NotEmpty(t, types, provider)
		for _, typ := range types {
			tmpl, err := samples.Lookup(provider, typ)
			require.NoError(t, err)
			for _, env := range []string{keys.EnvTest, keys.EnvLive} {
				e := endpoint(provider, env)
				for account := range e.Links {
					t.Run(provider+"/"+typ+"/"+env+"/"+account, func(t *testing.T) {
						t.Parallel()
						now := time.Now()
						d1, err := tmpl.Delivery(e, account, now)
						require.NoError(t, err)
						d2, err := tmpl.Delivery(e, account, now)
						require.NoError(t, err)
						require.NotEqual(t, d1.EventID, d2.EventID)
						if provider == keys.ProviderGitHub || provider == keys.ProviderShopify {
							require.NotEqual(t, d1.Body, d2.Body, "the body is signed, the id is not: each event's body is its own")
						}

						n := received(t, e, d1)
						require.Equal(t, d1.EventID, n.EventID)
						require.Equal(t, typ, n.EventType)
						got := n.Account
						if got == "" {
							got = e.OwnAccount
						}
						require.Equal(t, account, got, "the delivery names the account chosen")
						if provider == keys.ProviderStripe {
							require.Equal(t, env, n.Environment, "livemode follows the endpoint")
							require.Equal(t, env == keys.EnvLive, gjson.GetBytes(d1.Body, "data.object.livemode").Bool())
							require.True(t, bytes.HasPrefix(d1.Body, []byte("{\n  \"id\": \"evt_")), "Stripe sends indented JSON")
							require.Equal(t, account == e.OwnAccount, !gjson.GetBytes(d1.Body, "account").Exists(),
								"only an event of a connected account names it")
						} else {
							require.True(t, json.Valid(d1.Body))
							require.NotContains(t, string(d1.Body), "\n", "sent compact")
						}
						require.NotEmpty(t, n.ResourceID)
					})
				}
			}
		}
	}
}

func TestGitHubHeadersAndAccounts(t *testing.T) {
	t.Parallel()
	tmpl, err := samples.Lookup(keys.ProviderGitHub, "issues.opened")
	require.NoError(t, err)
	e := endpoint(keys.ProviderGitHub, keys.EnvTest)
	e.Links["4242"] = "ws_3"
	e.Settings.GitHubHookID = 77

	d, err := tmpl.Delivery(e, "4242", time.Now())
	require.NoError(t, err)
	require.Equal(t, "issues", d.Header.Get("X-GitHub-Event"))
	require.Equal(t, d.EventID, d.Header.Get("X-GitHub-Delivery"))
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, d.EventID)
	require.Equal(t, "77", d.Header.Get("X-GitHub-Hook-ID"))
	require.True(t, strings.HasPrefix(d.Header.Get("User-Agent"), "GitHub-Hookshot/"))
	require.Equal(t, int64(4242), gjson.GetBytes(d.Body, "installation.id").Int(), "a numeric account is an installation")

	d, err = tmpl.Delivery(e, "acct_other", time.Now())
	require.NoError(t, err)
	require.False(t, gjson.GetBytes(d.Body, "installation").Exists())
	require.Equal(t, "acct_other", gjson.GetBytes(d.Body, "repository.owner.login").String())
	require.Equal(t, "acct_other/Hello-World", gjson.GetBytes(d.Body, "repository.full_name").String())
	require.Equal(t, "opened", gjson.GetBytes(d.Body, "action").String())

	push, err := samples.Lookup(keys.ProviderGitHub, "push")
	require.NoError(t, err)
	d, err = push.Delivery(e, "acct_other", time.Now())
	require.NoError(t, err)
	after := gjson.GetBytes(d.Body, "after").String()
	require.NotEqual(t, gjson.GetBytes(push.Body(), "after").String(), after, "a new commit")
	require.Equal(t, after, gjson.GetBytes(d.Body, "head_commit.id").String(), "the same SHA everywhere")
	require.Contains(t, gjson.GetBytes(d.Body, "head_commit.url").String(), after)
	require.False(t, gjson.GetBytes(d.Body, "installation").Exists(), "a login is not an installation")
}

func TestShopifyAndStandardHeaders(t *testing.T) {
	t.Parallel()
	shop, err := samples.Lookup(keys.ProviderShopify, "orders/create")
	require.NoError(t, err)
	d, err := shop.Delivery(endpoint(keys.ProviderShopify, keys.EnvTest), "other.myshopify.com", time.Now())
	require.NoError(t, err)
	require.Equal(t, "orders/create", d.Header.Get("X-Shopify-Topic"))
	require.Equal(t, "other.myshopify.com", d.Header.Get("X-Shopify-Shop-Domain"))
	require.Equal(t, d.EventID, d.Header.Get("X-Shopify-Event-Id"))
	require.NotEmpty(t, d.Header.Get("X-Shopify-Webhook-Id"))
	id := gjson.GetBytes(d.Body, "id").String()
	require.Equal(t, "gid://shopify/Order/"+id, gjson.GetBytes(d.Body, "admin_graphql_api_id").String(), "the new id everywhere")
	require.Equal(t, "#"+gjson.GetBytes(d.Body, "order_number").String(), gjson.GetBytes(d.Body, "name").String())

	fb, err := samples.Lookup(keys.ProviderStandard, "feedback.created")
	require.NoError(t, err)
	e := endpoint(keys.ProviderStandard, keys.EnvTest)
	d, err = fb.Delivery(e, "acct_other", time.Now())
	require.NoError(t, err)
	require.Equal(t, d.EventID, d.Header.Get("webhook-id"))
	require.True(t, strings.HasPrefix(d.EventID, "msg_"))
	require.Equal(t, "acct_other", gjson.GetBytes(d.Body, "data.project_id").String())

	// An account path the template lacks is created.
	e.Settings.AccountPath = "meta.workspace.id"
	d, err = fb.Delivery(e, "acct_other", time.Now())
	require.NoError(t, err)
	require.Equal(t, "acct_other", gjson.GetBytes(d.Body, "meta.workspace.id").String())
	e.Settings.AccountPath = "data.#.id"
	_, err = fb.Delivery(e, "acct_other", time.Now())
	require.ErrorContains(t, err, "only plain dotted paths")
}

func TestChooseAccount(t *testing.T) {
	t.Parallel()
	std := samples.Endpoint{Slug: "fb", Provider: keys.ProviderStandard, OwnAccount: "proj_a",
		Links: map[string]string{"proj_a": "ws", "proj_b": "ws"}}
	tests := []struct {
		name      string
		e         samples.Endpoint
		requested string
		want      string
		err       string
	}{
		{"the own account when linked", samples.Endpoint{Slug: "s", Provider: "stripe", OwnAccount: "acct_b",
			Links: map[string]string{"acct_a": "ws", "acct_b": "ws"}}, "", "acct_b", ""},
		{"else the first linked", samples.Endpoint{Slug: "s", Provider: "stripe", OwnAccount: "acct_platform",
			Links: map[string]string{"acct_c": "ws", "acct_a": "ws"}}, "", "acct_a", ""},
		{"the one asked for", samples.Endpoint{Slug: "s", Provider: "stripe", OwnAccount: "acct_a",
			Links: map[string]string{"acct_a": "ws", "acct_b": "ws"}}, "acct_b", "acct_b", ""},
		{"one asked for must be linked", samples.Endpoint{Slug: "s", Provider: "stripe", Links: map[string]string{"acct_a": "ws"}},
			"acct_z", "", "account acct_z is not linked to endpoint s (linked: acct_a)"},
		{"no link at all", samples.Endpoint{Slug: "s", Provider: "github"}, "", "",
			"endpoint s links no account, so every delivery would be quarantined as unknown_account; link one first: hookinbox endpoints link --slug s"},
		{"Standard Webhooks without an account path: its own account", std, "", "proj_a", ""},
		{"Standard Webhooks without an account path cannot name another", std, "proj_b", "",
			"endpoint fb has no --account-path: its deliveries name no account and go to its own account (proj_a), not proj_b"},
		{"Standard Webhooks with one names any linked", samples.Endpoint{Slug: "fb", Provider: keys.ProviderStandard,
			Settings: keys.EndpointSettings{AccountPath: "data.project_id"}, Links: map[string]string{"proj_a": "ws", "proj_b": "ws"}},
			"proj_b", "proj_b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.e.ChooseAccount(tt.requested)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestUnknownTypesAndCustomPayloads(t *testing.T) {
	t.Parallel()
	_, err := samples.Lookup(keys.ProviderStripe, "invoice.payed")
	require.ErrorIs(t, err, samples.ErrUnknownType)
	require.EqualError(t, err, `unknown event type "invoice.payed" for stripe: the built-in ones are checkout.session.completed, `+
		`credit_note.created, customer.subscription.updated, invoice.paid (or give --payload FILE)`)

	_, err = samples.Custom(keys.ProviderStripe, "invoice.paid", []byte(`[1, 2]`))
	require.ErrorContains(t, err, "not a JSON object")
	_, err = samples.Custom(keys.ProviderStripe, "invoice.paid", []byte(`{"id": 1} {}`))
	require.ErrorContains(t, err, "not a JSON object")

	// A thin event of one's own: a v2 id and an ISO created time, the
	// connected account in its context, read back by the Stripe provider.
	thin := []byte(`{"id":"evt_test_x","object":"v2.core.event","type":"v1.invoice.paid","livemode":true,"created":"2026-01-01T00:00:00.000Z",` +
		`"related_object":{"id":"in_1","type":"invoice","url":"/v1/invoices/in_1"}}`)
	tmpl, err := samples.Custom(keys.ProviderStripe, "v1.invoice.paid", thin)
	require.NoError(t, err)
	e := endpoint(keys.ProviderStripe, keys.EnvTest)
	d, err := tmpl.Delivery(e, "acct_other", time.Now())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(d.EventID, "evt_test_"), d.EventID)
	n := received(t, e, d)
	require.Equal(t, "acct_other", n.Account)
	require.Equal(t, keys.EnvTest, n.Environment)
	require.Equal(t, "in_1", n.ResourceID)

	// A GitHub payload of one's own for a built-in type gets that type's
	// fresh parts where it has them, and the action of the type.
	mine := []byte(`{"after":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","repository":{"name":"r","full_name":"o/r","owner":{"login":"o"}}}`)
	tmpl, err = samples.Custom(keys.ProviderGitHub, "push", mine)
	require.NoError(t, err)
	d, err = tmpl.Delivery(endpoint(keys.ProviderGitHub, keys.EnvTest), "acct_own", time.Now())
	require.NoError(t, err)
	require.NotContains(t, string(d.Body), "6113728f27ae82c7b1a177c8d03f9e96e0adf246")
	require.Equal(t, "acct_own/r", gjson.GetBytes(d.Body, "repository.full_name").String())
	require.False(t, gjson.GetBytes(d.Body, "head_commit").Exists(), "fields the payload lacks are not added")
}

// TestTheEmbeddedFilesAreSentInTheirOrder: a template goes out with its
// keys in the file's order, only compacted, when the account it names
// already is the one chosen: what is sent is what the file shows, with
// values changed and nothing moved.
func TestTheEmbeddedFilesAreSentInTheirOrder(t *testing.T) {
	t.Parallel()
	topKeys := func(b []byte) []string {
		var out []string
		gjson.ParseBytes(b).ForEach(func(k, _ gjson.Result) bool { out = append(out, k.String()); return true })
		return out
	}
	for _, provider := range []string{keys.ProviderGitHub, keys.ProviderShopify, keys.ProviderStandard} {
		for _, typ := range samples.Types(provider) {
			tmpl, err := samples.Lookup(provider, typ)
			require.NoError(t, err)
			e := endpoint(provider, keys.EnvTest)
			account := e.OwnAccount
			if provider == keys.ProviderGitHub {
				// The account the example names, where the GitHub provider reads it.
				for _, p := range []string{"installation.id", "organization.login", "repository.owner.login"} {
					if a := gjson.GetBytes(tmpl.Body(), p); a.Exists() {
						account = a.String()
						break
					}
				}
				e.Links[account] = "ws_3"
			}
			d, err := tmpl.Delivery(e, account, time.Now())
			require.NoError(t, err)
			var want bytes.Buffer
			require.NoError(t, json.Compact(&want, tmpl.Body()))
			require.Equal(t, topKeys(want.Bytes()), topKeys(d.Body), "%s %s", provider, typ)
			require.Equal(t, gjson.GetBytes(want.Bytes(), "repository.full_name").String(), gjson.GetBytes(d.Body, "repository.full_name").String())
		}
	}
}

// TestGitHubPayloadsAreTheCorpusOwn: each embedded GitHub payload is, as
// JSON, the example of the pinned @octokit/webhooks-examples it says it is
// (payloads/README.md), and the pin is the version the README names.
func TestGitHubPayloadsAreTheCorpusOwn(t *testing.T) {
	t.Parallel()
	root := testenv.Root(t)
	v, err := devenv.OctokitWebhooks.Version(root)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "internal", "samples", "payloads", "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "`@octokit/webhooks-examples` "+v, "payloads/README.md names the pinned version")

	dir := testenv.NPMPackage(t, devenv.OctokitWebhooks)
	b, err := os.ReadFile(filepath.Join(dir, "api.github.com", "index.json"))
	require.NoError(t, err)
	var index []struct {
		Name     string            `json:"name"`
		Examples []json.RawMessage `json:"examples"`
	}
	require.NoError(t, json.Unmarshal(b, &index))
	examples := map[string][]json.RawMessage{}
	for _, e := range index {
		examples[e.Name] = e.Examples
	}
	for typ, ex := range map[string]struct {
		event string
		n     int
	}{"push": {"push", 4}, "issues.opened": {"issues", 15}, "pull_request.opened": {"pull_request", 0}, "ping": {"ping", 0}} {
		tmpl, err := samples.Lookup(keys.ProviderGitHub, typ)
		require.NoError(t, err)
		require.Greater(t, len(examples[ex.event]), ex.n, typ)
		require.JSONEq(t, string(examples[ex.event][ex.n]), string(tmpl.Body()), "%s is %s #%d", typ, ex.event, ex.n)
	}
}

// TestStripePayloadsAreTheFixtures: each embedded Stripe event's object is
// the fixture of the pinned stripe-mock, changed only where
// payloads/README.md says, and its envelope is the fixture event's.
func TestStripePayloadsAreTheFixtures(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("reads stripe-mock's module: run without -short")
	}
	fixtures := stripeMockFixtures(t)
	changed := map[string]map[string]any{
		"invoice.paid":                  {"status": "paid", "amount_paid": float64(1000), "amount_remaining": float64(0)},
		"checkout.session.completed":    {"status": "complete", "payment_status": "paid", "url": nil},
		"customer.subscription.updated": {},
		"credit_note.created":           {},
	}
	resource := map[string]string{"invoice.paid": "invoice", "checkout.session.completed": "checkout.session",
		"customer.subscription.updated": "subscription", "credit_note.created": "credit_note"}
	require.ElementsMatch(t, samples.Types(keys.ProviderStripe), keysOf(resource))
	for typ, res := range resource {
		tmpl, err := samples.Lookup(keys.ProviderStripe, typ)
		require.NoError(t, err)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(tmpl.Body(), &ev))
		want := fixtures[res]
		require.NotNil(t, want, res)
		for k, v := range changed[typ] {
			want[k] = v
		}
		data := ev["data"].(map[string]any)
		require.Equal(t, want, data["object"], "%s: the %s fixture, changed only as documented", typ, res)
		require.Equal(t, typ, ev["type"])
		fe := fixtures["event"]
		for _, k := range []string{"object", "created", "request"} {
			require.Equal(t, fe[k], ev[k], "%s: the envelope's %s is the event fixture's", typ, k)
		}
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// stripeMockFixtures reads embedded/openapi/fixtures3.json of the
// stripe-mock version tools/stripe-mock pins, from the module cache
// (`go mod download` fetches it there when missing).
func stripeMockFixtures(t *testing.T) map[string]map[string]any {
	t.Helper()
	root := testenv.Root(t)
	v, err := devenv.StripeMock.Version(root)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", devenv.StripeMock.Module+"@"+v)
	cmd.Dir = filepath.Join(root, "tools", "stripe-mock")
	out, err := cmd.Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		if devenv.CI() {
			t.Fatalf("stripe-mock %s's module is unavailable under CI: %v", v, err)
		}
		t.Skipf("stripe-mock %s's module is unavailable (under CI=true this fails): %v", v, err)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "embedded", "openapi", "fixtures3.json"))
	require.NoError(t, err)
	var f struct {
		Resources map[string]map[string]any `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	return f.Resources
}

// TestADeliveryIsUnsignedUntilSigned: samples never signs; the
// provider's Signer does, with a secret ops opens.
func TestADeliveryIsUnsignedUntilSigned(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{keys.ProviderStripe, keys.ProviderGitHub, keys.ProviderStandard, keys.ProviderShopify} {
		tmpl, err := samples.Lookup(provider, samples.Types(provider)[0])
		require.NoError(t, err)
		e := endpoint(provider, keys.EnvTest)
		d, err := tmpl.Delivery(e, e.OwnAccount, time.Now())
		require.NoError(t, err)
		for _, name := range []string{"Stripe-Signature", "Webhook-Signature", "Webhook-Timestamp", "X-Hub-Signature-256",
			"X-Hub-Signature", "X-Shopify-Hmac-Sha256"} {
			require.Empty(t, d.Header.Get(name), "%s: %s", provider, name)
		}
		require.NotEmpty(t, d.Header.Get("Content-Type"))
	}
}
