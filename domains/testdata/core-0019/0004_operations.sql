-- Operator actions: who did what to which event or quarantine entry, when
-- and why (SPEC R20, R23). Replays, quarantine resolutions and any later
-- operator act append here; rows are never updated.

CREATE TABLE operator_actions (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text NOT NULL CHECK (actor <> ''),
    -- replay, quarantine_readmit, quarantine_discard, … (open list: later
    -- commands add their own).
    action    text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_]*$'),
    -- What the act was applied to: an event key (provider/account/environment/event_id)
    -- or a quarantine entry (quarantine:ID).
    target    text NOT NULL CHECK (target <> ''),
    -- The inbox event concerned, when there is one (a readmitted entry's new
    -- key, a replayed event's key): what `inbox show` lists.
    event_key text,
    reason    text NOT NULL CHECK (btrim(reason) <> ''),
    -- What the act saw and did: previous status, attempts, last error, outcome.
    details   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX operator_actions_target ON operator_actions (target, at);
CREATE INDEX operator_actions_event_key ON operator_actions (event_key, at) WHERE event_key IS NOT NULL;

---- create above / drop below ----

DROP TABLE operator_actions;
