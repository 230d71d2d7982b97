package admission_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/providertest"
)

// recordingHandoff stands in for the intake's hand-off.
type recordingHandoff struct {
	mu    sync.Mutex
	calls []keys.Event
}

func (h *recordingHandoff) Notify(_ keys.Resource, e keys.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, e)
}

func (h *recordingHandoff) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

type bundle struct {
	store   *store.Store
	adm     *admission.Admitter
	handoff *recordingHandoff
	ctx     context.Context
}

const (
	stripeSecret = "whsec_stripe_test_secret"
	githubSecret = "gh-secret"
)

func setup(t *testing.T) *bundle {
	t.Helper()
	s := testenv.Store(t)
	ctx := context.Background()
	eps := []endpoints.NewEndpoint{
		{Slug: "stripe", Provider: "stripe", Environment: "test", Secrets: []string{stripeSecret}},
		{Slug: "stripe-connect", Provider: "stripe", Environment: "live", Account: "acct_platform", Secrets: []string{stripeSecret}},
		{Slug: "gh", Provider: "github", Environment: "live", Secrets: []string{githubSecret}},
	}
	for _, e := range eps {
		require.NoError(t, endpoints.InsertEndpoint(ctx, s, e))
	}
	require.NoError(t, endpoints.LinkAccount(ctx, s, "stripe", "acct_own", "ws_1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "stripe-connect", "acct_c1", "ws_c1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "gh", "4242", "ws_gh"))
	h := &recordingHandoff{}
	adm := admission.New(admission.Options{Routes: routestest.Builtin(), Store: s, Handoff: h, Tolerance: 5 * time.Minute, CacheTTL: time.Minute})
	return &bundle{store: s, adm: adm, handoff: h, ctx: ctx}
}

// admit admits a webhook delivery to slug, as the intake does.
func (b *bundle) admit(t *testing.T, slug string, body []byte, headers map[string]string) (admission.Result, error) {
	t.Helper()
	ep, err := b.adm.Endpoint(b.ctx, slug)
	require.NoError(t, err)
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range headers {
		h.Set(k, v)
	}
	return b.adm.Admit(b.ctx, ep, admission.Delivery{Header: h, Body: body}, keys.OriginWebhook)
}

// backfill admits body as the backfill does, for the pass of account.
func (b *bundle) backfill(t *testing.T, slug, account string, body []byte) (admission.Result, error) {
	t.Helper()
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, slug)
	require.NoError(t, err)
	return admission.New(admission.Options{Routes: routestest.Builtin(), Store: b.store}).Admit(b.ctx, admission.NewEndpoint(ep),
		admission.Delivery{Body: body, Account: account}, keys.OriginBackfill)
}

func (b *bundle) inboxCount(t *testing.T) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM webhook_inbox`).Scan(&n))
	return n
}

func (b *bundle) quarantineCount(t *testing.T) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM inbox_quarantine`).Scan(&n))
	return n
}

func (b *bundle) row(t *testing.T, k keys.Event) *inbox.StoredEvent {
	e, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, k)
	require.NoError(t, err)
	return e
}

func TestWebhookOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_1", "invoice.paid", "in_1", "invoice", "")
	key := keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_1"}

	res, err := b.admit(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, key, res.Key)
	require.Equal(t, keys.StatusPending, res.Status)
	require.Equal(t, keys.Resource{Provider: "stripe", Account: "acct_own", Environment: "test", Kind: "invoice", ID: "in_1"}, res.Resource)
	require.Equal(t, keys.OriginWebhook, b.row(t, key).Origin)
	require.Equal(t, 1, b.handoff.count())

	// A duplicate of a pending row rings again; a conflicting body is quarantined.
	res, err = b.admit(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome)
	require.Equal(t, 2, b.handoff.count())
	other := providertest.StripeEvent("evt_1", "invoice.paid", "in_OTHER", "invoice", "")
	res, err = b.admit(t, "stripe", other, providertest.StripeHeaders(other, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonConflictingDuplicate, res.Reason)

	// An unhandled type is ignored, not handed off.
	ch := providertest.StripeEvent("evt_ch", "charge.succeeded", "ch_1", "charge", "")
	res, err = b.admit(t, "stripe", ch, providertest.StripeHeaders(ch, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Ignored, res.Outcome)
	require.Contains(t, res.Detail, "charge.succeeded")
	require.Equal(t, 2, b.handoff.count())

	// A bad signature stores nothing.
	_, err = b.admit(t, "stripe", body, providertest.StripeHeaders(body, "whsec_wrong", time.Now()))
	var unauth *providers.Unauthenticated
	require.ErrorAs(t, err, &unauth)
	require.Equal(t, 2, b.inboxCount(t))
	require.Equal(t, 1, b.quarantineCount(t))
}

func TestBackfillOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_b", "invoice.paid", "in_b", "invoice", "")
	key := keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_b"}

	// No signature: the bytes come from the authenticated API.
	res, err := b.backfill(t, "stripe", "acct_own", body)
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, key, res.Event.Key)
	require.Equal(t, keys.OriginBackfill, b.row(t, key).Origin)

	// An existing key with another serialization is "already have it", not a quarantine.
	res, err = b.backfill(t, "stripe", "acct_own", providertest.StripeEvent("evt_b", "invoice.paid", "in_b", "invoice", `"extra":1,`))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome)

	// An event naming another account than the pass lists, or listed under
	// an unlinked one, is refused and stores nothing.
	_, err = b.backfill(t, "stripe", "acct_else", providertest.StripeEvent("evt_b2", "invoice.paid", "in_b", "invoice", `"account":"acct_own",`))
	require.ErrorContains(t, err, "the event names account acct_own, the pass lists acct_else")
	require.False(t, errors.Is(err, admission.ErrNotStored))
	_, err = b.backfill(t, "stripe", "acct_else", providertest.StripeEvent("evt_b2", "invoice.paid", "in_b", "invoice", ""))
	var rej *admission.Rejection
	require.ErrorAs(t, err, &rej)
	require.Equal(t, inbox.ReasonUnknownAccount, rej.Reason, "the pass's account, not the endpoint's own")
	_, err = b.backfill(t, "stripe-connect", "acct_x", []byte(`{"id":"evt_b3","object":"event","type":"invoice.paid","livemode":true,"account":"acct_x","created":1,"data":{"object":{"id":"in_9","object":"invoice"}}}`))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, inbox.ReasonUnknownAccount, rej.Reason)

	require.Equal(t, 1, b.inboxCount(t))
	require.Zero(t, b.quarantineCount(t))
	require.Zero(t, b.handoff.count(), "the backfill rings its doorbells itself")
}

func TestQuarantineOriginGoesThroughReadmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep, err := b.adm.Endpoint(b.ctx, "stripe")
	require.NoError(t, err)
	_, err = b.adm.Admit(b.ctx, ep, admission.Delivery{Body: []byte(`{}`)}, keys.OriginQuarantine)
	require.ErrorContains(t, err, "Readmit")
	require.Zero(t, b.inboxCount(t))
}

// TestABackfilledEventAndItsLateWebhookAreOneEvent: the backfill stores the
// API list item's bytes; the webhook delayed by the very outage the backfill
// exists for carries the same event in another layout (whitespace, key
// order, an API version field). It is a duplicate, not a conflict. What still
// conflicts: another event under the same id, whichever origin came first,
// and two webhooks whose bytes differ.
func TestABackfilledEventAndItsLateWebhookAreOneEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	listed := []byte(`{"id":"evt_late","object":"event","type":"invoice.paid","livemode":false,"created":1760000000,"data":{"object":{"id":"in_late","object":"invoice"}}}`)
	delivered := []byte("{\n  \"api_version\": \"2024-06-20\",\n  \"created\": 1760000000,\n  \"data\": {\n    \"object\": {\n      \"object\": \"invoice\",\n      \"id\": \"in_late\"\n    }\n  },\n  \"type\": \"invoice.paid\",\n  \"livemode\": false,\n  \"object\": \"event\",\n  \"id\": \"evt_late\"\n}\n")
	key := keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_late"}

	res, err := b.backfill(t, "stripe", "acct_own", listed)
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)

	res, err = b.admit(t, "stripe", delivered, providertest.StripeHeaders(delivered, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome, "%s: %s", res.Reason, res.Detail)
	require.Equal(t, keys.StatusPending, res.Status)
	require.Equal(t, 1, b.handoff.count(), "a duplicate of a pending row rings again")
	require.Zero(t, b.quarantineCount(t))
	got := b.row(t, key)
	require.Equal(t, listed, got.Payload, "the first row is left alone")
	require.Equal(t, keys.OriginBackfill, got.Origin)

	// The other way round: webhook first, then the list item.
	web := providertest.StripeEvent("evt_early", "invoice.paid", "in_early", "invoice", "")
	res, err = b.admit(t, "stripe", web, providertest.StripeHeaders(web, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	res, err = b.backfill(t, "stripe", "acct_own", providertest.StripeEvent("evt_early", "invoice.paid", "in_early", "invoice", `"api_version":"2025-01-01",`))
	require.NoError(t, err)
	require.Equal(t, admission.Duplicate, res.Outcome)

	// Another event under a backfilled id (another object, another type, or
	// another time) is still a conflict: quarantined from the intake,
	// refused by the backfill.
	for i, other := range [][]byte{
		providertest.StripeEvent("evt_late", "invoice.paid", "in_OTHER", "invoice", ""),
		providertest.StripeEvent("evt_late", "customer.subscription.updated", "in_late", "subscription", ""),
		[]byte(`{"id":"evt_late","object":"event","type":"invoice.paid","livemode":false,"created":1760009999,"data":{"object":{"id":"in_late","object":"invoice"}}}`),
	} {
		res, err = b.admit(t, "stripe", other, providertest.StripeHeaders(other, stripeSecret, time.Now()))
		require.NoError(t, err)
		require.Equal(t, admission.Quarantined, res.Outcome, "variant %d", i)
		require.Equal(t, inbox.ReasonConflictingDuplicate, res.Reason)
	}
	_, err = b.backfill(t, "stripe", "acct_own", providertest.StripeEvent("evt_early", "invoice.paid", "in_OTHER", "invoice", ""))
	var rej *admission.Rejection
	require.ErrorAs(t, err, &rej)
	require.Equal(t, inbox.ReasonConflictingDuplicate, rej.Reason)
	require.False(t, errors.Is(err, admission.ErrNotStored))

	// Two webhooks: their bytes are the sender's, so any difference is a
	// conflict, even one of layout only.
	relaid := []byte(" " + string(web))
	res, err = b.admit(t, "stripe", relaid, providertest.StripeHeaders(relaid, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, res.Outcome)
	require.Equal(t, inbox.ReasonConflictingDuplicate, res.Reason)

	require.Equal(t, 2, b.inboxCount(t))
	require.Equal(t, 4, b.quarantineCount(t))
}

// TestConnectBackfillTakesTheAccountFromTheScope: the backfill lists a
// Connect account's events under Stripe-Account; the account is that
// scope's, not the JSON's. An event listed without the field belongs to the
// scope (it must not fall back to the platform's own account and be
// rejected); one naming another account than the scope is refused.
func TestConnectBackfillTakesTheAccountFromTheScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noField := []byte(`{"id":"evt_cb1","object":"event","type":"invoice.paid","livemode":true,"created":1760000000,"data":{"object":{"id":"in_cb1","object":"invoice"}}}`)
	res, err := b.backfill(t, "stripe-connect", "acct_c1", noField)
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	key := keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: "evt_cb1"}
	require.Equal(t, key, res.Event.Key)
	got := b.row(t, key)
	require.Equal(t, "ws_c1", got.WorkspaceID)

	named := []byte(`{"id":"evt_cb2","object":"event","type":"invoice.paid","livemode":true,"account":"acct_c1","created":1760000000,"data":{"object":{"id":"in_cb2","object":"invoice"}}}`)
	res, err = b.backfill(t, "stripe-connect", "acct_c1", named)
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, "acct_c1", res.Event.Key.Account)

	// Listed under acct_c1 but naming another account: refused, nothing stored.
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "stripe-connect", "acct_c2", "ws_c2"))
	other := []byte(`{"id":"evt_cb3","object":"event","type":"invoice.paid","livemode":true,"account":"acct_c2","created":1760000000,"data":{"object":{"id":"in_cb3","object":"invoice"}}}`)
	_, err = b.backfill(t, "stripe-connect", "acct_c1", other)
	require.ErrorContains(t, err, "the event names account acct_c2, the pass lists acct_c1")
	require.Equal(t, 2, b.inboxCount(t))
	require.Zero(t, b.quarantineCount(t))
}

// TestOwnAccountEventsStayRoutedAfterASecondLink: the "stripe" endpoint
// names no own account, so its events without an account field belong to
// its single link. Linking a Connect account beside it must not turn them
// into unknown_account (quarantined, answered 202: the provider stops
// retrying).
func TestOwnAccountEventsStayRoutedAfterASecondLink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "stripe", "acct_conn", "ws_conn"))

	own := providertest.StripeEvent("evt_own", "invoice.paid", "in_own", "invoice", "")
	res, err := b.admit(t, "stripe", own, providertest.StripeHeaders(own, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome, "%s: %s", res.Reason, res.Detail)
	require.Equal(t, "acct_own", res.Key.Account)
	require.Equal(t, "ws_1", b.row(t, res.Key).WorkspaceID)

	conn := providertest.StripeEvent("evt_conn", "invoice.paid", "in_conn", "invoice", `"account":"acct_conn",`)
	res, err = b.admit(t, "stripe", conn, providertest.StripeHeaders(conn, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, res.Outcome)
	require.Equal(t, "ws_conn", b.row(t, res.Key).WorkspaceID)
}
