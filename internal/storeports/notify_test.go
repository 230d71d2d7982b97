package storeports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

const notifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// nbundle is a fresh database with two endpoints of two workspaces, the
// evaluator running as the worker's role (so the grants are proven too),
// and the owner's store for fixtures and checks.
type nbundle struct {
	ctx    context.Context
	owner  *store.Store
	worker *store.Store
	n      *storeports.Notifications
}

func notifySetup(t *testing.T) *nbundle {
	t.Helper()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	owner, err := store.Open(ctx, url, 8)
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	owner.Keys = testenv.Keys(t)
	worker, err := store.Open(ctx, testenv.RoleURL(t, url, store.RoleWorker), 16)
	require.NoError(t, err)
	t.Cleanup(worker.Close)
	worker.Keys = owner.Keys
	for _, ep := range []struct{ slug, account, ws string }{{"ep1", "acct_1", "ws_1"}, {"ep2", "acct_2", "ws_2"}} {
		require.NoError(t, endpoints.InsertEndpoint(ctx, owner, endpoints.NewEndpoint{Slug: ep.slug, Provider: "stripe", Environment: "test",
			Secrets: []string{"whsec_" + ep.slug}}))
		require.NoError(t, endpoints.LinkAccount(ctx, owner, ep.slug, ep.account, ep.ws))
	}
	return &nbundle{ctx: ctx, owner: owner, worker: worker,
		n: &storeports.Notifications{Store: worker, ConsoleURL: "http://console.test", TemporalUIURL: "http://ui.test", Namespace: "default", TaskQueue: "q"}}
}

func (b *nbundle) rule(t *testing.T, r notifications.Rule) {
	t.Helper()
	if r.Channel == "" {
		r.Channel, r.Target = notify.ChannelEmail, "oncall@example.com"
	}
	if r.Window == 0 {
		r.Window = time.Hour
	}
	if r.PendingAge == 0 {
		r.PendingAge = time.Hour
	}
	r.Enabled = true
	require.NoError(t, notifications.Insert(b.ctx, b.owner.Pool, b.owner.Keys, r))
}

// event inserts an inbox row of endpoint ep (acct_1 of ep1, acct_2 of ep2)
// in status.
func (b *nbundle) event(t *testing.T, id, ep, status string) keys.Event {
	t.Helper()
	acct, ws := "acct_1", "ws_1"
	if ep == "ep2" {
		acct, ws = "acct_2", "ws_2"
	}
	k := keys.Event{Provider: "stripe", Account: acct, Environment: "test", EventID: id}
	_, err := inbox.InsertInboxEvent(b.ctx, b.owner.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: ep, WorkspaceID: ws,
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_" + id, Payload: []byte(`{}`), BodySHA256: []byte(id)})
	require.NoError(t, err)
	b.exec(t, `UPDATE webhook_inbox SET status = $2 WHERE event_id = $1`, id, status)
	return k
}

func (b *nbundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.owner.Pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

func (b *nbundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.owner.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

func (b *nbundle) eval(t *testing.T) ports.NotifyOutcome {
	t.Helper()
	out, err := b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: true})
	require.NoError(t, err)
	return out
}

func (b *nbundle) notices(t *testing.T) []notifications.Notice {
	t.Helper()
	ns, err := notifications.RecentNotices(b.ctx, b.owner.Pool, "", 100)
	require.NoError(t, err)
	return ns
}

// documents reads the notices' outbox payloads, oldest first.
func (b *nbundle) documents(t *testing.T) []notify.Document {
	t.Helper()
	rows, err := b.owner.Pool.Query(b.ctx, `SELECT payload FROM outbox WHERE class = 'notification' ORDER BY id`)
	require.NoError(t, err)
	raws, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	var out []notify.Document
	for _, raw := range raws {
		var d notify.Document
		require.NoError(t, json.Unmarshal(raw, &d))
		out = append(out, d)
	}
	return out
}

// One notice per window, decided in the transaction of its outbox intent:
// evaluations repeated, or eight at once (two workers, a retried activity),
// decide it once; clearing decides one recovery; nothing more after that.
func TestEvaluationDecidesAWindowsNoticeOnceEvenConcurrently(t *testing.T) {
	t.Parallel()
	b := notifySetup(t)
	b.rule(t, notifications.Rule{Name: "oncall", Triggers: []string{notify.TriggerEventFailed}})
	b.event(t, "evt_1", "ep1", keys.StatusExhausted)
	b.event(t, "evt_2", "ep1", keys.StatusFailed)
	b.event(t, "evt_ok", "ep1", keys.StatusDone)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, b.notices(t), 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE class = 'notification'`))
	docs := b.documents(t)
	require.Equal(t, notify.PhaseFiring, docs[0].Phase)
	require.EqualValues(t, 2, docs[0].Count, "exhausted and failed, not done")
	require.Equal(t, "ep1", docs[0].Subject)
	require.Equal(t, "oncall@example.com", docs[0].To)
	require.Contains(t, docs[0].Text, "http://console.test/inbox?endpoint=ep1&status=exhausted%2Cfailed")
	var o struct {
		Kind, Destination, ResourceKey, Key string
	}
	require.NoError(t, b.owner.Pool.QueryRow(b.ctx, `SELECT kind, destination, resource_key, operation_key FROM outbox WHERE class = 'notification'`).
		Scan(&o.Kind, &o.Destination, &o.ResourceKey, &o.Key))
	require.Equal(t, "email", o.Kind)
	require.Equal(t, "oncall@example.com", o.Destination)
	require.Equal(t, notify.Resource("q", "oncall").String(), o.ResourceKey, "sent by the rule's own workflow")
	require.Equal(t, docs[0].OperationKey, o.Key)

	out := b.eval(t)
	require.Empty(t, out.Notices, "the same window: nothing more")
	require.Equal(t, []keys.Resource{notify.Resource("q", "oncall")}, out.Resources, "its notice is still to send: the rule's workflow is rung")

	// Replayed and done: the condition clears, one recovery follows.
	b.exec(t, `UPDATE webhook_inbox SET status = 'done' WHERE status IN ('failed', 'exhausted')`)
	out = b.eval(t)
	require.Equal(t, []ports.NoticeDecided{{Rule: "oncall", Trigger: notify.TriggerEventFailed, Subject: "ep1", Phase: notify.PhaseRecovered,
		Channel: notify.ChannelEmail}}, out.Notices)
	for range 3 {
		require.Empty(t, b.eval(t).Notices)
	}
	docs = b.documents(t)
	require.Len(t, docs, 2)
	require.Equal(t, notify.TypeRecovered, docs[1].Type)
	require.Equal(t, docs[0].WindowStart, docs[1].WindowStart, "the recovery is of the firing notice's window")
}

// A rule scoped to one workspace hears of that workspace's items only, and
// its notices say nothing of another's; a rule of one endpoint likewise.
func TestRulesHearOnlyOfTheirScope(t *testing.T) {
	t.Parallel()
	b := notifySetup(t)
	b.rule(t, notifications.Rule{Name: "tenant-2", Triggers: []string{notify.TriggerEventFailed, notify.TriggerQuarantine}, Workspace: "ws_2"})
	b.rule(t, notifications.Rule{Name: "ep1-only", Triggers: []string{notify.TriggerEventFailed}, Endpoint: "ep1"})
	b.event(t, "evt_a", "ep1", keys.StatusExhausted)
	b.event(t, "evt_b", "ep1", keys.StatusExhausted)
	_, err := inbox.InsertQuarantine(b.ctx, b.owner.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep1", Provider: "stripe", Account: "acct_1",
		EventID: "evt_q1", Reason: inbox.ReasonMalformed, BodySHA256: []byte{1}})
	require.NoError(t, err)
	// A quarantine entry of an account nobody linked belongs to no workspace.
	_, err = inbox.InsertQuarantine(b.ctx, b.owner.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep2", Provider: "stripe", Account: "acct_stranger",
		EventID: "evt_q2", Reason: inbox.ReasonUnknownAccount, BodySHA256: []byte{2}})
	require.NoError(t, err)

	out := b.eval(t)
	require.Equal(t, []ports.NoticeDecided{{Rule: "ep1-only", Trigger: notify.TriggerEventFailed, Subject: "ep1", Phase: notify.PhaseFiring,
		Channel: notify.ChannelEmail}}, out.Notices, "ws_2 has nothing of its own yet")

	b.event(t, "evt_c", "ep2", keys.StatusFailed)
	_, err = inbox.InsertQuarantine(b.ctx, b.owner.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep2", Provider: "stripe", Account: "acct_2",
		EventID: "evt_q3", Reason: inbox.ReasonMalformed, BodySHA256: []byte{3}})
	require.NoError(t, err)
	out = b.eval(t)
	require.ElementsMatch(t, []ports.NoticeDecided{
		{Rule: "tenant-2", Trigger: notify.TriggerEventFailed, Subject: "ep2", Phase: notify.PhaseFiring, Channel: notify.ChannelEmail},
		{Rule: "tenant-2", Trigger: notify.TriggerQuarantine, Subject: "ep2", Phase: notify.PhaseFiring, Channel: notify.ChannelEmail},
	}, out.Notices)
	for _, d := range b.documents(t) {
		if d.Rule != "tenant-2" {
			continue
		}
		require.EqualValues(t, 1, d.Count, "%s: ws_2's own item only", d.Trigger)
		require.Equal(t, "ws_2", d.Workspace)
		require.NotContains(t, d.Text, "ep1")
		require.NotContains(t, d.Text, "acct_1")
	}
}

// Each trigger observes what it says: divergences within the window only,
// outbox rows held or uncertain but never a notice's own, the oldest
// pending age against the threshold, and schedules only when they could be
// read.
func TestEachTriggerObservesWhatItSays(t *testing.T) {
	t.Parallel()
	b := notifySetup(t)
	b.rule(t, notifications.Rule{Name: "all", Triggers: notify.Triggers, Window: 10 * time.Minute, PendingAge: 30 * time.Minute})

	// Nothing yet: nothing fires (the notify schedule itself is healthy).
	out, err := b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: true, Schedules: []notify.ScheduleHealth{{ID: "hookinbox-sweeper"}}})
	require.NoError(t, err)
	require.Empty(t, out.Notices)

	// An old divergence (outside the window) and a pending row younger than
	// the threshold fire nothing; a notice's own held row neither.
	require.NoError(t, b.owner.Tx(b.ctx, func(tx pgx.Tx) error {
		return passes.InsertDivergences(b.ctx, tx, "stripe", "acct_1", "test", "subscription", "sub_1", "test",
			[]keys.Divergence{{Field: "status", LocalValue: "active", ProviderValue: "canceled"}})
	}))
	b.exec(t, `UPDATE reconcile_divergences SET detected_at = now() - interval '11 minutes'`)
	b.event(t, "evt_p", "ep1", keys.StatusPending)
	b.exec(t, `UPDATE webhook_inbox SET pending_since = now() - interval '29 minutes'`)
	var heldNotice int64
	require.NoError(t, b.owner.Tx(b.ctx, func(tx pgx.Tx) error {
		heldNotice, err = outbox.InsertOutbox(b.ctx, tx, outbox.OutboxIntent{OperationKey: "notification/x", Class: notify.ClassNotification,
			Kind: "webhook", Destination: "x", ResourceKey: notify.Resource("q", "x").String(), Payload: map[string]string{}})
		return err
	}))
	b.exec(t, `UPDATE outbox SET status = 'held_for_review' WHERE id = $1`, heldNotice)
	require.Empty(t, b.eval(t).Notices)

	// Now each one holds.
	require.NoError(t, b.owner.Tx(b.ctx, func(tx pgx.Tx) error {
		return passes.InsertDivergences(b.ctx, tx, "stripe", "acct_2", "test", "subscription", "sub_2", "test",
			[]keys.Divergence{{Field: "status", LocalValue: "active", ProviderValue: "canceled"}})
	}))
	b.exec(t, `UPDATE webhook_inbox SET pending_since = now() - interval '31 minutes'`)
	intent := func(key, ws string) int64 {
		var id int64
		require.NoError(t, b.owner.Tx(b.ctx, func(tx pgx.Tx) error {
			id, err = outbox.InsertOutbox(b.ctx, tx, outbox.OutboxIntent{OperationKey: key, Class: "feedback_alert", Kind: "webhook",
				Destination: "team", WorkspaceID: ws, ResourceKey: "standard/p/test/feedback/f1", Payload: map[string]string{}})
			return err
		}))
		return id
	}
	held, uncertain, inFlight := intent("op-held", "ws_1"), intent("op-uncertain", "ws_1"), intent("op-in-flight", "ws_2")
	b.exec(t, `UPDATE outbox SET status = 'held_for_review' WHERE id = $1`, held)
	b.exec(t, `UPDATE outbox SET status = 'uncertain', last_error = 'HTTP 502' WHERE id = $1`, uncertain)
	// An attempt in flight (uncertain until its deadline, no error yet) is not stuck.
	b.exec(t, `UPDATE outbox SET status = 'uncertain', next_attempt_at = now() + interval '1 minute' WHERE id = $1`, inFlight)
	failedAt := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	out, err = b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: true, Schedules: []notify.ScheduleHealth{
		{ID: "hookinbox-sweeper", Failed: 2, LastFailedAt: failedAt, LastWorkflowID: "hookinbox-sweeper-run-2026-12-01T03:00:00Z", LastStatus: "failed"},
		{ID: "hookinbox-retention"}}})
	require.NoError(t, err)
	got := map[string]string{}
	for _, n := range out.Notices {
		require.Equal(t, notify.PhaseFiring, n.Phase)
		got[n.Trigger] = n.Subject
	}
	require.Equal(t, map[string]string{notify.TriggerDivergence: "ep2", notify.TriggerOutbox: "ws_1", notify.TriggerPendingAge: "ep1",
		notify.TriggerScheduleFailed: "hookinbox-sweeper"}, got)
	byTrigger := map[string]notify.Document{}
	for _, d := range b.documents(t) {
		byTrigger[d.Trigger] = d
	}
	require.EqualValues(t, 2, byTrigger[notify.TriggerOutbox].Count, "held and uncertain, not in flight, not a notice")
	require.Contains(t, byTrigger[notify.TriggerOutbox].Detail, "1 held for review, 1 uncertain")
	require.Contains(t, byTrigger[notify.TriggerPendingAge].Detail, "threshold 30m0s")
	require.EqualValues(t, 2, byTrigger[notify.TriggerScheduleFailed].Count)
	require.Contains(t, byTrigger[notify.TriggerScheduleFailed].Text,
		"http://ui.test/namespaces/default/workflows/hookinbox-sweeper-run-2026-12-01T03:00:00Z")

	// Schedules that could not be read are neither failed nor recovered.
	out, err = b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: false})
	require.NoError(t, err)
	require.Empty(t, out.Notices)
	// Read and healthy again: the schedule recovers.
	out, err = b.n.Evaluate(b.ctx, ports.NotifyInput{SchedulesRead: true, Schedules: []notify.ScheduleHealth{{ID: "hookinbox-sweeper"}}})
	require.NoError(t, err)
	require.Equal(t, []ports.NoticeDecided{{Rule: "all", Trigger: notify.TriggerScheduleFailed, Subject: "hookinbox-sweeper",
		Phase: notify.PhaseRecovered, Channel: notify.ChannelEmail}}, out.Notices)
}

// A removed rule decides nothing more, and its unsent notices cannot be
// sent to a URL nobody can check any more: Permanent.
func TestANotificationsSenderIsItsRulesChannel(t *testing.T) {
	t.Parallel()
	b := notifySetup(t)
	b.rule(t, notifications.Rule{Name: "hook", Triggers: []string{notify.TriggerEventFailed}, Channel: notify.ChannelWebhook,
		Target: "https://hooks.example.com/in", Secret: notifySecret})
	b.rule(t, notifications.Rule{Name: "chat", Triggers: []string{notify.TriggerEventFailed}, Channel: notify.ChannelSlack,
		Target: "https://hooks.slack.example", Secret: "https://hooks.slack.example/services/T/B/TOKEN", AllowPrivate: true})
	b.rule(t, notifications.Rule{Name: "mail", Triggers: []string{notify.TriggerEventFailed}})
	b.event(t, "evt_1", "ep1", keys.StatusExhausted)
	require.Len(t, b.eval(t).Notices, 3)

	o := &storeports.Outbox{Store: b.worker, Mailer: &outbound.SMTPMailer{Addr: "127.0.0.1:1"}}
	rows, err := b.owner.Pool.Query(b.ctx, `SELECT id FROM outbox WHERE class = 'notification' ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	senders := map[string]outbound.Sender{}
	for _, id := range ids {
		row, err := o.Get(b.ctx, id)
		require.NoError(t, err)
		s, msg, err := o.Sender(b.ctx, row)
		require.NoError(t, err)
		require.Equal(t, row.OperationKey, msg.Key)
		require.Contains(t, msg.Subject, "FIRING: 1 event ended failed or exhausted")
		require.Contains(t, msg.Text, "ref ntf_")
		senders[row.Destination] = s
		if row.Destination == "hook" {
			var d notify.Document
			require.NoError(t, json.Unmarshal(msg.Body, &d), "the webhook's body is the document")
			require.Equal(t, notify.TypeFiring, d.Type)
		}
	}
	wh, ok := senders["hook"].(*outbound.WebhookSender)
	require.True(t, ok)
	require.Equal(t, "https://hooks.example.com/in", wh.URL)
	require.Equal(t, notifySecret, wh.Secret, "the sealed secret opened with the worker's key")
	require.False(t, wh.Guard.AllowPrivate)
	sl, ok := senders["chat"].(*outbound.SlackSender)
	require.True(t, ok)
	require.Equal(t, "https://hooks.slack.example/services/T/B/TOKEN", sl.URL)
	require.True(t, sl.Guard.AllowPrivate, "the rule allows private addresses on purpose")
	require.IsType(t, &outbound.SMTPMailer{}, senders["oncall@example.com"])

	b.exec(t, `DELETE FROM notification_rules WHERE name = 'hook'`)
	for _, id := range ids {
		row, err := o.Get(b.ctx, id)
		require.NoError(t, err)
		if row.Destination != "hook" {
			continue
		}
		_, _, err = o.Sender(b.ctx, row)
		require.True(t, fault.IsPermanent(err), "%v", err)
		require.ErrorContains(t, err, "notification rule hook no longer exists")
	}
	b.event(t, "evt_2", "ep1", keys.StatusExhausted)
	b.exec(t, `UPDATE webhook_inbox SET status = 'done'`)
	for _, n := range b.eval(t).Notices {
		require.NotEqual(t, "hook", n.Rule, "a removed rule decides nothing")
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM notification_states WHERE rule = 'hook'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM notifications WHERE rule = 'hook'`), "its notice stays in the history")
}

// A disabled rule, and one whose observation failed, do not stop the
// others: Evaluate reports the failure and the other rules' notices.
func TestOneBrokenRuleDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	b := notifySetup(t)
	b.rule(t, notifications.Rule{Name: "a-good", Triggers: []string{notify.TriggerEventFailed}})
	b.rule(t, notifications.Rule{Name: "b-off", Triggers: []string{notify.TriggerEventFailed}})
	b.exec(t, `UPDATE notification_rules SET enabled = false WHERE name = 'b-off'`)
	b.event(t, "evt_1", "ep1", keys.StatusExhausted)
	// The worker's role loses its read of the quarantine: that trigger fails.
	b.rule(t, notifications.Rule{Name: "c-broken", Triggers: []string{notify.TriggerQuarantine}})
	b.exec(t, `REVOKE SELECT ON inbox_quarantine FROM `+store.RoleWorker)
	out, err := b.n.Evaluate(b.ctx, ports.NotifyInput{})
	require.Error(t, err)
	require.ErrorContains(t, err, "rule c-broken, trigger quarantine_opened")
	require.Equal(t, 2, out.Rules, "the enabled ones")
	require.Equal(t, []ports.NoticeDecided{{Rule: "a-good", Trigger: notify.TriggerEventFailed, Subject: "ep1", Phase: notify.PhaseFiring,
		Channel: notify.ChannelEmail}}, out.Notices)
	require.Equal(t, fmt.Sprint([]keys.Resource{notify.Resource("q", "a-good")}), fmt.Sprint(out.Resources))
}
