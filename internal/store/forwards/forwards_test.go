package forwards_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/storetest"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// RequeueIgnored puts back exactly the rows an intake recorded ignored for
// want of a route since the route applies, in id order: not a row received
// before, not a row a handler took or read and ignored (a second effect
// with --replace-handler), not another type, not a row without a resource.
func TestRequeueIgnoredTakesOnlyRowsIgnoredForWantOfARouteSinceItApplies(t *testing.T) {
	t.Parallel()
	s, ctx := storetest.Setup(t)
	ignored := func(id, typ string) *inbox.InboxEvent {
		ev := storetest.Event(id, `{"id":"`+id+`"}`)
		ev.EventType, ev.Status, ev.LastError = typ, keys.StatusIgnored, "no handler for stripe event type "+typ
		return ev
	}
	insert := func(ev *inbox.InboxEvent) {
		_, err := inbox.InsertInboxEvent(ctx, s.Pool, ev)
		require.NoError(t, err)
	}
	insert(ignored("evt_before", "customer.updated"))
	var since time.Time
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&since))
	insert(ignored("evt_a", "customer.updated"))
	insert(ignored("evt_b", "customer.created"))
	insert(ignored("evt_other", "charge.updated"))
	read := ignored("evt_read", "customer.updated")
	read.LastError = "the handler read it and ignored it"
	insert(read)
	taken := storetest.Event("evt_taken", `{"id":"evt_taken"}`)
	taken.EventType = "customer.updated"
	insert(taken) // pending: a handler takes it
	orphan := ignored("evt_orphan", "customer.deleted")
	orphan.ResourceKind, orphan.ResourceID = "event", "evt_orphan"
	insert(orphan)

	got, err := forwards.RequeueIgnored(ctx, s.Pool, "stripe", "customer.*", since)
	require.NoError(t, err)
	var ids []string
	for _, q := range got {
		ids = append(ids, q.Key.EventID)
		require.Equal(t, keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}, q.Resource)
	}
	require.Equal(t, []string{"evt_a", "evt_b"}, ids, "in id order, only those ignored for want of a route since it applies")
	for id, want := range map[string]string{"evt_before": keys.StatusIgnored, "evt_a": keys.StatusPending, "evt_b": keys.StatusPending,
		"evt_other": keys.StatusIgnored, "evt_read": keys.StatusIgnored, "evt_orphan": keys.StatusIgnored} {
		ev, err := inbox.GetInboxEvent(ctx, s.Pool, keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id})
		require.NoError(t, err)
		require.Equal(t, want, ev.Status, id)
		if want == keys.StatusPending {
			require.Empty(t, ev.LastError, id)
		}
	}
	again, err := forwards.RequeueIgnored(ctx, s.Pool, "stripe", "customer.*", since)
	require.NoError(t, err)
	require.Empty(t, again, "a row is re-queued once")
	exact, err := forwards.RequeueIgnored(ctx, s.Pool, "stripe", "charge.updated", since)
	require.NoError(t, err)
	require.Len(t, exact, 1, "an exact type")
}

// CompleteCovered completes, in one statement, the covered events still
// pending, each with its one coalesced attempt naming the covering send,
// and leaves one completed meanwhile (replayed and handled) as it was.
func TestCompleteCoveredCompletesOnlyThePendingOnesWithTheirAttempt(t *testing.T) {
	t.Parallel()
	s, ctx := storetest.Setup(t)
	key := func(id string) keys.Event {
		return keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id}
	}
	for _, id := range []string{"evt_head", "evt_1", "evt_2", "evt_3"} {
		_, err := inbox.InsertInboxEvent(ctx, s.Pool, storetest.Event(id, `{"id":"`+id+`"}`))
		require.NoError(t, err)
	}
	done, err := inbox.CompleteInboxEvent(ctx, s.Pool, key("evt_2"), keys.StatusDone, "handled on its own")
	require.NoError(t, err)
	require.True(t, done)

	got, err := forwards.CompleteCovered(ctx, s.Pool, "subs", "forward/subs/coalesced/x/evt_3", key("evt_head"),
		[]keys.Event{key("evt_1"), key("evt_2"), key("evt_3")}, 200, 12*time.Millisecond)
	require.NoError(t, err)
	require.ElementsMatch(t, []keys.Event{key("evt_1"), key("evt_3")}, got)
	for id, want := range map[string]string{"evt_1": "coalesced into forward/subs/coalesced/x/evt_3", "evt_2": "handled on its own",
		"evt_3": "coalesced into forward/subs/coalesced/x/evt_3"} {
		var status, note string
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status, coalesce(note, '') FROM webhook_inbox WHERE event_id = $1`, id).Scan(&status, &note))
		require.Equal(t, keys.StatusDone, status, id)
		require.Equal(t, want, note, id)
	}
	as, err := forwards.AttemptsFor(ctx, s.Pool, []keys.Event{key("evt_1"), key("evt_2"), key("evt_3")})
	require.NoError(t, err)
	require.Len(t, as, 2, "an attempt for each event the send completed, none for the one handled meanwhile")
	for _, a := range as {
		require.Equal(t, forwards.OutcomeCoalesced, a.Outcome)
		require.Equal(t, "subs", a.Route)
		require.Equal(t, 200, a.StatusCode)
		require.Equal(t, key("evt_head").String(), a.CoveredBy)
		require.Equal(t, "forward/subs/coalesced/x/evt_3", a.OperationKey)
	}
	none, err := forwards.CompleteCovered(ctx, s.Pool, "subs", "k", key("evt_head"), nil, 200, 0)
	require.NoError(t, err)
	require.Empty(t, none)
}
