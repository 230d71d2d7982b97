package ops

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// TrendWindows are the windows Trends reads, by name: the last hour by
// minute, the last day by 15 minutes.
var TrendWindows = []string{"1h", "24h"}

var trendBuckets = map[string][2]time.Duration{
	"1h":  {time.Hour, time.Minute},
	"24h": {24 * time.Hour, 15 * time.Minute},
}

// TrendsView is the console's trends over one window: a point per bucket,
// oldest first, the bucket holding the current minute last. They come from
// console_trends, which the sweeper samples every run (HOOKINBOX_SWEEP_INTERVAL).
type TrendsView struct {
	// Window is "1h" or "24h".
	Window string `json:"window"`
	// BucketSeconds is each point's span: 60 or 900.
	BucketSeconds int `json:"bucket_seconds"`
	// From is the first bucket's start, To the last one's end (RFC 3339).
	From   time.Time    `json:"from"`
	To     time.Time    `json:"to"`
	Points []TrendPoint `json:"points"`
}

// TrendPoint is one bucket. A level is the highest the sweeper sampled in
// the bucket (every HOOKINBOX_SWEEP_INTERVAL), null when it sampled none (a
// gap: the sweeper did not run);
// HandledPerMinute is the inbox rows that reached a final status (done,
// ignored, failed, exhausted) per minute of the bucket, null when no minute
// of it is recorded.
type TrendPoint struct {
	// At is the bucket's start (RFC 3339).
	At               time.Time `json:"at"`
	Pending          *int64    `json:"pending"`
	HandledPerMinute *float64  `json:"handled_per_minute"`
	Exhausted        *int64    `json:"exhausted"`
	Failed           *int64    `json:"failed"`
	QuarantineOpen   *int64    `json:"quarantine_open"`
	// OutboxUnsent counts the outbox rows pending or uncertain (still to
	// send), OutboxHeld those held for review, OutboxFailed the failed.
	OutboxUnsent *int64 `json:"outbox_unsent"`
	OutboxHeld   *int64 `json:"outbox_held"`
	OutboxFailed *int64 `json:"outbox_failed"`
}

// Trends reads the window's points ("1h" or "24h"; "" is "1h").
func (s *Service) Trends(ctx context.Context, window string) (TrendsView, error) {
	if window == "" {
		window = "1h"
	}
	wb, ok := trendBuckets[window]
	if !ok {
		return TrendsView{}, Invalidf("window must be 1h or 24h (got %q)", window)
	}
	buckets, err := inbox.ReadTrends(ctx, s.Store.Pool, wb[0], wb[1])
	if err != nil {
		return TrendsView{}, err
	}
	v := TrendsView{Window: window, BucketSeconds: int(wb[1].Seconds()), Points: make([]TrendPoint, 0, len(buckets))}
	for _, b := range buckets {
		p := TrendPoint{At: b.Start, Pending: b.Pending, Exhausted: b.Exhausted, Failed: b.Failed, QuarantineOpen: b.QuarantineOpen,
			OutboxUnsent: b.OutboxUnsent, OutboxHeld: b.OutboxHeld, OutboxFailed: b.OutboxFailed}
		if b.Handled != nil && b.Minutes > 0 {
			r := float64(*b.Handled) / float64(b.Minutes)
			p.HandledPerMinute = &r
		}
		v.Points = append(v.Points, p)
	}
	if n := len(v.Points); n > 0 {
		v.From, v.To = v.Points[0].At, v.Points[n-1].At.Add(wb[1])
	}
	return v, nil
}
