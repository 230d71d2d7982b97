package endpoints

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

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
func FindAPIEndpoint(ctx context.Context, db store.DB, provider, account, env string) (APIEndpoint, error) {
	var e APIEndpoint
	err := db.QueryRow(ctx, `
		SELECT e.slug, l.workspace_id
		  FROM endpoints e JOIN account_links l ON l.endpoint_slug = e.slug
		 WHERE e.provider = $1 AND l.account = $2 AND e.environment = $3 AND (e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL)
		 ORDER BY e.slug LIMIT 1`, provider, account, env).Scan(&e.Slug, &e.WorkspaceID)
	if err != nil {
		return e, fmt.Errorf("API endpoint for %s %s (%s): %w", provider, account, env, store.Interpret(err))
	}
	return e, nil
}

// EndpointUpdate changes an endpoint's fields; nil fields stay. An empty
// string clears an optional field (account, API base URL, API key).
type EndpointUpdate struct {
	Account    *string
	APIBaseURL *string
	APIKey     *string
	Settings   *keys.EndpointSettings
}

// UpdateEndpoint applies u to the endpoint slug, a new API key sealed with
// kr (needed only when u sets one).
func UpdateEndpoint(ctx context.Context, db store.DB, kr *secretbox.Keyring, slug string, u EndpointUpdate) error {
	var settings []byte
	if u.Settings != nil {
		var err error
		if settings, err = json.Marshal(u.Settings); err != nil {
			return err
		}
	}
	var apiSealed []byte
	var apiKeyID, apiFP *string
	if u.APIKey != nil && *u.APIKey != "" {
		if kr == nil {
			return secretbox.ErrNoKey
		}
		b, id, err := kr.Seal([]byte(*u.APIKey), store.APIKeyContext(slug))
		if err != nil {
			return err
		}
		fp := store.DisplayFingerprint(kr, store.DisplayAPIKey, *u.APIKey)
		apiSealed, apiKeyID, apiFP = b, &id, &fp
	}
	tag, err := db.Exec(ctx, `
		UPDATE endpoints SET
		       account = CASE WHEN $2 THEN NULLIF($3, '') ELSE account END,
		       api_base_url = CASE WHEN $4 THEN NULLIF($5, '') ELSE api_base_url END,
		       settings = coalesce($6::jsonb, settings)
		 WHERE slug = $1`, slug, u.Account != nil, inbox.Deref(u.Account), u.APIBaseURL != nil, inbox.Deref(u.APIBaseURL), settings)
	if err != nil {
		return fmt.Errorf("update endpoint %q: %w", slug, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("endpoint %q: %w", slug, fault.ErrNotFound)
	}
	if u.APIKey == nil {
		return nil
	}
	// A statement of its own, that names the key columns only as targets:
	// the console's role writes a key, never reads one. The plain column is
	// nulled whenever the key changes: only the sealed value is written.
	if _, err := db.Exec(ctx, `
		UPDATE endpoints SET api_key = NULL, api_key_sealed = $2, api_key_key_id = $3, api_key_fingerprint = $4
		 WHERE slug = $1`, slug, apiSealed, apiKeyID, apiFP); err != nil {
		return fmt.Errorf("update endpoint %q API key: %w", slug, err)
	}
	return nil
}
