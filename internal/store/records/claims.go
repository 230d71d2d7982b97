package records

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/store"
)

// Claim is a business key's claim: the event that made it first.
type Claim struct {
	BusinessKey string    `json:"business_key"`
	EventKey    string    `json:"event_key"`
	ResourceKey string    `json:"resource_key"`
	Handler     string    `json:"handler"`
	ClaimedAt   time.Time `json:"claimed_at"`
}

// ClaimOnce inserts c if its business key is absent, inside tx, and
// reports whether it did; when it did not, it returns the claim that holds
// the key. The UNIQUE constraint settles a race: the loser's insert does
// nothing and it reads the winner's row.
func ClaimOnce(ctx context.Context, tx pgx.Tx, c Claim) (first bool, existing Claim, err error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO business_claims (business_key, event_key, resource_key, handler)
		VALUES ($1, $2, $3, $4) ON CONFLICT (business_key) DO NOTHING`,
		c.BusinessKey, c.EventKey, c.ResourceKey, c.Handler)
	if err != nil {
		return false, Claim{}, fmt.Errorf("claim %s: %w", c.BusinessKey, err)
	}
	if tag.RowsAffected() == 1 {
		return true, Claim{}, nil
	}
	err = tx.QueryRow(ctx, `
		SELECT business_key, event_key, resource_key, handler, claimed_at FROM business_claims WHERE business_key = $1`,
		c.BusinessKey).Scan(&existing.BusinessKey, &existing.EventKey, &existing.ResourceKey, &existing.Handler, &existing.ClaimedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another transaction holds the key uncommitted and then rolled
		// back: the insert above waited for it, so this cannot happen
		// under READ COMMITTED; say so rather than guess.
		return false, Claim{}, fmt.Errorf("claim %s: held by a transaction that vanished", c.BusinessKey)
	}
	if err != nil {
		return false, Claim{}, fmt.Errorf("read claim %s: %w", c.BusinessKey, err)
	}
	return false, existing, nil
}

// ResourceClaims lists the claims made on a resource, oldest first (the
// lineage of a team's effects).
func ResourceClaims(ctx context.Context, db store.DB, resourceKey string, limit int) ([]Claim, error) {
	rows, err := db.Query(ctx, `
		SELECT business_key, event_key, resource_key, handler, claimed_at FROM business_claims
		 WHERE resource_key = $1 ORDER BY claimed_at, business_key LIMIT $2`, resourceKey, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Claim, error) {
		var c Claim
		err := r.Scan(&c.BusinessKey, &c.EventKey, &c.ResourceKey, &c.Handler, &c.ClaimedAt)
		return c, err
	})
}

// GetClaim reads the claim of a business key (fault.ErrNotFound: none).
func GetClaim(ctx context.Context, db store.DB, businessKey string) (Claim, error) {
	var c Claim
	err := db.QueryRow(ctx, `
		SELECT business_key, event_key, resource_key, handler, claimed_at FROM business_claims WHERE business_key = $1`,
		businessKey).Scan(&c.BusinessKey, &c.EventKey, &c.ResourceKey, &c.Handler, &c.ClaimedAt)
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", businessKey, store.Interpret(err))
	}
	return c, nil
}
