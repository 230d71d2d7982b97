package records

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

const grantColumns = `id, provider, source_account, environment, invoice_id, operation, workspace_id, credits,
	amount_paid, currency, event_key, created_at`

// StoredGrant is a credit_grants row, as the lineage shows it (the credits
// ledger, domains/ledger, writes them).
type StoredGrant struct {
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

func scanGrant(row pgx.Row) (g StoredGrant, err error) {
	err = row.Scan(&g.ID, &g.Provider, &g.Account, &g.Environment, &g.InvoiceID, &g.Operation, &g.WorkspaceID,
		&g.Credits, &g.AmountPaid, &g.Currency, &g.EventKey, &g.CreatedAt)
	return g, store.Interpret(err)
}

// Built-in domains' relations the core reads when the App has them: their
// migration sets (domains/*/schema) create them, and a team's App that
// registers none of those domains has none.
const (
	TableCreditGrants      = "credit_grants"
	TableFeedbackAlerts    = "feedback_alerts"
	TableSubscriptions     = "subscription_projection"
	ViewWorkspaceAccess    = "workspace_access"
	TableCreditAdjustments = "credit_adjustments"
)

// HasRelation says whether schema public has the table or view name: the
// built-in domains' tables exist where their sets were applied.
func HasRelation(ctx context.Context, db store.DB, name string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT to_regclass('public.' || quote_ident($1)) IS NOT NULL`, name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("relation %s: %w", name, err)
	}
	return ok, nil
}

// FindCreditGrants finds grants by id (id > 0) or by invoice id, optionally
// narrowed to a provider, account and environment, at most 20. None where
// the credits domain's table is absent.
func FindCreditGrants(ctx context.Context, db store.DB, id int64, provider, account, env, invoice string) ([]StoredGrant, error) {
	if ok, err := HasRelation(ctx, db, TableCreditGrants); err != nil || !ok {
		return nil, err
	}
	rows, err := db.Query(ctx, `SELECT `+grantColumns+` FROM credit_grants
		WHERE ($1 = 0 OR id = $1) AND ($2 = '' OR provider = $2) AND ($3 = '' OR source_account = $3)
		  AND ($4 = '' OR environment = $4) AND ($5 = '' OR invoice_id = $5)
		ORDER BY id LIMIT 20`, id, provider, account, env, invoice)
	if err != nil {
		return nil, fmt.Errorf("find credit grants: %w", err)
	}
	return store.AppendRows(nil, rows, scanGrant)
}

// StoredFeedbackAlert is a feedback_alerts row.
type StoredFeedbackAlert struct {
	FeedbackAlert
	ID        int64
	CreatedAt time.Time
}

// FindFeedbackAlerts finds alerts by id (id > 0) or feedback id, at most
// 20. None where the feedback domain's table is absent.
func FindFeedbackAlerts(ctx context.Context, db store.DB, id int64, provider, project, env, feedbackID string) ([]StoredFeedbackAlert, error) {
	if ok, err := HasRelation(ctx, db, TableFeedbackAlerts); err != nil || !ok {
		return nil, err
	}
	rows, err := db.Query(ctx, `
		SELECT id, provider, project, environment, feedback_id, operation, workspace_id, event_key, created_at
		  FROM feedback_alerts
		 WHERE ($1 = 0 OR id = $1) AND ($2 = '' OR provider = $2) AND ($3 = '' OR project = $3)
		   AND ($4 = '' OR environment = $4) AND ($5 = '' OR feedback_id = $5)
		 ORDER BY id LIMIT 20`, id, provider, project, env, feedbackID)
	if err != nil {
		return nil, fmt.Errorf("find feedback alerts: %w", err)
	}
	return store.AppendRows(nil, rows, func(row pgx.Row) (a StoredFeedbackAlert, err error) {
		err = row.Scan(&a.ID, &a.Provider, &a.Project, &a.Environment, &a.FeedbackID, &a.Operation, &a.WorkspaceID,
			&a.EventKey, &a.CreatedAt)
		return a, err
	})
}

// FindProjections finds subscription projections by subscription id,
// optionally narrowed to a provider, account and environment, at most 20.
// None where the subscriptions domain's table is absent.
func FindProjections(ctx context.Context, db store.DB, provider, account, env, id string) ([]keys.Resource, error) {
	if ok, err := HasRelation(ctx, db, TableSubscriptions); err != nil || !ok {
		return nil, err
	}
	rows, err := db.Query(ctx, `
		SELECT provider, source_account, environment, resource_id FROM subscription_projection
		 WHERE ($1 = '' OR provider = $1) AND ($2 = '' OR source_account = $2) AND ($3 = '' OR environment = $3)
		   AND resource_id = $4
		 ORDER BY provider, source_account, environment LIMIT 20`, provider, account, env, id)
	if err != nil {
		return nil, fmt.Errorf("find subscriptions: %w", err)
	}
	return store.AppendRows(nil, rows, func(row pgx.Row) (keys.Resource, error) {
		r := keys.Resource{Kind: "subscription"}
		err := row.Scan(&r.Provider, &r.Account, &r.Environment, &r.ID)
		return r, err
	})
}

// WorkspaceSummary is a workspace as listed.
type WorkspaceSummary struct {
	ID             string `json:"id"`
	CreditsBalance int64  `json:"credits_balance"`
	Email          string `json:"email,omitempty"`
	HasAccess      bool   `json:"has_access"`
	Accounts       int    `json:"linked_accounts"`
	Destinations   int    `json:"destinations"`
}

// ListWorkspaces lists workspaces by id, at most limit. HasAccess is false
// where the subscriptions domain's access view is absent.
func ListWorkspaces(ctx context.Context, db store.DB, limit int) ([]WorkspaceSummary, error) {
	access, err := HasRelation(ctx, db, ViewWorkspaceAccess)
	if err != nil {
		return nil, err
	}
	hasAccess, join := "false", ""
	if access {
		hasAccess, join = "coalesce(a.has_access, false)", "LEFT JOIN workspace_access a ON a.workspace_id = w.id"
	}
	rows, err := db.Query(ctx, `
		SELECT w.id, w.credits_balance, coalesce(w.email, ''), `+hasAccess+`,
		       (SELECT count(*) FROM account_links l WHERE l.workspace_id = w.id),
		       (SELECT count(*) FROM team_destinations d WHERE d.workspace_id = w.id)
		  FROM workspaces w `+join+`
		 ORDER BY w.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return store.AppendRows([]WorkspaceSummary{}, rows, func(row pgx.Row) (w WorkspaceSummary, err error) {
		err = row.Scan(&w.ID, &w.CreditsBalance, &w.Email, &w.HasAccess, &w.Accounts, &w.Destinations)
		return w, err
	})
}

// GetProjections reads the projections of the given subscriptions of one
// account, by resource id (absent ones are missing from the map).
func GetProjections(ctx context.Context, db store.DB, provider, account, env string, ids []string) (map[string]*Projection, error) {
	out := make(map[string]*Projection, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `
		SELECT provider, source_account, environment, resource_id, workspace_id, provider_version, state,
		       deleted, access, access_ends_at, write_seq, written_by, fetched_at, updated_at
		  FROM subscription_projection
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND resource_id = ANY($4)`,
		provider, account, env, ids)
	if err != nil {
		return nil, fmt.Errorf("projections of %s: %w", account, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Projection
		var state []byte
		if err := rows.Scan(&p.Provider, &p.Account, &p.Environment, &p.ResourceID, &p.WorkspaceID, &p.Version, &state,
			&p.Deleted, &p.Access, &p.AccessEndsAt, &p.WriteSeq, &p.WrittenBy, &p.FetchedAt, &p.UpdatedAt); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(state, &p.State); err != nil {
			return nil, fmt.Errorf("projection of %s: state: %w", p.ResourceID, err)
		}
		out[p.ResourceID] = &p
	}
	return out, rows.Err()
}
