-- The feedback domain's table: one initial alert per feedback item. Until
-- issue #30 it was created by hookinbox's core migration 0002; a database
-- that applied it keeps it and this set adopts it: every statement here is
-- a no-op when its object exists, so the set's version starts at 1 over the
-- same table.

-- One initial alert per feedback item, whatever repeats it.
CREATE TABLE IF NOT EXISTS feedback_alerts (
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

---- create above / drop below ----

DROP TABLE feedback_alerts;
