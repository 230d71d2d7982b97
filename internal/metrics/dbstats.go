package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// DBStats reads the backlog gauges from PostgreSQL at scrape time (at most
// once per MinInterval, so many scrapers cost one query): pending events and
// the age of the oldest, exhausted and failed events, open quarantine
// entries, and outbox rows by status.
type DBStats struct {
	Query       func(ctx context.Context) (keys.Backlog, error)
	MinInterval time.Duration
	Logger      *slog.Logger

	mu   sync.Mutex
	at   time.Time
	last keys.Backlog
	err  error
}

var (
	descPending    = prometheus.NewDesc("hookinbox_inbox_pending", "Inbox events not yet handled.", nil, nil)
	descOldest     = prometheus.NewDesc("hookinbox_inbox_oldest_pending_age_seconds", "How long the oldest pending inbox event has been pending (since it was accepted, or replayed by an operator; 0 when none): the first thing to alert on.", nil, nil)
	descExhausted  = prometheus.NewDesc("hookinbox_inbox_exhausted", "Inbox events whose retry budget is spent (replayable).", nil, nil)
	descFailed     = prometheus.NewDesc("hookinbox_inbox_failed", "Inbox events that failed validation (replayable).", nil, nil)
	descQuarantine = prometheus.NewDesc("hookinbox_quarantine_open", "Quarantined deliveries not yet resolved.", nil, nil)
	descOutbox     = prometheus.NewDesc("hookinbox_outbox_rows", "Outbox rows by status (pending, uncertain, held_for_review, failed, sent).", []string{"status"}, nil)
	descUp         = prometheus.NewDesc("hookinbox_backlog_query_up", "1 when the backlog gauges could be read from the database.", nil, nil)
)

// Describe implements prometheus.Collector.
func (d *DBStats) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{descPending, descOldest, descExhausted, descFailed, descQuarantine, descOutbox, descUp} {
		ch <- desc
	}
}

// Collect implements prometheus.Collector.
func (d *DBStats) Collect(ch chan<- prometheus.Metric) {
	b, err := d.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(b.Pending))
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, b.OldestPendingAge.Seconds())
	ch <- prometheus.MustNewConstMetric(descExhausted, prometheus.GaugeValue, float64(b.Exhausted))
	ch <- prometheus.MustNewConstMetric(descFailed, prometheus.GaugeValue, float64(b.Failed))
	ch <- prometheus.MustNewConstMetric(descQuarantine, prometheus.GaugeValue, float64(b.QuarantineOpen))
	for _, st := range []string{"pending", "uncertain", "held_for_review", "failed", "sent"} {
		ch <- prometheus.MustNewConstMetric(descOutbox, prometheus.GaugeValue, float64(b.Outbox[st]), st)
	}
}

func (d *DBStats) read() (keys.Backlog, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	min := d.MinInterval
	if min <= 0 {
		min = 5 * time.Second
	}
	if !d.at.IsZero() && time.Since(d.at) < min {
		return d.last, d.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.last, d.err = d.Query(ctx)
	d.at = time.Now()
	if d.err != nil && d.Logger != nil {
		d.Logger.Warn("could not read backlog gauges", "error", d.err.Error())
	}
	return d.last, d.err
}
