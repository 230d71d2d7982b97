-- Business records: credit grants, the subscription projection, feedback
-- alerts, team destinations and the outbox. Each business table carries the
-- UNIQUE business key that collapses repeated operations into one effect.

-- Where a workspace's confirmation emails go (optional second effect).
ALTER TABLE workspaces ADD COLUMN email text;

-- One row per (provider, source account, environment, invoice, operation):
-- two events for the same invoice, a webhook and a repair all collapse here.
CREATE TABLE credit_grants (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider       text NOT NULL,
    source_account text NOT NULL,
    environment    text NOT NULL,
    invoice_id     text NOT NULL,
    operation      text NOT NULL CHECK (operation <> ''),
    workspace_id   text NOT NULL REFERENCES workspaces (id),
    credits        bigint NOT NULL CHECK (credits > 0),
    amount_paid    bigint NOT NULL,
    currency       text NOT NULL,
    -- The event whose handling created the grant.
    event_key      text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT credit_grants_business_key UNIQUE (provider, source_account, environment, invoice_id, operation)
);
CREATE INDEX credit_grants_workspace ON credit_grants (workspace_id);

-- The local copy of each subscription's current state. It never goes
-- backwards: versioned writes compare provider_version inside the write;
-- unversioned writes are compare-and-set on write_seq (a fencing token).
CREATE TABLE subscription_projection (
    provider         text NOT NULL,
    source_account   text NOT NULL,
    environment      text NOT NULL,
    resource_id      text NOT NULL,
    workspace_id     text NOT NULL REFERENCES workspaces (id),
    provider_version bigint,
    state            jsonb NOT NULL,
    status           text NOT NULL,
    -- Tombstone: the provider deleted the subscription; kept with its version.
    deleted          boolean NOT NULL DEFAULT false,
    -- Access by the product rule, derived from state at write time:
    -- has access while access is true and access_ends_at is NULL or future.
    access           boolean NOT NULL,
    access_ends_at   timestamptz,
    write_seq        bigint NOT NULL DEFAULT 1,
    -- The event or reconciliation that wrote the current state.
    written_by       text NOT NULL,
    fetched_at       timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, source_account, environment, resource_id)
);
CREATE INDEX subscription_projection_workspace ON subscription_projection (workspace_id);

-- Whether a workspace has access now: any subscription granting it.
CREATE VIEW workspace_access AS
SELECT w.id AS workspace_id,
       coalesce(bool_or(p.access AND NOT p.deleted AND (p.access_ends_at IS NULL OR p.access_ends_at > now())), false) AS has_access
  FROM workspaces w
  LEFT JOIN subscription_projection p ON p.workspace_id = w.id
 GROUP BY w.id;

-- One initial alert per feedback item, whatever repeats it.
CREATE TABLE feedback_alerts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider     text NOT NULL,
    project      text NOT NULL,
    environment  text NOT NULL,
    feedback_id  text NOT NULL,
    operation    text NOT NULL CHECK (operation <> ''),
    workspace_id text NOT NULL REFERENCES workspaces (id),
    event_key    text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT feedback_alerts_business_key UNIQUE (provider, project, environment, feedback_id, operation)
);

-- A team's destinations for feedback alerts (a signed HTTP webhook or an email).
CREATE TABLE team_destinations (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES workspaces (id),
    name         text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    kind         text NOT NULL CHECK (kind IN ('webhook', 'email')),
    target       text NOT NULL,
    -- Standard Webhooks signing secret of a webhook destination.
    secret       text,
    enabled      boolean NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);

-- Outbound effects, written in the business transaction and sent after it
-- by a retried activity keyed by operation_key.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_key   text NOT NULL UNIQUE,
    -- Operation class: selects the uncertain-outcome policy.
    class           text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('email', 'webhook')),
    destination     text NOT NULL,
    workspace_id    text NOT NULL,
    -- The resource workflow that dispatches it (keys.Resource string).
    resource_key    text NOT NULL,
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sent', 'failed', 'uncertain', 'held_for_review')),
    -- The uncertain-outcome policy in force when it was last attempted.
    policy          text,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    remote_id       text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz
);
CREATE INDEX outbox_unsent ON outbox (next_attempt_at) WHERE status IN ('pending', 'uncertain');
CREATE INDEX outbox_resource_unsent ON outbox (resource_key, id) WHERE status IN ('pending', 'uncertain');

---- create above / drop below ----

DROP TABLE outbox;
DROP TABLE team_destinations;
DROP TABLE feedback_alerts;
DROP VIEW workspace_access;
DROP TABLE subscription_projection;
DROP TABLE credit_grants;
ALTER TABLE workspaces DROP COLUMN email;
