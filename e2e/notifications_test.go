package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

const noticeSecret = "whsec_bm90aWNlLXJlY2VpdmVyLXNlY3JldC0zMi1ieXRlcyE="

// noticeRequest is one verified request a notice receiver got.
type noticeRequest struct {
	id  string // webhook-id
	doc notify.Document
}

// noticeReceiver is an operator's own webhook receiver: it verifies each
// notice with the standard-webhooks library and the rule's secret, dedups
// on webhook-id (as the spec asks receivers to), records every request and
// answers as told.
type noticeReceiver struct {
	srv *httptest.Server
	wh  *standardwebhooks.Webhook
	// beforeAnswer runs after a notice was verified and before the answer
	// (the crash test kills the worker there).
	beforeAnswer func(noticeRequest)

	mu         sync.Mutex
	requests   []noticeRequest
	unverified int
}

func newNoticeReceiver(t *testing.T) *noticeReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(noticeSecret)
	require.NoError(t, err)
	r := &noticeReceiver{wh: wh}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := r.wh.Verify(body, req.Header); err != nil {
			r.mu.Lock()
			r.unverified++
			r.mu.Unlock()
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var d notify.Document
		if err := json.Unmarshal(body, &d); err != nil {
			http.Error(w, "bad document", http.StatusUnprocessableEntity)
			return
		}
		got := noticeRequest{id: req.Header.Get("webhook-id"), doc: d}
		r.mu.Lock()
		r.requests = append(r.requests, got)
		before := r.beforeAnswer
		r.mu.Unlock()
		if before != nil {
			before(got)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// all returns every request, and the notices once deduplicated on
// webhook-id (in arrival order).
func (r *noticeReceiver) all() ([]noticeRequest, []notify.Document) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var docs []notify.Document
	for _, q := range r.requests {
		if !seen[q.id] {
			seen[q.id] = true
			docs = append(docs, q.doc)
		}
	}
	return append([]noticeRequest(nil), r.requests...), docs
}

// mailpitNotice is one message Mailpit holds.
type mailpitNotice struct {
	MessageID string `json:"MessageID"`
	Subject   string `json:"Subject"`
}

// mailpitNotices lists every message Mailpit holds. Mailpit lists a page
// and counts the total in two queries, so a message stored between them
// gives a total above the page: that answer is read again.
func mailpitNotices(t *testing.T, mp *devenv.Mailpit) []mailpitNotice {
	t.Helper()
	const limit = 500
	for try := 0; ; try++ {
		resp, err := http.Get(fmt.Sprintf("%s/api/v1/messages?limit=%d", mp.HTTPURL, limit))
		require.NoError(t, err)
		var out struct {
			Total    int             `json:"total"`
			Messages []mailpitNotice `json:"messages"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		require.NoError(t, err)
		require.LessOrEqual(t, out.Total, limit, "one page holds them all")
		if len(out.Messages) == out.Total {
			return out.Messages
		}
		require.Less(t, try, 50, "Mailpit's page (%d) and total (%d) kept disagreeing", len(out.Messages), out.Total)
		time.Sleep(20 * time.Millisecond)
	}
}

// notifyConfig is the stack's configuration for notifications: Mailpit as
// the mailer (with its lookup), an evaluation every second, a console URL
// for the links.
func notifyConfig(mp *devenv.Mailpit, more ...func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		withMailpit(mp)(c)
		c.NotifyInterval = time.Second
		c.ConsoleURL = "http://console.e2e.test"
		for _, f := range more {
			f(c)
		}
	}
}

// notifyWorld is a stack with Mailpit and a notice receiver, and the
// operator acts (through ops, as the CLI and the console).
type notifyWorld struct {
	*stack
	mp  *devenv.Mailpit
	rcv *noticeReceiver
	svc *ops.Service
}

func newNotifyWorld(t *testing.T, s *stack, mp *devenv.Mailpit) *notifyWorld {
	t.Helper()
	svc := &ops.Service{Store: s.store, Routes: s.business.Router(s.cfg, s.store, nil), Handled: s.business.Routes,
		Doorbell: app.Resources(s.cfg, s.client), Temporal: s.client, Config: s.cfg, SignalTimeout: 10 * time.Second}
	w := &notifyWorld{stack: s, mp: mp, rcv: newNoticeReceiver(t), svc: svc}
	t.Cleanup(func() {
		if t.Failed() {
			w.dump(t)
		}
	})
	return w
}

// dump logs what the notifications left, for a failed test.
func (w *notifyWorld) dump(t *testing.T) {
	rows, err := w.store.Pool.Query(context.Background(), `SELECT n.rule, n.trigger, n.subject, n.phase, n.count, o.status, o.attempts,
		coalesce(o.last_error, '') FROM notifications n JOIN outbox o ON o.id = n.outbox_id ORDER BY n.id`)
	if err == nil {
		for rows.Next() {
			var rule, trigger, subject, phase, status, lastErr string
			var count int64
			var attempts int
			_ = rows.Scan(&rule, &trigger, &subject, &phase, &count, &status, &attempts, &lastErr)
			t.Logf("notice %s %s %s %s count=%d outbox=%s attempts=%d %s", rule, trigger, subject, phase, count, status, attempts, lastErr)
		}
		rows.Close()
	}
	rows, err = w.store.Pool.Query(context.Background(), `SELECT rule, trigger, subject, firing, announced, last_count FROM notification_states`)
	if err == nil {
		for rows.Next() {
			var rule, trigger, subject string
			var firing, announced bool
			var count int64
			_ = rows.Scan(&rule, &trigger, &subject, &firing, &announced, &count)
			t.Logf("state %s %s %s firing=%v announced=%v count=%d", rule, trigger, subject, firing, announced, count)
		}
		rows.Close()
	}
	reqs, _ := w.rcv.all()
	for _, r := range reqs {
		t.Logf("receiver got %s: %s", r.id, r.doc.Title)
	}
	if w.mp == nil {
		return
	}
	if resp, err := http.Get(w.mp.HTTPURL + "/api/v1/messages"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("mailpit: %.2000s", b)
	}
}

var operator = ops.Actor{Name: "e2e-operator"}

// rules adds two rules watching trigger: "mail" to Mailpit and "hook" to
// the receiver (a loopback address, allowed on purpose), as spec says.
func (w *notifyWorld) rules(t *testing.T, trigger string, spec func(*ops.NotificationSpec)) {
	t.Helper()
	for _, s := range []ops.NotificationSpec{
		{Name: "mail", Triggers: []string{trigger}, Email: "oncall@e2e.example"},
		{Name: "hook", Triggers: []string{trigger}, WebhookURL: w.rcv.srv.URL + "/notices", Secret: noticeSecret, AllowPrivate: true},
	} {
		if spec != nil {
			spec(&s)
		}
		_, err := w.svc.AddNotification(w.ctx, operator, s, "e2e")
		require.NoError(t, err)
	}
}

// notifyRuns is how many runs the notify schedule has started.
func (w *notifyWorld) notifyRuns(t *testing.T) int {
	t.Helper()
	st, err := starter.DescribeSchedule(w.ctx, w.client, starter.ScheduleNotify, starter.ScheduleID(starter.ScheduleNotify, w.cfg.TaskQueue))
	require.NoError(t, err)
	return st.Actions
}

// awaitNotice waits until both channels have a notice of phase for trigger
// and subject: Mailpit a message with its subject line, the receiver a
// verified document.
func (w *notifyWorld) awaitNotice(t *testing.T, trigger, subject, phase string) notify.Document {
	t.Helper()
	word := "FIRING"
	if phase == notify.PhaseRecovered {
		word = "RECOVERED"
	}
	var doc notify.Document
	eventually(t, 90*time.Second, fmt.Sprintf("the %s %s notice of %s in Mailpit and at the receiver", trigger, phase, subject), func() bool {
		_, docs := w.rcv.all()
		found := false
		for _, d := range docs {
			if d.Trigger == trigger && d.Subject == subject && d.Phase == phase {
				doc, found = d, true
			}
		}
		if !found {
			return false
		}
		for _, m := range mailpitNotices(t, w.mp) {
			if strings.HasPrefix(m.Subject, "[hookinbox] "+word+": ") && strings.Contains(m.Subject, subject) {
				return true
			}
		}
		return false
	})
	return doc
}

// requireOneFiringOneRecovery waits for three more evaluations, then checks
// that each channel got exactly one firing and one recovery notice, in
// that order, of the one window, and that the history holds just those.
func (w *notifyWorld) requireOneFiringOneRecovery(t *testing.T, trigger, subject string) {
	t.Helper()
	after := w.notifyRuns(t)
	eventually(t, 60*time.Second, "three more evaluations", func() bool { return w.notifyRuns(t) >= after+3 })
	eventually(t, 60*time.Second, "the notices' outbox rows sent", func() bool {
		var unsent int
		require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE class = 'notification' AND status <> 'sent'`).Scan(&unsent))
		return unsent == 0
	})
	reqs, docs := w.rcv.all()
	require.Len(t, docs, 2, "the receiver: one firing, one recovery")
	require.Len(t, reqs, 2, "each sent once")
	require.Zero(t, w.rcv.unverified)
	require.Equal(t, []string{notify.PhaseFiring, notify.PhaseRecovered}, []string{docs[0].Phase, docs[1].Phase})
	for _, d := range docs {
		require.Equal(t, trigger, d.Trigger)
		require.Equal(t, subject, d.Subject)
		require.Equal(t, "hook", d.Rule)
	}
	require.Equal(t, docs[0].WindowStart, docs[1].WindowStart, "the recovery is of the firing notice's window")

	msgs := mailpitNotices(t, w.mp)
	require.Len(t, msgs, 2, "Mailpit: one firing, one recovery")
	var subjects []string
	for _, m := range msgs {
		subjects = append(subjects, m.Subject)
	}
	require.Contains(t, strings.Join(subjects, "\n"), "[hookinbox] FIRING: ")
	require.Contains(t, strings.Join(subjects, "\n"), "[hookinbox] RECOVERED: ")

	var rows int
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT count(*) FROM notifications WHERE trigger = $1 AND subject = $2`, trigger, subject).Scan(&rows))
	require.Equal(t, 4, rows, "two rules × (firing, recovered)")
}

// sendStripeRaw posts body signed as Stripe signs it.
func (s *stack) sendStripeRaw(slug string, body []byte) int {
	p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: "whsec_" + slug})
	req, err := http.NewRequest(http.MethodPost, s.url+"/webhooks/"+slug, strings.NewReader(string(body)))
	require.NoError(s.t, err)
	req.Header.Set("Stripe-Signature", p.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *stack) openQuarantine(t *testing.T) []int64 {
	t.Helper()
	qs, err := inbox.ListQuarantine(s.ctx, s.store.Pool, inbox.QuarantineFilter{OpenOnly: true, Limit: 10})
	require.NoError(t, err)
	var ids []int64
	for _, q := range qs {
		ids = append(ids, q.ID)
	}
	return ids
}

var notifySeq atomic.Int64

// Each trigger fires once and recovers once, on the real stack (intake,
// worker, PostgreSQL, the Temporal dev server and its notify schedule,
// Mailpit, a webhook receiver): the condition is made by the real path,
// then cleared by an operator's real act, and both channels get exactly
// one notice of each kind.
func TestNotificationsFireOnceAndRecoverOncePerTrigger(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		trigger string
		run     func(t *testing.T)
	}{
		{notify.TriggerEventFailed, notifyEventFailed},
		{notify.TriggerQuarantine, notifyQuarantine},
		{notify.TriggerDivergence, notifyDivergence},
		{notify.TriggerOutbox, notifyOutboxStuck},
		{notify.TriggerPendingAge, notifyPendingAge},
		{notify.TriggerScheduleFailed, notifyScheduleFailed},
	} {
		t.Run(tt.trigger, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}

// gatedGrants is a credits handler that fails (permanently, or to be
// retried) until opened, then completes the event.
func gatedGrants(st func() *store.Store, open *atomic.Bool, permanent bool) engine.Handler {
	return engine.HandlerFunc(func(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
		if !open.Load() {
			err := errors.New("the provider's API is down")
			if permanent {
				err = fault.Permanent(errors.New("the provider refuses the invoice"))
			}
			return engine.Outcome{}, err
		}
		return engine.InPendingTx(ctx, st(), c.Event.Key, func(pgx.Tx, *inbox.StoredEvent) (engine.Outcome, error) {
			return engine.Outcome{Status: keys.StatusDone, Note: "granted"}, nil
		})
	})
}

// An event that ended failed fires; the operator's replay, once it
// succeeds, clears it.
func notifyEventFailed(t *testing.T) {
	mp := testenv.Mailpit(t)
	var open atomic.Bool
	var s *stack
	s = newStack(t, stackOptions{configure: notifyConfig(mp), handlers: map[string]engine.Handler{
		credits.NameGrants: gatedGrants(func() *store.Store { return s.workerStore }, &open, true)}})
	w := newNotifyWorld(t, s, mp)
	n := notifySeq.Add(1)
	account := fmt.Sprintf("acct_nf%d", n)
	s.stripeEndpoint("ep", account, fmt.Sprintf("ws_nf%d", n))
	w.rules(t, notify.TriggerEventFailed, nil)
	require.Equal(t, http.StatusOK, s.sendStripe("ep", "evt_nf", "invoice.paid", "invoice", "in_nf"))
	k := keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: "evt_nf"}
	eventually(t, 60*time.Second, "the event to fail", func() bool { return s.statusOf(k) == keys.StatusFailed })

	d := w.awaitNotice(t, notify.TriggerEventFailed, "ep", notify.PhaseFiring)
	require.EqualValues(t, 1, d.Count)
	require.Equal(t, "[hookinbox] FIRING: 1 event ended failed or exhausted (endpoint ep)", d.Title)
	require.Equal(t, "http://console.e2e.test/inbox?endpoint=ep&status=exhausted%2Cfailed", d.Links[0].URL)

	open.Store(true)
	sum, err := w.svc.Replay(w.ctx, operator, ops.ReplayRequest{Keys: []keys.Event{k}, Reason: "the provider accepts it now"})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Replayed, "%+v", sum)
	eventually(t, 60*time.Second, "the replayed event done", func() bool { return s.statusOf(k) == keys.StatusDone })
	w.awaitNotice(t, notify.TriggerEventFailed, "ep", notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerEventFailed, "ep")
}

// A malformed delivery after a valid signature opens a quarantine entry;
// resolving it clears it.
func notifyQuarantine(t *testing.T) {
	mp := testenv.Mailpit(t)
	s := newStack(t, stackOptions{configure: notifyConfig(mp)})
	w := newNotifyWorld(t, s, mp)
	n := notifySeq.Add(1)
	s.stripeEndpoint("ep", fmt.Sprintf("acct_nq%d", n), fmt.Sprintf("ws_nq%d", n))
	w.rules(t, notify.TriggerQuarantine, nil)
	require.Equal(t, http.StatusBadRequest, s.sendStripeRaw("ep", []byte(`{"id":"evt_m", "type": `)))
	ids := s.openQuarantine(t)
	require.Len(t, ids, 1)

	d := w.awaitNotice(t, notify.TriggerQuarantine, "ep", notify.PhaseFiring)
	require.EqualValues(t, 1, d.Count)
	require.Equal(t, "http://console.e2e.test/quarantine?endpoint=ep", d.Links[0].URL)

	_, err := w.svc.ResolveQuarantine(w.ctx, operator, ids, ops.ResolveDiscard, "not JSON: nothing to recover")
	require.NoError(t, err)
	w.awaitNotice(t, notify.TriggerQuarantine, "ep", notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerQuarantine, "ep")
}

// Reconciliation records a divergence (a subscription only the provider
// knows); a window without another clears it.
func notifyDivergence(t *testing.T) {
	mp := testenv.Mailpit(t)
	sw := newSimWorld(t, newStack(t, stackOptions{configure: notifyConfig(mp)}), simulator.Config{})
	w := newNotifyWorld(t, sw.stack, mp)
	w.rules(t, notify.TriggerDivergence, func(s *ops.NotificationSpec) { s.Window = 5 * time.Second })
	sub, _ := sw.sim.CreateSubscription(sw.account, "", simulator.SubscriptionOptions{}) // its webhook never comes
	r := keys.Resource{Provider: "stripe", Account: sw.account, Environment: "test", Kind: "subscription", ID: sub.ID}
	require.NoError(t, app.Resources(sw.cfg, sw.client).Ring(sw.ctx, r, keys.SignalReconcile, "e2e: reconcile"))
	eventually(t, 60*time.Second, "the divergence recorded", func() bool {
		return sw.count(t, `SELECT count(*) FROM reconcile_divergences WHERE resource_id = $1`, sub.ID) == 1
	})

	d := w.awaitNotice(t, notify.TriggerDivergence, "stripe-sim", notify.PhaseFiring)
	require.EqualValues(t, 1, d.Count)
	require.Contains(t, d.Title, "1 reconciliation divergence in the last 5s")
	w.awaitNotice(t, notify.TriggerDivergence, "stripe-sim", notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerDivergence, "stripe-sim")
}

// A team webhook that answers 502 leaves the feedback alert uncertain (its
// outcome unknown, retried with the same key); the destination answering
// again sends it and clears it. Grouped by workspace.
func notifyOutboxStuck(t *testing.T) {
	mp := testenv.Mailpit(t)
	var down atomic.Bool
	down.Store(true)
	team := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if down.Load() {
			rw.WriteHeader(http.StatusBadGateway)
			return
		}
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(team.Close)
	sw := newSimWorld(t, newStack(t, stackOptions{configure: notifyConfig(mp, func(c *config.Config) { c.OutboxBudget = 100000 })}),
		simulator.Config{})
	w := newNotifyWorld(t, sw.stack, mp)
	require.NoError(t, outbox.UpsertDestination(sw.ctx, sw.store.Pool, sw.store.Keys, outbox.Destination{
		WorkspaceID: sw.workspace, Name: "oncall", Kind: "webhook", Target: team.URL, Secret: simulator.StandardSecret("team"), Enabled: true}))
	w.rules(t, notify.TriggerOutbox, func(s *ops.NotificationSpec) { s.Workspace = sw.workspace })
	_, ev := sw.sim.CreateFeedback(sw.project, "the checkout page is blank")
	sw.send(t, ev)

	d := w.awaitNotice(t, notify.TriggerOutbox, sw.workspace, notify.PhaseFiring)
	require.EqualValues(t, 1, d.Count)
	require.Contains(t, d.Detail, "0 held for review, 1 uncertain")
	require.Equal(t, sw.workspace, d.Workspace, "the rule is the workspace's own")

	down.Store(false)
	eventually(t, 60*time.Second, "the alert sent", func() bool {
		return sw.count(t, `SELECT count(*) FROM outbox WHERE class = 'feedback_alert' AND status = 'sent'`) == 1
	})
	w.awaitNotice(t, notify.TriggerOutbox, sw.workspace, notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerOutbox, sw.workspace)
}

// An event kept pending by a provider that keeps failing passes the
// threshold; once it is handled the oldest pending age clears.
func notifyPendingAge(t *testing.T) {
	mp := testenv.Mailpit(t)
	var open atomic.Bool
	var s *stack
	s = newStack(t, stackOptions{configure: notifyConfig(mp, func(c *config.Config) { c.RetryBudget = 100000 }),
		handlers: map[string]engine.Handler{credits.NameGrants: gatedGrants(func() *store.Store { return s.workerStore }, &open, false)}})
	w := newNotifyWorld(t, s, mp)
	n := notifySeq.Add(1)
	account := fmt.Sprintf("acct_np%d", n)
	s.stripeEndpoint("ep", account, fmt.Sprintf("ws_np%d", n))
	w.rules(t, notify.TriggerPendingAge, func(s *ops.NotificationSpec) { s.PendingAge = 2 * time.Second })
	require.Equal(t, http.StatusOK, s.sendStripe("ep", "evt_np", "invoice.paid", "invoice", "in_np"))

	d := w.awaitNotice(t, notify.TriggerPendingAge, "ep", notify.PhaseFiring)
	require.Contains(t, d.Detail, "threshold 2s")
	k := keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: "evt_np"}
	require.Equal(t, keys.StatusPending, s.statusOf(k))

	open.Store(true)
	eventually(t, 60*time.Second, "the event handled", func() bool { return s.statusOf(k) == keys.StatusDone })
	w.awaitNotice(t, notify.TriggerPendingAge, "ep", notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerPendingAge, "ep")
}

// The sweeper's runs fail once the worker's role loses a privilege the
// sweep needs (a broken grant: UPDATE of webhook_inbox); re-applying the
// grants makes the next run complete.
func notifyScheduleFailed(t *testing.T) {
	mp := testenv.Mailpit(t)
	s := newStack(t, stackOptions{configure: notifyConfig(mp)})
	w := newNotifyWorld(t, s, mp)
	sweeper := starter.ScheduleID(starter.ScheduleSweeper, s.cfg.TaskQueue)
	w.rules(t, notify.TriggerScheduleFailed, nil)
	_, err := s.store.Pool.Exec(s.ctx, `REVOKE UPDATE ON webhook_inbox FROM `+store.RoleWorker)
	require.NoError(t, err)

	d := w.awaitNotice(t, notify.TriggerScheduleFailed, sweeper, notify.PhaseFiring)
	require.Positive(t, d.Count)
	require.Contains(t, d.Detail, sweeper+"-run")
	require.Contains(t, d.Text, "/namespaces/default/workflows/"+sweeper+"-run", "a link to the failed run in the Temporal UI")

	_, _, err = store.ReapplyGrants(s.ctx, s.store.Pool)
	require.NoError(t, err)
	w.awaitNotice(t, notify.TriggerScheduleFailed, sweeper, notify.PhaseRecovered)
	w.requireOneFiringOneRecovery(t, notify.TriggerScheduleFailed, sweeper)
}
