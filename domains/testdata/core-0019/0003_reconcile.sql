-- Reconciliation: what it found (divergences) and where long runs resume
-- (checkpoints carried across worker restarts and continue-as-new).

CREATE TABLE reconcile_divergences (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider       text NOT NULL,
    source_account text NOT NULL,
    environment    text NOT NULL,
    resource_kind  text NOT NULL,
    resource_id    text NOT NULL,
    -- What differed: a field of the projection, or "missing" (no local row).
    field          text NOT NULL,
    local_value    text,
    provider_value text,
    -- Whether the projection was corrected (false: e.g. kept canceled).
    corrected      boolean NOT NULL,
    -- What found it: a reconcile reason (schedule run id, operator, …).
    detected_by    text NOT NULL,
    detected_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reconcile_divergences_resource
    ON reconcile_divergences (provider, source_account, environment, resource_kind, resource_id);
CREATE INDEX reconcile_divergences_detected ON reconcile_divergences (detected_at);

-- One row per long-running reconciliation scope (e.g. a schedule × endpoint
-- × account), updated after every page so a run killed mid-way resumes.
CREATE TABLE reconcile_checkpoints (
    name         text PRIMARY KEY,
    -- The list cursor to resume from ("" at the start of a pass).
    cursor       text NOT NULL DEFAULT '',
    -- Facts backfill: the newest provider event time fully processed.
    watermark    timestamptz,
    run_id       text,
    pages        bigint NOT NULL DEFAULT 0,
    seen         bigint NOT NULL DEFAULT 0,
    divergences  bigint NOT NULL DEFAULT 0,
    started_at   timestamptz,
    completed_at timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE reconcile_checkpoints;
DROP TABLE reconcile_divergences;
