package inbox_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// opsRow is one inbox row of the filter fixture.
type opsRow struct {
	provider, account, id, endpoint, kind, resource, status string
	age                                                     time.Duration
}

func insertOpsRow(t *testing.T, s *store.Store, ctx context.Context, r opsRow) keys.Event {
	t.Helper()
	sum := sha256.Sum256([]byte(r.id))
	ev := &inbox.InboxEvent{
		Key:          keys.Event{Provider: r.provider, Account: r.account, Environment: "test", EventID: r.id},
		EndpointSlug: r.endpoint, WorkspaceID: "ws_1", EventType: "invoice.paid",
		ResourceKind: r.kind, ResourceID: r.resource, Payload: []byte(`{"card":"4242"}`), BodySHA256: sum[:],
	}
	res, err := inbox.InsertInboxEvent(ctx, s.Pool, ev)
	require.NoError(t, err)
	require.Equal(t, inbox.Inserted, res.Outcome)
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET status = $2, received_at = now() - make_interval(secs => $3) WHERE id = $1`,
		res.ID, r.status, r.age.Seconds())
	require.NoError(t, err)
	return ev.Key
}

func eventIDs(evs []inbox.InboxSummary) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Key.EventID)
	}
	return out
}

func TestListInboxEventsFilters(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	for _, r := range []opsRow{
		{"stripe", "acct_1", "evt_a", "ep", "invoice", "in_1", keys.StatusPending, 3 * time.Hour},
		{"stripe", "acct_1", "evt_b", "ep", "subscription", "sub_1", keys.StatusDone, 30 * time.Minute},
		{"stripe", "acct_2", "evt_c", "ep", "invoice", "in_2", keys.StatusExhausted, 48 * time.Hour},
		{"github", "4242", "gh_1", "gh", "repository", "octo/hello", keys.StatusFailed, 10 * time.Minute},
		{"stripe", "acct_1", "evt_d", "ep", "invoice", "in_1", keys.StatusIgnored, time.Minute},
	} {
		insertOpsRow(t, s, ctx, r)
	}

	tests := []struct {
		name   string
		filter inbox.InboxFilter
		want   []string
	}{
		{"everything, newest first", inbox.InboxFilter{}, []string{"evt_d", "gh_1", "evt_b", "evt_a", "evt_c"}},
		{"statuses", inbox.InboxFilter{Statuses: []string{"exhausted", "failed"}}, []string{"gh_1", "evt_c"}},
		{"provider", inbox.InboxFilter{Provider: "github"}, []string{"gh_1"}},
		{"account", inbox.InboxFilter{Account: "acct_2"}, []string{"evt_c"}},
		{"resource kind/id", inbox.InboxFilter{Resource: "invoice/in_1"}, []string{"evt_d", "evt_a"}},
		{"resource id only", inbox.InboxFilter{Resource: "in_1"}, []string{"evt_d", "evt_a"}},
		{"resource id with a slash", inbox.InboxFilter{Resource: "octo/hello"}, []string{"gh_1"}},
		{"resource kind and id with a slash", inbox.InboxFilter{Resource: "repository/octo/hello"}, []string{"gh_1"}},
		{"resource of another kind", inbox.InboxFilter{Resource: "subscription/in_1"}, []string{}},
		{"endpoint", inbox.InboxFilter{Endpoint: "gh"}, []string{"gh_1"}},
		{"older than", inbox.InboxFilter{OlderThan: time.Hour}, []string{"evt_a", "evt_c"}},
		{"since", inbox.InboxFilter{Since: time.Hour}, []string{"evt_d", "gh_1", "evt_b"}},
		{"age window", inbox.InboxFilter{Since: 24 * time.Hour, OlderThan: time.Hour}, []string{"evt_a"}},
		{"combined", inbox.InboxFilter{Provider: "stripe", Statuses: []string{"pending"}}, []string{"evt_a"}},
		{"limit", inbox.InboxFilter{Limit: 2}, []string{"evt_d", "gh_1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.filter
			if f.Limit == 0 {
				f.Limit = 50
			}
			got, err := inbox.ListInboxEvents(ctx, s.Pool, f)
			require.NoError(t, err)
			require.Equal(t, tt.want, eventIDs(got))
		})
	}

	_, err := inbox.ListInboxEvents(ctx, s.Pool, inbox.InboxFilter{})
	require.Error(t, err, "a limit is required")
}

func TestInspectInboxEventReadsThePayloadOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	e := event("evt_p", `{"card":"4242 4242"}`)
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
	require.NoError(t, err)

	d, err := inbox.InspectInboxEvent(ctx, s.Pool, e.Key, false)
	require.NoError(t, err)
	require.Nil(t, d.Payload)
	require.Equal(t, len(e.Payload), d.PayloadBytes)
	require.False(t, d.PayloadRedacted)
	require.Equal(t, e.BodySHA256, d.BodySHA256)
	require.Equal(t, "in_1", d.ResourceID)

	d, err = inbox.InspectInboxEvent(ctx, s.Pool, e.Key, true)
	require.NoError(t, err)
	require.Equal(t, e.Payload, d.Payload)

	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET payload = NULL`)
	require.NoError(t, err)
	d, err = inbox.InspectInboxEvent(ctx, s.Pool, e.Key, true)
	require.NoError(t, err)
	require.True(t, d.PayloadRedacted)
	require.Nil(t, d.Payload)

	_, err = inbox.InspectInboxEvent(ctx, s.Pool, event("evt_missing", "").Key, false)
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// stoppedEvent inserts an event that failed three times and then stopped in status.
func stoppedEvent(t *testing.T, s *store.Store, ctx context.Context, id, status string) keys.Event {
	t.Helper()
	e := event(id, id)
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, inbox.RecordInboxFailure(ctx, s.Pool, e.Key, "provider 503", time.Now()))
	}
	changed, err := inbox.StopInboxEvent(ctx, s.Pool, e.Key, status, "provider 503 (budget spent)")
	require.NoError(t, err)
	require.True(t, changed)
	return e.Key
}

func TestReplayPutsFailedAndExhaustedBackToPendingAndAudits(t *testing.T) {
	t.Parallel()
	for _, status := range []string{keys.StatusExhausted, keys.StatusFailed} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			s, ctx := setup(t)
			k := stoppedEvent(t, s, ctx, "evt_"+status, status)

			res, err := inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: k, Actor: "alice", Reason: "provider recovered",
				Selection: "--status " + status})
			require.NoError(t, err)
			require.Equal(t, inbox.Replayed, res.Outcome)
			require.Equal(t, status, res.PreviousStatus)
			require.Equal(t, 3, res.PreviousAttempts)
			require.Equal(t, "provider 503 (budget spent)", res.PreviousLastError)
			require.Equal(t, keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}, res.Resource)

			got, err := inbox.GetInboxEvent(ctx, s.Pool, k)
			require.NoError(t, err)
			require.Equal(t, keys.StatusPending, got.Status)
			require.Zero(t, got.Attempts)
			require.Empty(t, got.LastError)
			require.Nil(t, got.ProcessedAt)
			require.WithinDuration(t, time.Now(), got.NextAttemptAt, time.Minute)

			// The workflow's own query finds it again: the same path as a first delivery.
			b, err := inbox.LoadPending(ctx, s.Pool, res.Resource, 10)
			require.NoError(t, err)
			require.Len(t, b.Events, 1)
			require.Equal(t, k, b.Events[0].Key)
			require.Zero(t, b.Events[0].Attempts)

			acts, err := store.ListOperatorActions(ctx, s.Pool, k.String(), 10)
			require.NoError(t, err)
			require.Len(t, acts, 1)
			a := acts[0]
			require.Equal(t, res.ActionID, a.ID)
			require.Equal(t, "alice", a.Actor)
			require.Equal(t, inbox.ActionReplay, a.Action)
			require.Equal(t, k.String(), a.Target)
			require.Equal(t, "provider recovered", a.Reason)
			require.Equal(t, status, a.Details["previous_status"])
			require.EqualValues(t, 3, a.Details["previous_attempts"])
			require.Equal(t, "provider 503 (budget spent)", a.Details["previous_last_error"])
			require.Equal(t, "--status "+status, a.Details["selection"])
			require.Equal(t, false, a.Details["force"])
			require.WithinDuration(t, time.Now(), a.At, time.Minute)
		})
	}
}

func TestReplayOfAFinishedEventNeedsForce(t *testing.T) {
	t.Parallel()
	for _, status := range []string{keys.StatusDone, keys.StatusIgnored} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			s, ctx := setup(t)
			e := event("evt_fin", "x")
			_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
			require.NoError(t, err)
			_, err = inbox.CompleteInboxEvent(ctx, s.Pool, e.Key, status, "granted")
			require.NoError(t, err)

			_, err = inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: e.Key, Actor: "bob", Reason: "check"})
			var refused *inbox.ReplayRefusedError
			require.ErrorAs(t, err, &refused)
			require.Equal(t, status, refused.Status)
			require.Contains(t, err.Error(), "no-op")
			require.Contains(t, err.Error(), "--force")
			got, err := inbox.GetInboxEvent(ctx, s.Pool, e.Key)
			require.NoError(t, err)
			require.Equal(t, status, got.Status, "a refused replay changes nothing")
			acts, err := store.ListOperatorActions(ctx, s.Pool, e.Key.String(), 10)
			require.NoError(t, err)
			require.Empty(t, acts, "a refused replay is not recorded as done")

			res, err := inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: e.Key, Actor: "bob", Reason: "reprocess after fix", Force: true})
			require.NoError(t, err)
			require.Equal(t, inbox.Replayed, res.Outcome)
			got, err = inbox.GetInboxEvent(ctx, s.Pool, e.Key)
			require.NoError(t, err)
			require.Equal(t, keys.StatusPending, got.Status)
			acts, err = store.ListOperatorActions(ctx, s.Pool, e.Key.String(), 10)
			require.NoError(t, err)
			require.Len(t, acts, 1)
			require.Equal(t, true, acts[0].Details["force"])
			require.Equal(t, status, acts[0].Details["previous_status"])
			require.Equal(t, "granted", acts[0].Details["previous_note"], "what the first handling did is kept")
			require.NotEmpty(t, acts[0].Details["previous_processed_at"])
		})
	}
}

func TestReplayLeavesAPendingEventAlone(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	e := event("evt_pend", "x")
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
	require.NoError(t, err)
	next := time.Now().Add(time.Hour)
	require.NoError(t, inbox.RecordInboxFailure(ctx, s.Pool, e.Key, "retrying", next))

	res, err := inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: e.Key, Actor: "bob", Reason: "why not", Force: true})
	require.NoError(t, err)
	require.Equal(t, inbox.AlreadyPending, res.Outcome)
	got, err := inbox.GetInboxEvent(ctx, s.Pool, e.Key)
	require.NoError(t, err)
	require.Equal(t, 1, got.Attempts, "its retry budget is not reset behind the workflow's back")
	require.WithinDuration(t, next, got.NextAttemptAt, time.Second)

	_, err = inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: event("evt_none", "").Key, Actor: "bob", Reason: "x"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = inbox.ReplayInboxEvent(ctx, s, inbox.ReplayRequest{Key: e.Key, Actor: "bob", Reason: "  "})
	require.Error(t, err, "why is required")
}

func addQuarantine(t *testing.T, s *store.Store, ctx context.Context, slug, eventID, reason string) int64 {
	t.Helper()
	body := []byte(`{"id":"` + eventID + `","card":"4242"}`)
	sum := sha256.Sum256(body)
	added, err := inbox.InsertQuarantine(ctx, s.Pool, &inbox.QuarantineEntry{EndpointSlug: slug, Provider: "stripe",
		Account: "acct_9", Environment: "test", EventID: eventID, Reason: reason, Detail: reason + " detail",
		Payload: body, BodySHA256: sum[:], Headers: map[string]string{"Content-Type": "application/json"}})
	require.NoError(t, err)
	require.True(t, added)
	var id int64
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT id FROM inbox_quarantine WHERE event_id = $1`, eventID).Scan(&id))
	return id
}

func quarantineIDs(qs []inbox.QuarantineItem) []int64 {
	out := []int64{}
	for _, q := range qs {
		out = append(out, q.ID)
	}
	return out
}

func TestQuarantineListShowAndDiscard(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	a := addQuarantine(t, s, ctx, "ep", "evt_q1", inbox.ReasonUnknownAccount)
	b := addQuarantine(t, s, ctx, "ep", "evt_q2", inbox.ReasonMalformed)
	c := addQuarantine(t, s, ctx, "other", "evt_q3", inbox.ReasonUnknownAccount)

	list := func(f inbox.QuarantineFilter) []int64 {
		t.Helper()
		f.Limit = 50
		qs, err := inbox.ListQuarantine(ctx, s.Pool, f)
		require.NoError(t, err)
		for _, q := range qs {
			require.Nil(t, q.Payload, "listings never read payloads")
		}
		return quarantineIDs(qs)
	}
	require.Equal(t, []int64{c, b, a}, list(inbox.QuarantineFilter{OpenOnly: true}))
	require.Equal(t, []int64{c, a}, list(inbox.QuarantineFilter{Reason: inbox.ReasonUnknownAccount}))
	require.Equal(t, []int64{b, a}, list(inbox.QuarantineFilter{Endpoint: "ep"}))

	q, err := inbox.GetQuarantineEntry(ctx, s.Pool, a, false)
	require.NoError(t, err)
	require.Nil(t, q.Payload)
	require.Equal(t, len(`{"id":"evt_q1","card":"4242"}`), q.PayloadBytes)
	require.Equal(t, map[string]string{"Content-Type": "application/json"}, q.Headers)
	require.Equal(t, "unknown_account detail", q.Detail)
	require.NoError(t, q.CheckOpen())
	q, err = inbox.GetQuarantineEntry(ctx, s.Pool, a, true)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"evt_q1","card":"4242"}`, string(q.Payload))

	act, err := inbox.DiscardQuarantine(ctx, s, a, "carol", "test traffic")
	require.NoError(t, err)
	require.Equal(t, inbox.ActionQuarantineDiscard, act.Action)
	require.Equal(t, "stripe/acct_9/test/evt_q1", act.EventKey)

	q, err = inbox.GetQuarantineEntry(ctx, s.Pool, a, false)
	require.NoError(t, err)
	require.NotNil(t, q.ResolvedAt)
	require.Equal(t, "carol", q.ResolvedBy)
	require.Equal(t, "discarded: test traffic", q.Resolution)
	var resolved *inbox.AlreadyResolvedError
	require.ErrorAs(t, q.CheckOpen(), &resolved)

	require.Equal(t, []int64{c, b}, list(inbox.QuarantineFilter{OpenOnly: true}), "open only leaves the resolved one out")
	require.Equal(t, []int64{c, b, a}, list(inbox.QuarantineFilter{}))

	_, err = inbox.DiscardQuarantine(ctx, s, a, "dave", "again")
	require.ErrorAs(t, err, &resolved)
	require.Equal(t, "carol", resolved.By)
	_, err = inbox.DiscardQuarantine(ctx, s, 999999, "dave", "missing")
	require.ErrorIs(t, err, fault.ErrNotFound)

	acts, err := store.ListOperatorActions(ctx, s.Pool, inbox.QuarantineTarget(a), 10)
	require.NoError(t, err)
	require.Len(t, acts, 1, "the refused second discard is not audited")
	require.Equal(t, "carol", acts[0].Actor)
	require.Equal(t, inbox.ReasonUnknownAccount, acts[0].Details["quarantine_reason"])
	// The entry's event key finds the action too (inbox show of that key).
	acts, err = store.ListOperatorActions(ctx, s.Pool, "stripe/acct_9/test/evt_q1", 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
}

func TestOperatorActionsNeedWhoAndWhy(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	for _, a := range []store.OperatorAction{
		{Actor: "", Action: "replay", Target: "x", Reason: "r"},
		{Actor: "a", Action: "replay", Target: "x", Reason: " "},
	} {
		_, err := store.InsertOperatorAction(ctx, s.Pool, &a)
		require.Error(t, err)
	}
	// The table refuses them too, whatever the caller.
	_, err := s.Pool.Exec(ctx, `INSERT INTO operator_actions (actor, action, target, reason) VALUES ('a', 'replay', 'x', '  ')`)
	require.Error(t, err)
	_, err = s.Pool.Exec(ctx, `INSERT INTO operator_actions (actor, action, target, reason) VALUES ('a', 'Bad Action', 'x', 'r')`)
	require.Error(t, err)

	id, err := store.InsertOperatorAction(ctx, s.Pool, &store.OperatorAction{Actor: "a", Action: "reconcile_trigger", Target: "x", Reason: "r"})
	require.NoError(t, err)
	require.NotZero(t, id)
	acts, err := store.ListOperatorActions(ctx, s.Pool, "x", 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "reconcile_trigger", acts[0].Action)
}
