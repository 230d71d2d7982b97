// Package notifications holds the statements of notifications: the rules
// (their secrets sealed as the other secrets are), where each (rule,
// trigger, subject) stands, every notice decided, and what each trigger
// observes in the inbox, the quarantine, the divergences and the outbox.
// The grouping itself is internal/notify's; storeports runs it in one
// transaction per (rule, trigger, subject).
package notifications

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Rule is a notification rule as stored. Secret is set by Insert's caller
// and by Open only: a webhook's Standard Webhooks secret, or a Slack
// webhook's whole URL.
type Rule struct {
	Name     string   `json:"name"`
	Triggers []string `json:"triggers"`
	Channel  string   `json:"channel"`
	// Target is what is shown of the destination: the email address, the
	// webhook's URL, a Slack webhook's origin.
	Target       string        `json:"target"`
	Secret       string        `json:"-"`
	SecretKeyID  string        `json:"secret_key_id,omitempty"`
	Workspace    string        `json:"workspace,omitempty"`
	Endpoint     string        `json:"endpoint,omitempty"`
	Window       time.Duration `json:"window"`
	PendingAge   time.Duration `json:"pending_age"`
	AllowPrivate bool          `json:"allow_private"`
	Enabled      bool          `json:"enabled"`
	CreatedAt    time.Time     `json:"created_at"`
}

// columns never include the sealed secret: the operator's role cannot read
// it, and only Open needs it.
const columns = `name, triggers, channel, target, coalesce(secret_key_id, ''), coalesce(workspace_id, ''),
	coalesce(endpoint_slug, ''), window_seconds, pending_age_seconds, allow_private, enabled, created_at`

func scan(row pgx.Row) (*Rule, error) {
	var r Rule
	var window, age int
	if err := row.Scan(&r.Name, &r.Triggers, &r.Channel, &r.Target, &r.SecretKeyID, &r.Workspace, &r.Endpoint,
		&window, &age, &r.AllowPrivate, &r.Enabled, &r.CreatedAt); err != nil {
		return nil, store.Interpret(err)
	}
	r.Window, r.PendingAge = time.Duration(window)*time.Second, time.Duration(age)*time.Second
	return &r, nil
}

// Insert adds r, its secret (when it has one) sealed with kr. A rule of the
// same name is store.ErrConflict.
func Insert(ctx context.Context, db store.DB, kr *secretbox.Keyring, r Rule) error {
	var sealed []byte
	var keyID *string
	if r.Secret != "" {
		if kr == nil {
			return secretbox.ErrNoKey
		}
		b, id, err := kr.Seal([]byte(r.Secret), store.NotificationContext(r.Name))
		if err != nil {
			return err
		}
		sealed, keyID = b, &id
	}
	_, err := db.Exec(ctx, `
		INSERT INTO notification_rules (name, triggers, channel, target, secret_sealed, secret_key_id, workspace_id,
			endpoint_slug, window_seconds, pending_age_seconds, allow_private, enabled)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, $10, $11, $12)`,
		r.Name, r.Triggers, r.Channel, r.Target, sealed, keyID, r.Workspace, r.Endpoint,
		int(r.Window/time.Second), int(r.PendingAge/time.Second), r.AllowPrivate, r.Enabled)
	if store.IsUniqueViolation(err) {
		return fmt.Errorf("notification rule %s: %w", r.Name, store.ErrConflict)
	}
	return err
}

// Delete removes a rule and its states (its notices stay, with their
// outbox rows).
func Delete(ctx context.Context, db store.DB, name string) error {
	tag, err := db.Exec(ctx, `DELETE FROM notification_rules WHERE name = $1`, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("notification rule %s: %w", name, fault.ErrNotFound)
	}
	return nil
}

// Get reads a rule without its secret.
func Get(ctx context.Context, db store.DB, name string) (*Rule, error) {
	r, err := scan(db.QueryRow(ctx, `SELECT `+columns+` FROM notification_rules WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("notification rule %s: %w", name, err)
	}
	return r, nil
}

// Open reads a rule with its secret opened (the worker and the test send
// with it).
func Open(ctx context.Context, s *store.Store, name string) (*Rule, error) {
	r, err := Get(ctx, s.Pool, name)
	if err != nil {
		return nil, err
	}
	var sealed []byte
	if err := s.Pool.QueryRow(ctx, `SELECT secret_sealed FROM notification_rules WHERE name = $1`, name).Scan(&sealed); err != nil {
		return nil, fmt.Errorf("notification rule %s: %w", name, store.Interpret(err))
	}
	if sealed == nil {
		return r, nil
	}
	kr, err := s.Keyring()
	if err != nil {
		return nil, err
	}
	b, err := kr.Open(sealed, r.SecretKeyID, store.NotificationContext(r.Name))
	if err != nil {
		return nil, fmt.Errorf("notification rule %s secret: %w", r.Name, err)
	}
	r.Secret = string(b)
	return r, nil
}

// List reads every rule without its secret, by name (enabled ones only
// when enabledOnly).
func List(ctx context.Context, db store.DB, enabledOnly bool) ([]Rule, error) {
	rows, err := db.Query(ctx, `SELECT `+columns+` FROM notification_rules WHERE enabled OR NOT $1 ORDER BY name`, enabledOnly)
	if err != nil {
		return nil, err
	}
	return store.AppendRows([]Rule{}, rows, store.ByValue(scan))
}

// ScopeExists reports whether workspace and endpoint exist ("" exists: no
// scope), for a rule's validation.
func ScopeExists(ctx context.Context, db store.DB, workspace, endpoint string) (workspaceFound, endpointFound bool, err error) {
	err = db.QueryRow(ctx, `
		SELECT $1 = '' OR EXISTS (SELECT 1 FROM workspaces WHERE id = $1),
		       $2 = '' OR EXISTS (SELECT 1 FROM endpoints WHERE slug = $2)`, workspace, endpoint).Scan(&workspaceFound, &endpointFound)
	return workspaceFound, endpointFound, err
}
