-- The audit's findings (console least privilege, sessions, fingerprints,
-- body dedup past retention).

-- A GitHub or Shopify body (whose signature covers neither an event id nor
-- a time) is deduplicated on its hash per endpoint (webhook_inbox
-- .replay_sha256). The lineage kept when retention deletes the row keeps
-- that hash too, so a captured body replayed after retention under a fresh
-- delivery id is still a duplicate. Rows deleted before this migration:
-- their body hash is the replay hash for the providers that dedup bodies.
ALTER TABLE event_lineage ADD COLUMN replay_sha256 bytea;
UPDATE event_lineage SET replay_sha256 = body_sha256
 WHERE source = 'inbox' AND deleted_at IS NOT NULL AND provider IN ('github', 'shopify');
CREATE INDEX event_lineage_replay ON event_lineage (endpoint_slug, replay_sha256) WHERE replay_sha256 IS NOT NULL;

CREATE OR REPLACE FUNCTION hookinbox_keep_inbox_lineage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r webhook_inbox%ROWTYPE := OLD;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        r := NEW;
    END IF;
    INSERT INTO event_lineage (source, source_id, provider, source_account, environment, event_id, endpoint_slug,
                               workspace_id, event_type, resource_kind, resource_id, body_sha256, replay_sha256, origin,
                               status, attempts, last_error, note, received_at, processed_at, payload_redacted_at, deleted_at)
    VALUES ('inbox', r.id, r.provider, r.source_account, r.environment, r.event_id, r.endpoint_slug,
            r.workspace_id, r.event_type, r.resource_kind, r.resource_id, r.body_sha256, r.replay_sha256, r.origin,
            r.status, r.attempts, r.last_error, r.note, r.received_at, r.processed_at,
            CASE WHEN TG_OP = 'UPDATE' OR r.payload IS NULL THEN now() END,
            CASE WHEN TG_OP = 'DELETE' THEN now() END)
    ON CONFLICT (source, source_id) DO UPDATE SET
        status = EXCLUDED.status, attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error,
        note = EXCLUDED.note, processed_at = EXCLUDED.processed_at,
        replay_sha256 = coalesce(EXCLUDED.replay_sha256, event_lineage.replay_sha256),
        payload_redacted_at = coalesce(event_lineage.payload_redacted_at, EXCLUDED.payload_redacted_at),
        deleted_at = coalesce(EXCLUDED.deleted_at, event_lineage.deleted_at),
        recorded_at = now();
    RETURN NULL;
END $$;


-- Display fingerprints: a short keyed tag of each signing secret and API
-- key (HMAC-SHA256 under a key derived from the secrets key, the first 4
-- bytes in hex), written when the value is, so a listing shows which is
-- which without opening any secret, and without letting anyone who sees it
-- check a guess offline (an unkeyed hash would). The SQL cannot compute
-- them (the key is not in the database): `hookinbox migrate`, given the
-- key, fills them for the values written before.
ALTER TABLE endpoints ADD COLUMN api_key_fingerprint text;
ALTER TABLE endpoint_secrets ADD COLUMN display_fingerprint text;

-- Console sign-ins (sessions): the cookie holds a random session id, never
-- the API token; only its SHA-256 is stored. A session expires (expires_at,
-- HOOKINBOX_CONSOLE_SESSION_TTL), ends at sign-out, and dies with its token
-- (a revoked token's sessions no longer authenticate).
CREATE TABLE console_sessions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_sha256 bytea NOT NULL UNIQUE CHECK (octet_length(session_sha256) = 32),
    token_id       bigint NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The console starts, reads and ends sessions through these functions,
-- which run as their owner (SECURITY DEFINER): its role may use a session
-- it presents the id of, and never read the table's hashes. EXECUTE is
-- granted by `hookinbox db roles` (internal/store/roles.go), not to PUBLIC.
CREATE FUNCTION hookinbox_session_start(h bytea, token bigint, ttl interval) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    DELETE FROM public.console_sessions WHERE expires_at < now();
    INSERT INTO public.console_sessions (session_sha256, token_id, expires_at) VALUES (h, token, now() + ttl);
$$;
CREATE FUNCTION hookinbox_session_token(h bytea)
RETURNS TABLE (id bigint, name text, role text, created_by text, created_at timestamptz, last_used_at timestamptz,
               revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.id, t.name, t.role, t.created_by, t.created_at, t.last_used_at, t.revoked_at
      FROM public.console_sessions s JOIN public.api_tokens t ON t.id = s.token_id
     WHERE s.session_sha256 = h AND s.expires_at > now() AND t.revoked_at IS NULL;
$$;
CREATE FUNCTION hookinbox_session_end(h bytea) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH ended AS (DELETE FROM public.console_sessions WHERE session_sha256 = h RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM ended);
$$;
REVOKE ALL ON FUNCTION hookinbox_session_start(bytea, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookinbox_session_token(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookinbox_session_end(bytea) FROM PUBLIC;

-- A bearer token is looked up by its hash through this function, which runs
-- as its owner, so the console's role authenticates tokens without reading
-- their hashes; it records the token's use at most once a minute.
CREATE FUNCTION hookinbox_token_by_hash(h bytea)
RETURNS TABLE (id bigint, name text, role text, created_by text, created_at timestamptz, last_used_at timestamptz,
               revoked_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    UPDATE public.api_tokens t SET last_used_at = now()
     WHERE t.token_sha256 = h AND t.revoked_at IS NULL
       AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute');
    RETURN QUERY SELECT t.id, t.name, t.role, t.created_by, t.created_at, t.last_used_at, t.revoked_at
                   FROM public.api_tokens t WHERE t.token_sha256 = h AND t.revoked_at IS NULL;
END $$;
REVOKE ALL ON FUNCTION hookinbox_token_by_hash(bytea) FROM PUBLIC;

-- What the erasure and the operator need to know of an outbox payload
-- without reading it (like the inbox's and the quarantine's size views):
-- its size, whether it is already redacted, whether it carries a feedback
-- text. Runs with its owner's privileges.
CREATE VIEW outbox_payload_size AS
SELECT id, octet_length(payload::text) AS payload_bytes, payload = '{"redacted": true}'::jsonb AS redacted,
       (class = 'feedback_alert' AND payload ? 'message' AND payload->>'message' <> '') AS carries_message
  FROM outbox;

---- create above / drop below ----
DROP VIEW outbox_payload_size;
DROP FUNCTION hookinbox_token_by_hash(bytea);
DROP FUNCTION hookinbox_session_end(bytea);
DROP FUNCTION hookinbox_session_token(bytea);
DROP FUNCTION hookinbox_session_start(bytea, bigint, interval);
DROP TABLE console_sessions;
ALTER TABLE endpoint_secrets DROP COLUMN display_fingerprint;
ALTER TABLE endpoints DROP COLUMN api_key_fingerprint;


CREATE OR REPLACE FUNCTION hookinbox_keep_inbox_lineage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r webhook_inbox%ROWTYPE := OLD;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        r := NEW;
    END IF;
    INSERT INTO event_lineage (source, source_id, provider, source_account, environment, event_id, endpoint_slug,
                               workspace_id, event_type, resource_kind, resource_id, body_sha256, origin, status,
                               attempts, last_error, note, received_at, processed_at, payload_redacted_at, deleted_at)
    VALUES ('inbox', r.id, r.provider, r.source_account, r.environment, r.event_id, r.endpoint_slug,
            r.workspace_id, r.event_type, r.resource_kind, r.resource_id, r.body_sha256, r.origin, r.status,
            r.attempts, r.last_error, r.note, r.received_at, r.processed_at,
            CASE WHEN TG_OP = 'UPDATE' OR r.payload IS NULL THEN now() END,
            CASE WHEN TG_OP = 'DELETE' THEN now() END)
    ON CONFLICT (source, source_id) DO UPDATE SET
        status = EXCLUDED.status, attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error,
        note = EXCLUDED.note, processed_at = EXCLUDED.processed_at,
        payload_redacted_at = coalesce(event_lineage.payload_redacted_at, EXCLUDED.payload_redacted_at),
        deleted_at = coalesce(EXCLUDED.deleted_at, event_lineage.deleted_at),
        recorded_at = now();
    RETURN NULL;
END $$;
DROP INDEX event_lineage_replay;
ALTER TABLE event_lineage DROP COLUMN replay_sha256;
