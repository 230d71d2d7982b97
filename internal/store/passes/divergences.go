package passes

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// InsertDivergences records divergences of one resource.
func InsertDivergences(ctx context.Context, tx pgx.Tx, provider, account, env, kind, id, detectedBy string, ds []keys.Divergence) error {
	for _, d := range ds {
		if _, err := tx.Exec(ctx, `
			INSERT INTO reconcile_divergences (provider, source_account, environment, resource_kind, resource_id,
				field, local_value, provider_value, corrected, detected_by, same_version)
			VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, $10, $11)`,
			provider, account, env, kind, id, d.Field, d.LocalValue, d.ProviderValue, d.Corrected, detectedBy, d.SameVersion); err != nil {
			return fmt.Errorf("insert divergence of %s: %w", id, err)
		}
	}
	return nil
}

// StoredDivergence is one reconcile_divergences row.
type StoredDivergence struct {
	Field         string    `json:"field"`
	LocalValue    string    `json:"local_value,omitempty"`
	ProviderValue string    `json:"provider_value,omitempty"`
	Corrected     bool      `json:"corrected"`
	DetectedBy    string    `json:"detected_by"`
	DetectedAt    time.Time `json:"detected_at"`
}

// ResourceDivergences lists what reconciliation found on a resource, oldest first.
func ResourceDivergences(ctx context.Context, db store.DB, r keys.Resource) ([]StoredDivergence, error) {
	rows, err := db.Query(ctx, `
		SELECT field, coalesce(local_value, ''), coalesce(provider_value, ''), corrected, detected_by, detected_at
		  FROM reconcile_divergences
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_kind = $4 AND resource_id = $5
		 ORDER BY detected_at, id LIMIT 200`, r.Provider, r.Account, r.Environment, r.Kind, r.ID)
	if err != nil {
		return nil, fmt.Errorf("divergences of %s: %w", r, err)
	}
	return store.AppendRows([]StoredDivergence{}, rows, func(row pgx.Row) (d StoredDivergence, err error) {
		err = row.Scan(&d.Field, &d.LocalValue, &d.ProviderValue, &d.Corrected, &d.DetectedBy, &d.DetectedAt)
		return d, err
	})
}
