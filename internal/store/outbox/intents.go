package outbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
)

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
func ListDestinations(ctx context.Context, db store.DB, workspace string, enabledOnly bool) ([]Destination, error) {
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

// ListDestinationViews returns a workspace's destinations (all when
// workspace is "") as shown: without their secrets, plain or sealed (the
// console's and the operator's roles read neither); Signed says whether a
// sealed one is kept.
func ListDestinationViews(ctx context.Context, db store.DB, workspace string) ([]Destination, error) {
	rows, err := db.Query(ctx, `
		SELECT id, workspace_id, name, kind, target, secret_key_id IS NOT NULL, enabled
		  FROM team_destinations
		 WHERE ($1 = '' OR workspace_id = $1) ORDER BY workspace_id, name`, workspace)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Destination, error) {
		var d Destination
		err := r.Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Kind, &d.Target, &d.Signed, &d.Enabled)
		return d, err
	})
}

// DestinationSecret opens a listed destination's signing secret ("" for a
// destination without one).
func DestinationSecret(s *store.Store, d Destination) (string, error) {
	if d.sealed == nil {
		return d.Secret, nil
	}
	kr, err := s.Keyring()
	if err != nil {
		return "", err
	}
	b, err := kr.Open(d.sealed, d.keyID, store.DestinationContext(d.WorkspaceID, d.Name))
	if err != nil {
		return "", fmt.Errorf("destination %s/%s secret: %w", d.WorkspaceID, d.Name, err)
	}
	return string(b), nil
}

// UpsertDestination adds or replaces a team destination (creating the
// workspace if it is new), its secret sealed with kr.
func UpsertDestination(ctx context.Context, db store.DB, kr *secretbox.Keyring, d Destination) error {
	var sealed []byte
	var keyID *string
	if d.Secret != "" {
		if kr == nil {
			return secretbox.ErrNoKey
		}
		b, id, err := kr.Seal([]byte(d.Secret), store.DestinationContext(d.WorkspaceID, d.Name))
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

// FindOutboxByOperation reads the outbox row of an operation key, without
// its payload.
func FindOutboxByOperation(ctx context.Context, db store.DB, operationKey string) (*OutboxRow, error) {
	o, err := scanOutbox(db.QueryRow(ctx, `SELECT `+noPayload+` FROM outbox WHERE operation_key = $1`, operationKey))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w", operationKey, err)
	}
	return o, nil
}

// ResourceOutbox lists the outbox rows a resource's workflow dispatches,
// without their payloads.
func ResourceOutbox(ctx context.Context, db store.DB, r keys.Resource) ([]*OutboxRow, error) {
	rows, err := db.Query(ctx, `SELECT `+noPayload+` FROM outbox WHERE resource_key = $1 ORDER BY id LIMIT 200`, r.String())
	if err != nil {
		return nil, fmt.Errorf("outbox of %s: %w", r, err)
	}
	return store.AppendRows([]*OutboxRow{}, rows, scanOutbox)
}
