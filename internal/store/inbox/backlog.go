package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// ReadBacklog counts pending, exhausted and failed inbox rows, the age of the
// oldest pending one, open quarantine entries, outbox rows by status and the
// divergences found in the last 24 hours (and how many of them at the same
// provider version), in one round trip.
func ReadBacklog(ctx context.Context, db store.DB) (keys.Backlog, error) {
	b := keys.Backlog{Outbox: map[string]int64{}}
	var oldest *float64
	var outbox map[string]int64
	err := db.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM webhook_inbox WHERE status = 'pending'),
		  (SELECT extract(epoch FROM now() - min(coalesce(pending_since, received_at))) FROM webhook_inbox WHERE status = 'pending'),
		  (SELECT count(*) FROM webhook_inbox WHERE status = 'exhausted'),
		  (SELECT count(*) FROM webhook_inbox WHERE status = 'failed'),
		  (SELECT count(*) FROM inbox_quarantine WHERE resolved_at IS NULL),
		  (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (SELECT status, count(*) AS n FROM outbox GROUP BY status) o),
		  (SELECT count(*) FROM reconcile_divergences WHERE detected_at > now() - interval '24 hours'),
		  (SELECT count(*) FROM reconcile_divergences WHERE same_version AND detected_at > now() - interval '24 hours')`,
	).Scan(&b.Pending, &oldest, &b.Exhausted, &b.Failed, &b.QuarantineOpen, &outbox, &b.Divergences24h, &b.SameVersionDivergences24h)
	if err != nil {
		return b, fmt.Errorf("read backlog: %w", err)
	}
	if oldest != nil {
		b.OldestPendingAge = time.Duration(*oldest * float64(time.Second))
	}
	for k, v := range outbox {
		b.Outbox[k] = v
	}
	return b, nil
}
