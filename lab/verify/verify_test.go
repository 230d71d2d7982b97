package verify_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/feedback"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soakteam"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/lab/verify"
	"github.com/hookinbox/hookinbox/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	acct = "acct_t"
	proj = "proj_t"
	ws   = "ws_t"
)

var (
	now       = time.Now().UTC().Truncate(time.Second)
	periodEnd = now.Add(30 * 24 * time.Hour)
)

// bundle is a database holding a correct outcome of a small hand-made run
// (two paid invoices, one of them recovered by the backfill; one live and
// one canceled subscription with versions; one feedback item; a conflicting
// redelivery) and the Input that describes it.
type bundle struct {
	ctx   context.Context
	st    *store.Store
	input verify.Input
}

func body(id, resource string, version int) []byte {
	if version > 0 {
		return fmt.Appendf(nil, `{"id":%q,"data":{"object":{"id":%q,"version":%d}}}`, id, resource, version)
	}
	return fmt.Appendf(nil, `{"id":%q,"data":{"object":{"id":%q}}}`, id, resource)
}

func sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func stripeEvent(id, typ, kind, resource string, version int) simulator.Event {
	return simulator.Event{Provider: simulator.ProviderStripe, ID: id, Type: typ, Account: acct,
		ResourceKind: kind, ResourceID: resource, Body: body(id, resource, version)}
}

func feedbackEvent(id, typ string) simulator.Event {
	return simulator.Event{Provider: simulator.ProviderStandard, ID: id, Type: typ, Account: proj,
		ResourceKind: "feedback", ResourceID: "fb_1", Body: body(id, "fb_1", 0)}
}

// applied is the receiver's record of the comment forward of event id.
func applied(comment, id string) verify.Applied {
	return verify.Applied{OperationKey: "forward/comments/standard/" + proj + "/test/" + comment,
		EventKey: "standard/" + proj + "/test/" + id, ResourceKind: "feedback", ResourceID: "fb_1"}
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	st := testenv.Store(t)
	b := &bundle{ctx: ctx, st: st}

	v2 := int64(2)
	truth := simulator.Truth{
		Versions: true, Accounts: []string{acct}, Projects: []string{proj},
		PaidInvoices: []simulator.TruthInvoice{
			{Account: acct, ID: "in_1", Amount: 2000, Currency: "usd", EventIDs: []string{"evt_i1", "evt_i1b"}},
			{Account: acct, ID: "in_2", Amount: 2000, Currency: "usd", EventIDs: []string{"evt_i2"}},
		},
		Subscriptions: []simulator.TruthSubscription{
			{Account: acct, ID: "sub_a", Status: "active", CurrentPeriodEnd: periodEnd.Unix(), Version: &v2, Access: true, LastEventID: "evt_a2"},
			{Account: acct, ID: "sub_c", Status: "canceled", CurrentPeriodEnd: periodEnd.Unix(), CanceledAt: now.Unix(),
				EndedAt: now.Unix(), Version: &v2, Access: false, LastEventID: "evt_c2"},
		},
		Feedback: []simulator.TruthFeedback{{Project: proj, ID: "fb_1", EventID: "msg_1",
			Comments: []simulator.Comment{{ID: "cm_1", EventIDs: []string{"msg_c1", "msg_c1b"}}, {ID: "cm_2", EventIDs: []string{"msg_c2"}}},
			Votes:    []simulator.Vote{{ID: "vt_1", EventID: "msg_v1"}}}},
		CreditNotes: []simulator.TruthCreditNote{
			{Account: acct, ID: "cn_1", Invoice: "in_1", Total: 500, InvoiceTotal: 2000, Status: "void",
				EventIDs: []string{"evt_cn1"}, VoidEventIDs: []string{"evt_cn1v"}},
			{Account: acct, ID: "cn_2", Invoice: "in_2", Total: 1000, InvoiceTotal: 2000, Status: "issued", EventIDs: []string{"evt_cn2"}},
		},
		DroppedEvents: []simulator.TruthEvent{{Provider: "stripe", ID: "evt_i2", Type: "invoice.paid", Account: acct, ResourceID: "in_2"}},
		UnackedEvents: []simulator.TruthEvent{},
	}
	events := []simulator.Event{
		stripeEvent("evt_i1", "invoice.paid", "invoice", "in_1", 0),
		stripeEvent("evt_i1b", "invoice.paid", "invoice", "in_1", 0),
		stripeEvent("evt_a1", "customer.subscription.created", "subscription", "sub_a", 1),
		stripeEvent("evt_a2", "customer.subscription.updated", "subscription", "sub_a", 2),
		stripeEvent("evt_c1", "customer.subscription.created", "subscription", "sub_c", 1),
		stripeEvent("evt_c2", "customer.subscription.deleted", "subscription", "sub_c", 2),
		{Provider: simulator.ProviderStandard, ID: "msg_1", Type: "feedback.created", Account: proj,
			ResourceKind: "feedback", ResourceID: "fb_1", Body: body("msg_1", "fb_1", 0)},
		stripeEvent("evt_cn1", "credit_note.created", "credit_note", "cn_1", 0),
		stripeEvent("evt_cn1v", "credit_note.voided", "credit_note", "cn_1", 0),
		stripeEvent("evt_cn2", "credit_note.created", "credit_note", "cn_2", 0),
		feedbackEvent("msg_c1", "feedback.commented"),
		feedbackEvent("msg_c1b", "feedback.commented"), // the same comment again: not forwarded
		feedbackEvent("msg_c2", "feedback.commented"),
		feedbackEvent("msg_v1", "feedback.voted"),
	}
	dropped := stripeEvent("evt_i2", "invoice.paid", "invoice", "in_2", 0)
	conflicting := events[2]
	conflicting.Body, conflicting.Conflicting = []byte(`{"other":"body"}`), true
	rep := simulator.Report{}
	for _, ev := range events {
		rep.Results = append(rep.Results, simulator.DeliveryResult{Delivery: simulator.Delivery{Event: ev}, Outcome: simulator.OutcomeAcked})
	}
	rep.Results = append(rep.Results,
		simulator.DeliveryResult{Delivery: simulator.Delivery{Event: events[0], Duplicate: true}, Outcome: simulator.OutcomeAcked},
		simulator.DeliveryResult{Delivery: simulator.Delivery{Event: dropped, Dropped: true}, Outcome: simulator.OutcomeDropped},
		simulator.DeliveryResult{Delivery: simulator.Delivery{Event: conflicting, Late: true}, Outcome: simulator.OutcomeAcked},
	)

	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "stripe-t", Provider: "stripe", Environment: "test",
		Account: acct, Secrets: []string{"whsec_t"}, APIBaseURL: "http://127.0.0.1:1", APIKey: "sk_t",
		Settings: keys.EndpointSettings{VersionPath: "data.object.version"}}))
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "fb-t", Provider: "standard", Environment: "test",
		Secrets: []string{simulator.StandardSecret("t")}, Settings: keys.EndpointSettings{AccountPath: "data.project_id"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "stripe-t", acct, ws))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "fb-t", proj, ws))
	require.NoError(t, records.SetWorkspaceEmail(ctx, st.Pool, ws, "billing@ws-t.example"))
	require.NoError(t, outbox.UpsertDestination(ctx, st.Pool, st.Keys, outbox.Destination{WorkspaceID: ws, Name: "oncall", Kind: "webhook",
		Target: "http://127.0.0.1:1/hook", Secret: simulator.StandardSecret("team"), Enabled: true}))

	for _, ev := range append(events, dropped) {
		provider, origin := "stripe", "webhook"
		if ev.Provider == simulator.ProviderStandard {
			provider = "standard"
		}
		if ev.ID == dropped.ID {
			origin = "backfill"
		}
		b.exec(t, `INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug, workspace_id,
			event_type, resource_kind, resource_id, payload, body_sha256, origin, status, processed_at)
			VALUES ($1, $2, 'test', $3, 'x', $4, $5, $6, $7, $8, $9, $10, 'done', now())`,
			provider, ev.Account, ev.ID, ws, ev.Type, ev.ResourceKind, ev.ResourceID, ev.Body, sum(ev.Body), origin)
	}
	b.exec(t, `INSERT INTO inbox_quarantine (endpoint_slug, provider, source_account, environment, event_id, reason, body_sha256)
		VALUES ('stripe-t', 'stripe', $1, 'test', 'evt_a1', 'conflicting_duplicate', $2)`, acct, sum(conflicting.Body))
	for _, inv := range []string{"in_1", "in_2"} {
		b.exec(t, `INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation, workspace_id,
			credits, amount_paid, currency, event_key) VALUES ('stripe', $1, 'test', $2, $3, $4, 100, 2000, 'usd', 'k')`,
			acct, inv, credits.OperationInitialGrant, ws)
		b.exec(t, `INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload, status, sent_at)
			VALUES ($1, $2, 'email', 'billing@ws-t.example', $3, 'r', '{}', 'sent', now())`,
			credits.GrantKey("stripe", acct, "test", inv)+":confirmation", keys.ClassCreditsConfirmation, ws)
	}
	// cn_1 took back 25 of in_1's 100 and its void gave them back; cn_2
	// took back 50 of in_2's.
	for _, a := range []struct {
		cn, inv, op string
		n           int64
	}{{"cn_1", "in_1", ledger.OperationCreditReversal, -25}, {"cn_1", "in_1", ledger.OperationCreditReversalVoid, 25}, {"cn_2", "in_2", ledger.OperationCreditReversal, -50}} {
		b.exec(t, `INSERT INTO credit_adjustments (provider, source_account, environment, invoice_id, reference, operation, workspace_id,
			requested, applied, policy, decision, balance_before, balance_after, event_key)
			VALUES ('stripe', $1, 'test', $2, $3, $4, $5, $6, $6, 'allow', 'applied', 0, 0, 'k')`, acct, a.inv, a.cn, a.op, ws, a.n)
		key := credits.CreditReversalKey("stripe", acct, "test", a.inv, a.cn)
		if a.op == ledger.OperationCreditReversalVoid {
			key = credits.CreditReversalVoidKey("stripe", acct, "test", a.inv, a.cn)
		}
		b.exec(t, `INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload, status, sent_at)
			VALUES ($1, $2, 'email', 'billing@ws-t.example', $3, 'r', '{}', 'sent', now())`, key+":notice", keys.ClassCreditsReversal, ws)
	}
	b.exec(t, `UPDATE workspaces SET credits_balance = 150 WHERE id = $1`, ws)
	active, _ := json.Marshal(records.SubscriptionState{Status: "active", CurrentPeriodEnd: &periodEnd})
	canceled, _ := json.Marshal(records.SubscriptionState{Status: "canceled", CurrentPeriodEnd: &periodEnd, CanceledAt: &now, EndedAt: &now})
	b.exec(t, `INSERT INTO subscription_projection (provider, source_account, environment, resource_id, workspace_id,
		provider_version, state, status, deleted, access, access_ends_at, written_by)
		VALUES ('stripe', $1, 'test', 'sub_a', $2, 2, $3, 'active', false, true, NULL, 'k'),
		       ('stripe', $1, 'test', 'sub_c', $2, 2, $4, 'canceled', true, false, $5, 'k')`, acct, ws, active, canceled, now)
	b.exec(t, `INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key)
		VALUES ('standard', $1, 'test', 'fb_1', $2, $3, 'k')`, proj, feedback.OperationInitialAlert, ws)
	b.exec(t, `INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload, status, sent_at)
		VALUES ($1, $2, 'webhook', 'oncall', $3, 'r', '{}', 'sent', now())`,
		feedback.AlertKey("standard", proj, "test", "fb_1")+":oncall", keys.ClassFeedbackAlert, ws)

	// The soak team's table: fb_1's one vote.
	conn, err := st.Pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = migrations.UpSet(ctx, conn.Conn(), migrations.Set{Name: soakteam.MigrationSet, FS: soakteam.Files()}, nil)
	conn.Release()
	require.NoError(t, err)
	b.exec(t, `INSERT INTO `+soakteam.Table+` (project, feedback_id, votes, last_vote) VALUES ($1, 'fb_1', 1, 'vt_1')`, proj)

	var emails []simulator.Email
	for _, inv := range []string{"in_1", "in_2"} {
		emails = append(emails, simulator.Email{ID: "em_" + inv, To: "billing@ws-t.example", Posts: 1,
			IdempotencyKey: credits.GrantKey("stripe", acct, "test", inv) + ":confirmation"})
	}
	b.input = verify.Input{
		Runs:        []verify.Run{{Label: "t", Truth: truth, Sent: verify.SentFrom(rep)}},
		BackfillRan: true, CheckEmails: true, Emails: emails,
		Forwards:  &verify.Forwards{Route: "comments", Applied: []verify.Applied{applied("cm_1", "msg_c1"), applied("cm_2", "msg_c2")}},
		TeamVotes: true,
		GitHubIssues: &verify.GitHubIssues{Route: "issues",
			Delivered: map[string][]string{"org/repo#1": {"g1", "g2", "g3"}, "org/repo#2": {"g4"}},
			// The two issues interleave: only each issue's own order counts.
			Applied: []verify.Applied{ghApplied("g1"), ghApplied("g4"), ghApplied("g2"), ghApplied("g3")}},
	}
	return b
}

// ghApplied is the receiver's record of the issues forward of delivery guid.
func ghApplied(guid string) verify.Applied {
	return verify.Applied{OperationKey: "forward/issues/github/4242/test/" + guid,
		EventKey: "github/4242/test/" + guid, ResourceKind: "issue"}
}

func (b *bundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.st.Pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

func (b *bundle) check(t *testing.T) *verify.Report {
	t.Helper()
	rep, err := verify.Check(b.ctx, b.st.Pool, b.input)
	require.NoError(t, err)
	return rep
}

func table(t *testing.T, rep *verify.Report) string {
	var buf bytes.Buffer
	require.NoError(t, rep.WriteTable(&buf))
	return buf.String()
}

func TestACorrectOutcomeHoldsEveryInvariant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep := b.check(t)
	out := table(t, rep)
	require.True(t, rep.OK, out)
	for _, name := range verify.Names() {
		res := rep.Get(name)
		require.NotNil(t, res, name)
		require.Equal(t, verify.StatusOK, res.Status, "%s\n%s", name, out)
		require.Equal(t, res.Expected, res.Actual, name)
	}
	require.EqualValues(t, 14, rep.Get(verify.AckedSettled).Expected, "14 distinct acknowledged events")
	require.EqualValues(t, 15, rep.Get(verify.InboxSettled).Expected)
	require.EqualValues(t, 2, rep.Get(verify.ForwardAppliedOnce).Expected, "two comments, one of them announced twice")
	require.EqualValues(t, 2, rep.Get(verify.ForwardsInOrder).Expected)
	require.EqualValues(t, 1, rep.Get(verify.TeamTableExact).Expected)
	require.EqualValues(t, 2, rep.Get(verify.GrantPerInvoice).Expected)
	require.EqualValues(t, 150, rep.Get(verify.BalanceMatches).Expected, "2 × 100, less cn_2's 50")
	require.EqualValues(t, 2, rep.Get(verify.ReversalPerCreditNote).Expected)
	require.EqualValues(t, 6, rep.Get(verify.OutboxIntents).Expected, "two confirmations, three credit-note notices, one alert")
	require.EqualValues(t, 1, rep.Get(verify.ConflictsQuarantined).Expected)
	require.Contains(t, out, "all invariants hold")
}

func TestEveryInvariantCanFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		invariant string
		breakIt   func(t *testing.T, b *bundle)
		offender  string
	}{
		{verify.DeliveriesAcked, func(t *testing.T, b *bundle) {
			b.input.Runs[0].Truth.UnackedEvents = append(b.input.Runs[0].Truth.UnackedEvents,
				simulator.TruthEvent{ID: "evt_i1b", Type: "invoice.paid", ResourceID: "in_1"})
		}, "evt_i1b invoice.paid in_1: never answered 2xx"},
		{verify.AckedSettled, func(t *testing.T, b *bundle) {
			b.exec(t, `DELETE FROM webhook_inbox WHERE event_id = 'evt_i1b'`)
		}, "no inbox row (lost)"},
		{verify.InboxSettled, func(t *testing.T, b *bundle) {
			b.exec(t, `INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug, workspace_id,
				event_type, resource_kind, resource_id, body_sha256, status, attempts, last_error)
				VALUES ('stripe', $1, 'test', 'evt_other', 'x', $2, 'invoice.paid', 'invoice', 'in_1', '\x00', 'exhausted', 10, 'boom')`, acct, ws)
		}, "evt_other invoice/in_1 (webhook): exhausted (10 attempt(s), last error: boom)"},
		{verify.DroppedRecovered, func(t *testing.T, b *bundle) {
			b.exec(t, `DELETE FROM webhook_inbox WHERE event_id = 'evt_i2'`)
		}, "evt_i2 invoice.paid in_2: never delivered and not recovered"},
		{verify.ConflictsQuarantined, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE webhook_inbox SET body_sha256 = '\x01' WHERE event_id = 'evt_a1'`)
		}, "the inbox row does not hold the original body"},
		{verify.NoUnexpectedQuarantine, func(t *testing.T, b *bundle) {
			b.exec(t, `INSERT INTO inbox_quarantine (endpoint_slug, provider, source_account, environment, event_id, reason, body_sha256)
				VALUES ('stripe-t', 'stripe', $1, 'test', 'evt_i1', 'malformed', '\x02')`, acct)
		}, "stripe/acct_t evt_i1 quarantined at stripe-t: malformed"},
		{verify.GrantPerInvoice, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE credit_grants SET amount_paid = 4000 WHERE invoice_id = 'in_1'`)
		}, "in_1: grant records 4000 usd, the invoice is 2000 usd"},
		{verify.NoStrayGrant, func(t *testing.T, b *bundle) {
			b.exec(t, `INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation, workspace_id,
				credits, amount_paid, currency, event_key) VALUES ('stripe', $1, 'test', 'in_unpaid', $2, $3, 100, 2000, 'usd', 'k')`,
				acct, credits.OperationInitialGrant, ws)
		}, "in_unpaid (acct_t): 100 credits to ws_t, but the invoice is not paid at the provider"},
		{verify.BalanceMatches, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE workspaces SET credits_balance = 300 WHERE id = $1`, ws)
		}, "workspace ws_t: balance 300, 2 grant(s) × 100 -50 adjusted = 150"},
		{verify.ReversalPerCreditNote, func(t *testing.T, b *bundle) {
			b.exec(t, `DELETE FROM credit_adjustments WHERE operation = 'credit-reversal-void'`)
			b.exec(t, `UPDATE workspaces SET credits_balance = 125 WHERE id = $1`, ws)
		}, "cn_1: voided (event reached), nothing given back"},
		{verify.ProjectionNotBehind, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE subscription_projection SET provider_version = 1 WHERE resource_id = 'sub_a'`)
		}, "sub_a: projection v1 (active) behind v2 sent"},
		{verify.ProjectionMatches, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE subscription_projection SET state = jsonb_set(state, '{cancel_at_period_end}', 'true') WHERE resource_id = 'sub_a'`)
		}, "sub_a: cancel_at_period_end true≠false"},
		{verify.NoCanceledAccess, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE subscription_projection SET access = true, deleted = false, access_ends_at = NULL WHERE resource_id = 'sub_c'`)
		}, "sub_c: canceled (provider canceled) with access"},
		{verify.AccessMatches, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE subscription_projection SET access_ends_at = now() - interval '1 day' WHERE resource_id = 'sub_a'`)
		}, "sub_a (active, cancel_at_period_end false): access false, the rule gives true"},
		{verify.AlertPerFeedback, func(t *testing.T, b *bundle) {
			b.exec(t, `DELETE FROM feedback_alerts`)
		}, "fb_1 (proj_t): no alert"},
		{verify.OutboxIntents, func(t *testing.T, b *bundle) {
			b.exec(t, `DELETE FROM outbox WHERE class = 'feedback_alert'`)
		}, "fb_1: alert, no intent for destination oncall"},
		{verify.OutboxSettled, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE outbox SET status = 'uncertain', attempts = 3, last_error = 'connection reset' WHERE class = 'feedback_alert'`)
		}, "uncertain after 3 attempt(s), last error: connection reset"},
		{verify.EmailPerConfirmation, func(t *testing.T, b *bundle) {
			b.input.Emails = append(b.input.Emails, b.input.Emails[0])
		}, "sent, 2 email(s) with its key"},
		{verify.ForwardAppliedOnce, func(t *testing.T, b *bundle) {
			// The second event of cm_1 forwarded under a key of its own.
			b.input.Forwards.Applied = append(b.input.Forwards.Applied, applied("cm_1b", "msg_c1b"))
		}, "comment cm_1 on fb_1: applied 2 times"},
		{verify.ForwardsInOrder, func(t *testing.T, b *bundle) {
			a := b.input.Forwards.Applied
			a[0], a[1] = a[1], a[0]
		}, "feedback/fb_1: msg_c1 (inbox #"},
		{verify.TeamTableExact, func(t *testing.T, b *bundle) {
			b.exec(t, `UPDATE `+soakteam.Table+` SET votes = 2`)
		}, "fb_1 (proj_t): 2 vote(s) in soak_team_votes, 1 reached the receiver"},
		{verify.GitHubIssueForwards, func(t *testing.T, b *bundle) {
			// Issue 1's second event applied after its third.
			a := b.input.GitHubIssues.Applied
			a[2], a[3] = a[3], a[2]
		}, "org/repo#1: delivery g2 (#2 of the issue) applied after #3"},
	}

	require.Len(t, cases, len(verify.Names()), "a case per invariant")
	for _, tt := range cases {
		t.Run(tt.invariant, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tt.breakIt(t, b)
			rep := b.check(t)
			require.False(t, rep.OK)
			res := rep.Get(tt.invariant)
			out := table(t, rep)
			require.Equal(t, verify.StatusViolation, res.Status, out)
			require.NotEmpty(t, res.Offenders)
			require.Contains(t, res.Offenders[0], tt.offender)
			require.Contains(t, out, tt.invariant+" ("+res.Description+")")
		})
	}
}

func TestAPendingEventIsNotSettled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `UPDATE webhook_inbox SET status = 'pending', attempts = 2, last_error = 'HTTP 503' WHERE event_id = 'evt_a2'`)
	rep := b.check(t)
	for _, name := range []string{verify.AckedSettled, verify.InboxSettled} {
		res := rep.Get(name)
		require.Equal(t, verify.StatusViolation, res.Status, name)
		require.EqualValues(t, res.Expected-1, res.Actual, name)
		require.Contains(t, res.Offenders[0], "pending (2 attempt(s), last error: HTTP 503)")
	}
}

func TestFailedRowsAreViolationsUnlessPermanentFaultsWereInjected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `UPDATE webhook_inbox SET status = 'failed', last_error = 'HTTP 403' WHERE event_id = 'evt_i1b'`)
	require.Equal(t, verify.StatusViolation, b.check(t).Get(verify.AckedSettled).Status)
	b.input.AllowFailed = true
	rep := b.check(t)
	require.True(t, rep.OK, table(t, rep))
	require.Contains(t, rep.Get(verify.AckedSettled).Note, "1 failed or exhausted row(s) counted as settled")
}

func TestWithoutTheBackfillDroppedFactsAreNotExpected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.input.BackfillRan = false
	b.exec(t, `DELETE FROM webhook_inbox WHERE event_id = 'evt_i2'`)
	b.exec(t, `DELETE FROM credit_grants WHERE invoice_id = 'in_2'`)
	b.exec(t, `DELETE FROM credit_adjustments WHERE invoice_id = 'in_2'`)
	b.exec(t, `DELETE FROM outbox WHERE operation_key LIKE '%in_2%'`)
	b.exec(t, `UPDATE workspaces SET credits_balance = 100`)
	b.input.Emails = b.input.Emails[:1]
	rep := b.check(t)
	require.True(t, rep.OK, table(t, rep))
	require.Equal(t, verify.StatusSkipped, rep.Get(verify.DroppedRecovered).Status)
	require.EqualValues(t, 1, rep.Get(verify.GrantPerInvoice).Expected)
	require.Contains(t, rep.Get(verify.GrantPerInvoice).Note, "1 paid invoice(s) whose events never reached")
}

func TestTheTruthAloneFromItsJSONIsEnough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, err := json.Marshal(b.input.Runs[0].Truth)
	require.NoError(t, err)
	var truth simulator.Truth
	require.NoError(t, json.Unmarshal(raw, &truth))
	b.input.Runs[0] = verify.Run{Truth: truth}
	rep := b.check(t)
	require.True(t, rep.OK, table(t, rep))
	require.Equal(t, verify.StatusSkipped, rep.Get(verify.ConflictsQuarantined).Status)
	require.EqualValues(t, 12, rep.Get(verify.AckedSettled).Expected,
		"invoice and credit note events (the dropped one aside), last snapshots, feedback, its comments and vote")

	// A lost event is still seen from the truth alone.
	b.exec(t, `DELETE FROM webhook_inbox WHERE event_id = 'evt_c2'`)
	rep = b.check(t)
	require.Equal(t, verify.StatusViolation, rep.Get(verify.AckedSettled).Status)
	require.Contains(t, rep.Get(verify.AckedSettled).Offenders[0], "evt_c2")
}

func TestSeveralRunsAddUpAndNameTheirOffenders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	second := b.input.Runs[0]
	second.Label = "again"
	b.input.Runs[0].Label = "first"
	b.input.Runs = append(b.input.Runs, second)
	b.exec(t, `UPDATE workspaces SET credits_balance = 0`)
	rep := b.check(t)
	res := rep.Get(verify.BalanceMatches)
	require.EqualValues(t, 300, res.Expected)
	require.Equal(t, 2, res.OffenderCount)
	require.Equal(t, "[first] workspace ws_t: balance 0, 2 grant(s) × 100 -50 adjusted = 150", res.Offenders[0])

	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var decoded struct {
		OK         bool `json:"ok"`
		Invariants []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"invariants"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &decoded))
	require.False(t, decoded.OK)
	require.Len(t, decoded.Invariants, len(verify.Names()))
}

func TestFetchTruthReadsWhatTheSimulatorServes(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Config{Seed: 3, Versions: true})
	inv, _, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	sub, _ := sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	truth, err := verify.FetchTruth(context.Background(), srv.Client(), srv.URL)
	require.NoError(t, err)
	require.Equal(t, sim.Truth().PaidInvoices, truth.PaidInvoices)
	require.Equal(t, inv.ID, truth.PaidInvoices[0].ID)
	require.Equal(t, sub.ID, truth.Subscriptions[0].ID)
	require.NotNil(t, truth.Subscriptions[0].Version)

	_, err = verify.FetchTruth(context.Background(), srv.Client(), srv.URL+"/nowhere")
	require.Error(t, err)
}

func TestGitHubIssueForwardsHoldsTheFinalStateOfACoalescingRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gh := b.input.GitHubIssues
	gh.Final = map[string]string{"org/repo#1": "2026-12-03T08:00:03Z", "org/repo#2": "2026-12-03T08:00:04Z"}
	gh.Current = map[string]string{"org/repo#1": "2026-12-03T08:00:03Z"}
	require.Equal(t, verify.StatusOK, b.check(t).Get(verify.GitHubIssueForwards).Status, "issue 2's current came before the upgrade")
	gh.EveryCurrent = true
	res := b.check(t).Get(verify.GitHubIssueForwards)
	require.Equal(t, verify.StatusViolation, res.Status)
	require.Contains(t, strings.Join(res.Offenders, "\n"), "org/repo#2: no document carried the issue's current state")
	stale(t, b)
	res = b.check(t).Get(verify.GitHubIssueForwards)
	require.Equal(t, verify.StatusViolation, res.Status)
	require.Contains(t, strings.Join(res.Offenders, "\n"),
		"org/repo#1: the receiver's last current is of 2026-12-03T08:00:02Z, the issue's final state of 2026-12-03T08:00:03Z")
}

// stale: the receiver's last document of issue 1 carried an older state.
func stale(t *testing.T, b *bundle) {
	gh := b.input.GitHubIssues
	gh.Final = map[string]string{"org/repo#1": "2026-12-03T08:00:03Z", "org/repo#2": "2026-12-03T08:00:04Z"}
	gh.Current = map[string]string{"org/repo#1": "2026-12-03T08:00:02Z", "org/repo#2": "2026-12-03T08:00:04Z"}
}

func TestGitHubIssueForwardsNamesTheLostAndTheTwiceApplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gh := b.input.GitHubIssues
	gh.Applied = append(gh.Applied[:3:3], ghApplied("g1"), ghApplied("g9"))
	rep := b.check(t)
	res := rep.Get(verify.GitHubIssueForwards)
	require.Equal(t, verify.StatusViolation, res.Status, table(t, rep))
	got := strings.Join(res.Offenders, "\n")
	require.Contains(t, got, "github/4242/test/g9 applied, but no issues event had that delivery id")
	require.Contains(t, got, "org/repo#1: delivery g1 applied 2 times")
	require.Contains(t, got, "org/repo#1: delivery g3 never applied at the receiver (route issues)")
}
