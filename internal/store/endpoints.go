package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// Endpoint is a registered intake URL with what verifying and mapping need.
type Endpoint struct {
	Slug        string
	Provider    string
	Environment string
	// Account is the endpoint's own account; "" means the only linked account.
	Account    string
	APIBaseURL string
	// APIKey is opened only by GetEndpoint: the intake's GetIntakeEndpoint
	// and ListEndpoints never read it (HasAPIKey says whether one is set).
	APIKey    string
	HasAPIKey bool
	Settings  keys.EndpointSettings
	Secrets   []keys.Secret
	// Links maps a verified source account to its workspace.
	Links     map[string]string
	CreatedAt time.Time
}

// OwnAccount is the source account of events that do not name one: the
// configured account, else the single linked account.
func (e *Endpoint) OwnAccount() (string, bool) {
	if e.Account != "" {
		return e.Account, true
	}
	if len(e.Links) == 1 {
		for a := range e.Links {
			return a, true
		}
	}
	return "", false
}

// NewEndpoint is what `endpoints add` registers.
type NewEndpoint struct {
	Slug        string
	Provider    string
	Environment string
	Account     string
	APIBaseURL  string
	APIKey      string
	Settings    keys.EndpointSettings
	Secrets     []string
	// SecretAccounts binds every secret in Secrets to these source accounts
	// (empty: any linked account).
	SecretAccounts []string
}

// InsertEndpoint registers an endpoint and its secrets in one transaction,
// the secrets and the API key sealed with s.Keys.
func (s *Store) InsertEndpoint(ctx context.Context, e NewEndpoint) error {
	settings, err := json.Marshal(e.Settings)
	if err != nil {
		return err
	}
	kr, err := s.keyring()
	if err != nil {
		return err
	}
	var apiKey []byte
	var apiKeyID *string
	if e.APIKey != "" {
		sealed, id, err := kr.Seal([]byte(e.APIKey), apiKeyContext(e.Slug))
		if err != nil {
			return err
		}
		apiKey, apiKeyID = sealed, &id
	}
	return s.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO endpoints (slug, provider, environment, account, api_base_url, api_key_sealed, api_key_key_id, settings)
			VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6, $7, $8)`,
			e.Slug, e.Provider, e.Environment, e.Account, e.APIBaseURL, apiKey, apiKeyID, settings)
		if err != nil {
			if IsUniqueViolation(err) {
				return fmt.Errorf("endpoint %q already exists", e.Slug)
			}
			return fmt.Errorf("insert endpoint: %w", err)
		}
		for _, sec := range e.Secrets {
			if _, err := InsertSecret(ctx, tx, kr, e.Slug, sec, e.SecretAccounts); err != nil {
				return err
			}
		}
		return nil
	})
}

// InsertSecret adds a signing secret to an endpoint (rotation: add the new
// one, let senders switch, then remove the old one), sealed with kr and
// bound to accounts (empty: any linked account). The same secret added
// again is the same row: its id is returned and its accounts are left as
// they were (BindSecret changes them).
func InsertSecret(ctx context.Context, db DB, kr *secretbox.Keyring, slug, secret string, accounts []string) (int64, error) {
	if kr == nil {
		return 0, secretbox.ErrNoKey
	}
	sealed, keyID, err := kr.Seal([]byte(secret), secretContext(slug))
	if err != nil {
		return 0, err
	}
	var id int64
	err = db.QueryRow(ctx, `
		INSERT INTO endpoint_secrets (endpoint_slug, secret_sealed, secret_key_id, secret_fingerprint, accounts)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (endpoint_slug, secret_fingerprint) DO UPDATE SET secret_fingerprint = EXCLUDED.secret_fingerprint
		RETURNING id`, slug, sealed, keyID, secretFingerprint(kr, secret), accountsArg(accounts)).Scan(&id)
	if IsForeignKeyViolation(err) {
		return 0, fmt.Errorf("endpoint %q: %w", slug, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("insert secret: %w", err)
	}
	return id, nil
}

// BindSecret sets the source accounts secret id of an endpoint may sign for
// (empty: any linked account).
func (s *Store) BindSecret(ctx context.Context, slug string, id int64, accounts []string) error {
	tag, err := s.Pool.Exec(ctx, `UPDATE endpoint_secrets SET accounts = $3 WHERE endpoint_slug = $1 AND id = $2`,
		slug, id, accountsArg(accounts))
	if err != nil {
		return fmt.Errorf("bind secret %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("secret %d of endpoint %q: %w", id, slug, ErrNotFound)
	}
	return nil
}

// SetAPIKey replaces (or, with "", removes) an endpoint's provider API key.
func (s *Store) SetAPIKey(ctx context.Context, slug, apiKey string) error {
	var sealed []byte
	var keyID *string
	if apiKey != "" {
		kr, err := s.keyring()
		if err != nil {
			return err
		}
		b, id, err := kr.Seal([]byte(apiKey), apiKeyContext(slug))
		if err != nil {
			return err
		}
		sealed, keyID = b, &id
	}
	tag, err := s.Pool.Exec(ctx, `UPDATE endpoints SET api_key = NULL, api_key_sealed = $2, api_key_key_id = $3 WHERE slug = $1`,
		slug, sealed, keyID)
	if err != nil {
		return fmt.Errorf("set API key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, ErrNotFound)
	}
	return nil
}

func accountsArg(accounts []string) []string {
	if len(accounts) == 0 {
		return nil
	}
	return accounts
}

// DeleteSecret removes secret id from an endpoint. The last secret cannot be
// removed: an endpoint without one would reject every delivery.
func (s *Store) DeleteSecret(ctx context.Context, slug string, id int64) error {
	return s.Tx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM endpoint_secrets WHERE endpoint_slug = $1`, slug).Scan(&n); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM endpoint_secrets WHERE endpoint_slug = $1 AND id = $2`, slug, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("secret %d of endpoint %q: %w", id, slug, ErrNotFound)
		}
		if n <= 1 {
			return fmt.Errorf("secret %d is the last secret of endpoint %q: add its replacement first", id, slug)
		}
		return nil
	})
}

// LinkAccount maps a source account of an endpoint to a workspace, creating
// the workspace if it is new. Relinking moves the account.
func (s *Store) LinkAccount(ctx context.Context, slug, account, workspace string) error {
	return s.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO workspaces (id) VALUES ($1) ON CONFLICT DO NOTHING`, workspace); err != nil {
			return fmt.Errorf("create workspace: %w", err)
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO account_links (endpoint_slug, account, workspace_id) VALUES ($1, $2, $3)
			ON CONFLICT (endpoint_slug, account) DO UPDATE SET workspace_id = EXCLUDED.workspace_id`,
			slug, account, workspace)
		if IsForeignKeyViolation(err) {
			return fmt.Errorf("endpoint %q: %w", slug, ErrNotFound)
		}
		return err
	})
}

// UnlinkAccount removes an account mapping.
func (s *Store) UnlinkAccount(ctx context.Context, slug, account string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM account_links WHERE endpoint_slug = $1 AND account = $2`, slug, account)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("link %s of endpoint %q: %w", account, slug, ErrNotFound)
	}
	return nil
}

// DeleteEndpoint removes an endpoint, its secrets and links. Inbox rows that
// arrived through it stay.
func (s *Store) DeleteEndpoint(ctx context.Context, slug string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM endpoints WHERE slug = $1`, slug)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, ErrNotFound)
	}
	return nil
}

// endpointQuery selects endpoints with their secrets and links in one
// query. Without withAPIKey it never names the API key columns, so a
// database role without the privilege to read them can still run it.
func endpointQuery(withAPIKey bool, rest string) string {
	apiKey := `NULL::text, NULL::bytea, NULL::text, false`
	if withAPIKey {
		apiKey = `e.api_key, e.api_key_sealed, e.api_key_key_id, (e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL)`
	}
	return `SELECT e.slug, e.provider, e.environment, coalesce(e.account, ''), coalesce(e.api_base_url, ''),
	` + apiKey + `, e.settings, e.created_at,
	coalesce((SELECT json_agg(json_build_object('id', s.id, 'secret', s.secret, 'sealed', encode(s.secret_sealed, 'hex'),
	          'key_id', s.secret_key_id, 'accounts', s.accounts, 'created_at', s.created_at) ORDER BY s.id)
	          FROM endpoint_secrets s WHERE s.endpoint_slug = e.slug), '[]'),
	coalesce((SELECT json_object_agg(l.account, l.workspace_id) FROM account_links l WHERE l.endpoint_slug = e.slug), '{}')
	FROM endpoints e ` + rest
}

type secretRow struct {
	ID        int64     `json:"id"`
	Secret    *string   `json:"secret"`
	Sealed    *string   `json:"sealed"`
	KeyID     *string   `json:"key_id"`
	Accounts  []string  `json:"accounts"`
	CreatedAt time.Time `json:"created_at"`
}

// scanEndpoint reads one endpoint row, opening its secrets with kr and,
// when openAPIKey, its API key.
func scanEndpoint(row pgx.Row, kr *secretbox.Keyring, openAPIKey bool) (*Endpoint, error) {
	var e Endpoint
	var settings, secrets, links []byte
	var apiPlain, apiKeyID *string
	var apiSealed []byte
	if err := row.Scan(&e.Slug, &e.Provider, &e.Environment, &e.Account, &e.APIBaseURL, &apiPlain, &apiSealed, &apiKeyID,
		&e.HasAPIKey, &settings, &e.CreatedAt, &secrets, &links); err != nil {
		return nil, interpret(err)
	}
	if err := json.Unmarshal(settings, &e.Settings); err != nil {
		return nil, fmt.Errorf("endpoint %s settings: %w", e.Slug, err)
	}
	if openAPIKey {
		v, err := openValue(kr, apiPlain, apiSealed, apiKeyID, apiKeyContext(e.Slug))
		if err != nil {
			return nil, fmt.Errorf("endpoint %s API key: %w", e.Slug, err)
		}
		e.APIKey = v
	}
	var rows []secretRow
	if err := json.Unmarshal(secrets, &rows); err != nil {
		return nil, fmt.Errorf("endpoint %s secrets: %w", e.Slug, err)
	}
	for _, r := range rows {
		var sealed []byte
		if r.Sealed != nil {
			b, err := hex.DecodeString(*r.Sealed)
			if err != nil {
				return nil, fmt.Errorf("endpoint %s secret #%d: %w", e.Slug, r.ID, err)
			}
			sealed = b
		}
		v, err := openValue(kr, r.Secret, sealed, r.KeyID, secretContext(e.Slug))
		if err != nil {
			return nil, fmt.Errorf("endpoint %s secret #%d: %w", e.Slug, r.ID, err)
		}
		e.Secrets = append(e.Secrets, keys.Secret{ID: r.ID, Value: v, Accounts: r.Accounts, CreatedAt: r.CreatedAt})
	}
	if err := json.Unmarshal(links, &e.Links); err != nil {
		return nil, fmt.Errorf("endpoint %s links: %w", e.Slug, err)
	}
	return &e, nil
}

// GetEndpoint loads one endpoint with its secrets, links and API key in one
// query: what fetching from the provider needs.
func (s *Store) GetEndpoint(ctx context.Context, slug string) (*Endpoint, error) {
	e, err := scanEndpoint(s.Pool.QueryRow(ctx, endpointQuery(true, `WHERE e.slug = $1`), slug), s.Keys, true)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", slug, err)
	}
	return e, nil
}

// GetIntakeEndpoint loads what admitting a delivery needs (settings,
// secrets, links) and never the API key: its query does not name the key's
// columns, so the intake never holds a provider API key.
func (s *Store) GetIntakeEndpoint(ctx context.Context, slug string) (*Endpoint, error) {
	e, err := scanEndpoint(s.Pool.QueryRow(ctx, endpointQuery(false, `WHERE e.slug = $1`), slug), s.Keys, false)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", slug, err)
	}
	return e, nil
}

// ListEndpoints loads every endpoint, by slug, with its secrets; API keys
// are not opened (HasAPIKey says which have one).
func (s *Store) ListEndpoints(ctx context.Context) ([]*Endpoint, error) {
	rows, err := s.Pool.Query(ctx, endpointQuery(true, `ORDER BY e.slug`))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows, s.Keys, false)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
