package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Workspace is a tenant.
type Workspace struct {
	ID             string
	CreditsBalance int64
	Email          string
}

// GetWorkspace reads a workspace.
func GetWorkspace(ctx context.Context, db store.DB, id string) (*Workspace, error) {
	var w Workspace
	err := db.QueryRow(ctx, `SELECT id, credits_balance, coalesce(email, '') FROM workspaces WHERE id = $1`, id).
		Scan(&w.ID, &w.CreditsBalance, &w.Email)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", id, store.Interpret(err))
	}
	return &w, nil
}

// SetWorkspaceEmail sets where a workspace's confirmation emails go,
// creating the workspace if it is new.
func SetWorkspaceEmail(ctx context.Context, db store.DB, id, email string) error {
	_, err := db.Exec(ctx, `
		INSERT INTO workspaces (id, email) VALUES ($1, NULLIF($2, ''))
		ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email`, id, email)
	return err
}

// CreditGrant is one grant, identified by its business key.
type CreditGrant struct {
	ID          int64
	Provider    string
	Account     string
	Environment string
	InvoiceID   string
	Operation   string
	WorkspaceID string
	Credits     int64
	AmountPaid  int64
	Currency    string
	EventKey    string
	CreatedAt   time.Time
}

// GrantCreditsOnce inserts the grant if its business key is absent and, only
// then, increments the workspace balance atomically, inside tx. It reports
// whether it granted; when it did not, it returns the existing grant so the
// caller can check it matches this operation.
func GrantCreditsOnce(ctx context.Context, tx pgx.Tx, g CreditGrant) (granted bool, existing *CreditGrant, err error) {
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation,
			workspace_id, credits, amount_paid, currency, event_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT ON CONSTRAINT credit_grants_business_key DO NOTHING
		RETURNING id`,
		g.Provider, g.Account, g.Environment, g.InvoiceID, g.Operation, g.WorkspaceID, g.Credits,
		g.AmountPaid, g.Currency, g.EventKey).Scan(&id)
	if err == nil {
		tag, err := tx.Exec(ctx, `UPDATE workspaces SET credits_balance = credits_balance + $2 WHERE id = $1`, g.WorkspaceID, g.Credits)
		if err != nil {
			return false, nil, fmt.Errorf("increment balance of %s: %w", g.WorkspaceID, err)
		}
		if tag.RowsAffected() != 1 {
			return false, nil, fmt.Errorf("increment balance: workspace %s: %w", g.WorkspaceID, fault.ErrNotFound)
		}
		return true, nil, nil
	}
	if err != pgx.ErrNoRows {
		return false, nil, fmt.Errorf("insert credit grant %s: %w", g.InvoiceID, err)
	}
	var e CreditGrant
	err = tx.QueryRow(ctx, `
		SELECT id, provider, source_account, environment, invoice_id, operation, workspace_id, credits,
		       amount_paid, currency, event_key, created_at
		  FROM credit_grants
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND invoice_id = $4 AND operation = $5`,
		g.Provider, g.Account, g.Environment, g.InvoiceID, g.Operation).Scan(&e.ID, &e.Provider, &e.Account,
		&e.Environment, &e.InvoiceID, &e.Operation, &e.WorkspaceID, &e.Credits, &e.AmountPaid, &e.Currency, &e.EventKey, &e.CreatedAt)
	if err != nil {
		return false, nil, fmt.Errorf("read existing grant %s: %w", g.InvoiceID, store.Interpret(err))
	}
	return false, &e, nil
}

// SubscriptionState is the normalized snapshot the projection keeps.
type SubscriptionState struct {
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
	State        SubscriptionState
	Deleted      bool
	Access       bool
	AccessEndsAt *time.Time
	WriteSeq     int64
	WrittenBy    string
	FetchedAt    *time.Time
	UpdatedAt    time.Time
}

// GetProjection reads a subscription's projection.
func GetProjection(ctx context.Context, db store.DB, provider, account, env, id string) (*Projection, error) {
	var p Projection
	var state []byte
	err := db.QueryRow(ctx, `
		SELECT provider, source_account, environment, resource_id, workspace_id, provider_version, state,
		       deleted, access, access_ends_at, write_seq, written_by, fetched_at, updated_at
		  FROM subscription_projection
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_id = $4`,
		provider, account, env, id).Scan(&p.Provider, &p.Account, &p.Environment, &p.ResourceID, &p.WorkspaceID,
		&p.Version, &state, &p.Deleted, &p.Access, &p.AccessEndsAt, &p.WriteSeq, &p.WrittenBy, &p.FetchedAt, &p.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("projection of %s: %w", id, store.Interpret(err))
	}
	if err := json.Unmarshal(state, &p.State); err != nil {
		return nil, fmt.Errorf("projection of %s: state: %w", id, err)
	}
	return &p, nil
}

// WriteProjectionIfNewer applies a versioned snapshot only when its version
// is greater than the stored one: the comparison is part of the write, so two
// writers cannot both pass it. A canceled subscription is terminal: no write
// brings it back; a tombstone (deleted) stays. It reports whether the
// snapshot was applied.
func WriteProjectionIfNewer(ctx context.Context, tx pgx.Tx, p Projection) (bool, error) {
	if p.Version == nil {
		return false, fmt.Errorf("write projection %s: no version", p.ResourceID)
	}
	state, err := json.Marshal(p.State)
	if err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO subscription_projection (provider, source_account, environment, resource_id, workspace_id,
			provider_version, state, status, deleted, access, access_ends_at, written_by, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (provider, source_account, environment, resource_id) DO UPDATE
		   SET provider_version = EXCLUDED.provider_version, state = EXCLUDED.state, status = EXCLUDED.status,
		       deleted = subscription_projection.deleted OR EXCLUDED.deleted,
		       access = EXCLUDED.access, access_ends_at = EXCLUDED.access_ends_at,
		       written_by = EXCLUDED.written_by, fetched_at = EXCLUDED.fetched_at,
		       write_seq = subscription_projection.write_seq + 1, updated_at = now()
		 WHERE (subscription_projection.provider_version IS NULL
		        OR EXCLUDED.provider_version > subscription_projection.provider_version)
		   AND NOT (subscription_projection.status = 'canceled' AND EXCLUDED.status <> 'canceled')`,
		p.Provider, p.Account, p.Environment, p.ResourceID, p.WorkspaceID, p.Version, state, p.State.Status,
		p.Deleted, p.Access, p.AccessEndsAt, p.WrittenBy, p.FetchedAt)
	if err != nil {
		return false, fmt.Errorf("write projection %s: %w", p.ResourceID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// WriteProjectionCAS writes a fetched state only if the projection's
// write_seq is still readSeq (0: the row must not exist yet): a fencing
// token, so an attempt whose fetch began before another write (a timed-out
// activity still running, a reset workflow, a slow reconciliation) loses. It
// reports whether the write happened.
func WriteProjectionCAS(ctx context.Context, tx pgx.Tx, p Projection, readSeq int64) (bool, error) {
	state, err := json.Marshal(p.State)
	if err != nil {
		return false, err
	}
	var sql string
	if readSeq == 0 {
		sql = `
		INSERT INTO subscription_projection (provider, source_account, environment, resource_id, workspace_id,
			provider_version, state, status, deleted, access, access_ends_at, written_by, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (provider, source_account, environment, resource_id) DO NOTHING`
	} else {
		sql = `
		UPDATE subscription_projection
		   SET workspace_id = $5, provider_version = coalesce($6, provider_version), state = $7, status = $8,
		       deleted = deleted OR $9, access = $10, access_ends_at = $11, written_by = $12, fetched_at = $13,
		       write_seq = write_seq + 1, updated_at = now()
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_id = $4
		   AND write_seq = $14`
	}
	args := []any{p.Provider, p.Account, p.Environment, p.ResourceID, p.WorkspaceID, p.Version, state,
		p.State.Status, p.Deleted, p.Access, p.AccessEndsAt, p.WrittenBy, p.FetchedAt}
	if readSeq != 0 {
		args = append(args, readSeq)
	}
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return false, fmt.Errorf("write projection %s: %w", p.ResourceID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// WorkspaceHasAccess applies the access rule over the workspace's
// subscriptions at the database's now().
func WorkspaceHasAccess(ctx context.Context, db store.DB, workspace string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT has_access FROM workspace_access WHERE workspace_id = $1`, workspace).Scan(&ok)
	return ok, store.Interpret(err)
}

// FeedbackAlert is the initial alert of a feedback item.
type FeedbackAlert struct {
	Provider    string
	Project     string
	Environment string
	FeedbackID  string
	Operation   string
	WorkspaceID string
	EventKey    string
}

// InsertFeedbackAlertOnce inserts the alert if its business key is absent
// and reports whether it did.
func InsertFeedbackAlertOnce(ctx context.Context, tx pgx.Tx, a FeedbackAlert) (bool, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT ON CONSTRAINT feedback_alerts_business_key DO NOTHING`,
		a.Provider, a.Project, a.Environment, a.FeedbackID, a.Operation, a.WorkspaceID, a.EventKey)
	if err != nil {
		return false, fmt.Errorf("insert feedback alert %s: %w", a.FeedbackID, err)
	}
	return tag.RowsAffected() == 1, nil
}
