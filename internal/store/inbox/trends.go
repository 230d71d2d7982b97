package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/store"
)

// TrendsRetention is how long console_trends keeps a minute: the longest
// window read (a day) and a day more.
const TrendsRetention = 48 * time.Hour

// trendsCatchUp bounds the minutes one sample counts handled rows for
// after a gap (the sweeper stopped): a day, the longest window read.
const trendsCatchUp = 24 * time.Hour

// RecordTrendSample is the sweeper's sample for the console's trends, in
// one statement: the levels now (pending, exhausted and failed inbox rows,
// open quarantine entries, outbox rows still to send, held and failed) into
// this minute's row of console_trends (each the highest sampled in the
// minute, so a spike between two samples of a minute stays), and the count of inbox rows
// processed in each minute from the last sampled one to this one (the last
// one was counted while it was still running; minutes no sweep sampled get
// their count and no levels). Minutes older than TrendsRetention go. Minutes
// are UTC (date_bin on 2000-01-01), so any session time zone agrees.
func RecordTrendSample(ctx context.Context, db store.DB) error {
	_, err := db.Exec(ctx, `
		WITH clock AS (
			SELECT now() AS t, date_bin('1 minute', now(), timestamptz '2000-01-01 00:00:00+00') AS m
		), span AS (
			SELECT generate_series(
				greatest(coalesce((SELECT max(minute) FROM console_trends), c.m), c.m - make_interval(secs => $1)),
				c.m, interval '1 minute') AS minute
			  FROM clock c
		), handled AS (
			SELECT date_bin('1 minute', processed_at, timestamptz '2000-01-01 00:00:00+00') AS minute, count(*) AS n
			  FROM webhook_inbox
			 WHERE processed_at >= (SELECT min(minute) FROM span)
			   AND processed_at < (SELECT m FROM clock) + interval '1 minute'
			 GROUP BY 1
		), levels AS (
			SELECT (SELECT count(*) FROM webhook_inbox WHERE status = 'pending') AS pending,
			       (SELECT count(*) FROM webhook_inbox WHERE status = 'exhausted') AS exhausted,
			       (SELECT count(*) FROM webhook_inbox WHERE status = 'failed') AS failed,
			       (SELECT count(*) FROM inbox_quarantine WHERE resolved_at IS NULL) AS quarantine_open,
			       count(*) FILTER (WHERE o.status IN ('pending', 'uncertain')) AS outbox_unsent,
			       count(*) FILTER (WHERE o.status = 'held_for_review') AS outbox_held,
			       count(*) FILTER (WHERE o.status = 'failed') AS outbox_failed
			  FROM outbox o WHERE o.status <> 'sent'
		), fresh AS (
			-- This minute with the levels; the earlier minutes of the span
			-- with their count only (a gap keeps its NULL levels, the last
			-- sampled minute its own).
			SELECT s.minute, coalesce(h.n, 0) AS handled, CASE WHEN s.minute = c.m THEN c.t END AS sampled_at
			  FROM span s CROSS JOIN clock c LEFT JOIN handled h ON h.minute = s.minute
		), upsert AS (
			INSERT INTO console_trends AS ct (minute, handled, sampled_at, pending, exhausted, failed, quarantine_open,
			                                  outbox_unsent, outbox_held, outbox_failed)
			SELECT f.minute, f.handled, f.sampled_at,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.pending END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.exhausted END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.failed END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.quarantine_open END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.outbox_unsent END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.outbox_held END,
			       CASE WHEN f.sampled_at IS NOT NULL THEN l.outbox_failed END
			  FROM fresh f CROSS JOIN levels l
			ON CONFLICT (minute) DO UPDATE SET
				handled = EXCLUDED.handled,
				sampled_at = coalesce(EXCLUDED.sampled_at, ct.sampled_at),
				pending = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.pending ELSE greatest(ct.pending, EXCLUDED.pending) END,
				exhausted = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.exhausted ELSE greatest(ct.exhausted, EXCLUDED.exhausted) END,
				failed = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.failed ELSE greatest(ct.failed, EXCLUDED.failed) END,
				quarantine_open = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.quarantine_open ELSE greatest(ct.quarantine_open, EXCLUDED.quarantine_open) END,
				outbox_unsent = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.outbox_unsent ELSE greatest(ct.outbox_unsent, EXCLUDED.outbox_unsent) END,
				outbox_held = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.outbox_held ELSE greatest(ct.outbox_held, EXCLUDED.outbox_held) END,
				outbox_failed = CASE WHEN EXCLUDED.sampled_at IS NULL THEN ct.outbox_failed ELSE greatest(ct.outbox_failed, EXCLUDED.outbox_failed) END
		)
		DELETE FROM console_trends WHERE minute < (SELECT m FROM clock) - make_interval(secs => $2)`,
		trendsCatchUp.Seconds(), TrendsRetention.Seconds())
	if err != nil {
		return fmt.Errorf("record trend sample: %w", err)
	}
	return nil
}

// TrendBucket is one bucket of a trends window. The levels are the highest
// sample of the bucket (a spike stays visible in a 15-minute bucket), nil
// when no sweep sampled it; Handled is the rows processed in its recorded
// minutes (Minutes of them), nil when none is recorded.
type TrendBucket struct {
	Start          time.Time
	Minutes        int
	Samples        int
	Handled        *int64
	Pending        *int64
	Exhausted      *int64
	Failed         *int64
	QuarantineOpen *int64
	OutboxUnsent   *int64
	OutboxHeld     *int64
	OutboxFailed   *int64
}

// ReadTrends reads the buckets of the last window, bucket long each,
// oldest first: every bucket of the window, the one holding the current
// minute last, those with nothing recorded too (all nil). window must be a
// whole number of buckets and bucket a whole number of minutes.
func ReadTrends(ctx context.Context, db store.DB, window, bucket time.Duration) ([]TrendBucket, error) {
	if bucket < time.Minute || bucket%time.Minute != 0 || window < bucket || window%bucket != 0 {
		return nil, fmt.Errorf("read trends: a window of %s in buckets of %s", window, bucket)
	}
	rows, err := db.Query(ctx, `
		WITH bounds AS (
			SELECT date_bin(make_interval(secs => $2), now(), timestamptz '2000-01-01 00:00:00+00')
			       + make_interval(secs => $2) AS upto
		), agg AS (
			SELECT date_bin(make_interval(secs => $2), minute, timestamptz '2000-01-01 00:00:00+00') AS bucket,
			       count(*) AS minutes, count(sampled_at) AS samples, sum(handled)::bigint AS handled,
			       max(pending) AS pending, max(exhausted) AS exhausted, max(failed) AS failed,
			       max(quarantine_open) AS quarantine_open, max(outbox_unsent) AS outbox_unsent,
			       max(outbox_held) AS outbox_held, max(outbox_failed) AS outbox_failed
			  FROM console_trends
			 WHERE minute >= (SELECT upto FROM bounds) - make_interval(secs => $1)
			   AND minute < (SELECT upto FROM bounds)
			 GROUP BY 1
		)
		SELECT g.bucket, coalesce(a.minutes, 0), coalesce(a.samples, 0), a.handled, a.pending, a.exhausted, a.failed,
		       a.quarantine_open, a.outbox_unsent, a.outbox_held, a.outbox_failed
		  FROM bounds b,
		       generate_series(b.upto - make_interval(secs => $1), b.upto - make_interval(secs => $2),
		                       make_interval(secs => $2)) AS g(bucket)
		  LEFT JOIN agg a ON a.bucket = g.bucket
		 ORDER BY g.bucket`, window.Seconds(), bucket.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read trends: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TrendBucket, error) {
		var b TrendBucket
		err := r.Scan(&b.Start, &b.Minutes, &b.Samples, &b.Handled, &b.Pending, &b.Exhausted, &b.Failed,
			&b.QuarantineOpen, &b.OutboxUnsent, &b.OutboxHeld, &b.OutboxFailed)
		b.Start = b.Start.UTC()
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("read trends: %w", err)
	}
	return out, nil
}
