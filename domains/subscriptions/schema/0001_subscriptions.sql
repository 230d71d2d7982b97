-- The subscriptions domain's tables: the local copy of each subscription's
-- current state and whether a workspace has access by it. Until issue #30
-- these were created by hookinbox's core migration 0002; a database that
-- applied it keeps them and this set adopts them: every statement here is a
-- no-op when its object exists, so the set's version starts at 1 over the
-- same tables.

-- The local copy of each subscription's current state. It never goes
-- backwards: versioned writes compare provider_version inside the write;
-- unversioned writes are compare-and-set on write_seq (a fencing token).
CREATE TABLE IF NOT EXISTS subscription_projection (
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
CREATE INDEX IF NOT EXISTS subscription_projection_workspace ON subscription_projection (workspace_id);

-- Whether a workspace has access now: any subscription granting it.
-- Created only when missing (CREATE OR REPLACE would lock an adopted view).
DO $$
BEGIN
    IF to_regclass('public.workspace_access') IS NULL THEN
        CREATE VIEW workspace_access AS
        SELECT w.id AS workspace_id,
               coalesce(bool_or(p.access AND NOT p.deleted AND (p.access_ends_at IS NULL OR p.access_ends_at > now())), false) AS has_access
          FROM workspaces w
          LEFT JOIN subscription_projection p ON p.workspace_id = w.id
         GROUP BY w.id;
    END IF;
END
$$;

---- create above / drop below ----

DROP VIEW workspace_access;
DROP TABLE subscription_projection;
