package endpoints

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// Endpoint is a registered intake URL with what verifying and mapping need.
type Endpoint struct {
	Slug        string
	Provider    string
	Environment string
	// Account is the endpoint's own account; "" means the only linked account.
	Account    string
	APIBaseURL string
	// APIKey is opened by GetEndpoint, GetProviderEndpoint and
	// ListEndpoints; the intake's GetIntakeEndpoint never reads it (nor may
	// its role). HasAPIKey says whether one is set.
	APIKey    string
	HasAPIKey bool
	// APIKeyFingerprint is the API key's display fingerprint as stored
	// (keyed, store.DisplayFingerprint); "" without a key or before one
	// was computed.
	APIKeyFingerprint string
	Settings          keys.EndpointSettings
	Secrets           []keys.Secret
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
	// AllowCustomAPIHost lets APIBaseURL name a host other than the
	// provider's official API (ops checks it and audits it; the store
	// does not look at it).
	AllowCustomAPIHost bool
}

// InsertEndpoint registers an endpoint and its secrets in one transaction,
// the secrets and the API key sealed with s.Keys.
func InsertEndpoint(ctx context.Context, s *store.Store, e NewEndpoint) error {
	settings, err := json.Marshal(e.Settings)
	if err != nil {
		return err
	}
	kr, err := s.Keyring()
	if err != nil {
		return err
	}
	var apiKey []byte
	var apiKeyID, apiKeyFP *string
	if e.APIKey != "" {
		sealed, id, err := kr.Seal([]byte(e.APIKey), store.APIKeyContext(e.Slug))
		if err != nil {
			return err
		}
		fp := store.DisplayFingerprint(kr, store.DisplayAPIKey, e.APIKey)
		apiKey, apiKeyID, apiKeyFP = sealed, &id, &fp
	}
	return s.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO endpoints (slug, provider, environment, account, api_base_url, api_key_sealed, api_key_key_id, settings,
			                       api_key_fingerprint)
			VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6, $7, $8, $9)`,
			e.Slug, e.Provider, e.Environment, e.Account, e.APIBaseURL, apiKey, apiKeyID, settings, apiKeyFP)
		if err != nil {
			if store.IsUniqueViolation(err) {
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
func InsertSecret(ctx context.Context, db store.DB, kr *secretbox.Keyring, slug, secret string, accounts []string) (int64, error) {
	if kr == nil {
		return 0, secretbox.ErrNoKey
	}
	sealed, keyID, err := kr.Seal([]byte(secret), store.SecretContext(slug))
	if err != nil {
		return 0, err
	}
	var id int64
	err = db.QueryRow(ctx, `
		INSERT INTO endpoint_secrets (endpoint_slug, secret_sealed, secret_key_id, secret_fingerprint, accounts, display_fingerprint)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (endpoint_slug, secret_fingerprint) DO UPDATE SET secret_fingerprint = EXCLUDED.secret_fingerprint
		RETURNING id`, slug, sealed, keyID, store.SecretFingerprint(kr, secret), accountsArg(accounts),
		store.DisplayFingerprint(kr, store.DisplaySecret, secret)).Scan(&id)
	if store.IsForeignKeyViolation(err) {
		return 0, fmt.Errorf("endpoint %q: %w", slug, fault.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("insert secret: %w", err)
	}
	return id, nil
}

// BindSecret sets the source accounts secret id of an endpoint may sign for
// (empty: any linked account).
func BindSecret(ctx context.Context, s *store.Store, slug string, id int64, accounts []string) error {
	tag, err := s.Pool.Exec(ctx, `UPDATE endpoint_secrets SET accounts = $3 WHERE endpoint_slug = $1 AND id = $2`,
		slug, id, accountsArg(accounts))
	if err != nil {
		return fmt.Errorf("bind secret %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("secret %d of endpoint %q: %w", id, slug, fault.ErrNotFound)
	}
	return nil
}

// SetAPIKey replaces (or, with "", removes) an endpoint's provider API key.
func SetAPIKey(ctx context.Context, s *store.Store, slug, apiKey string) error {
	var sealed []byte
	var keyID, fp *string
	if apiKey != "" {
		kr, err := s.Keyring()
		if err != nil {
			return err
		}
		b, id, err := kr.Seal([]byte(apiKey), store.APIKeyContext(slug))
		if err != nil {
			return err
		}
		f := store.DisplayFingerprint(kr, store.DisplayAPIKey, apiKey)
		sealed, keyID, fp = b, &id, &f
	}
	tag, err := s.Pool.Exec(ctx, `UPDATE endpoints SET api_key = NULL, api_key_sealed = $2, api_key_key_id = $3, api_key_fingerprint = $4
		 WHERE slug = $1`, slug, sealed, keyID, fp)
	if err != nil {
		return fmt.Errorf("set API key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, fault.ErrNotFound)
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
func DeleteSecret(ctx context.Context, s *store.Store, slug string, id int64) error {
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
			return fmt.Errorf("secret %d of endpoint %q: %w", id, slug, fault.ErrNotFound)
		}
		if n <= 1 {
			return fmt.Errorf("secret %d is the last secret of endpoint %q: add its replacement first", id, slug)
		}
		return nil
	})
}

// LinkResult says what a link did to the endpoint's routing.
type LinkResult struct {
	// OwnAccount is the account of the endpoint's events that name none
	// ("" when they have none and are quarantined as unknown_account).
	OwnAccount string
	// OwnAccountImplicit: the endpoint names no own account, so OwnAccount
	// is its single linked account (a second link pins it, see
	// PinnedOwnAccount).
	OwnAccountImplicit bool
	// PinnedOwnAccount: this was the endpoint's second link and the
	// endpoint named no own account, so the first link, which received the
	// events that name no account, is now recorded as its own account: they
	// keep going there instead of becoming unknown_account.
	PinnedOwnAccount bool
	// PreviousWorkspace is the workspace the account was linked to on this
	// endpoint before ("" for a new link).
	PreviousWorkspace string
}

// LinkAccount is Link without its result.
func LinkAccount(ctx context.Context, s *store.Store, slug, account, workspace string) error {
	_, err := Link(ctx, s, slug, account, workspace)
	return err
}

// Link maps a source account of an endpoint to a workspace, creating the
// workspace if it is new. Relinking moves the account. One account of a
// provider and environment has one workspace: a link that would give it
// another one than it has on a sibling endpoint is refused with what to do
// (projections and grants are keyed by account, so the tenant would depend
// on the endpoint asked). A second link on an endpoint that names no own
// account pins the first as its own account (LinkResult.PinnedOwnAccount).
func Link(ctx context.Context, s *store.Store, slug, account, workspace string) (LinkResult, error) {
	var res LinkResult
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		var provider, env, own string
		err := tx.QueryRow(ctx, `SELECT provider, environment, coalesce(account, '') FROM endpoints WHERE slug = $1 FOR UPDATE`,
			slug).Scan(&provider, &env, &own)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", slug, store.Interpret(err))
		}
		// Serialize links of this account across endpoints, so two
		// concurrent links cannot each miss the other's workspace.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			"account_links/"+provider+"/"+env+"/"+account); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT l.endpoint_slug, l.workspace_id FROM account_links l JOIN endpoints e ON e.slug = l.endpoint_slug
			 WHERE e.provider = $1 AND e.environment = $2 AND l.account = $3 AND l.endpoint_slug <> $4 AND l.workspace_id <> $5
			 ORDER BY l.endpoint_slug`, provider, env, account, slug, workspace)
		if err != nil {
			return err
		}
		others, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Slug, Workspace string }])
		if err != nil {
			return err
		}
		if len(others) > 0 {
			o := others[0]
			unlink := make([]string, len(others))
			for i, x := range others {
				unlink[i] = "hookinbox endpoints unlink --slug " + x.Slug + " --account " + account
			}
			return fmt.Errorf("account %s is already linked to workspace %s on endpoint %s (%s, %s): one account has one workspace, "+
				"or its projections and grants would change tenant with the endpoint that reports them. Link it to the same "+
				"workspace (hookinbox endpoints link --slug %s --account %s --workspace %s), or move it everywhere: %s, "+
				"then link it here and there again", account, o.Workspace, o.Slug, provider, env, slug, account, o.Workspace,
				strings.Join(unlink, "; "))
		}
		var links []string
		var previous *string
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(array_agg(account ORDER BY account), '{}'),
			       (SELECT workspace_id FROM account_links WHERE endpoint_slug = $1 AND account = $2)
			  FROM account_links WHERE endpoint_slug = $1`, slug, account).Scan(&links, &previous); err != nil {
			return err
		}
		if previous != nil && *previous != workspace {
			res.PreviousWorkspace = *previous
		}
		if own == "" && len(links) == 1 && links[0] != account {
			// The single link received the events that name no account:
			// keep them there rather than make them unknown.
			if _, err := tx.Exec(ctx, `UPDATE endpoints SET account = $2 WHERE slug = $1`, slug, links[0]); err != nil {
				return fmt.Errorf("pin own account: %w", err)
			}
			own, res.PinnedOwnAccount = links[0], true
		}
		if _, err := tx.Exec(ctx, `INSERT INTO workspaces (id) VALUES ($1) ON CONFLICT DO NOTHING`, workspace); err != nil {
			return fmt.Errorf("create workspace: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO account_links (endpoint_slug, account, workspace_id) VALUES ($1, $2, $3)
			ON CONFLICT (endpoint_slug, account) DO UPDATE SET workspace_id = EXCLUDED.workspace_id`,
			slug, account, workspace); err != nil {
			return fmt.Errorf("link account: %w", err)
		}
		res.OwnAccount = own
		if own == "" && (len(links) == 0 || (len(links) == 1 && links[0] == account)) {
			res.OwnAccount, res.OwnAccountImplicit = account, true
		}
		return nil
	})
	return res, err
}

// SetOwnAccount names the endpoint's own account: the source account of
// its events that name none.
func SetOwnAccount(ctx context.Context, s *store.Store, slug, account string) error {
	tag, err := s.Pool.Exec(ctx, `UPDATE endpoints SET account = NULLIF($2, '') WHERE slug = $1`, slug, account)
	if err != nil {
		return fmt.Errorf("set own account of %q: %w", slug, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, fault.ErrNotFound)
	}
	return nil
}

// UnlinkAccount removes an account mapping.
func UnlinkAccount(ctx context.Context, s *store.Store, slug, account string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM account_links WHERE endpoint_slug = $1 AND account = $2`, slug, account)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("link %s of endpoint %q: %w", account, slug, fault.ErrNotFound)
	}
	return nil
}

// DeleteEndpoint removes an endpoint, its secrets and links. Inbox rows that
// arrived through it stay.
func DeleteEndpoint(ctx context.Context, s *store.Store, slug string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM endpoints WHERE slug = $1`, slug)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, fault.ErrNotFound)
	}
	return nil
}

// endpointColumns is what scanEndpoint reads. The intake's role may read
// no API key column (plain or sealed, nor api_base_url), the worker's may
// not read endpoint_secrets, and the console's and the operator's read no
// secret at all, so each asks for its part only (read); the rest scans
// empty.
func endpointColumns(read reading) string {
	api := `'', NULL::text, NULL::bytea, NULL::text, false, NULL::text`
	switch {
	case read.apiKey:
		api = `coalesce(e.api_base_url, ''), e.api_key, e.api_key_sealed, e.api_key_key_id,
	(e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL), e.api_key_fingerprint`
	case read.apiMeta:
		// api_key_present: a plain key left from before sealing is a key
		// too (migration 0021), which the console's role may not read.
		api = `coalesce(e.api_base_url, ''), NULL::text, NULL::bytea, e.api_key_key_id, e.api_key_present,
	e.api_key_fingerprint`
	}
	signingJSON := `'[]'::json`
	switch {
	case read.secrets:
		signingJSON = `coalesce((SELECT json_agg(json_build_object('id', s.id, 'secret', s.secret, 'sealed', encode(s.secret_sealed, 'hex'),
	          'key_id', s.secret_key_id, 'accounts', s.accounts, 'created_at', s.created_at, 'fingerprint', s.display_fingerprint)
	          ORDER BY s.id) FROM endpoint_secrets s WHERE s.endpoint_slug = e.slug), '[]')`
	case read.secretMeta:
		signingJSON = `coalesce((SELECT json_agg(json_build_object('id', s.id, 'accounts', s.accounts, 'created_at', s.created_at,
	          'fingerprint', s.display_fingerprint) ORDER BY s.id) FROM endpoint_secrets s WHERE s.endpoint_slug = e.slug), '[]')`
	}
	return `e.slug, e.provider, e.environment, coalesce(e.account, ''), ` + api + `, e.settings, e.created_at,
	` + signingJSON + `,
	coalesce((SELECT json_object_agg(l.account, l.workspace_id) FROM account_links l WHERE l.endpoint_slug = e.slug), '{}')`
}

// reading says what of an endpoint a query reads: the API key (opened),
// or only whether there is one, its base URL and fingerprint (apiMeta);
// the signing secrets (opened), or only their ids, accounts and
// fingerprints (secretMeta).
type reading struct {
	apiKey, apiMeta, secrets, secretMeta bool
}

type secretRow struct {
	ID          int64     `json:"id"`
	Secret      *string   `json:"secret"`
	Sealed      *string   `json:"sealed"`
	KeyID       *string   `json:"key_id"`
	Accounts    []string  `json:"accounts"`
	CreatedAt   time.Time `json:"created_at"`
	Fingerprint *string   `json:"fingerprint"`
}

// scanEndpoint reads one endpoint row, opening with kr what read asks
// for: its secrets and, with read.apiKey, its API key.
func scanEndpoint(row pgx.Row, kr *secretbox.Keyring, read reading) (*Endpoint, error) {
	var e Endpoint
	var settings, secrets, links []byte
	var apiPlain, apiKeyID, apiFP *string
	var apiSealed []byte
	if err := row.Scan(&e.Slug, &e.Provider, &e.Environment, &e.Account, &e.APIBaseURL, &apiPlain, &apiSealed, &apiKeyID,
		&e.HasAPIKey, &apiFP, &settings, &e.CreatedAt, &secrets, &links); err != nil {
		return nil, store.Interpret(err)
	}
	e.APIKeyFingerprint = inbox.Deref(apiFP)
	openAPIKey := read.apiKey
	if err := json.Unmarshal(settings, &e.Settings); err != nil {
		return nil, fmt.Errorf("endpoint %s settings: %w", e.Slug, err)
	}
	if openAPIKey {
		v, err := store.OpenValue(kr, apiPlain, apiSealed, apiKeyID, store.APIKeyContext(e.Slug))
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
		if !read.secrets {
			e.Secrets = append(e.Secrets, keys.Secret{ID: r.ID, Accounts: r.Accounts, CreatedAt: r.CreatedAt,
				Fingerprint: inbox.Deref(r.Fingerprint)})
			continue
		}
		var sealed []byte
		if r.Sealed != nil {
			b, err := hex.DecodeString(*r.Sealed)
			if err != nil {
				return nil, fmt.Errorf("endpoint %s secret #%d: %w", e.Slug, r.ID, err)
			}
			sealed = b
		}
		v, err := store.OpenValue(kr, r.Secret, sealed, r.KeyID, store.SecretContext(e.Slug))
		if err != nil {
			return nil, fmt.Errorf("endpoint %s secret #%d: %w", e.Slug, r.ID, err)
		}
		e.Secrets = append(e.Secrets, keys.Secret{ID: r.ID, Value: v, Accounts: r.Accounts, CreatedAt: r.CreatedAt,
			Fingerprint: inbox.Deref(r.Fingerprint)})
	}
	if err := json.Unmarshal(links, &e.Links); err != nil {
		return nil, fmt.Errorf("endpoint %s links: %w", e.Slug, err)
	}
	return &e, nil
}

// GetEndpoint loads one endpoint with its secrets, links and API
// credentials in one query (the owner's CLI).
func GetEndpoint(ctx context.Context, s *store.Store, slug string) (*Endpoint, error) {
	return getEndpoint(ctx, s, slug, reading{apiKey: true, secrets: true})
}

// GetIntakeEndpoint loads what verifying and mapping a delivery needs: the
// endpoint with its signing secrets (opened with s.Keys) and links, and
// never its API credentials: its query does not name the API key columns
// (plain or sealed), which the intake's role cannot read, so the intake
// never holds a provider API key.
func GetIntakeEndpoint(ctx context.Context, s *store.Store, slug string) (*Endpoint, error) {
	return getEndpoint(ctx, s, slug, reading{secrets: true})
}

// GetProviderEndpoint loads what calling the provider API needs: the
// endpoint with its API credentials (opened with s.Keys) and links, without
// its signing secrets (the worker's role cannot read endpoint_secrets).
func GetProviderEndpoint(ctx context.Context, s *store.Store, slug string) (*Endpoint, error) {
	return getEndpoint(ctx, s, slug, reading{apiKey: true})
}

// GetEndpointView loads an endpoint as shown: its settings, links, whether
// it has an API key, and its secrets' ids, accounts and fingerprints, never
// a secret's or the API key's value (nothing is opened: the console's and
// the operator's roles read no secret column).
func GetEndpointView(ctx context.Context, s *store.Store, slug string) (*Endpoint, error) {
	return getEndpoint(ctx, s, slug, reading{apiMeta: true, secretMeta: true})
}

func getEndpoint(ctx context.Context, s *store.Store, slug string, read reading) (*Endpoint, error) {
	e, err := scanEndpoint(s.Pool.QueryRow(ctx, `SELECT `+endpointColumns(read)+` FROM endpoints e WHERE e.slug = $1`, slug),
		s.Keys, read)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", slug, err)
	}
	return e, nil
}

// ListEndpoints lists every endpoint as shown (GetEndpointView), by slug:
// no secret is opened.
func ListEndpoints(ctx context.Context, s *store.Store) ([]*Endpoint, error) {
	read := reading{apiMeta: true, secretMeta: true}
	rows, err := s.Pool.Query(ctx, `SELECT `+endpointColumns(read)+` FROM endpoints e ORDER BY e.slug`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows, s.Keys, read)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ListSlugs lists every registered endpoint's slug: what the intake
// preloads, so a delivery to a slug nobody registered costs no query.
func ListSlugs(ctx context.Context, s *store.Store) ([]string, error) {
	rows, err := s.Pool.Query(ctx, `SELECT slug FROM endpoints`)
	if err != nil {
		return nil, fmt.Errorf("list endpoint slugs: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
