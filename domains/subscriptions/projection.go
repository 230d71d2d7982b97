package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
)

// Table is the projection this domain keeps: subscription_projection, one
// row per subscription, never backwards (a canceled subscription stays
// canceled, a deletion's tombstone stays).
var Table = hookinbox.Projection{
	Table:          "subscription_projection",
	Key:            []string{"provider", "source_account", "environment", "resource_id"},
	TouchedColumn:  "updated_at",
	Sticky:         []string{"deleted"},
	TerminalColumn: "status",
	TerminalValue:  StatusCanceled,
}

// State is the normalized snapshot the projection keeps.
type State struct {
	Status            string     `json:"status"`
	Customer          string     `json:"customer,omitempty"`
	CancelAtPeriodEnd bool       `json:"cancel_at_period_end"`
	CurrentPeriodEnd  *time.Time `json:"current_period_end,omitempty"`
	CanceledAt        *time.Time `json:"canceled_at,omitempty"`
	EndedAt           *time.Time `json:"ended_at,omitempty"`
}

// Projection is one row of subscription_projection.
type Projection struct {
	Provider     string
	Account      string
	Environment  string
	ResourceID   string
	WorkspaceID  string
	Version      *int64
	State        State
	Deleted      bool
	Access       bool
	AccessEndsAt *time.Time
	WriteSeq     int64
	WrittenBy    string
	FetchedAt    *time.Time
	UpdatedAt    time.Time
}

// row is p as the projection table's row.
func (p Projection) row() (hookinbox.Row, error) {
	state, err := json.Marshal(p.State)
	if err != nil {
		return nil, err
	}
	return hookinbox.Row{
		"provider": p.Provider, "source_account": p.Account, "environment": p.Environment, "resource_id": p.ResourceID,
		"workspace_id": p.WorkspaceID, "provider_version": p.Version, "state": state, "status": p.State.Status,
		"deleted": p.Deleted, "access": p.Access, "access_ends_at": p.AccessEndsAt, "written_by": p.WrittenBy,
		"fetched_at": p.FetchedAt,
	}, nil
}

const projectionColumns = `provider, source_account, environment, resource_id, workspace_id, provider_version, state,
	deleted, access, access_ends_at, write_seq, written_by, fetched_at, updated_at`

func scanProjection(row pgx.Row) (*Projection, error) {
	var p Projection
	var state []byte
	if err := row.Scan(&p.Provider, &p.Account, &p.Environment, &p.ResourceID, &p.WorkspaceID, &p.Version, &state,
		&p.Deleted, &p.Access, &p.AccessEndsAt, &p.WriteSeq, &p.WrittenBy, &p.FetchedAt, &p.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(state, &p.State); err != nil {
		return nil, fmt.Errorf("projection of %s: state: %w", p.ResourceID, err)
	}
	return &p, nil
}

// Get reads a subscription's projection; nil when it has none.
func Get(ctx context.Context, db hookinbox.DB, provider, account, env, id string) (*Projection, error) {
	p, err := scanProjection(db.QueryRow(ctx, `SELECT `+projectionColumns+` FROM subscription_projection
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_id = $4`, provider, account, env, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("projection of %s: %w", id, err)
	}
	return p, nil
}

// List reads the projections of the given subscriptions of one account, by
// subscription id (absent ones are missing from the map).
func List(ctx context.Context, db hookinbox.DB, provider, account, env string, ids []string) (map[string]*Projection, error) {
	out := make(map[string]*Projection, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `SELECT `+projectionColumns+` FROM subscription_projection
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_id = ANY($4)`, provider, account, env, ids)
	if err != nil {
		return nil, fmt.Errorf("projections of %s: %w", account, err)
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanProjection(rows)
		if err != nil {
			return nil, err
		}
		out[p.ResourceID] = p
	}
	return out, rows.Err()
}
