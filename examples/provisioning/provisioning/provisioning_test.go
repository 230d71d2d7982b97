package provisioning_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"

	"example.com/provisioning/provisioning"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	slug    = "stripe"
	secret  = "whsec_Pv7Na3Qx8Lm2Rt5Zb1Kw9Hs4Dc6Gf0Jy"
	account = "acct_team"
	ws      = "ws_team"
)

// stripeAPI is the team's stand-in for Stripe's API in its tests: the
// Checkout sessions it knows, as GET /v1/checkout/sessions/{id} answers.
type stripeAPI struct {
	mu       sync.Mutex
	sessions map[string]map[string]any
	fetches  int
}

func (a *stripeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/checkout/sessions/")
	a.mu.Lock()
	s, known := a.sessions[id]
	a.fetches++
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet || !ok || !known {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such checkout.session"}}`))
		return
	}
	_ = json.NewEncoder(w).Encode(s)
}

func (a *stripeAPI) set(id, status, payment string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[id] = map[string]any{"id": id, "object": "checkout.session", "status": status, "payment_status": payment,
		"livemode": false, "customer": "cus_1", "customer_details": map[string]any{"email": "ada@example.com"}}
}

// event is a Stripe event about session id, as Stripe sends it.
func event(id, typ, session string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"livemode":false,"created":%d,"api_version":"2025-03-31",`+
		`"data":{"object":{"id":%q,"object":"checkout.session","status":"complete","payment_status":"paid"}}}`,
		id, typ, time.Now().Unix(), session)
}

func setup(t *testing.T) (*hookintest.Harness, *stripeAPI) {
	t.Helper()
	h := hookintest.New(t, provisioning.New())
	api := &stripeAPI{sessions: map[string]map[string]any{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	h.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: slug, Provider: "stripe", Secret: secret,
		APIBaseURL: srv.URL, APIKey: "sk_test_provisioning", Account: account, Workspace: ws})
	return h, api
}

func count(t *testing.T, h *hookintest.Harness, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, h.DB.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// Two event ids for one session give one account and one welcome email,
// and a replay of either changes nothing: on the real stack (intake,
// Temporal, worker, outbox, Mailpit).
func TestTwoEventsOfOneSessionProvisionOnceAndAReplayChangesNothing(t *testing.T) {
	t.Parallel()
	h, api := setup(t)
	api.set("cs_1", "complete", "paid")
	s := h.Run()
	ctx := context.Background()

	p1 := s.Post(ctx, slug, secret, nil, event("evt_1", "checkout.session.completed", "cs_1"))
	p2 := s.Post(ctx, slug, secret, nil, event("evt_2", "checkout.session.async_payment_succeeded", "cs_1"))
	require.Equal(t, http.StatusOK, p1.Status)
	require.Equal(t, http.StatusOK, p2.Status)
	first := hookintype.EventKey{Provider: "stripe", Account: account, Environment: hookintype.Test, EventID: "evt_1"}
	second := first
	second.EventID = "evt_2"
	s.WaitFor(ctx, first, hookintype.StatusDone, 2*time.Minute)
	s.WaitFor(ctx, second, hookintype.StatusDone, 2*time.Minute)

	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM provisioned_accounts WHERE session_id = 'cs_1'`), "one account")
	key := hookinbox.Key("provision", "stripe", account, hookintype.Test, "cs_1")
	welcome := h.Outbox(ctx, key+":welcome")
	require.Len(t, welcome, 1, "one welcome email")
	require.Equal(t, provisioning.ClassWelcome, welcome[0].Class)
	require.Equal(t, "ada@example.com", welcome[0].Destination)
	claim, claimed := h.Claim(ctx, key)
	require.True(t, claimed, "one claim")
	require.Contains(t, []hookintype.EventKey{first, second}, claim.By)
	var by string
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT event_key FROM provisioned_accounts`).Scan(&by))
	require.Equal(t, claim.By.String(), by, "the account names the event that claimed it")

	// A redelivery of the first event is a duplicate: answered, stored once.
	again := s.Post(ctx, slug, secret, nil, event("evt_1", "checkout.session.completed", "cs_1"))
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, hookintype.StatusDone, h.Event(ctx, first).Status, "the duplicate changed nothing")

	// A deliberate replay reprocesses both events: the claim holds.
	fetched := api.fetches
	s.Replay(ctx, first, "replay test")
	s.Replay(ctx, second, "replay test")
	s.WaitFor(ctx, first, hookintype.StatusDone, 2*time.Minute)
	s.WaitFor(ctx, second, hookintype.StatusDone, 2*time.Minute)
	require.Eventually(t, func() bool { api.mu.Lock(); defer api.mu.Unlock(); return api.fetches >= fetched+2 }, time.Minute, 100*time.Millisecond,
		"the replays ran the handler again")
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM provisioned_accounts`), "still one account")
	require.Len(t, h.Outbox(ctx, key+"*"), 1, "still one email")
	require.Contains(t, h.Event(ctx, second).Note, "already provisioned by")

	// The one email reached the team's mail server (when it is a Mailpit
	// whose API the test can read: HOOKINBOX_TEST_MAILPIT_URL beside a
	// server of your own).
	if s.MailURL == "" {
		return
	}
	require.Eventually(t, func() bool { return mails(t, s.MailURL, "ada@example.com") == 1 }, time.Minute, 200*time.Millisecond)
}

// mails counts the messages Mailpit holds for to.
func mails(t *testing.T, base, to string) int {
	t.Helper()
	res, err := http.Get(base + "/api/v1/search?query=" + "to:" + to)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	var body struct {
		Total int `json:"messages_count"`
	}
	if json.NewDecoder(res.Body).Decode(&body) != nil {
		return -1
	}
	return body.Total
}

// The provider, not the event, decides: a session Stripe says is unpaid
// provisions nothing, and an event whose session Stripe does not know is
// retried (a 404 is never read as a state) rather than provisioned.
func TestTheSessionIsFetchedAndMustBePaid(t *testing.T) {
	t.Parallel()
	h, api := setup(t)
	ctx := context.Background()
	api.set("cs_unpaid", "complete", "unpaid")
	d := h.Deliver(ctx, slug, secret, nil, event("evt_u", "checkout.session.completed", "cs_unpaid"))
	require.Equal(t, "accepted", d.Outcome, "a handled type is recorded pending, not ignored")
	res := h.Handle(ctx, d.Key)
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusIgnored, res.Status)
	require.Contains(t, res.Note, "unpaid")

	d = h.Deliver(ctx, slug, secret, nil, event("evt_x", "checkout.session.completed", "cs_unknown"))
	res = h.Handle(ctx, d.Key)
	require.Error(t, res.Err)
	require.False(t, hookinbox.IsPermanent(res.Err), "retried")
	require.Equal(t, hookintype.StatusPending, res.Status)
	require.Zero(t, count(t, h, `SELECT count(*) FROM provisioned_accounts`))

	// Once paid, the retry provisions it.
	api.set("cs_unknown", "complete", "paid")
	res = h.Handle(ctx, d.Key)
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM provisioned_accounts`))
}

// The team's grants: the worker role (where handlers run) can write the
// team's table, the read-only operator role reads it but never its email.
func TestTheTeamsTableIsCoveredByTheRoles(t *testing.T) {
	t.Parallel()
	h, _ := setup(t)
	ctx := context.Background()
	var worker, operator, operatorEmail bool
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT
		has_table_privilege('hookinbox_worker', 'provisioned_accounts', 'INSERT'),
		has_table_privilege('hookinbox_operator', 'provisioned_accounts', 'SELECT'),
		has_column_privilege('hookinbox_operator', 'provisioned_accounts', 'email', 'SELECT')`).Scan(&worker, &operator, &operatorEmail))
	require.True(t, worker)
	require.False(t, operator, "no table-wide SELECT: every column but the email")
	var sessionCol bool
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT has_column_privilege('hookinbox_operator', 'provisioned_accounts', 'session_id', 'SELECT')`).Scan(&sessionCol))
	require.True(t, sessionCol)
	require.False(t, operatorEmail, "the email is personal data")
	var intake bool
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT has_table_privilege('hookinbox_intake', 'provisioned_accounts', 'SELECT')`).Scan(&intake))
	require.False(t, intake, "the intake never reads a team's business")
}
