package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// Workspace is a tenant.
type Workspace struct {
	ID             string
	CreditsBalance int64
	Email          string
}

// GetWorkspace reads a workspace.
func GetWorkspace(ctx context.Context, db DB, id string) (*Workspace, error) {
	var w Workspace
	err := db.QueryRow(ctx, `SELECT id, credits_balance, coalesce(email, '') FROM workspaces WHERE id = $1`, id).
		Scan(&w.ID, &w.CreditsBalance, &w.Email)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", id, interpret(err))
	}
	return &w, nil
}

// SetWorkspaceEmail sets where a workspace's confirmation emails go,
// creating the workspace if it is new.
func SetWorkspaceEmail(ctx context.Context, db DB, id, email string) error {
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
			return false, nil, fmt.Errorf("increment balance: workspace %s: %w", g.WorkspaceID, ErrNotFound)
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
		return false, nil, fmt.Errorf("read existing grant %s: %w", g.InvoiceID, interpret(err))
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
func GetProjection(ctx context.Context, db DB, provider, account, env, id string) (*Projection, error) {
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
		return nil, fmt.Errorf("projection of %s: %w", id, interpret(err))
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
func WorkspaceHasAccess(ctx context.Context, db DB, workspace string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT has_access FROM workspace_access WHERE workspace_id = $1`, workspace).Scan(&ok)
	return ok, interpret(err)
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

// Destination is a team destination for alerts.
type Destination struct {
	ID          int64
	WorkspaceID string
	Name        string
	Kind        string
	Target      string
	// Secret is the signing secret to store (UpsertDestination). Listing
	// leaves it empty for sealed secrets: Store.DestinationSecret opens it.
	Secret string
	// Signed: the destination has a secret.
	Signed  bool
	Enabled bool

	sealed []byte
	keyID  string
}

// ListDestinations returns a workspace's destinations (enabled ones only
// when enabledOnly), by name. Their secrets stay sealed.
func ListDestinations(ctx context.Context, db DB, workspace string, enabledOnly bool) ([]Destination, error) {
	rows, err := db.Query(ctx, `
		SELECT id, workspace_id, name, kind, target, coalesce(secret, ''), secret_sealed, coalesce(secret_key_id, ''), enabled
		  FROM team_destinations
		 WHERE ($1 = '' OR workspace_id = $1) AND (enabled OR NOT $2) ORDER BY workspace_id, name`, workspace, enabledOnly)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Destination, error) {
		var d Destination
		err := r.Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Kind, &d.Target, &d.Secret, &d.sealed, &d.keyID, &d.Enabled)
		d.Signed = d.Secret != "" || d.sealed != nil
		return d, err
	})
}

// DestinationSecret opens a listed destination's signing secret ("" for a
// destination without one).
func (s *Store) DestinationSecret(d Destination) (string, error) {
	if d.sealed == nil {
		return d.Secret, nil
	}
	kr, err := s.keyring()
	if err != nil {
		return "", err
	}
	b, err := kr.Open(d.sealed, d.keyID, destinationContext(d.WorkspaceID, d.Name))
	if err != nil {
		return "", fmt.Errorf("destination %s/%s secret: %w", d.WorkspaceID, d.Name, err)
	}
	return string(b), nil
}

// UpsertDestination adds or replaces a team destination (creating the
// workspace if it is new), its secret sealed with kr.
func UpsertDestination(ctx context.Context, db DB, kr *secretbox.Keyring, d Destination) error {
	var sealed []byte
	var keyID *string
	if d.Secret != "" {
		if kr == nil {
			return secretbox.ErrNoKey
		}
		b, id, err := kr.Seal([]byte(d.Secret), destinationContext(d.WorkspaceID, d.Name))
		if err != nil {
			return err
		}
		sealed, keyID = b, &id
	}
	if _, err := db.Exec(ctx, `INSERT INTO workspaces (id) VALUES ($1) ON CONFLICT DO NOTHING`, d.WorkspaceID); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `
		INSERT INTO team_destinations (workspace_id, name, kind, target, secret, secret_sealed, secret_key_id, enabled)
		VALUES ($1, $2, $3, $4, NULL, $5, $6, $7)
		ON CONFLICT (workspace_id, name) DO UPDATE
		   SET kind = EXCLUDED.kind, target = EXCLUDED.target, secret = NULL, secret_sealed = EXCLUDED.secret_sealed,
		       secret_key_id = EXCLUDED.secret_key_id, enabled = EXCLUDED.enabled`,
		d.WorkspaceID, d.Name, d.Kind, d.Target, sealed, keyID, d.Enabled)
	return err
}

// OutboxIntent is an outbound effect recorded in the business transaction.
type OutboxIntent struct {
	OperationKey string
	Class        string
	Kind         string
	Destination  string
	WorkspaceID  string
	ResourceKey  string
	Payload      any
}

// InsertOutbox records the intent once per operation key and returns its
// id (also when it already existed).
func InsertOutbox(ctx context.Context, tx pgx.Tx, o OutboxIntent) (int64, error) {
	payload, err := json.Marshal(o.Payload)
	if err != nil {
		return 0, err
	}
	var id int64
	err = tx.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (operation_key) DO NOTHING
			RETURNING id
		)
		SELECT id FROM ins UNION ALL SELECT id FROM outbox WHERE operation_key = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
		o.OperationKey, o.Class, o.Kind, o.Destination, o.WorkspaceID, o.ResourceKey, payload).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert outbox %s: %w", o.OperationKey, err)
	}
	return id, nil
}

// APIEndpoint is the endpoint whose API credentials serve an account, and
// the account's workspace there.
type APIEndpoint struct {
	Slug        string
	WorkspaceID string
}

// FindAPIEndpoint finds an endpoint of provider and environment that links
// account and has an API key (reconciliation asks the provider through it),
// the first by slug. Its WorkspaceID is the account's workspace on that
// endpoint: links on several endpoints agree (Link refuses otherwise), but
// older ones may not, so a caller with a projection keeps the projection's.
func FindAPIEndpoint(ctx context.Context, db DB, provider, account, env string) (APIEndpoint, error) {
	var e APIEndpoint
	err := db.QueryRow(ctx, `
		SELECT e.slug, l.workspace_id
		  FROM endpoints e JOIN account_links l ON l.endpoint_slug = e.slug
		 WHERE e.provider = $1 AND l.account = $2 AND e.environment = $3 AND (e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL)
		 ORDER BY e.slug LIMIT 1`, provider, account, env).Scan(&e.Slug, &e.WorkspaceID)
	if err != nil {
		return e, fmt.Errorf("API endpoint for %s %s (%s): %w", provider, account, env, interpret(err))
	}
	return e, nil
}

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
