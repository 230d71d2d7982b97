package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/storetest"
)

func setup(t *testing.T) (*store.Store, context.Context) { return storetest.Setup(t) }

func event(id, body string) *inbox.InboxEvent { return storetest.Event(id, body) }

func TestInsertInboxEventSettlesRacesWithTheConstraint(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)

	// F1: the same event delivered concurrently yields one row.
	const n = 16
	results := make([]inbox.InsertOutcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := inbox.InsertInboxEvent(ctx, s.Pool, event("evt_1", `{"a":1}`))
			require.NoError(t, err)
			results[i] = r.Outcome
		}()
	}
	wg.Wait()
	inserted := 0
	for _, r := range results {
		if r == inbox.Inserted {
			inserted++
		} else {
			require.Equal(t, inbox.Duplicate, r)
		}
	}
	require.Equal(t, 1, inserted)
	var rows int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox`).Scan(&rows))
	require.Equal(t, 1, rows)

	// Same key, other body: a conflict, original untouched.
	r, err := inbox.InsertInboxEvent(ctx, s.Pool, event("evt_1", `{"a":2}`))
	require.NoError(t, err)
	require.Equal(t, inbox.Conflict, r.Outcome)
	got, err := inbox.GetInboxEvent(ctx, s.Pool, event("evt_1", "").Key)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(got.Payload))
	require.Equal(t, keys.StatusPending, got.Status)
}

func TestCompletionIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	e := event("evt_2", `{}`)
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
	require.NoError(t, err)

	changed, err := inbox.CompleteInboxEvent(ctx, s.Pool, e.Key, keys.StatusDone, "")
	require.NoError(t, err)
	require.True(t, changed)

	// A late retry's bookkeeping must not touch the done row.
	require.NoError(t, inbox.RecordInboxFailure(ctx, s.Pool, e.Key, "late", time.Now().Add(time.Hour)))
	changed, err = inbox.StopInboxEvent(ctx, s.Pool, e.Key, keys.StatusExhausted, "late")
	require.NoError(t, err)
	require.False(t, changed)
	changed, err = inbox.CompleteInboxEvent(ctx, s.Pool, e.Key, keys.StatusIgnored, "late")
	require.NoError(t, err)
	require.False(t, changed)

	got, err := inbox.GetInboxEvent(ctx, s.Pool, e.Key)
	require.NoError(t, err)
	require.Equal(t, keys.StatusDone, got.Status)
	require.Equal(t, 1, got.Attempts)
	require.Empty(t, got.LastError)
}

func TestLoadPendingOrderAndDueTimes(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	for _, id := range []string{"evt_a", "evt_b", "evt_c"} {
		_, err := inbox.InsertInboxEvent(ctx, s.Pool, event(id, id))
		require.NoError(t, err)
	}
	res := event("x", "").Resource()

	b, err := inbox.LoadPending(ctx, s.Pool, res, 2)
	require.NoError(t, err)
	require.True(t, b.More)
	require.Equal(t, []string{"evt_a", "evt_b"}, []string{b.Events[0].Key.EventID, b.Events[1].Key.EventID})

	// evt_a waits for a retry: not due, but reported as next due.
	next := time.Now().Add(time.Hour)
	require.NoError(t, inbox.RecordInboxFailure(ctx, s.Pool, event("evt_a", "").Key, "boom", next))
	_, err = inbox.CompleteInboxEvent(ctx, s.Pool, event("evt_b", "").Key, keys.StatusDone, "")
	require.NoError(t, err)
	b, err = inbox.LoadPending(ctx, s.Pool, res, 10)
	require.NoError(t, err)
	require.False(t, b.More)
	require.Len(t, b.Events, 1)
	require.Equal(t, "evt_c", b.Events[0].Key.EventID)
	require.NotNil(t, b.NextDue)
	require.WithinDuration(t, next, *b.NextDue, time.Second)
}

func TestStalePendingResources(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, event("evt_old", "1"))
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET next_attempt_at = now() - interval '10 minutes'`)
	require.NoError(t, err)
	fresh := event("evt_new", "2")
	fresh.ResourceID = "in_2"
	_, err = inbox.InsertInboxEvent(ctx, s.Pool, fresh)
	require.NoError(t, err)

	got, err := inbox.StalePendingResources(ctx, s.Pool, time.Minute, 100)
	require.NoError(t, err)
	require.Equal(t, []keys.Resource{event("x", "").Resource()}, got)

	// Rung once: not again on the next sweeps, but still due for its
	// workflow.
	got, err = inbox.StalePendingResources(ctx, s.Pool, time.Minute, 100)
	require.NoError(t, err)
	require.Empty(t, got)
	b, err := inbox.LoadPending(ctx, s.Pool, event("x", "").Resource(), 10)
	require.NoError(t, err)
	require.Len(t, b.Events, 1)

	// Backoff per row: the second ring waits 4 × olderThan after the first,
	// the third 16 ×.
	for _, tt := range []struct {
		ago  string
		rung bool
	}{{"3 minutes", false}, {"5 minutes", true}, {"10 minutes", false}, {"17 minutes", true}} {
		_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET swept_at = now() - $1::interval WHERE event_id = 'evt_old'`, tt.ago)
		require.NoError(t, err)
		got, err = inbox.StalePendingResources(ctx, s.Pool, time.Minute, 100)
		require.NoError(t, err)
		require.Equal(t, tt.rung, len(got) == 1, "last rung %s ago", tt.ago)
	}
	var sweeps int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT sweeps FROM webhook_inbox WHERE event_id = 'evt_old'`).Scan(&sweeps))
	require.Equal(t, 3, sweeps)
}

// The rows the sweeper's backoff holds back (rung before, their next ring
// still far) are listed for a probe once their last ring or probe is older
// than probeEvery, least recently looked at first, whatever their sweep
// count; listing them records the look (swept_at) and leaves the count.
// Rows never rung, rows rung just now and rows not yet due are not listed.
func TestHeldPendingResourcesListsRowsTheBackoffHoldsForAProbe(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	rows := map[string]string{ // event id → its resource
		"evt_held": "in_held", "evt_held_older": "in_older", "evt_fresh": "in_fresh", "evt_just_rung": "in_rung", "evt_later": "in_later"}
	for id, res := range rows {
		e := event(id, id)
		e.ResourceID = res
		_, err := inbox.InsertInboxEvent(ctx, s.Pool, e)
		require.NoError(t, err)
	}
	_, err := s.Pool.Exec(ctx, `UPDATE webhook_inbox SET next_attempt_at = now() - interval '2 hours',
		sweeps = CASE event_id WHEN 'evt_fresh' THEN 0 ELSE 5 END,
		swept_at = CASE event_id WHEN 'evt_fresh' THEN NULL WHEN 'evt_just_rung' THEN now() - interval '5 seconds'
		                         WHEN 'evt_held_older' THEN now() - interval '3 minutes' ELSE now() - interval '2 minutes' END`)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET next_attempt_at = now() + interval '1 hour' WHERE event_id = 'evt_later'`)
	require.NoError(t, err)
	resource := func(id string) keys.Resource {
		r := event("x", "").Resource()
		r.ID = id
		return r
	}

	got, err := inbox.HeldPendingResources(ctx, s.Pool, time.Minute, 30*time.Second, 100)
	require.NoError(t, err)
	require.Equal(t, []keys.Resource{resource("in_older"), resource("in_held")}, got, "least recently looked at first")
	got, err = inbox.HeldPendingResources(ctx, s.Pool, time.Minute, 30*time.Second, 100)
	require.NoError(t, err)
	require.Empty(t, got, "looked at just now")
	var sweeps int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT sweeps FROM webhook_inbox WHERE event_id = 'evt_held'`).Scan(&sweeps))
	require.Equal(t, 5, sweeps, "a probe is not a ring: the count keeps its backoff")

	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET swept_at = now() - interval '31 seconds' WHERE event_id = 'evt_held'`)
	require.NoError(t, err)
	got, err = inbox.HeldPendingResources(ctx, s.Pool, time.Minute, 30*time.Second, 1)
	require.NoError(t, err)
	require.Equal(t, []keys.Resource{resource("in_held")}, got, "again once probeEvery has passed")

	// The never-rung row is the ring's, not the probe's.
	stale, err := inbox.StalePendingResources(ctx, s.Pool, time.Minute, 100)
	require.NoError(t, err)
	require.Equal(t, []keys.Resource{resource("in_fresh")}, stale)
}

// Waking a resource makes its waiting rows due now and resets their
// sweeper backoff (a row rung five times would otherwise wait 4^5 sweep
// intervals for its next ring); rows already due and held back by the
// backoff get theirs reset too. Final rows and other resources are left
// alone.
func TestWakeResourceMakesWaitingRowsDueAndResetsTheirSweeperBackoff(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	for _, id := range []string{"evt_waits", "evt_due", "evt_done", "evt_fresh"} {
		_, err := inbox.InsertInboxEvent(ctx, s.Pool, event(id, id))
		require.NoError(t, err)
	}
	other := event("evt_other", "other")
	other.ResourceID = "in_2"
	_, err := inbox.InsertInboxEvent(ctx, s.Pool, other)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET sweeps = 5, swept_at = now() - interval '1 minute',
		next_attempt_at = CASE WHEN event_id = 'evt_due' THEN now() - interval '1 hour' ELSE now() + interval '1 hour' END
		WHERE event_id <> 'evt_fresh'`)
	require.NoError(t, err)
	_, err = inbox.CompleteInboxEvent(ctx, s.Pool, event("evt_done", "").Key, keys.StatusDone, "")
	require.NoError(t, err)

	n, err := inbox.WakeResource(ctx, s.Pool, event("x", "").Resource())
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the waiting row and the due row held back by its backoff")
	type row struct {
		due    bool
		sweeps int
		swept  bool
	}
	read := func(id string) row {
		var r row
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT next_attempt_at <= now(), sweeps, swept_at IS NOT NULL
			FROM webhook_inbox WHERE event_id = $1`, id).Scan(&r.due, &r.sweeps, &r.swept))
		return r
	}
	require.Equal(t, row{due: true}, read("evt_waits"))
	require.Equal(t, row{due: true}, read("evt_due"))
	require.Equal(t, row{due: true}, read("evt_fresh"))
	require.Equal(t, row{due: false, sweeps: 5, swept: true}, read("evt_done"), "a final row is left alone")
	require.Equal(t, row{due: false, sweeps: 5, swept: true}, read("evt_other"), "another resource is left alone")
	b, err := inbox.LoadPending(ctx, s.Pool, event("x", "").Resource(), 10)
	require.NoError(t, err)
	require.Len(t, b.Events, 3)

	n, err = inbox.WakeResource(ctx, s.Pool, event("x", "").Resource())
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to wake")
}

func TestQuarantineStoresARetriedDeliveryOnce(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	q := &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe", Reason: inbox.ReasonMalformed,
		Detail: "invalid JSON", Payload: []byte("{"), BodySHA256: []byte{1, 2}}
	added, err := inbox.InsertQuarantine(ctx, s.Pool, q)
	require.NoError(t, err)
	require.True(t, added)
	added, err = inbox.InsertQuarantine(ctx, s.Pool, q) // no event id: NULLS NOT DISTINCT
	require.NoError(t, err)
	require.False(t, added)
}
