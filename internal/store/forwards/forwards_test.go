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
