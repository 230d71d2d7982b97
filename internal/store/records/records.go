package records

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// GetProjection reads a subscription's projection (fault.ErrNotFound where
// the subscriptions domain's table is absent too).
func GetProjection(ctx context.Context, db store.DB, provider, account, env, id string) (*Projection, error) {
	if ok, err := HasRelation(ctx, db, TableSubscriptions); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("projection of %s: %w", id, fault.ErrNotFound)
	}
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

// WorkspaceHasAccess applies the access rule over the workspace's
// subscriptions at the database's now(): false where the subscriptions
// domain's access view is absent.
func WorkspaceHasAccess(ctx context.Context, db store.DB, workspace string) (bool, error) {
	if present, err := HasRelation(ctx, db, ViewWorkspaceAccess); err != nil || !present {
		return false, err
	}
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
