-- Forward routes (issue 23): a team's own HTTP service behind hookinbox, in
-- any language. A route takes a provider's event type (exact, or a prefix
-- ending in '*'); its events are recorded pending at the intake and each
-- operation is POSTed to url by the resource workflow, one at a time per
-- resource, signed with the route's Standard Webhooks secret (sealed at
-- rest, as endpoint secrets are) and keyed by its operation key.
CREATE TABLE forward_routes (
    name               text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    provider           text NOT NULL,
    event_type         text NOT NULL CHECK (event_type <> '' AND length(event_type) <= 255
                                            AND position('*' IN rtrim(event_type, '*')) = 0),
    url                text NOT NULL,
    secret_sealed      bytea NOT NULL,
    secret_key_id      text NOT NULL,
    -- A gjson path whose value names the operation (data.object.id: one
    -- forward per invoice); NULL: the event is the operation.
    operation_key_path text,
    fetch_current      boolean NOT NULL DEFAULT false,
    timeout_ms         integer NOT NULL DEFAULT 10000 CHECK (timeout_ms BETWEEN 100 AND 300000),
    retry_budget       integer CHECK (retry_budget BETWEEN 1 AND 1000),
    -- The route takes a type a built-in handler takes, on purpose.
    replaces_handler   boolean NOT NULL DEFAULT false,
    -- The URL may be a loopback or private address (a receiver beside
    -- hookinbox), allowed on purpose and audited.
    allow_private      boolean NOT NULL DEFAULT false,
    enabled            boolean NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, event_type)
);

-- Every forward attempt, for the lineage (`hookinbox explain`) and the
-- console: what was sent for which event, the answer and how long it took.
CREATE TABLE forward_attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    route         text NOT NULL,
    provider      text NOT NULL,
    source_account text NOT NULL,
    environment   text NOT NULL,
    event_id      text NOT NULL,
    operation_key text NOT NULL,
    attempt       integer NOT NULL,
    -- done, retry, failed (4xx), or skipped (the operation was forwarded
    -- by another event).
    outcome       text NOT NULL CHECK (outcome IN ('done', 'retry', 'failed', 'skipped')),
    status_code   integer,
    latency_ms    integer,
    error         text,
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX forward_attempts_event ON forward_attempts (provider, source_account, environment, event_id);

---- create above / drop below ----

DROP TABLE forward_attempts;
DROP TABLE forward_routes;
