package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// trendRow is one row of console_trends as read back.
type trendRow struct {
	handled                                int64
	sampled                                bool
	pending, exhausted, failed, quarantine *int64
	unsent, held, outboxFailed             *int64
}

func readTrendRows(t *testing.T, s *store.Store) map[time.Time]trendRow {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), `SELECT minute, handled, sampled_at IS NOT NULL, pending, exhausted, failed,
		quarantine_open, outbox_unsent, outbox_held, outbox_failed FROM console_trends`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[time.Time]trendRow{}
	for rows.Next() {
		var m time.Time
		var r trendRow
		require.NoError(t, rows.Scan(&m, &r.handled, &r.sampled, &r.pending, &r.exhausted, &r.failed, &r.quarantine,
			&r.unsent, &r.held, &r.outboxFailed))
		out[m.UTC()] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// dbMinute is the database's current minute (UTC) minus back minutes.
func dbMinute(t *testing.T, s *store.Store, back int) time.Time {
	t.Helper()
	var m time.Time
	require.NoError(t, s.Pool.QueryRow(context.Background(), `SELECT date_bin('1 minute', now(), timestamptz '2000-01-01 00:00:00+00')
		- make_interval(mins => $1)`, back).Scan(&m))
	return m.UTC()
}

func ptr(v int64) *int64 { return &v }

// A sample writes this minute's levels (pending, exhausted, failed, open
// quarantine, the outbox still to send, held and failed) and counts the
// rows processed in each minute since the last sample: the last sampled
// minute is counted again (it was still running), the minutes between get
// their count and no levels (a gap), and the last sampled minute keeps its
// levels.
func TestATrendSampleRecordsTheLevelsAndCountsEachMinutesHandledRows(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	for i, st := range []string{keys.StatusPending, keys.StatusPending, keys.StatusExhausted, keys.StatusFailed, keys.StatusDone, keys.StatusDone, keys.StatusDone} {
		insertOpsRow(t, s, ctx, opsRow{provider: "stripe", account: "acct_1", id: "evt_" + string(rune('a'+i)), endpoint: "e",
			kind: "invoice", resource: "in_1", status: st})
	}
	m3 := dbMinute(t, s, 3)
	// Two rows done in minute m3 (+5s, +50s), one in m3+1 (+5s); the
	// exhausted and failed rows long ago, before the window.
	_, err := s.Pool.Exec(ctx, `UPDATE webhook_inbox SET processed_at = CASE event_id
		WHEN 'evt_e' THEN $1::timestamptz + interval '5 seconds' WHEN 'evt_f' THEN $1::timestamptz + interval '50 seconds'
		WHEN 'evt_g' THEN $1::timestamptz + interval '65 seconds' ELSE now() - interval '3 days' END
		WHERE status <> 'pending'`, m3)
	require.NoError(t, err)
	for _, sql := range []string{
		`INSERT INTO inbox_quarantine (endpoint_slug, provider, event_id, reason, body_sha256, resolved_at)
		 VALUES ('e', 'stripe', 'q1', 'unknown_account', '\x01', NULL), ('e', 'stripe', 'q2', 'unknown_account', '\x02', now())`,
		`INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload, status)
		 VALUES ('o1', 'c', 'email', 'd', 'ws_1', 'r', '{}', 'pending'), ('o2', 'c', 'email', 'd', 'ws_1', 'r', '{}', 'uncertain'),
		        ('o3', 'c', 'email', 'd', 'ws_1', 'r', '{}', 'held_for_review'), ('o4', 'c', 'email', 'd', 'ws_1', 'r', '{}', 'failed'),
		        ('o5', 'c', 'email', 'd', 'ws_1', 'r', '{}', 'sent')`,
	} {
		_, err = s.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	// The last sample was in minute m3, when one of its rows was done; a
	// minute older than the retention is deleted by the sample.
	_, err = s.Pool.Exec(ctx, `INSERT INTO console_trends (minute, handled, sampled_at, pending, exhausted, failed, quarantine_open,
		outbox_unsent, outbox_held, outbox_failed)
		VALUES ($1, 1, $1::timestamptz + interval '20 seconds', 9, 9, 9, 9, 9, 9, 9), ($1::timestamptz - interval '3 days', 4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, m3)
	require.NoError(t, err)

	require.NoError(t, inbox.RecordTrendSample(ctx, s.Pool))
	now := dbMinute(t, s, 0) // the sample's minute (or, past a minute's end, the next)
	got := readTrendRows(t, s)

	require.Equal(t, trendRow{handled: 2, sampled: true, pending: ptr(9), exhausted: ptr(9), failed: ptr(9), quarantine: ptr(9),
		unsent: ptr(9), held: ptr(9), outboxFailed: ptr(9)}, got[m3], "counted again in full, its levels kept")
	require.Equal(t, trendRow{handled: 1}, got[m3.Add(time.Minute)], "a minute no sweep sampled: its count, no levels")
	require.Equal(t, trendRow{handled: 0}, got[m3.Add(2*time.Minute)])
	var last time.Time
	for m, r := range got {
		if r.sampled && m.After(last) {
			last = m
		}
	}
	require.True(t, !last.Before(m3.Add(3*time.Minute)) && !last.After(now), "this minute is sampled (%s)", last)
	require.Equal(t, trendRow{handled: 0, sampled: true, pending: ptr(2), exhausted: ptr(1), failed: ptr(1), quarantine: ptr(1),
		unsent: ptr(2), held: ptr(1), outboxFailed: ptr(1)}, got[last])
	for m := range got {
		require.False(t, m.Before(m3), "minutes past the retention are gone (%s)", m)
		require.False(t, m.After(last), "nothing after the sample's minute (%s)", m)
	}
	require.Len(t, got, int(last.Sub(m3)/time.Minute)+1, "every minute from the last sample to this one, once")

	// Sampled again: the two pending rows done, one more exhausted. In the
	// same minute the row keeps each level's highest sample (2 pending
	// before, 0 now; 1 exhausted before, 2 now); past a minute's end the
	// new minute has today's levels. Either way the rows just done are
	// counted in the minute they were done in, and the minutes before the
	// last sampled one stay as they were.
	_, err = s.Pool.Exec(ctx, `UPDATE webhook_inbox SET status = CASE WHEN event_id = 'evt_a' THEN 'done' ELSE 'exhausted' END,
		processed_at = now() WHERE status = 'pending'`)
	require.NoError(t, err)
	require.NoError(t, inbox.RecordTrendSample(ctx, s.Pool))
	again := readTrendRows(t, s)
	var latest time.Time
	for m, r := range again {
		if r.sampled && m.After(latest) {
			latest = m
		}
	}
	if latest.Equal(last) {
		require.EqualValues(t, 2, *again[latest].pending, "the minute's highest pending")
	} else {
		require.EqualValues(t, 0, *again[latest].pending, "a new minute: the levels of now")
	}
	require.EqualValues(t, 2, *again[latest].exhausted)
	var handledSince int64
	for m, r := range again {
		if !m.Before(last) {
			handledSince += r.handled
		}
	}
	require.EqualValues(t, 2, handledSince, "the two rows just done, in the minute they were done in")
	require.Equal(t, got[m3], again[m3], "a minute before the last sampled one is left as it was")
}

// After a long stop the sample counts back a day at most, the longest
// window read.
func TestATrendSampleAfterALongStopCountsADayBack(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	_, err := s.Pool.Exec(ctx, `INSERT INTO console_trends (minute, handled, sampled_at, pending)
		VALUES (date_bin('1 minute', now() - interval '30 hours', timestamptz '2000-01-01 00:00:00+00'), 1, now() - interval '30 hours', 5)`)
	require.NoError(t, err)
	require.NoError(t, inbox.RecordTrendSample(ctx, s.Pool))
	var n int
	var oldest, newest time.Time
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*), min(minute), max(minute) FROM console_trends
		WHERE minute > now() - interval '25 hours'`).Scan(&n, &oldest, &newest))
	require.Equal(t, 24*60+1, n, "a day of minutes and this one")
	require.Equal(t, 24*time.Hour, newest.Sub(oldest))
	var kept int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM console_trends WHERE minute < now() - interval '29 hours'`).Scan(&kept))
	require.Equal(t, 1, kept, "the old sample stays until its retention")
}

// ReadTrends gives every bucket of the window, oldest first, the one
// holding now last: a bucket's levels are its highest sample, its handled
// count the sum of its minutes; a bucket with nothing recorded is all nil.
func TestReadTrendsBucketsTheMinutes(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	var b15 time.Time // the start of the 15-minute bucket two before the current one
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT date_bin('15 minutes', now(), timestamptz '2000-01-01 00:00:00+00') - interval '30 minutes'`).Scan(&b15))
	b15 = b15.UTC()
	_, err := s.Pool.Exec(ctx, `INSERT INTO console_trends (minute, handled, sampled_at, pending, exhausted, failed, quarantine_open, outbox_unsent, outbox_held, outbox_failed)
		VALUES ($1, 10, $1, 3, 1, 0, 2, 0, 0, 0),
		       ($1::timestamptz + interval '1 minute', 20, $1::timestamptz + interval '1 minute', 7, 1, 0, 2, 4, 0, 0),
		       ($1::timestamptz + interval '2 minutes', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		       ($1::timestamptz + interval '3 minutes', 30, $1::timestamptz + interval '3 minutes', 5, 2, 1, 0, 1, 1, 1)`, b15)
	require.NoError(t, err)

	before := dbMinute(t, s, 0)
	day, err := inbox.ReadTrends(ctx, s.Pool, 24*time.Hour, 15*time.Minute)
	require.NoError(t, err)
	require.Len(t, day, 96)
	for i := 1; i < len(day); i++ {
		require.Equal(t, 15*time.Minute, day[i].Start.Sub(day[i-1].Start))
	}
	last := day[len(day)-1].Start
	require.False(t, last.After(before), "the last bucket holds now")
	require.True(t, last.Add(15*time.Minute).After(before))
	var got *inbox.TrendBucket
	for i := range day {
		if day[i].Start.Equal(b15) {
			got = &day[i]
		}
	}
	require.NotNil(t, got, "the bucket of %s is in the window", b15)
	require.Equal(t, inbox.TrendBucket{Start: b15, Minutes: 4, Samples: 3, Handled: ptr(60), Pending: ptr(7), Exhausted: ptr(2),
		Failed: ptr(1), QuarantineOpen: ptr(2), OutboxUnsent: ptr(4), OutboxHeld: ptr(1), OutboxFailed: ptr(1)}, *got)
	require.Equal(t, inbox.TrendBucket{Start: b15.Add(15 * time.Minute)}, day[indexOf(day, b15)+1], "nothing recorded: all nil")

	// By minute over the hour: the window's 60 minutes; a minute with a
	// count and no sample has its count and nil levels.
	hour, err := inbox.ReadTrends(ctx, s.Pool, time.Hour, time.Minute)
	require.NoError(t, err)
	require.Len(t, hour, 60)
	i := indexOf(hour, b15.Add(2*time.Minute))
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, inbox.TrendBucket{Start: b15.Add(2 * time.Minute), Minutes: 1, Handled: ptr(0)}, hour[i])

	_, err = inbox.ReadTrends(ctx, s.Pool, time.Hour, 7*time.Minute)
	require.Error(t, err, "a window of whole buckets only")
}

func indexOf(bs []inbox.TrendBucket, start time.Time) int {
	for i, b := range bs {
		if b.Start.Equal(start) {
			return i
		}
	}
	return -1
}
