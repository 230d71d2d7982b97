-- Foundation: endpoints and their secrets, account→workspace links,
-- workspaces, the durable inbox and the quarantine.

CREATE TABLE workspaces (
    id              text PRIMARY KEY,
    credits_balance bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- An endpoint is one URL (/webhooks/:slug) for one provider and environment.
CREATE TABLE endpoints (
    slug         text PRIMARY KEY CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    provider     text NOT NULL CHECK (provider IN ('stripe', 'github', 'standard', 'shopify')),
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    -- The endpoint's own account (Stripe without Connect). NULL: the only linked account.
    account      text,
    api_base_url text,
    api_key      text,
    -- Per-provider extraction settings (JSON paths for Standard Webhooks, version path).
    settings     jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Several secrets may be active at once while one is rotated.
CREATE TABLE endpoint_secrets (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_slug text NOT NULL REFERENCES endpoints (slug) ON DELETE CASCADE,
    secret        text NOT NULL CHECK (secret <> ''),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (endpoint_slug, secret)
);

-- The tenant of an event comes from this mapping of its verified source
-- account, never from an id in the payload.
CREATE TABLE account_links (
    endpoint_slug text NOT NULL REFERENCES endpoints (slug) ON DELETE CASCADE,
    account       text NOT NULL CHECK (account <> ''),
    workspace_id  text NOT NULL REFERENCES workspaces (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (endpoint_slug, account)
);

CREATE TABLE webhook_inbox (
    id               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    provider         text NOT NULL,
    source_account   text NOT NULL,
    environment      text NOT NULL,
    event_id         text NOT NULL,
    endpoint_slug    text NOT NULL,
    workspace_id     text NOT NULL,
    event_type       text NOT NULL,
    resource_kind    text NOT NULL,
    resource_id      text NOT NULL,
    -- Monotonic per-resource version when the provider supplies one.
    provider_version bigint,
    -- When the provider says the event happened.
    occurred_at      timestamptz,
    -- The exact bytes received; access-restricted, redacted by retention.
    payload          bytea,
    body_sha256      bytea NOT NULL,
    -- Which endpoint secret verified the signature (rotation audit).
    secret_id        bigint,
    origin           text NOT NULL DEFAULT 'webhook' CHECK (origin IN ('webhook', 'backfill', 'quarantine')),
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'done', 'ignored', 'failed', 'exhausted')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    received_at      timestamptz NOT NULL DEFAULT now(),
    processed_at     timestamptz,
    PRIMARY KEY (provider, source_account, environment, event_id)
);

-- A resource's pending rows, oldest first: what a ResourceWorkflow loads.
CREATE INDEX webhook_inbox_resource_pending
    ON webhook_inbox (provider, source_account, environment, resource_kind, resource_id, id)
    WHERE status = 'pending';
-- The sweeper and the oldest-pending-age metric.
CREATE INDEX webhook_inbox_pending_due ON webhook_inbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_inbox_status_received ON webhook_inbox (status, received_at);

-- Authenticated deliveries the intake would not put in the inbox as they
-- are: same event key with another body, unknown account, malformed body.
CREATE TABLE inbox_quarantine (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_slug  text NOT NULL,
    provider       text NOT NULL,
    source_account text,
    environment    text,
    event_id       text,
    reason         text NOT NULL
                   CHECK (reason IN ('conflicting_duplicate', 'unknown_account', 'malformed', 'environment_mismatch')),
    detail         text NOT NULL DEFAULT '',
    payload        bytea,
    body_sha256    bytea NOT NULL,
    -- Delivery headers needed to re-admit the event (never secrets).
    headers        jsonb NOT NULL DEFAULT '{}',
    received_at    timestamptz NOT NULL DEFAULT now(),
    resolved_at    timestamptz,
    resolved_by    text,
    resolution     text,
    -- A sender retrying the same bad delivery does not fill the table.
    UNIQUE NULLS NOT DISTINCT (endpoint_slug, event_id, body_sha256)
);
CREATE INDEX inbox_quarantine_open ON inbox_quarantine (received_at) WHERE resolved_at IS NULL;

---- create above / drop below ----

DROP TABLE inbox_quarantine;
DROP TABLE webhook_inbox;
DROP TABLE account_links;
DROP TABLE endpoint_secrets;
DROP TABLE endpoints;
DROP TABLE workspaces;
