package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"golang.org/x/sync/errgroup"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Forward routes (issue 23), against a real receiving HTTP server that
// verifies every document with the standard-webhooks library and dedups on
// Idempotency-Key, as the docs ask a team's service to.

const receiverSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is one verified request.
type received struct {
	doc       forward.Document
	idem, wid string
	at        time.Time
}

// receiver is a team's service: it verifies, dedups on Idempotency-Key,
// records arrival order and overlap per resource, and answers as told.
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	wh  *standardwebhooks.Webhook
	// delay holds each request (so that overlap would show).
	delay time.Duration
	// answer decides the n-th answer (1-based) for one operation key: its
	// status, headers and body; nil: 200.
	answer func(n int, d forward.Document) (int, http.Header, string)
	// beforeAnswer runs after the operation was applied and before the
	// answer is written (the crash test kills the worker there).
	beforeAnswer func(d forward.Document)

	mu         sync.Mutex
	got        []received
	unverified int
	perKey     map[string]int
	// applied counts each operation key's applications: the service
	// applies the first 2xx of a key and answers later ones 2xx unchanged.
	applied      map[string]int
	inflight     map[string]int
	overlapped   []string
	cur, maxConc int
}

func newReceiver(t *testing.T) *receiver {
	wh, err := standardwebhooks.NewWebhook(receiverSecret)
	require.NoError(t, err)
	r := &receiver{t: t, wh: wh, perKey: map[string]int{}, applied: map[string]int{}, inflight: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.mu.Lock()
		r.unverified++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var d forward.Document
	if err := json.Unmarshal(body, &d); err != nil {
		http.Error(w, "bad document", http.StatusUnprocessableEntity)
		return
	}
	idem, wid := req.Header.Get("Idempotency-Key"), req.Header.Get("webhook-id")
	res := d.Resource.Kind + "/" + d.Resource.ID
	r.mu.Lock()
	r.got = append(r.got, received{doc: d, idem: idem, wid: wid, at: time.Now()})
	r.perKey[idem]++
	n := r.perKey[idem]
	r.inflight[res]++
	if r.inflight[res] > 1 {
		r.overlapped = append(r.overlapped, res)
	}
	r.cur++
	r.maxConc = max(r.maxConc, r.cur)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight[res]--
		r.cur--
		r.mu.Unlock()
	}()
	time.Sleep(r.delay)
	status, header, text := http.StatusOK, http.Header{}, "ok"
	if r.answer != nil {
		status, header, text = r.answer(n, d)
	}
	if status >= 200 && status < 300 {
		r.mu.Lock()
		if r.applied[idem] == 0 {
			r.applied[idem]++
		}
		r.mu.Unlock()
		if r.beforeAnswer != nil {
			r.beforeAnswer(d)
		}
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// forwardStack is a stack whose worker refuses private addresses unless a
// route allows them (the receivers are on loopback, with --allow-private).
func forwardStack(t *testing.T, sim simulator.Config) *simWorld {
	s := newStack(t, stackOptions{configure: func(c *config.Config) {
		c.OutboundAllowPrivate = false
		c.EndpointCacheTTL = 200 * time.Millisecond
	}})
	return newSimWorld(t, s, sim)
}

func (w *simWorld) ops() *ops.Service {
	return &ops.Service{Store: w.store, Routes: w.business.Router(w.cfg, w.store, nil), Handled: w.business.Routes, Config: w.cfg}
}

func (w *simWorld) addRoute(t *testing.T, spec ops.RouteSpec) {
	t.Helper()
	if spec.Secret == "" {
		spec.Secret = receiverSecret
	}
	_, err := w.ops().AddRoute(w.ctx, ops.Actor{Name: "e2e"}, spec, "")
	require.NoError(t, err)
}

// inboxOrder lists each resource's event ids in intake (commit) order.
func (w *simWorld) inboxOrder(t *testing.T, eventType string) map[string][]string {
	rows, err := w.store.Pool.Query(w.ctx, `SELECT resource_kind || '/' || resource_id, event_id FROM webhook_inbox
		WHERE starts_with(event_type, $1) ORDER BY id`, eventType)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var r, id string
		require.NoError(t, rows.Scan(&r, &id))
		out[r] = append(out[r], id)
	}
	require.NoError(t, rows.Err())
	return out
}

func (w *simWorld) attempts(t *testing.T, k keys.Event) []forwards.Attempt {
	as, err := forwards.AttemptsFor(w.ctx, w.store.Pool, []keys.Event{k})
	require.NoError(t, err)
	return as
}

func (w *simWorld) key(id string) keys.Event {
	return keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: id}
}

func TestForwardRouteKeepsEachResourcesOrderWhileManyRunAtOnce(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{})
	rcv := newReceiver(t)
	rcv.delay = 30 * time.Millisecond
	w.addRoute(t, ops.RouteSpec{Name: "subs", Provider: "stripe", EventType: "customer.subscription.*", URL: rcv.srv.URL + "/hooks",
		ReplaceHandler: true, AllowPrivate: true})

	// Each subscription's three events are delivered one after another (so
	// its intake order is defined: two deliveries in flight at once have
	// none), the twelve subscriptions all at once.
	const subs = 12
	plans := make([]simulator.Plan, subs)
	for i := range plans {
		sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
		updated, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
		require.NoError(t, err)
		canceled, err := w.sim.CancelSubscription(sub.ID, false)
		require.NoError(t, err)
		plans[i].Concurrency = 1
		for _, ev := range []simulator.Event{created, updated, canceled} {
			plans[i].Deliveries = append(plans[i].Deliveries, simulator.Delivery{Event: ev})
		}
	}
	var g errgroup.Group
	acked := make([]int, subs)
	for i, plan := range plans {
		g.Go(func() error {
			rep, err := w.sim.Deliver(w.ctx, w.targets, plan)
			acked[i] = rep.Stats.Acked
			return err
		})
	}
	require.NoError(t, g.Wait())
	for i := range acked {
		require.Equal(t, 3, acked[i], "subscription %d: every delivery acknowledged", i)
	}
	w.allDone(t, 3*subs)

	got := rcv.requests()
	require.Len(t, got, 3*subs, "each event forwarded once")
	require.Zero(t, rcv.unverified, "every document verified with the standard-webhooks library")
	arrived := map[string][]string{}
	for _, r := range got {
		require.Equal(t, r.doc.OperationKey, r.idem, "Idempotency-Key is the operation key")
		require.Equal(t, r.doc.OperationKey, r.wid, "webhook-id is the operation key")
		require.Equal(t, r.doc.EventKey, r.doc.OperationKey, "without a path, the event is the operation")
		require.Equal(t, w.workspace, r.doc.Workspace, "the linked workspace, never one from the payload")
		require.Equal(t, "stripe", r.doc.Provider)
		require.Equal(t, "subscription", r.doc.Resource.Kind)
		require.Equal(t, r.doc.Resource.ID, gjson.GetBytes(r.doc.Payload, "data.object.id").String(), "the verified payload")
		k, err := keys.ParseEvent(r.doc.EventKey)
		require.NoError(t, err)
		arrived[r.doc.Resource.Kind+"/"+r.doc.Resource.ID] = append(arrived[r.doc.Resource.Kind+"/"+r.doc.Resource.ID], k.EventID)
	}
	require.Equal(t, w.inboxOrder(t, "customer.subscription."), arrived, "each resource's events arrive in intake order")
	rcv.mu.Lock()
	require.Empty(t, rcv.overlapped, "one resource's forwards never overlap")
	require.Greater(t, rcv.maxConc, 1, "while many resources run at once")
	rcv.mu.Unlock()
	require.Zero(t, w.count(t, `SELECT count(*) FROM subscription_projection`), "the replaced handler never ran")
	for _, r := range got[:3] {
		k, _ := keys.ParseEvent(r.doc.EventKey)
		as := w.attempts(t, k)
		require.Len(t, as, 1)
		require.Equal(t, forwards.OutcomeDone, as[0].Outcome)
		require.Equal(t, http.StatusOK, as[0].StatusCode)
		require.GreaterOrEqual(t, as[0].Latency, 30*time.Millisecond, "the latency is the send's")
	}
	require.Equal(t, float64(3*subs), histogramCount(t, w.stack, "hookinbox_forward_seconds", "subs"), "one latency observation per send")
}

func TestForwardRouteFetchesTheCurrentObjectWhenDeliveriesComeReordered(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{Versions: true})
	rcv := newReceiver(t)
	w.addRoute(t, ops.RouteSpec{Name: "subs", Provider: "stripe", EventType: "customer.subscription.*", URL: rcv.srv.URL,
		FetchCurrent: true, ReplaceHandler: true, AllowPrivate: true})
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	updated, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := w.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	w.send(t, canceled, updated, created) // the provider's order reversed
	w.allDone(t, 3)

	got := rcv.requests()
	require.Len(t, got, 3)
	var versions []int64
	for _, r := range got {
		versions = append(versions, gjson.GetBytes(r.doc.Payload, "data.object.version").Int())
		require.NotEmpty(t, r.doc.Current, "--fetch-current hands the provider's object")
		require.Equal(t, "canceled", gjson.GetBytes(r.doc.Current, "status").String(), "the current state, whatever the order")
		require.EqualValues(t, 3, gjson.GetBytes(r.doc.Current, "version").Int())
	}
	require.Equal(t, []int64{3, 2, 1}, versions, "delivered in intake order (reversed), each with the current object")
}

func TestForwardRouteSendsOneOperationOnce(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{})
	rcv := newReceiver(t)
	w.addRoute(t, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid", URL: rcv.srv.URL,
		OperationKeyPath: "data.object.id", ReplaceHandler: true, AllowPrivate: true})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	again, err := w.sim.InvoicePaidAgain(inv.ID) // a second event id for the same payment
	require.NoError(t, err)
	w.send(t, paid, again)
	w.allDone(t, 2)
	w.send(t, paid, again) // redeliveries: duplicates at the intake
	w.allDone(t, 2)

	got := rcv.requests()
	require.Equal(t, 1, len(got), "two event ids of one invoice forward once, and a duplicate forwards nothing")
	require.Equal(t, keys.Join("forward", "billing", "stripe", w.account, "test", inv.ID), got[0].idem)
	require.Equal(t, w.key(paid.ID).String(), got[0].doc.EventKey)
	require.Equal(t, forwards.OutcomeDone, w.attempts(t, w.key(paid.ID))[0].Outcome)
	skipped := w.attempts(t, w.key(again.ID))
	require.Len(t, skipped, 1)
	require.Equal(t, forwards.OutcomeSkipped, skipped[0].Outcome)
	var note string
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT coalesce(note, '') || coalesce(last_error, '') FROM webhook_inbox WHERE event_id = $1`,
		again.ID).Scan(&note))
	require.Contains(t, note, "already forwarded by "+w.key(paid.ID).String())
	require.Zero(t, w.count(t, `SELECT count(*) FROM credit_grants`), "the replaced handler granted nothing")

	l, err := w.ops().Explain(w.ctx, ops.LineageResource, keys.Resource{Provider: "stripe", Account: w.account, Environment: "test",
		Kind: "invoice", ID: inv.ID}.String())
	require.NoError(t, err)
	require.Len(t, l.Forwards, 2, "explain shows each attempt")
	require.Len(t, l.Claims, 1, "and the operation's claim")
	require.Equal(t, got[0].idem, l.Claims[0].BusinessKey)
}

func TestForwardFailuresEndExhaustedOrFailedAndReplayRecovers(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{})
	var mu sync.Mutex
	broken := map[string]int{} // resource id → status while broken
	rcv := newReceiver(t)
	rcv.answer = func(n int, d forward.Document) (int, http.Header, string) {
		mu.Lock()
		defer mu.Unlock()
		switch broken[d.Resource.ID] {
		case http.StatusBadRequest:
			return http.StatusBadRequest, nil, "customer " + strings.Repeat("x", 2000) + " unknown"
		case http.StatusTooManyRequests:
			if n == 1 {
				return http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, "slow down"
			}
		case http.StatusInternalServerError:
			return http.StatusInternalServerError, nil, "database is down"
		}
		return http.StatusOK, nil, "ok"
	}
	w.addRoute(t, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid", URL: rcv.srv.URL,
		ReplaceHandler: true, AllowPrivate: true, RetryBudget: 3})
	inv500, paid500, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	inv400, paid400, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	inv429, paid429, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	mu.Lock()
	broken[inv500.ID], broken[inv400.ID], broken[inv429.ID] = http.StatusInternalServerError, http.StatusBadRequest, http.StatusTooManyRequests
	mu.Unlock()
	w.send(t, paid500, paid400, paid429)

	eventually(t, 60*time.Second, "500 exhausted, 400 failed, 429 done", func() bool {
		return w.statusOf(w.key(paid500.ID)) == keys.StatusExhausted && w.statusOf(w.key(paid400.ID)) == keys.StatusFailed &&
			w.statusOf(w.key(paid429.ID)) == keys.StatusDone
	})
	a500 := w.attempts(t, w.key(paid500.ID))
	require.Len(t, a500, 3, "a 500 for ever ends exhausted within the route's budget of 3")
	for _, a := range a500 {
		require.Equal(t, forwards.OutcomeRetry, a.Outcome)
		require.Equal(t, 500, a.StatusCode)
	}
	a400 := w.attempts(t, w.key(paid400.ID))
	require.Len(t, a400, 1, "a 400 fails at once")
	require.Equal(t, forwards.OutcomeFailed, a400[0].Outcome)
	e, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, w.key(paid400.ID))
	require.NoError(t, err)
	require.Contains(t, e.LastError, "HTTP 400", "with its status")
	require.NotContains(t, e.LastError, "customer xxx", "never a private address's body (the route allows private addresses)")
	require.Less(t, len(e.LastError), 600, "clipped")
	a429 := w.attempts(t, w.key(paid429.ID))
	require.Len(t, a429, 2)
	require.GreaterOrEqual(t, a429[1].At.Sub(a429[0].At), 900*time.Millisecond, "the service's Retry-After is honoured")
	require.Equal(t, float64(3), counterValue(t, w.stack, "hookinbox_forward_failures_total", "http_5xx"))
	require.Equal(t, float64(1), counterValue(t, w.stack, "hookinbox_forward_failures_total", "http_4xx"))

	// The service recovers; an operator replays both.
	mu.Lock()
	delete(broken, inv500.ID)
	delete(broken, inv400.ID)
	mu.Unlock()
	sum, err := w.ops().Replay(w.ctx, ops.Actor{Name: "e2e"}, ops.ReplayRequest{Keys: []keys.Event{w.key(paid500.ID), w.key(paid400.ID)},
		Reason: "billing service fixed"})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Replayed)
	for _, k := range []keys.Event{w.key(paid500.ID), w.key(paid400.ID)} {
		w.ringAndWait(t, k)
	}
	keysSeen := map[string]bool{}
	for _, r := range rcv.requests() {
		keysSeen[r.idem] = true
	}
	require.Len(t, keysSeen, 3, "every send of one event carried its one key")
}

// ringAndWait waits for an event to end done (the replay rang its workflow).
func (w *simWorld) ringAndWait(t *testing.T, k keys.Event) {
	t.Helper()
	eventually(t, 60*time.Second, k.String()+" done", func() bool { return w.statusOf(k) == keys.StatusDone })
}

func TestForwardRefusesAPrivateAddressSendingNothing(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{})
	rcv := newReceiver(t)
	// The operator's add refuses a loopback target without the flag.
	_, err := w.ops().AddRoute(w.ctx, ops.Actor{Name: "e2e"}, ops.RouteSpec{Name: "billing", Provider: "stripe",
		EventType: "invoice.paid", URL: rcv.srv.URL, Secret: receiverSecret, ReplaceHandler: true}, "")
	require.True(t, ops.IsInvalid(err), "%v", err)
	require.Contains(t, err.Error(), "--allow-private")

	// A route whose host turns out private at send time (a name that
	// resolves to loopback, a DNS rebinding): stored as such, bypassing
	// the add's check, it is refused by the worker's guard at the dial.
	kr, err := w.store.Keyring()
	require.NoError(t, err)
	require.NoError(t, forwards.Insert(w.ctx, w.store.Pool, kr, forwards.Route{Name: "billing", Provider: "stripe",
		EventType: "invoice.paid", URL: strings.Replace(rcv.srv.URL, "127.0.0.1", "localhost", 1), Secret: receiverSecret,
		Timeout: 5 * time.Second, ReplacesHandler: true, Enabled: true}))
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	eventually(t, 60*time.Second, "the private target refused", func() bool { return w.statusOf(w.key(paid.ID)) == keys.StatusFailed })
	e, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, w.key(paid.ID))
	require.NoError(t, err)
	require.Contains(t, e.LastError, "refused")
	require.Contains(t, e.LastError, "127.0.0.1")
	require.Empty(t, rcv.requests(), "nothing was sent")

}

func TestForwardRefusesARedirect(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{})
	// A redirect is refused, and its target gets nothing.
	target := newReceiver(t)
	redirector := httptest.NewServer(http.HandlerFunc(func(hw http.ResponseWriter, r *http.Request) {
		http.Redirect(hw, r, target.srv.URL+"/elsewhere?token=SEKRIT", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	w.addRoute(t, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid", URL: redirector.URL,
		ReplaceHandler: true, AllowPrivate: true})
	_, paid2, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid2)
	eventually(t, 60*time.Second, "the redirect refused", func() bool { return w.statusOf(w.key(paid2.ID)) == keys.StatusFailed })
	e, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, w.key(paid2.ID))
	require.NoError(t, err)
	require.Contains(t, e.LastError, "redirect")
	require.NotContains(t, e.LastError, "SEKRIT", "the error names the redirect's origin only")
	require.Empty(t, target.requests(), "the redirect's target got nothing")
	as := w.attempts(t, w.key(paid2.ID))
	require.Len(t, as, 1, "refused at once, not retried")
	require.Equal(t, http.StatusTemporaryRedirect, as[0].StatusCode)
}

// A route applies to every event accepted after `routes add` returns (issue
// 34), with the intake's route table cached for the default 10 s: the
// intake loaded its table (an ignored vote primed it) before the two routes
// were added, and the first events are posted right after the adds return.
// Every one is forwarded, in each resource's intake order, and none stays
// ignored; the vote received before the add stays ignored.
func TestForwardRouteAppliesToEventsPostedRightAfterTheAdd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{configure: func(c *config.Config) {
		c.OutboundAllowPrivate = false
		c.EndpointCacheTTL = 10 * time.Second
	}})
	w := newSimWorld(t, s, simulator.Config{})
	rcv := newReceiver(t)
	const items, votes, comments = 3, 4, 2
	ids := make([]string, items)
	for i := range ids {
		item, _ := w.sim.CreateFeedback(w.project, fmt.Sprintf("item %d", i))
		ids[i] = item.ID
	}
	_, early, err := w.sim.VoteOn(ids[0])
	require.NoError(t, err)
	w.send(t, early)
	require.Equal(t, keys.StatusIgnored, w.statusOf(w.feedbackKey(early.ID)), "no route yet: ignored, and the intake's table is loaded")

	for _, typ := range []string{"feedback.voted", "feedback.commented"} {
		w.addRoute(t, ops.RouteSpec{Name: strings.ReplaceAll(typ, ".", "-"), Provider: "standard", EventType: typ,
			URL: rcv.srv.URL + "/hooks", AllowPrivate: true})
	}
	var g errgroup.Group
	for _, id := range ids {
		plan := simulator.Plan{Concurrency: 1}
		for j := range votes + comments {
			var ev simulator.Event
			if j%3 == 2 {
				_, ev, err = w.sim.CommentOn(id, "")
			} else {
				_, ev, err = w.sim.VoteOn(id)
			}
			require.NoError(t, err)
			plan.Deliveries = append(plan.Deliveries, simulator.Delivery{Event: ev})
		}
		g.Go(func() error {
			rep, err := w.sim.Deliver(w.ctx, w.targets, plan)
			if err == nil && rep.Stats.Acked != len(plan.Deliveries) {
				err = fmt.Errorf("%d of %d acknowledged", rep.Stats.Acked, len(plan.Deliveries))
			}
			return err
		})
	}
	require.NoError(t, g.Wait())
	const n = items * (votes + comments)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rows, err := s.store.Pool.Query(context.Background(), `SELECT status || ' ' || coalesce(last_error, '') || ' ' || coalesce(note, '') || ': ' || count(*)
			  FROM webhook_inbox WHERE starts_with(event_type, 'feedback.') GROUP BY status, last_error, note`)
		if err == nil {
			states, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			t.Logf("the feedback rows by state: %q; the receiver got %d", states, len(rcv.requests()))
		}
	})
	eventually(t, 90*time.Second, fmt.Sprintf("%d events forwarded", n), func() bool {
		return w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done' AND starts_with(event_type, 'feedback.')`) == n
	})
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'ignored'`), "none ignored but the vote before the add")
	require.Equal(t, keys.StatusIgnored, w.statusOf(w.feedbackKey(early.ID)), "an event before the route is not re-queued")
	got := rcv.requests()
	require.Len(t, got, n, "each event forwarded once")
	require.Zero(t, rcv.unverified)
	arrived := map[string][]string{}
	for _, r := range got {
		k, err := keys.ParseEvent(r.doc.EventKey)
		require.NoError(t, err)
		res := r.doc.Resource.Kind + "/" + r.doc.Resource.ID
		arrived[res] = append(arrived[res], k.EventID)
	}
	order := w.inboxOrder(t, "feedback.")
	for res, evs := range order {
		if slices.Contains(evs, early.ID) {
			order[res] = slices.DeleteFunc(evs, func(id string) bool { return id == early.ID })
		}
	}
	require.Equal(t, order, arrived, "each resource's events arrive in intake order")
	rcv.mu.Lock()
	require.Empty(t, rcv.overlapped, "one resource's forwards never overlap")
	rcv.mu.Unlock()
}

func (w *simWorld) feedbackKey(id string) keys.Event {
	return keys.Event{Provider: "standard", Account: w.project, Environment: "test", EventID: id}
}
