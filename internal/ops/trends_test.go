package ops_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/ops"
)

// The trends of a window: every bucket, oldest first, from From to To;
// handled per minute is a bucket's count over its recorded minutes (a
// quarter of an hour's 60 events over 4 recorded minutes is 15 a minute);
// a gap is null in JSON, not 0. Any other window is bad input.
func TestTrendsAreBucketsWithRatesAndGaps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var b15 time.Time
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT date_bin('15 minutes', now(), timestamptz '2000-01-01 00:00:00+00') - interval '15 minutes'`).Scan(&b15))
	b15 = b15.UTC()
	_, err := b.st.Pool.Exec(b.ctx, `INSERT INTO console_trends (minute, handled, sampled_at, pending, exhausted, failed, quarantine_open, outbox_unsent, outbox_held, outbox_failed)
		VALUES ($1, 10, $1, 3, 0, 0, 0, 0, 0, 0), ($1::timestamptz + interval '1 minute', 20, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		       ($1::timestamptz + interval '2 minutes', 30, $1, 8, 1, 0, 0, 2, 1, 0), ($1::timestamptz + interval '3 minutes', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, b15)
	require.NoError(t, err)

	day, err := b.svc.Trends(b.ctx, "24h")
	require.NoError(t, err)
	require.Equal(t, "24h", day.Window)
	require.Equal(t, 900, day.BucketSeconds)
	require.Len(t, day.Points, 96)
	require.Equal(t, day.From, day.Points[0].At)
	require.Equal(t, 24*time.Hour, day.To.Sub(day.From))
	var p *ops.TrendPoint
	for i := range day.Points {
		if day.Points[i].At.Equal(b15) {
			p = &day.Points[i]
		}
	}
	require.NotNil(t, p)
	require.InDelta(t, 15.0, *p.HandledPerMinute, 1e-9)
	require.EqualValues(t, 8, *p.Pending, "the highest sample")
	require.EqualValues(t, 2, *p.OutboxUnsent)

	hour, err := b.svc.Trends(b.ctx, "")
	require.NoError(t, err)
	require.Equal(t, "1h", hour.Window, "the default")
	require.Len(t, hour.Points, 60)
	raw, err := json.Marshal(hour.Points)
	require.NoError(t, err)
	var points []map[string]any
	require.NoError(t, json.Unmarshal(raw, &points))
	var gap, counted map[string]any
	for _, q := range points {
		switch q["at"] {
		case b15.Add(time.Minute).Format(time.RFC3339):
			gap = q
		case b15.Add(2 * time.Minute).Format(time.RFC3339):
			counted = q
		}
	}
	require.NotNil(t, gap, "minute %s is in the hour", b15.Add(time.Minute))
	require.Contains(t, gap, "pending")
	require.Nil(t, gap["pending"], "no sample: null, not 0")
	require.Equal(t, 20.0, gap["handled_per_minute"], "its count is known")
	require.Equal(t, 8.0, counted["pending"])
	require.Equal(t, 30.0, counted["handled_per_minute"])

	_, err = b.svc.Trends(b.ctx, "7d")
	require.True(t, ops.IsInvalid(err), "%v", err)
}
