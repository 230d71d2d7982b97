-- Notifications (issue 26): operators are told, not only shown. A rule
-- watches some triggers (an event that ended failed or exhausted, an open
-- quarantine entry, a reconciliation divergence, an outbox row held for
-- review or uncertain, the oldest pending age past a threshold, a failed
-- schedule run), optionally for one workspace or one endpoint only, and
-- sends its notices to one channel: an email address (through the outbox),
-- a Slack-compatible incoming webhook or a Standard Webhooks signed webhook.
CREATE TABLE notification_rules (
    name          text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    triggers      text[] NOT NULL CHECK (cardinality(triggers) > 0 AND triggers <@ ARRAY[
                      'event_failed', 'quarantine_opened', 'divergence', 'outbox_stuck', 'pending_age',
                      'schedule_failed']::text[]),
    channel       text NOT NULL CHECK (channel IN ('email', 'slack', 'webhook')),
    -- What is shown of the destination: the email address, the webhook's
    -- URL, or a Slack webhook's origin only (its path is its token).
    target        text NOT NULL CHECK (target <> ''),
    -- Sealed at rest as the other secrets are: a webhook's Standard Webhooks
    -- secret, or a Slack webhook's whole URL. None for email.
    secret_sealed bytea,
    secret_key_id text,
    -- Scope: one workspace's events only (a tenant hears of its own), one
    -- endpoint's only; NULL is every one.
    workspace_id  text,
    endpoint_slug text,
    -- One notice per (rule, trigger, subject) per window.
    window_seconds      integer NOT NULL DEFAULT 900 CHECK (window_seconds BETWEEN 1 AND 604800),
    -- pending_age fires when the oldest pending event is older than this.
    pending_age_seconds integer NOT NULL DEFAULT 900 CHECK (pending_age_seconds BETWEEN 1 AND 604800),
    -- The URL may be a loopback or private address, on purpose (audited).
    allow_private boolean NOT NULL DEFAULT false,
    enabled       boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((channel = 'email') = (secret_sealed IS NULL)),
    CHECK ((secret_sealed IS NULL) = (secret_key_id IS NULL))
);

-- Where each (rule, trigger, subject) stands: firing or not, and the window
-- of its last firing notice. The subject is what a notice is about: an
-- endpoint, a workspace (outbox rows) or a schedule.
CREATE TABLE notification_states (
    rule          text NOT NULL REFERENCES notification_rules (name) ON DELETE CASCADE,
    trigger       text NOT NULL,
    subject       text NOT NULL,
    firing        boolean NOT NULL DEFAULT false,
    -- The current episode has had its firing notice (a recovery follows).
    announced     boolean NOT NULL DEFAULT false,
    -- Start of the window of the last firing notice.
    window_start  timestamptz,
    -- The count and the newest item (an id, or a time) at that notice.
    notified_count bigint NOT NULL DEFAULT 0,
    notified_mark  bigint NOT NULL DEFAULT 0,
    -- When the current episode began; the last observation.
    firing_since  timestamptz,
    last_count    bigint NOT NULL DEFAULT 0,
    observed_at   timestamptz,
    PRIMARY KEY (rule, trigger, subject)
);

-- Every notice decided, one per (rule, trigger, subject, window, phase):
-- committed in the transaction that inserts its outbox intent (keyed by
-- operation_key) and moves its state, so a notice is decided once, crash or
-- not. Kept after its rule is removed (the outbox row and the audit stay).
CREATE TABLE notifications (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule          text NOT NULL,
    trigger       text NOT NULL,
    subject       text NOT NULL,
    window_start  timestamptz NOT NULL,
    phase         text NOT NULL CHECK (phase IN ('firing', 'recovered')),
    count         bigint NOT NULL,
    channel       text NOT NULL,
    workspace_id  text,
    operation_key text NOT NULL UNIQUE,
    outbox_id     bigint NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (rule, trigger, subject, window_start, phase)
);
CREATE INDEX notifications_recent ON notifications (rule, id DESC);

-- The outbox_stuck trigger reads the rows held for review or uncertain
-- every evaluation: a partial index keeps that off the sent rows.
CREATE INDEX outbox_review ON outbox (workspace_id) WHERE status IN ('held_for_review', 'uncertain');

---- create above / drop below ----

DROP INDEX outbox_review;
DROP TABLE notifications;
DROP TABLE notification_states;
DROP TABLE notification_rules;
