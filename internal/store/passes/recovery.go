package passes

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// This file holds the statements of the delivery recovery of senders that
// never redeliver (GitHub): which hooks it reads, whether a listed delivery
// reached hookinbox, and what the recovery did about one that did not
// (hook_recoveries).

// Recovery actions (hook_recoveries.action).
const (
	RecoveryRedeliver = "redeliver"
	RecoveryFetch     = "fetch"
	RecoveryAbandoned = "abandoned"
)

// ListHookScopes lists, for provider, every endpoint with an API key that
// names a hook (settings.github_hook): one scope per endpoint, its Account
// the hook as the settings spell it. With endpoint set, only that one.
func ListHookScopes(ctx context.Context, db store.DB, provider, endpoint string) ([]keys.Scope, error) {
	rows, err := db.Query(ctx, `
		SELECT e.provider, e.slug, e.settings->>'github_hook', e.environment
		  FROM endpoints e
		 WHERE e.provider = $1 AND (e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL) AND coalesce(e.settings->>'github_hook', '') <> ''
		   AND ($2 = '' OR e.slug = $2)
		 ORDER BY e.slug`, provider, endpoint)
	if err != nil {
		return nil, fmt.Errorf("list hook scopes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (keys.Scope, error) {
		var s keys.Scope
		err := r.Scan(&s.Provider, &s.Endpoint, &s.Account, &s.Environment)
		return s, err
	})
}

// ReceivedDeliveries reports which of the delivery ids (event ids) reached
// hookinbox through endpoint: an inbox row of the provider and environment
// under any account, or a quarantine entry of the endpoint (resolved or
// not: it is in an operator's hands).
func ReceivedDeliveries(ctx context.Context, db store.DB, provider, environment, endpoint string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `
		SELECT event_id FROM webhook_inbox WHERE provider = $1 AND environment = $2 AND event_id = ANY($4)
		UNION
		SELECT event_id FROM inbox_quarantine WHERE endpoint_slug = $3 AND event_id = ANY($4)`,
		provider, environment, endpoint, ids)
	if err != nil {
		return nil, fmt.Errorf("received deliveries of %s: %w", endpoint, err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("received deliveries of %s: %w", endpoint, err)
	}
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}

// ClaimRecovery records that pass acts on the missing delivery guid of
// endpoint (from the log's attempt deliveryID) and returns how many passes
// have, this one included. A pass claims a delivery once: claimed is false
// when this pass already did (a page listed again after a retry, or the
// delivery's other attempts further down the log), so it is never
// redelivered twice by one pass.
func ClaimRecovery(ctx context.Context, db store.DB, endpoint, guid string, deliveryID int64, pass string) (attempts int, claimed bool, err error) {
	err = db.QueryRow(ctx, `
		INSERT INTO hook_recoveries (endpoint_slug, delivery_guid, delivery_id, action, pass)
		VALUES ($1, $2, $3, 'redeliver', $4)
		ON CONFLICT (endpoint_slug, delivery_guid) DO UPDATE
		   SET attempts = hook_recoveries.attempts + 1, delivery_id = EXCLUDED.delivery_id,
		       pass = EXCLUDED.pass, last_at = now()
		 WHERE hook_recoveries.pass <> EXCLUDED.pass
		RETURNING attempts`, endpoint, guid, deliveryID, pass).Scan(&attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("claim recovery of %s on %s: %w", guid, endpoint, err)
	}
	return attempts, true, nil
}

// SetRecoveryAction records how the pass that claimed a delivery recovers
// it (RecoveryRedeliver, RecoveryFetch or RecoveryAbandoned).
func SetRecoveryAction(ctx context.Context, db store.DB, endpoint, guid, action string) error {
	tag, err := db.Exec(ctx, `UPDATE hook_recoveries SET action = $3 WHERE endpoint_slug = $1 AND delivery_guid = $2`,
		endpoint, guid, action)
	if err != nil {
		return fmt.Errorf("record recovery of %s on %s: %w", guid, endpoint, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("recovery of %s on %s: %w", guid, endpoint, fault.ErrNotFound)
	}
	return nil
}

// HookRecovery is one row of hook_recoveries.
type HookRecovery struct {
	Endpoint   string
	GUID       string
	DeliveryID int64
	Attempts   int
	Action     string
	Pass       string
}

// ListHookRecoveries lists an endpoint's recoveries, by GUID.
func ListHookRecoveries(ctx context.Context, db store.DB, endpoint string) ([]HookRecovery, error) {
	rows, err := db.Query(ctx, `
		SELECT endpoint_slug, delivery_guid, delivery_id, attempts, action, pass
		  FROM hook_recoveries WHERE endpoint_slug = $1 ORDER BY delivery_guid`, endpoint)
	if err != nil {
		return nil, fmt.Errorf("hook recoveries of %s: %w", endpoint, err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[HookRecovery])
}
