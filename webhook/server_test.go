package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/providertest"
	hwebhook "github.com/hookinbox/hookinbox/webhook"
)

// recordingHandoff stands in for the Temporal hand-off: the intake's
// contract with it is only "called after the commit, never blocking".
type recordingHandoff struct {
	mu    sync.Mutex
	calls []keys.Event
	res   []keys.Resource
}

func (h *recordingHandoff) Notify(r keys.Resource, e keys.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, e)
	h.res = append(h.res, r)
}

func (h *recordingHandoff) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type bundle struct {
	url     string
	metrics *metrics.Metrics
	store   *store.Store
	handoff *recordingHandoff
	logs    *syncBuffer
	ctx     context.Context
	// inFlight counts requests whose handler has not returned. The intake
	// answers before it records the delivery's metrics and log line (they
	// are kept off the sender's path), so a test that reads them waits
	// for it with settled.
	inFlight *sync.WaitGroup
}

// settled waits until every request sent so far has been recorded.
func (b *bundle) settled() { b.inFlight.Wait() }

const (
	stripeSecret  = "whsec_stripe_test_secret"
	stripeSecret2 = "whsec_stripe_rotated_secret"
	githubSecret  = "gh-secret"
	shopifySecret = "shpss_secret"
)

var (
	standardSecret  = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-secret-one-32-bytes!!!!"))
	standardSecret2 = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-secret-two-32-bytes!!!!"))
)

func setup(t *testing.T) *bundle {
	t.Helper()
	s := testenv.Store(t)
	ctx := context.Background()
	eps := []endpoints.NewEndpoint{
		{Slug: "stripe", Provider: "stripe", Environment: "test", Secrets: []string{stripeSecret}},
		{Slug: "stripe-connect", Provider: "stripe", Environment: "live", Account: "acct_platform", Secrets: []string{stripeSecret, stripeSecret2},
			Settings: keys.EndpointSettings{VersionPath: "data.object.version"}},
		{Slug: "gh", Provider: "github", Environment: "live", Secrets: []string{githubSecret}},
		{Slug: "feedback", Provider: "standard", Environment: "live", Secrets: []string{standardSecret, standardSecret2},
			Settings: keys.EndpointSettings{AccountPath: "data.project_id"}},
		{Slug: "shop", Provider: "shopify", Environment: "live", Secrets: []string{shopifySecret}},
	}
	for _, e := range eps {
		require.NoError(t, endpoints.InsertEndpoint(ctx, s, e))
	}
	require.NoError(t, endpoints.LinkAccount(ctx, s, "stripe", "acct_own", "ws_1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "stripe-connect", "acct_c1", "ws_c1"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "gh", "4242", "ws_gh"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "feedback", "proj_1", "ws_fb"))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "shop", "demo.myshopify.com", "ws_shop"))

	h := &recordingHandoff{}
	logs := &syncBuffer{}
	m := metrics.New()
	srv := hwebhook.New(hwebhook.Options{Routes: routestest.Builtin(),
		Store: s, Handoff: h, Metrics: m,
		Logger:       slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MaxBodyBytes: 64 << 10, Tolerance: 5 * time.Minute, CacheTTL: time.Minute,
	})
	inFlight := &sync.WaitGroup{}
	handler := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Done()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return &bundle{url: ts.URL, metrics: m, store: s, handoff: h, logs: logs, ctx: ctx, inFlight: inFlight}
}

type reply struct {
	code int
	body string
}

func (b *bundle) post(t *testing.T, slug string, body []byte, headers map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/webhooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(out)}
}

func (b *bundle) inboxCount(t *testing.T) int {
	var n int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM webhook_inbox`).Scan(&n))
	return n
}

func (b *bundle) quarantine(t *testing.T) []string {
	rows, err := b.store.Pool.Query(b.ctx, `SELECT reason FROM inbox_quarantine ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		out = append(out, r)
	}
	return out
}

func (b *bundle) row(t *testing.T, k keys.Event) *inbox.StoredEvent {
	e, err := inbox.GetInboxEvent(b.ctx, b.store.Pool, k)
	require.NoError(t, err)
	return e
}

func TestStripeAcceptedIsCommittedThenHandedOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_1", "invoice.paid", "in_1", "invoice", "")
	r := b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Contains(t, r.body, `"accepted"`)

	// Without Connect the account is the endpoint's own (its single link).
	key := keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_1"}
	got := b.row(t, key)
	require.Equal(t, keys.StatusPending, got.Status)
	require.Equal(t, "ws_1", got.WorkspaceID)
	require.Equal(t, "invoice", got.ResourceKind)
	require.Equal(t, "in_1", got.ResourceID)
	require.Equal(t, body, got.Payload, "the exact raw bytes are kept")
	sum := sha256.Sum256(body)
	require.Equal(t, sum[:], got.BodySHA256)
	require.NotNil(t, got.OccurredAt)

	require.Equal(t, 1, b.handoff.count())
	require.Equal(t, key, b.handoff.calls[0])
	require.Equal(t, keys.Resource{Provider: "stripe", Account: "acct_own", Environment: "test", Kind: "invoice", ID: "in_1"}, b.handoff.res[0])
}

func TestStripeSignatureFailuresStoreNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_bad", "invoice.paid", "in_1", "invoice", "")
	tests := []struct {
		name    string
		headers map[string]string
		body    []byte
	}{
		{"missing header", nil, body},
		{"wrong secret", providertest.StripeHeaders(body, "whsec_wrong", time.Now()), body},
		{"body changed after signing", providertest.StripeHeaders(body, stripeSecret, time.Now()), append([]byte(nil), bytes.Replace(body, []byte("in_1"), []byte("in_2"), 1)...)},
		{"outside tolerance", providertest.StripeHeaders(body, stripeSecret, time.Now().Add(-6*time.Minute)), body},
		{"in the future beyond tolerance", providertest.StripeHeaders(body, stripeSecret, time.Now().Add(6*time.Minute)), body},
		{"garbage header", map[string]string{"Stripe-Signature": "nonsense"}, body},
	}
	for _, tt := range tests {
		r := b.post(t, "stripe", tt.body, tt.headers)
		require.Equal(t, http.StatusUnauthorized, r.code, tt.name)
	}
	require.Zero(t, b.inboxCount(t))
	require.Empty(t, b.quarantine(t))
	require.Zero(t, b.handoff.count())
}

func TestRotationAcceptsEitherSecretAndRecordsWhichOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, "stripe-connect")
	require.NoError(t, err)
	require.Len(t, ep.Secrets, 2)

	for i, secret := range []string{stripeSecret, stripeSecret2} {
		id := fmt.Sprintf("evt_rot%d", i)
		body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.subscription.updated","livemode":true,"account":"acct_c1","created":1760000000,"data":{"object":{"id":"sub_1","object":"subscription","version":7}}}`, id))
		r := b.post(t, "stripe-connect", body, providertest.StripeHeaders(body, secret, time.Now()))
		require.Equal(t, http.StatusOK, r.code, r.body)
		got := b.row(t, keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: id})
		require.Equal(t, ep.Secrets[i].ID, got.SecretID)
		require.NotNil(t, got.ProviderVersion)
		require.EqualValues(t, 7, *got.ProviderVersion)
	}

	// A secret added after the endpoint was cached works at once.
	_, err = endpoints.InsertSecret(b.ctx, b.store.Pool, b.store.Keys, "stripe-connect", "whsec_third", nil)
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // the reload-on-failure floor
	body := []byte(`{"id":"evt_rot3","object":"event","type":"customer.subscription.updated","livemode":true,"account":"acct_c1","created":1760000000,"data":{"object":{"id":"sub_1","object":"subscription"}}}`)
	r := b.post(t, "stripe-connect", body, providertest.StripeHeaders(body, "whsec_third", time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
}

func TestDuplicatesAndConflicts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_d", "invoice.paid", "in_1", "invoice", "")
	for range 3 {
		r := b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
		require.Equal(t, http.StatusOK, r.code)
	}
	require.Equal(t, 1, b.inboxCount(t))
	// Each delivery of a still-pending row rings the doorbell (coalesced downstream).
	require.Equal(t, 3, b.handoff.count())

	// Same key, different body: original kept, newcomer quarantined, 2xx.
	other := providertest.StripeEvent("evt_d", "invoice.paid", "in_OTHER", "invoice", "")
	r := b.post(t, "stripe", other, providertest.StripeHeaders(other, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Contains(t, r.body, "conflicting_duplicate")
	got := b.row(t, keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_d"})
	require.Equal(t, "in_1", got.ResourceID)
	require.Equal(t, body, got.Payload)
	require.Equal(t, []string{"conflicting_duplicate"}, b.quarantine(t))

	// The sender retrying the conflicting delivery does not grow the quarantine.
	r = b.post(t, "stripe", other, providertest.StripeHeaders(other, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code)
	require.Len(t, b.quarantine(t), 1)

	// A duplicate of a done row is left alone and not handed off again.
	_, err := inbox.CompleteInboxEvent(b.ctx, b.store.Pool, got.Key, keys.StatusDone, "")
	require.NoError(t, err)
	before := b.handoff.count()
	r = b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, before, b.handoff.count())
	require.Equal(t, keys.StatusDone, b.row(t, got.Key).Status)
}

func TestConcurrentIdenticalDeliveriesMakeOneRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_race", "invoice.paid", "in_race", "invoice", "")
	h := providertest.StripeHeaders(body, stripeSecret, time.Now())
	var wg sync.WaitGroup
	codes := make([]int, 24)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.post(t, "stripe", body, h).code
		}()
	}
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.Equal(t, 1, b.inboxCount(t))
	require.Empty(t, b.quarantine(t))
}

func TestQuarantineAndBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Connect event from an account nobody linked: quarantined, 2xx.
	body := []byte(`{"id":"evt_u","object":"event","type":"invoice.paid","livemode":true,"account":"acct_stranger","created":1,"data":{"object":{"id":"in_9","object":"invoice"}}}`)
	r := b.post(t, "stripe-connect", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusAccepted, r.code, r.body)
	require.Contains(t, r.body, "unknown_account")

	// A test-mode event on a live endpoint never becomes live work.
	body = []byte(`{"id":"evt_env","object":"event","type":"invoice.paid","livemode":false,"account":"acct_c1","created":1,"data":{"object":{"id":"in_9","object":"invoice"}}}`)
	r = b.post(t, "stripe-connect", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusAccepted, r.code, r.body)

	// Malformed JSON after a valid signature: quarantined with its reason.
	body = []byte(`{"id":"evt_m", "type": `)
	r = b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusBadRequest, r.code, r.body)
	require.Contains(t, r.body, "not valid JSON")
	b.settled()
	require.InDelta(t, 1, testutil.ToFloat64(b.metrics.Requests.WithLabelValues("stripe", "stripe", "malformed")), 0)

	// A handled type without the identifiers it needs.
	body = []byte(`{"id":"evt_noobj","object":"event","type":"invoice.paid","livemode":false,"created":1,"data":{}}`)
	r = b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusBadRequest, r.code, r.body)

	require.Equal(t, []string{"unknown_account", "environment_mismatch", "malformed", "malformed"}, b.quarantine(t))
	require.Zero(t, b.inboxCount(t))

	// Oversize, unknown endpoint, wrong method.
	big := bytes.Repeat([]byte("x"), 65<<10)
	r = b.post(t, "stripe", big, providertest.StripeHeaders(big, stripeSecret, time.Now()))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	r = b.post(t, "nope", []byte(`{}`), nil)
	require.Equal(t, http.StatusNotFound, r.code)
	resp, err := http.Get(b.url + "/webhooks/stripe")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	require.Zero(t, b.inboxCount(t))
	require.Len(t, b.quarantine(t), 4)
	require.Zero(t, b.handoff.count())
}

func TestUnhandledTypesAreRecordedIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := providertest.StripeEvent("evt_ch", "charge.succeeded", "ch_1", "charge", "")
	r := b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code)
	require.Contains(t, r.body, `"ignored"`)
	got := b.row(t, keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_ch"})
	require.Equal(t, keys.StatusIgnored, got.Status)
	require.Contains(t, got.LastError, "charge.succeeded")
	require.Zero(t, b.handoff.count())
}

func TestGitHub(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/hello","owner":{"login":"octo"}}}`)
	r := b.post(t, "gh", body, providertest.GitHubHeaders(body, githubSecret, "d-1", "issues"))
	require.Equal(t, http.StatusOK, r.code, r.body)
	got := b.row(t, keys.Event{Provider: "github", Account: "4242", Environment: "live", EventID: "d-1"})
	require.Equal(t, "issues.opened", got.EventType)
	require.Equal(t, "repository", got.ResourceKind)
	require.Equal(t, "octo/hello", got.ResourceID)

	// Form-encoded delivery: the signature covers the raw form body.
	form := []byte("payload=" + url.QueryEscape(string(body)))
	h := providertest.GitHubHeaders(form, githubSecret, "d-2", "issues")
	req, _ := http.NewRequest(http.MethodPost, b.url+"/webhooks/gh", bytes.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "octo/hello", b.row(t, keys.Event{Provider: "github", Account: "4242", Environment: "live", EventID: "d-2"}).ResourceID)

	r = b.post(t, "gh", body, providertest.GitHubHeaders(body, "wrong", "d-3", "issues"))
	require.Equal(t, http.StatusUnauthorized, r.code)
	sha1Only := map[string]string{"X-Hub-Signature": "sha1=abc", "X-GitHub-Delivery": "d-4", "X-GitHub-Event": "issues"}
	r = b.post(t, "gh", body, sha1Only)
	require.Equal(t, http.StatusUnauthorized, r.code)
}

func standardHeaders(t *testing.T, body []byte, id string, at time.Time, secrets ...string) map[string]string {
	var sigs []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		require.NoError(t, err)
		sig, err := wh.Sign(id, at, body)
		require.NoError(t, err)
		sigs = append(sigs, sig)
	}
	return map[string]string{
		"webhook-id": id, "webhook-timestamp": fmt.Sprint(at.Unix()), "webhook-signature": strings.Join(sigs, " "),
	}
}

func TestStandardWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"type":"feedback.created","timestamp":"2026-11-30T10:00:00Z","data":{"id":"fb_1","project_id":"proj_1"}}`)
	r := b.post(t, "feedback", body, standardHeaders(t, body, "msg_1", time.Now(), standardSecret))
	require.Equal(t, http.StatusOK, r.code, r.body)
	got := b.row(t, keys.Event{Provider: "standard", Account: "proj_1", Environment: "live", EventID: "msg_1"})
	require.Equal(t, "feedback", got.ResourceKind)
	require.Equal(t, "fb_1", got.ResourceID)
	require.Equal(t, keys.StatusPending, got.Status)

	// Rotation: the sender signs with an unknown new secret and our second one.
	unknown := "whsec_" + base64.StdEncoding.EncodeToString([]byte("brand-new-secret-not-registered!"))
	r = b.post(t, "feedback", body, standardHeaders(t, body, "msg_2", time.Now(), unknown, standardSecret2))
	require.Equal(t, http.StatusOK, r.code, r.body)

	for name, h := range map[string]map[string]string{
		"too old":      standardHeaders(t, body, "msg_3", time.Now().Add(-10*time.Minute), standardSecret),
		"too new":      standardHeaders(t, body, "msg_4", time.Now().Add(10*time.Minute), standardSecret),
		"wrong secret": standardHeaders(t, body, "msg_5", time.Now(), unknown),
		"id swapped": func() map[string]string {
			h := standardHeaders(t, body, "msg_6", time.Now(), standardSecret)
			h["webhook-id"] = "msg_7"
			return h
		}(),
	} {
		require.Equal(t, http.StatusUnauthorized, b.post(t, "feedback", body, h).code, name)
	}
	require.Equal(t, 2, b.inboxCount(t))
}

func TestShopify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"id":820982911946154500,"email":"jon@example.com"}`)
	mac := hmac.New(sha256.New, []byte(shopifySecret))
	mac.Write(body)
	h := map[string]string{
		"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac.Sum(nil)),
		"X-Shopify-Event-Id":    "98880550-7158-44d4-b7cd-2c97c8a091b5",
		"X-Shopify-Topic":       "orders/create",
		"X-Shopify-Shop-Domain": "demo.myshopify.com",
	}
	r := b.post(t, "shop", body, h)
	require.Equal(t, http.StatusOK, r.code, r.body)
	got := b.row(t, keys.Event{Provider: "shopify", Account: "demo.myshopify.com", Environment: "live", EventID: "98880550-7158-44d4-b7cd-2c97c8a091b5"})
	require.Equal(t, "order", got.ResourceKind)
	require.Equal(t, "820982911946154500", got.ResourceID)
	require.Equal(t, "orders/create", got.EventType)

	h["X-Shopify-Hmac-Sha256"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	h["X-Shopify-Event-Id"] = "other"
	require.Equal(t, http.StatusUnauthorized, b.post(t, "shop", body, h).code)
}

func TestDatabaseDownAnswers503AndStoresNothingInMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Warm the endpoint cache so the failure is the commit itself.
	body := providertest.StripeEvent("evt_warm", "invoice.paid", "in_w", "invoice", "")
	require.Equal(t, http.StatusOK, b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now())).code)

	var db string
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT current_database()`).Scan(&db))
	admin := testenv.AdminURL(t, "postgres")
	testenv.AllowConnections(t, admin, db, false)
	t.Cleanup(func() { testenv.AllowConnections(t, admin, db, true) })

	body = providertest.StripeEvent("evt_down", "invoice.paid", "in_d", "invoice", "")
	r := b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusServiceUnavailable, r.code, r.body)
	require.Equal(t, 1, b.handoff.count(), "no hand-off for an event that was not committed")

	// The sender's retry after recovery is accepted.
	testenv.AllowConnections(t, admin, db, true)
	r = b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Equal(t, 2, b.inboxCount(t))
}

func TestPayloadsNeverReachTheLogs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secretMarker = "cardholder-Jane-Q-Public-4242"
	bodies := [][]byte{
		[]byte(`{"id":"evt_log","object":"event","type":"invoice.paid","livemode":false,"created":1,"data":{"object":{"id":"in_l","object":"invoice","customer_name":"` + secretMarker + `"}}}`),
		[]byte(`{"id":"evt_log2","object":"event","type":"invoice.paid","livemode":false,"created":1,"data":{"object":{"id":"` + secretMarker), // malformed
	}
	for _, body := range bodies {
		b.post(t, "stripe", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
		b.post(t, "stripe", body, providertest.StripeHeaders(body, "whsec_wrong", time.Now()))
	}
	b.settled()
	logs := b.logs.String()
	require.Contains(t, logs, "evt_log", "deliveries are logged by event key")
	require.NotContains(t, logs, secretMarker)
	require.NotContains(t, logs, stripeSecret)
}

// TestStripeThinEventsBesideSnapshots: an event destination's thin events
// arrive on the same endpoint as snapshot events. The context is the
// source account, related_object the resource, the secret that matched is
// recorded, and v1.invoice.paid is routed as invoice.paid (pending), while
// a thin credit note (whose invoice the payload does not name) is ignored.
func TestStripeThinEventsBesideSnapshots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, "stripe-connect")
	require.NoError(t, err)
	thin := func(id, typ, context, kind, obj string) []byte {
		ctx := ""
		if context != "" {
			ctx = fmt.Sprintf(`"context":%q,`, context)
		}
		return []byte(fmt.Sprintf(`{"id":%q,"object":"v2.core.event","type":%q,"livemode":true,"created":"2026-09-30T18:20:00.000Z",%s`+
			`"related_object":{"id":%q,"type":%q,"url":"/v1/%ss/%s"},"snapshot_event":"evt_snap_%s"}`, id, typ, ctx, obj, kind, kind, obj, id))
	}

	paid := thin("evt_thin_1", "v1.invoice.paid", "acct_c1", "invoice", "in_9")
	r := b.post(t, "stripe-connect", paid, providertest.StripeHeaders(paid, stripeSecret2, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Contains(t, r.body, `"accepted"`)
	key := keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: "evt_thin_1"}
	got := b.row(t, key)
	require.Equal(t, keys.StatusPending, got.Status, "routed as invoice.paid")
	require.Equal(t, "v1.invoice.paid", got.EventType, "stored as delivered")
	require.Equal(t, "ws_c1", got.WorkspaceID)
	require.Equal(t, [2]string{"invoice", "in_9"}, [2]string{got.ResourceKind, got.ResourceID})
	require.Equal(t, ep.Secrets[1].ID, got.SecretID, "the rotated-in secret matched")
	require.Nil(t, got.ProviderVersion, "a thin event carries no snapshot, so no version")
	require.Equal(t, paid, got.Payload)
	require.Equal(t, 1, b.handoff.count())

	// Its snapshot twin lands on the same resource (one workflow, one grant).
	snap := []byte(`{"id":"evt_snap_evt_thin_1","object":"event","type":"invoice.paid","livemode":true,"account":"acct_c1","created":1790792400,` +
		`"data":{"object":{"id":"in_9","object":"invoice"}}}`)
	r = b.post(t, "stripe-connect", snap, providertest.StripeHeaders(snap, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	twin := b.row(t, keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: "evt_snap_evt_thin_1"})
	require.Equal(t, got.Resource(), twin.Resource())
	require.Equal(t, ep.Secrets[0].ID, twin.SecretID)

	cn := thin("evt_thin_2", "v1.credit_note.created", "acct_c1", "credit_note", "cn_1")
	r = b.post(t, "stripe-connect", cn, providertest.StripeHeaders(cn, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Equal(t, keys.StatusIgnored, b.row(t, keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: "evt_thin_2"}).Status)

	// No context: the endpoint's own account; an unlinked context is quarantined.
	own := bytes.Replace(thin("evt_thin_3", "v1.customer.subscription.updated", "", "subscription", "sub_3"),
		[]byte(`"livemode":true`), []byte(`"livemode":false`), 1) // the "stripe" endpoint is a test one
	r = b.post(t, "stripe", own, providertest.StripeHeaders(own, stripeSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Equal(t, keys.StatusPending, b.row(t, keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_thin_3"}).Status)
	stranger := thin("evt_thin_4", "v1.invoice.paid", "acct_stranger", "invoice", "in_4")
	r = b.post(t, "stripe-connect", stranger, providertest.StripeHeaders(stranger, stripeSecret, time.Now()))
	require.Equal(t, http.StatusAccepted, r.code, r.body)
	require.Equal(t, []string{inbox.ReasonUnknownAccount}, b.quarantine(t))

	// A forged thin event is refused like a forged snapshot.
	r = b.post(t, "stripe-connect", paid, providertest.StripeHeaders(paid, "whsec_forged", time.Now()))
	require.Equal(t, http.StatusUnauthorized, r.code)
}

// TestShopifyEventsDeliveriesAndRotation: an Events delivery (shopify-*
// headers, no X- prefix) is admitted like a classic one, and while a
// rotated secret is applying (Shopify: up to an hour) deliveries signed
// with the old and the new secret both verify, each row recording which.
func TestShopifyEventsDeliveriesAndRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		oldSecret = "shpss_0123456789abcdef0123456789abcdef"
		newSecret = "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"
	)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "shop-rot", Provider: "shopify",
		Environment: "live", Secrets: []string{oldSecret, newSecret}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "shop-rot", "rot.myshopify.com", "ws_rot"))
	ep, err := endpoints.GetEndpoint(b.ctx, b.store, "shop-rot")
	require.NoError(t, err)
	sign := func(secret string, body []byte) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}

	tests := []struct {
		name, secret, id string
		events           bool
		secretIndex      int
	}{
		{"classic, old secret", oldSecret, "e-old-classic", false, 0},
		{"classic, new secret", newSecret, "e-new-classic", false, 1},
		{"Events, old secret", oldSecret, "e-old-events", true, 0},
		{"Events, new secret", newSecret, "e-new-events", true, 1},
	}
	for i, tt := range tests {
		body := []byte(fmt.Sprintf(`{"id":%d,"title":"Widget"}`, 9000+i))
		h := map[string]string{"X-Shopify-Hmac-Sha256": sign(tt.secret, body), "X-Shopify-Event-Id": tt.id,
			"X-Shopify-Topic": "products/update", "X-Shopify-Shop-Domain": "rot.myshopify.com"}
		if tt.events {
			h = map[string]string{"shopify-hmac-sha256": sign(tt.secret, body), "shopify-event-id": tt.id,
				"shopify-topic": "Product", "shopify-action": "update", "shopify-shop-domain": "rot.myshopify.com",
				"shopify-triggered-at": "2026-01-27T12:00:00Z"}
		}
		r := b.post(t, "shop-rot", body, h)
		require.Equal(t, http.StatusOK, r.code, "%s: %s", tt.name, r.body)
		got := b.row(t, keys.Event{Provider: "shopify", Account: "rot.myshopify.com", Environment: "live", EventID: tt.id})
		require.Equal(t, ep.Secrets[tt.secretIndex].ID, got.SecretID, tt.name)
		require.Equal(t, "product", got.ResourceKind, tt.name)
		require.Equal(t, fmt.Sprint(9000+i), got.ResourceID, tt.name)
		require.Equal(t, "ws_rot", got.WorkspaceID, tt.name)
		if tt.events {
			require.Equal(t, "Product/update", got.EventType)
			require.NotNil(t, got.OccurredAt)
		}
	}
	body := []byte(`{"id":1}`)
	r := b.post(t, "shop-rot", body, map[string]string{"shopify-hmac-sha256": sign("shpss_00000000000000000000000000000000", body),
		"shopify-event-id": "e-forged", "shopify-topic": "Product", "shopify-shop-domain": "rot.myshopify.com"})
	require.Equal(t, http.StatusUnauthorized, r.code)
}

func init() { providers.Register(providertest.Handshaker{}) }

// TestAHandshakeIsAnsweredWithItsBodyAndStoresNothing: a provider's
// handshake (Slack's url_verification) is answered 200 with the reply the
// provider made, as it is, only once its signature verified; nothing is
// stored, nothing handed off. A bad signature is 401, as ever.
func TestAHandshakeIsAnsweredWithItsBodyAndStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const secret = "handshake-secret-0123456789"
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "hs", Provider: providertest.HandshakerName,
		Environment: "live", Secrets: []string{secret}}))
	body := []byte(`{"type":"handshake","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`)

	req, err := http.NewRequest(http.MethodPost, b.url+"/webhooks/hs", bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range providertest.HandshakerHeaders(body, secret) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", string(got), "the challenge, as it is")
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	json := []byte(`{"type":"handshake","challenge":"{\"ok\":true}","content_type":"application/json"}`)
	r := b.post(t, "hs", json, providertest.HandshakerHeaders(json, secret))
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, `{"ok":true}`, r.body)

	for _, h := range []map[string]string{nil, providertest.HandshakerHeaders(body, "another-secret-0123456789")} {
		r := b.post(t, "hs", body, h)
		require.Equal(t, http.StatusUnauthorized, r.code)
		require.NotContains(t, r.body, "3eZbrw1a", "a refused handshake is never answered")
	}
	require.Zero(t, b.inboxCount(t))
	require.Empty(t, b.quarantine(t))
	require.Zero(t, b.handoff.count())
	b.settled()
	require.InDelta(t, 2, testutil.ToFloat64(b.metrics.Requests.WithLabelValues("hs", providertest.HandshakerName, "replied")), 0)
	require.InDelta(t, 2, testutil.ToFloat64(b.metrics.Requests.WithLabelValues("hs", providertest.HandshakerName, "unauthorized")), 0)
}
