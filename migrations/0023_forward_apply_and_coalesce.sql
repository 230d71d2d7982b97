-- Forward routes that keep up (issue 34).
--
-- applies_at: when the route began to take its types (added, its provider or
-- type changed, or enabled again). An intake that still routed by its table
-- of before recorded the route's events `ignored` ("no handler for …") for
-- up to HOOKINBOX_ENDPOINT_CACHE_TTL; the intake that loads the route puts
-- those rows received since applies_at back to pending, so a route applies
-- to every event accepted after `routes add` returns.
ALTER TABLE forward_routes ADD COLUMN applies_at timestamptz NOT NULL DEFAULT now();

-- A coalescing route sends one document for the run of a resource's pending
-- events it takes (at most coalesce_max), with the latest `current`. Only
-- with fetch_current (the document's state is the provider's latest) and
-- never with an operation key path (a per-operation key would make the
-- receiver drop a coalesced document as a duplicate).
ALTER TABLE forward_routes
    ADD COLUMN coalescing   boolean NOT NULL DEFAULT false,
    ADD COLUMN coalesce_max integer NOT NULL DEFAULT 100 CHECK (coalesce_max BETWEEN 2 AND 1000),
    ADD CONSTRAINT forward_routes_coalesce_check
        CHECK (NOT coalescing OR (fetch_current AND operation_key_path IS NULL));

-- One coalesced send, recorded before it is sent: a send whose outcome is
-- unknown (a worker killed between the receiver's 2xx and the rows'
-- completion) is sent again as the same document under the same key. The
-- head is the event whose handling sent it; covered lists every event it
-- covers, the head first, in the resource's order.
CREATE TABLE forward_coalesced (
    operation_key  text PRIMARY KEY,
    route          text NOT NULL,
    provider       text NOT NULL,
    source_account text NOT NULL,
    environment    text NOT NULL,
    event_id       text NOT NULL,
    covered        jsonb NOT NULL,
    document       bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX forward_coalesced_head ON forward_coalesced (route, provider, source_account, environment, event_id);

-- A covered event's attempt: outcome coalesced, under the covering send's
-- operation key, covered_by naming the event whose send covered it.
ALTER TABLE forward_attempts ADD COLUMN covered_by text;
ALTER TABLE forward_attempts DROP CONSTRAINT forward_attempts_outcome_check;
ALTER TABLE forward_attempts ADD CONSTRAINT forward_attempts_outcome_check
    CHECK (outcome IN ('done', 'retry', 'failed', 'skipped', 'coalesced'));

-- A route just applied: the rows an intake recorded ignored for want of it
-- go back to pending (forwards.RequeueIgnored). The intake may not UPDATE the
-- inbox, so it calls this owner-run function, which only ever turns an
-- unattempted row ignored with "no handler for …" into a pending one.
-- EXECUTE is granted by `hookinbox db roles` (store.FunctionGrants).
CREATE FUNCTION hookinbox_requeue_ignored(p text, t text, since timestamptz)
RETURNS TABLE (id bigint, provider text, source_account text, environment text, event_id text,
               resource_kind text, resource_id text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE public.webhook_inbox w
       SET status = 'pending', attempts = 0, next_attempt_at = now(), pending_since = now(), last_error = NULL,
           note = NULL, processed_at = NULL, sweeps = 0, swept_at = NULL
     WHERE w.status = 'ignored' AND w.received_at >= since AND w.provider = p AND w.attempts = 0
       AND (w.event_type = t OR (right(t, 1) = '*' AND starts_with(w.event_type, rtrim(t, '*'))))
       AND w.last_error = 'no handler for ' || w.provider || ' event type ' || w.event_type
       AND NOT (w.resource_kind = 'event' AND w.resource_id = w.event_id)
    RETURNING w.id, w.provider, w.source_account, w.environment, w.event_id, w.resource_kind, w.resource_id;
$$;
REVOKE ALL ON FUNCTION hookinbox_requeue_ignored(text, text, timestamptz) FROM PUBLIC;

---- create above / drop below ----

DROP FUNCTION hookinbox_requeue_ignored(text, text, timestamptz);

DELETE FROM forward_attempts WHERE outcome = 'coalesced';
ALTER TABLE forward_attempts DROP CONSTRAINT forward_attempts_outcome_check;
ALTER TABLE forward_attempts ADD CONSTRAINT forward_attempts_outcome_check
    CHECK (outcome IN ('done', 'retry', 'failed', 'skipped'));
ALTER TABLE forward_attempts DROP COLUMN covered_by;
DROP TABLE forward_coalesced;
ALTER TABLE forward_routes DROP CONSTRAINT forward_routes_coalesce_check,
    DROP COLUMN coalesce_max, DROP COLUMN coalescing, DROP COLUMN applies_at;
