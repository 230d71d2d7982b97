-- Business records: team destinations and the outbox (and, until issue #30,
-- the built-in domains' tables: see below). Each business table carries the
-- UNIQUE business key that collapses repeated operations into one effect.

-- Where a workspace's confirmation emails go (optional second effect).
ALTER TABLE workspaces ADD COLUMN email text;

-- The built-in domains' tables this migration created until issue #30
-- (credit_grants, subscription_projection and its workspace_access view,
-- feedback_alerts) are the domains' own now: domains/credits/schema,
-- domains/subscriptions/schema and domains/feedback/schema, sets applied
-- after this one, only by an App that registers those domains. A database
-- that applied this file before keeps them; the domains' sets adopt them
-- (IF NOT EXISTS), and a team's App that registers none of the domains
-- never uses them. This file is otherwise unchanged: it is applied history.

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
ALTER TABLE workspaces DROP COLUMN email;
