-- GitHub never redelivers a failed webhook: the recovery schedule reads each
-- hook's delivery log and brings back the deliveries the inbox lacks
-- (docs/reconciliation.md).

-- The recovery asks whether a delivery GUID (the event id) reached the inbox
-- before it knows the delivery's account: look it up without the account.
CREATE INDEX webhook_inbox_provider_event_id ON webhook_inbox (provider, environment, event_id);

-- What the recovery did about each missing delivery: one row per endpoint
-- and delivery GUID. A pass acts on a delivery at most once (pass is the
-- run that last did), and after a few passes it gives up (attempts).
CREATE TABLE hook_recoveries (
    endpoint_slug text NOT NULL REFERENCES endpoints (slug) ON DELETE CASCADE,
    delivery_guid text NOT NULL,
    -- The attempt in the provider's log it was recovered from.
    delivery_id   bigint NOT NULL,
    -- Passes that acted on it, and how the last one did: redeliver or fetch.
    attempts      integer NOT NULL DEFAULT 1,
    action        text NOT NULL CHECK (action IN ('redeliver', 'fetch', 'abandoned')),
    pass          text NOT NULL,
    first_at      timestamptz NOT NULL DEFAULT now(),
    last_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (endpoint_slug, delivery_guid)
);
CREATE INDEX hook_recoveries_last_at ON hook_recoveries (last_at);

---- create above / drop below ----

DROP TABLE hook_recoveries;
DROP INDEX webhook_inbox_provider_event_id;
