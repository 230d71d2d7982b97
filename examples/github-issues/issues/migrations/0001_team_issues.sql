-- One row per GitHub issue, that never goes backwards. The key is the
-- event's resource (OWNER/REPO#N: issues and pull requests share one number
-- space per repository, and an issue's events run in its own workflow). The
-- version is the fetched issue's updated_at (one-second resolution) and the
-- tie-breaker the inbox row's sequence (Event.Seq): two changes within one
-- second both apply, in the order the intake committed them. write_seq is
-- hookinbox's (Tx.WriteNewer increments it on every write).
CREATE TABLE team_issues (
    issue        text PRIMARY KEY,
    workspace_id text NOT NULL,
    repository   text NOT NULL,
    number       bigint NOT NULL CHECK (number > 0),
    title        text NOT NULL,
    state        text NOT NULL CHECK (state IN ('open', 'closed')),
    state_reason text,
    labels       text[] NOT NULL DEFAULT '{}',
    author       text,
    html_url     text NOT NULL,
    closed_at    timestamptz,
    updated_at   timestamptz NOT NULL,
    event_seq    bigint NOT NULL,
    event_key    text NOT NULL,
    write_seq    bigint NOT NULL DEFAULT 1,
    written_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (repository, number)
);

---- create above / drop below ----

DROP TABLE team_issues;
