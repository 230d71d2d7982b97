package admission_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers/providertest"
)

// The attacks of issue #14 (tenants and replay), each tried against the
// real admission path on a real PostgreSQL, each asserting what was stored:
// nothing, or only the quarantine row the design puts there.

const (
	secretA = "whsec_tenantAsecret0123456789abcdefghijklmn"
	secretB = "whsec_tenantBsecret0123456789abcdefghijklmn"
	shopKey = "shpss_0123456789abcdef0123456789abcdef"
)

func shopifyHeaders(body []byte, secret, shop, eventID, topic string) map[string]string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return map[string]string{
		"X-Shopify-Hmac-Sha256":  base64.StdEncoding.EncodeToString(mac.Sum(nil)),
		"X-Shopify-Shop-Domain":  shop,
		"X-Shopify-Event-Id":     eventID,
		"X-Shopify-Topic":        topic,
		"X-Shopify-Triggered-At": "2026-01-02T03:04:05Z",
	}
}

// requireStored: a new inbox row (pending, or ignored for a type no
// handler takes).
func requireStored(t *testing.T, res admission.Result, msg ...any) {
	t.Helper()
	require.Contains(t, []admission.Outcome{admission.Accepted, admission.Ignored}, res.Outcome, msg...)
}

func (b *bundle) workspaceRows(t *testing.T, ws string) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM webhook_inbox WHERE workspace_id = $1`, ws).Scan(&n))
	return n
}

// Tenant B holds the secret of its own Connect account on a shared
// endpoint. It signs an event naming tenant A's account: quarantined as
// account_mismatch (answered 202 by the intake), nothing in A's workspace.
func TestASecretCannotSignForAnotherTenantsAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "shared", Provider: "stripe", Environment: "test",
		Secrets: []string{secretA}, SecretAccounts: []string{"acct_a"}}))
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, "shared")
	require.NoError(t, err)
	_, err = endpoints.InsertSecret(b.ctx, b.store.Pool, b.store.Keys, "shared", secretB, []string{"acct_b"})
	require.NoError(t, err)
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shared", "acct_a", "ws_a"))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shared", "acct_b", "ws_b"))

	forged := providertest.StripeEvent("evt_forged", "invoice.paid", "in_1", "invoice", `"account":"acct_a",`)
	res, err := b.admit(t, "shared", forged, providertest.StripeHeaders(forged, secretB, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonAccountMismatch, res.Reason)
	require.Contains(t, res.Detail, "acct_b only")
	require.Zero(t, b.inboxCount(t), "nothing reached any workspace")
	require.Equal(t, 1, b.quarantineCount(t))

	// The quarantine row remembers which secret verified it, and
	// re-admission checks that secret's binding again.
	q := b.entry(t, b.quarantineID(t, "evt_forged"))
	require.NotZero(t, q.SecretID)
	require.NotEqual(t, ep.Secrets[0].ID, q.SecretID)
	_, err = admission.Readmit(b.ctx, b.store, routestest.Builtin(), q.ID, "ops", "try")
	require.ErrorIs(t, err, admission.ErrCannotReadmit)
	require.ErrorContains(t, err, "account mismatch")
	require.Zero(t, b.inboxCount(t))

	// Each tenant's own events still land in its own workspace.
	own := providertest.StripeEvent("evt_own_a", "invoice.paid", "in_2", "invoice", `"account":"acct_a",`)
	res, err = b.admit(t, "shared", own, providertest.StripeHeaders(own, secretA, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, 1, b.workspaceRows(t, "ws_a"))
	ownB := providertest.StripeEvent("evt_own_b", "invoice.paid", "in_3", "invoice", `"account":"acct_b",`)
	res, err = b.admit(t, "shared", ownB, providertest.StripeHeaders(ownB, secretB, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, 1, b.workspaceRows(t, "ws_b"))
	require.Equal(t, 1, b.workspaceRows(t, "ws_a"), "still only A's own event in A")
}

// The same Shopify body, validly signed, lands in workspace A or B by its
// unsigned shop header alone, unless the shop is bound.
func TestShopifyShopHeaderMustMatchItsBinding(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "shop-a", Provider: "shopify", Environment: "live",
		Account: "a.myshopify.com", Secrets: []string{shopKey}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shop-a", "a.myshopify.com", "ws_a"))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shop-a", "b.myshopify.com", "ws_b"))

	// A fresh signed body with the other shop's header: quarantined.
	body := []byte(`{"id":1001,"total_price":"10.00"}`)
	res, err := b.admit(t, "shop-a", body, shopifyHeaders(body, shopKey, "b.myshopify.com", "e-1", "orders/paid"))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonAccountMismatch, res.Reason)
	require.Contains(t, res.Detail, "bound to a.myshopify.com")
	require.Zero(t, b.workspaceRows(t, "ws_b"))
	require.Equal(t, 1, b.quarantineCount(t))

	// The bound shop is accepted; the same accepted body replayed with
	// the other shop's header is a duplicate: nothing more stored at all.
	body2 := []byte(`{"id":1002,"total_price":"20.00"}`)
	res, err = b.admit(t, "shop-a", body2, shopifyHeaders(body2, shopKey, "a.myshopify.com", "e-2", "orders/paid"))
	require.NoError(t, err)
	requireStored(t, res)
	res, err = b.admit(t, "shop-a", body2, shopifyHeaders(body2, shopKey, "b.myshopify.com", "e-3", "orders/paid"))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome)
	require.Equal(t, 1, b.workspaceRows(t, "ws_a"))
	require.Zero(t, b.workspaceRows(t, "ws_b"))
	require.Equal(t, 1, b.quarantineCount(t))
}

func TestShopifyWithoutABindingTrustsOnlyASingleLinkedShop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "shops", Provider: "shopify", Environment: "live",
		Secrets: []string{shopKey}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shops", "a.myshopify.com", "ws_a"))

	body := []byte(`{"id":2001}`)
	res, err := b.admit(t, "shops", body, shopifyHeaders(body, shopKey, "a.myshopify.com", "e-1", "orders/create"))
	require.NoError(t, err)
	requireStored(t, res, "one linked shop: the header can only name it")

	// A second shop linked without binding either: the header would pick
	// the workspace. The second link pins the first shop as the endpoint's
	// own account (store.Link), so the header may only name that one: a
	// delivery naming the other shop is quarantined until bound.
	res2, err := endpoints.Link(b.ctx, b.store, "shops", "b.myshopify.com", "ws_b")
	require.NoError(t, err)
	require.True(t, res2.PinnedOwnAccount)
	b.adm = admission.New(admission.Options{Routes: routestest.Builtin(), Store: b.store, Handoff: b.handoff, Tolerance: 5 * time.Minute, CacheTTL: time.Minute})
	body2 := []byte(`{"id":2002}`)
	res, err = b.admit(t, "shops", body2, shopifyHeaders(body2, shopKey, "b.myshopify.com", "e-2", "orders/create"))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonAccountMismatch, res.Reason)
	require.Contains(t, res.Detail, "unsigned account header names b.myshopify.com")
	require.Zero(t, b.workspaceRows(t, "ws_b"))

	// Without the pin ('endpoints set-account --account ""') nothing binds
	// a shop: with two linked, every header is refused.
	require.NoError(t, endpoints.SetOwnAccount(b.ctx, b.store, "shops", ""))
	b.adm = admission.New(admission.Options{Routes: routestest.Builtin(), Store: b.store, Handoff: b.handoff, Tolerance: 5 * time.Minute, CacheTTL: time.Minute})
	body2b := []byte(`{"id":2012}`)
	res, err = b.admit(t, "shops", body2b, shopifyHeaders(body2b, shopKey, "a.myshopify.com", "e-2b", "orders/create"))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Contains(t, res.Detail, "not signed")
	require.NoError(t, endpoints.SetOwnAccount(b.ctx, b.store, "shops", "a.myshopify.com"))

	// Bound per secret: each shop's own secret picks its shop.
	shopKeyB := "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"
	_, err = endpoints.InsertSecret(b.ctx, b.store.Pool, b.store.Keys, "shops", shopKeyB, []string{"b.myshopify.com"})
	require.NoError(t, err)
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, "shops")
	require.NoError(t, err)
	require.NoError(t, endpoints.BindSecret(b.ctx, b.store, "shops", ep.Secrets[0].ID, []string{"a.myshopify.com"}))
	b.adm = admission.New(admission.Options{Routes: routestest.Builtin(), Store: b.store, Handoff: b.handoff, Tolerance: 5 * time.Minute, CacheTTL: time.Minute})
	body3 := []byte(`{"id":2003}`)
	res, err = b.admit(t, "shops", body3, shopifyHeaders(body3, shopKeyB, "b.myshopify.com", "e-3", "orders/create"))
	require.NoError(t, err)
	requireStored(t, res)
	require.Equal(t, 1, b.workspaceRows(t, "ws_b"))
	body4 := []byte(`{"id":2004}`)
	res, err = b.admit(t, "shops", body4, shopifyHeaders(body4, shopKey, "b.myshopify.com", "e-4", "orders/create"))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome, "shop A's secret cannot sign for shop B")
	require.Equal(t, 1, b.workspaceRows(t, "ws_b"))
}

// GitHub and Shopify sign neither an id nor a time: a captured body
// replayed under a new delivery id is a duplicate, concurrent replays
// included (the UNIQUE index settles them), and nothing new is stored.
func TestReplayedBodyUnderANewDeliveryIDIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/hello"}}`)
	res, err := b.admit(t, "gh", body, providertest.GitHubHeaders(body, githubSecret, "d-original", "issues"))
	require.NoError(t, err)
	requireStored(t, res)
	original := res.InboxID
	rings := b.handoff.count()

	var wg sync.WaitGroup
	results := make([]admission.Result, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = b.admit(t, "gh", body, providertest.GitHubHeaders(body, githubSecret, fmt.Sprintf("d-replay-%d", i), "issues"))
		}(i)
	}
	wg.Wait()
	for i := range results {
		require.NoError(t, errs[i])
		require.Equal(t, admission.Duplicate, results[i].Outcome)
		require.Equal(t, original, results[i].InboxID)
		require.Contains(t, results[i].Detail, "replay")
	}
	require.Equal(t, 1, b.inboxCount(t))
	require.Zero(t, b.quarantineCount(t))
	require.Equal(t, rings, b.handoff.count(), "a replay rings no doorbell")

	// Concurrent first deliveries of one body under different ids: one row.
	fresh := []byte(`{"action":"closed","installation":{"id":4242},"repository":{"full_name":"octo/hello"}}`)
	var accepted sync.Map
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := b.admit(t, "gh", fresh, providertest.GitHubHeaders(fresh, githubSecret, fmt.Sprintf("d-race-%d", i), "issues"))
			if err == nil && (r.Outcome == admission.Accepted || r.Outcome == admission.Ignored) {
				accepted.Store(i, true)
			}
		}(i)
	}
	wg.Wait()
	n := 0
	accepted.Range(func(_, _ any) bool { n++; return true })
	require.Equal(t, 1, n)
	require.Equal(t, 2, b.inboxCount(t))

	// A replay under a fresh id whose account is unlinked is not let into
	// the quarantine either: the endpoint already holds the body.
	res, err = b.admit(t, "gh", body, providertest.GitHubHeaders(body, githubSecret, "d-other", "issues"))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome)
	require.Zero(t, b.quarantineCount(t))
}

// Stripe signs the id (inside the body) and the time: two ids are two
// bodies. Standard Webhooks signs webhook-id: the same body under two
// signed ids is two messages, both kept; the body dedup does not apply.
func TestBodyDedupOnlyWhereTheIDIsUnsigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	std := "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-secret-for-dedup-test!!"))
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "std", Provider: "standard", Environment: "live",
		Account: "proj_1", Secrets: []string{std}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "std", "proj_1", "ws_std"))
	body := []byte(`{"type":"feedback.created","data":{"id":"fb_1"}}`)
	for _, id := range []string{"msg_1", "msg_2"} {
		res, err := b.admit(t, "std", body, standardHeaders(t, body, std, id, time.Now()))
		require.NoError(t, err)
		require.Equal(t, admission.Accepted, res.Outcome, id)
	}
	require.Equal(t, 2, b.workspaceRows(t, "ws_std"))
}

func standardHeaders(t *testing.T, body []byte, secret, id string, at time.Time) map[string]string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	require.NoError(t, err)
	ts := fmt.Sprint(at.Unix())
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	return map[string]string{"webhook-id": id, "webhook-timestamp": ts,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
}

// The intake's endpoint never carries the API key, although the endpoint
// has one (the store test shows its query cannot even read the column).
func TestTheIntakesEndpointHasNoAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "with-key", Provider: "stripe", Environment: "test",
		Secrets: []string{stripeSecret}, APIKey: "sk_live_never_in_the_intake", APIBaseURL: "http://127.0.0.1:1"}))
	ep, err := b.adm.Endpoint(b.ctx, "with-key")
	require.NoError(t, err)
	require.Empty(t, ep.APIKey)
	full, err := endpoints.GetEndpoint(b.ctx, b.store, "with-key")
	require.NoError(t, err)
	require.Equal(t, "sk_live_never_in_the_intake", full.APIKey)
}
