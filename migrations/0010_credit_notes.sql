-- Credit notes, operator corrections, per-tenant erasure and the age of
-- pending work (issue #16).

-- The object an event is about when its resource is a parent: a credit
-- note's id, its resource being the invoice it credits (one workflow per
-- invoice serializes a credit note with the invoice's grant). A column, not
-- the payload, so it survives an erasure or a redaction of the payload.
ALTER TABLE webhook_inbox ADD COLUMN object_id text;

-- When the row last became pending (accepted, or replayed by an operator):
-- what the oldest-pending gauge measures, so replaying an old event does
-- not look like a stalled queue. received_at stays when it arrived.
ALTER TABLE webhook_inbox ADD COLUMN pending_since timestamptz;
ALTER TABLE webhook_inbox ALTER COLUMN pending_since SET DEFAULT now();
UPDATE webhook_inbox SET pending_since = received_at WHERE status = 'pending';
CREATE INDEX webhook_inbox_pending_since ON webhook_inbox (pending_since) WHERE status = 'pending';

-- credit_adjustments, which this migration created until issue #30, is the
-- credits domain's own now (domains/credits/schema, applied only by an App
-- that registers the domain). A database that applied this file before
-- keeps it, and the credits set adopts it (IF NOT EXISTS).

---- create above / drop below ----

DROP INDEX webhook_inbox_pending_since;
ALTER TABLE webhook_inbox DROP COLUMN pending_since;
ALTER TABLE webhook_inbox DROP COLUMN object_id;
