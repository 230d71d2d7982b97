-- Secrets at rest, tenants and replay (#14).
--
-- Signing secrets, provider API keys and destination secrets are sealed by
-- internal/secretbox (AES-256-GCM envelope encryption, the key kept outside
-- the database); the id of the key that sealed each value is stored beside
-- it. The plain columns stay and are nulled once their value is sealed:
-- `hookinbox migrate` (and `hookinbox secrets rotate-key`) seal every plain
-- value left as soon as a key is configured. Nothing is sealed here: SQL
-- never sees the key.

ALTER TABLE endpoint_secrets
    ALTER COLUMN secret DROP NOT NULL,
    ADD COLUMN secret_sealed bytea,
    ADD COLUMN secret_key_id text,
    -- HMAC-SHA256 of the secret under a key derived from the current key:
    -- the uniqueness of (endpoint, secret) without keeping the secret.
    ADD COLUMN secret_fingerprint bytea,
    -- The source accounts this secret may sign for; NULL: any account
    -- linked to the endpoint. One tenant holding a secret cannot sign events
    -- that land in another tenant's workspace.
    ADD COLUMN accounts text[],
    ADD CONSTRAINT endpoint_secrets_value CHECK (secret IS NOT NULL OR secret_sealed IS NOT NULL),
    ADD CONSTRAINT endpoint_secrets_sealed_key CHECK ((secret_sealed IS NULL) = (secret_key_id IS NULL)),
    ADD CONSTRAINT endpoint_secrets_accounts CHECK (accounts IS NULL OR cardinality(accounts) > 0);
CREATE UNIQUE INDEX endpoint_secrets_fingerprint ON endpoint_secrets (endpoint_slug, secret_fingerprint);

ALTER TABLE endpoints
    ADD COLUMN api_key_sealed bytea,
    ADD COLUMN api_key_key_id text,
    ADD CONSTRAINT endpoints_api_key_sealed_key CHECK ((api_key_sealed IS NULL) = (api_key_key_id IS NULL));

ALTER TABLE team_destinations
    ADD COLUMN secret_sealed bytea,
    ADD COLUMN secret_key_id text,
    ADD CONSTRAINT team_destinations_sealed_key CHECK ((secret_sealed IS NULL) = (secret_key_id IS NULL));

-- Providers that sign neither an event id nor a timestamp (GitHub, Shopify)
-- let a captured body be replayed under a new delivery id: their rows carry
-- the body hash here, and the UNIQUE index makes a replay a duplicate for as
-- long as the row is kept (at least HOOKINBOX_DEDUP_RETENTION). NULL for
-- providers whose signature covers the id, and for rows older than this
-- migration.
ALTER TABLE webhook_inbox ADD COLUMN replay_sha256 bytea;
CREATE UNIQUE INDEX webhook_inbox_replay ON webhook_inbox (endpoint_slug, replay_sha256)
    WHERE replay_sha256 IS NOT NULL;

-- Which secret verified a quarantined delivery, so re-admission checks the
-- accounts it may sign for; and a reason for a delivery claiming an account
-- its secret or endpoint is not bound to.
ALTER TABLE inbox_quarantine
    ADD COLUMN secret_id bigint,
    DROP CONSTRAINT inbox_quarantine_reason_check,
    ADD CONSTRAINT inbox_quarantine_reason_check
        CHECK (reason IN ('conflicting_duplicate', 'unknown_account', 'malformed', 'environment_mismatch',
                          'account_mismatch'));
CREATE INDEX inbox_quarantine_body ON inbox_quarantine (endpoint_slug, body_sha256);

---- create above / drop below ----

-- Going back would lose every sealed secret and account_mismatch entry:
-- refuse while one exists.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM endpoint_secrets WHERE secret IS NULL)
       OR EXISTS (SELECT 1 FROM endpoints WHERE api_key_sealed IS NOT NULL AND api_key IS NULL)
       OR EXISTS (SELECT 1 FROM team_destinations WHERE secret_sealed IS NOT NULL AND secret IS NULL) THEN
        RAISE EXCEPTION 'secrets are sealed: rolling back 0011 would lose them';
    END IF;
    IF EXISTS (SELECT 1 FROM inbox_quarantine WHERE reason = 'account_mismatch') THEN
        RAISE EXCEPTION 'account_mismatch quarantine entries exist: rolling back 0011 would lose them';
    END IF;
END $$;
DROP INDEX inbox_quarantine_body;
ALTER TABLE inbox_quarantine
    DROP CONSTRAINT inbox_quarantine_reason_check,
    ADD CONSTRAINT inbox_quarantine_reason_check
        CHECK (reason IN ('conflicting_duplicate', 'unknown_account', 'malformed', 'environment_mismatch')),
    DROP COLUMN secret_id;
DROP INDEX webhook_inbox_replay;
ALTER TABLE webhook_inbox DROP COLUMN replay_sha256;
ALTER TABLE team_destinations DROP COLUMN secret_sealed, DROP COLUMN secret_key_id;
ALTER TABLE endpoints DROP COLUMN api_key_sealed, DROP COLUMN api_key_key_id;
DROP INDEX endpoint_secrets_fingerprint;
ALTER TABLE endpoint_secrets
    DROP CONSTRAINT endpoint_secrets_value,
    DROP CONSTRAINT endpoint_secrets_sealed_key,
    DROP CONSTRAINT endpoint_secrets_accounts,
    DROP COLUMN secret_sealed, DROP COLUMN secret_key_id, DROP COLUMN secret_fingerprint, DROP COLUMN accounts,
    ALTER COLUMN secret SET NOT NULL;
