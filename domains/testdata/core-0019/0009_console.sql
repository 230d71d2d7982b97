-- The operator console and API (issue #15): bearer tokens with roles,
-- persisted bulk replay jobs, and the compact lineage of inbox and
-- quarantine rows, kept when retention redacts a payload or deletes a row
-- so that a credit grant's event_key still names something after 30 days.

-- An API token: only the SHA-256 of the random token is stored; the token is
-- printed once by `hookinbox tokens create`. Names are unique forever (also
-- after revocation) because audited acts are recorded under them.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,62}$'),
    role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    token_sha256 bytea NOT NULL UNIQUE CHECK (octet_length(token_sha256) = 32),
    created_by   text NOT NULL CHECK (created_by <> ''),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- A bulk replay: a selection (an inbox filter or a list of event keys) put
-- back through the same idempotent path, one event at a time, with its
-- progress kept here so it can be watched, cancelled and resumed.
CREATE TABLE replay_jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_by       text NOT NULL CHECK (created_by <> ''),
    reason           text NOT NULL CHECK (btrim(reason) <> ''),
    -- {"filter": {...}} or {"keys": ["provider/account/env/event_id", ...]}.
    selection        jsonb NOT NULL,
    -- How the selection reads to a human (recorded in each replay's audit).
    description      text NOT NULL DEFAULT '',
    force            boolean NOT NULL DEFAULT false,
    -- At most this many events; a filter only sees rows up to upto_inbox_id,
    -- the newest row when the job was created.
    max_events       integer NOT NULL CHECK (max_events > 0),
    upto_inbox_id    bigint NOT NULL DEFAULT 0,
    status           text NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'done', 'cancelled', 'failed')),
    total            integer NOT NULL DEFAULT 0,
    processed        integer NOT NULL DEFAULT 0,
    replayed         integer NOT NULL DEFAULT 0,
    refused          integer NOT NULL DEFAULT 0,
    errors           integer NOT NULL DEFAULT 0,
    signaled         integer NOT NULL DEFAULT 0,
    -- Resume point: the last inbox id handled (filters walk ids upwards).
    last_inbox_id    bigint NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    last_error       text,
    signal_error     text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    -- Heartbeat of the runner; a running job not updated for a while is
    -- taken over by another runner.
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replay_jobs_runnable ON replay_jobs (id) WHERE status IN ('queued', 'running');

-- What is kept of an inbox row or a quarantine entry once retention redacts
-- its payload or deletes it: keys, body hash, times and final status, never
-- the payload. Filled by triggers, so no code path can forget it; a row is
-- upserted on redaction and again on deletion.
CREATE TABLE event_lineage (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source              text NOT NULL CHECK (source IN ('inbox', 'quarantine')),
    source_id           bigint NOT NULL,
    provider            text NOT NULL,
    source_account      text,
    environment         text,
    event_id            text,
    endpoint_slug       text NOT NULL,
    workspace_id        text,
    event_type          text,
    resource_kind       text,
    resource_id         text,
    body_sha256         bytea NOT NULL,
    origin              text,
    status              text,
    attempts            integer,
    last_error          text,
    note                text,
    quarantine_reason   text,
    resolution          text,
    received_at         timestamptz NOT NULL,
    processed_at        timestamptz,
    payload_redacted_at timestamptz,
    deleted_at          timestamptz,
    recorded_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, source_id)
);
CREATE INDEX event_lineage_resource
    ON event_lineage (provider, source_account, environment, resource_kind, resource_id);
CREATE INDEX event_lineage_event ON event_lineage (provider, source_account, environment, event_id);

CREATE FUNCTION hookinbox_keep_inbox_lineage() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER webhook_inbox_lineage_redacted
    AFTER UPDATE OF payload ON webhook_inbox
    FOR EACH ROW WHEN (OLD.payload IS NOT NULL AND NEW.payload IS NULL)
    EXECUTE FUNCTION hookinbox_keep_inbox_lineage();
CREATE TRIGGER webhook_inbox_lineage_deleted
    AFTER DELETE ON webhook_inbox
    FOR EACH ROW EXECUTE FUNCTION hookinbox_keep_inbox_lineage();

CREATE FUNCTION hookinbox_keep_quarantine_lineage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_lineage (source, source_id, provider, source_account, environment, event_id, endpoint_slug,
                               body_sha256, quarantine_reason, resolution, received_at, processed_at,
                               payload_redacted_at, deleted_at)
    VALUES ('quarantine', OLD.id, OLD.provider, OLD.source_account, OLD.environment, OLD.event_id, OLD.endpoint_slug,
            OLD.body_sha256, OLD.reason, OLD.resolution, OLD.received_at, OLD.resolved_at, now(), now())
    ON CONFLICT (source, source_id) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER inbox_quarantine_lineage_deleted
    AFTER DELETE ON inbox_quarantine
    FOR EACH ROW EXECUTE FUNCTION hookinbox_keep_quarantine_lineage();

---- create above / drop below ----

DROP TRIGGER inbox_quarantine_lineage_deleted ON inbox_quarantine;
DROP FUNCTION hookinbox_keep_quarantine_lineage();
DROP TRIGGER webhook_inbox_lineage_deleted ON webhook_inbox;
DROP TRIGGER webhook_inbox_lineage_redacted ON webhook_inbox;
DROP FUNCTION hookinbox_keep_inbox_lineage();
DROP TABLE event_lineage;
DROP TABLE replay_jobs;
DROP TABLE api_tokens;
