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

-- Every change to a balance that is not an initial grant: a credit note's
-- reversal, the void that gives it back, an operator's correction. One row
-- per business key; the balance changes by `applied` in the same
-- transaction, once.
CREATE TABLE credit_adjustments (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- (provider, source_account, environment, invoice_id, reference, operation)
    -- is the business key. Operator corrections: provider 'operator', the
    -- operation id as reference, the other parts ''.
    provider       text NOT NULL,
    source_account text NOT NULL,
    environment    text NOT NULL,
    invoice_id     text NOT NULL,
    -- The credit note id, or the operator's operation id.
    reference      text NOT NULL CHECK (reference <> ''),
    operation      text NOT NULL CHECK (operation IN ('credit-reversal', 'credit-reversal-void', 'operator-adjustment')),
    workspace_id   text NOT NULL REFERENCES workspaces (id),
    -- The change asked for (negative: credits taken back) and the change
    -- made to the balance after the negative-balance policy.
    requested      bigint NOT NULL,
    applied        bigint NOT NULL,
    -- Credits a clamped change could not take back (>= 0).
    shortfall      bigint NOT NULL DEFAULT 0 CHECK (shortfall >= 0),
    -- The negative-balance policy in force and what it decided:
    -- applied (no negative balance), allowed_negative, clamped, held.
    policy         text NOT NULL CHECK (policy IN ('allow', 'clamp', 'hold')),
    decision       text NOT NULL CHECK (decision IN ('applied', 'allowed_negative', 'clamped', 'held')),
    balance_before bigint NOT NULL,
    balance_after  bigint NOT NULL,
    -- What the amount was computed from (credit note and invoice totals).
    detail         jsonb NOT NULL DEFAULT '{}',
    -- The event (or operator action) whose handling created the row.
    event_key      text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT credit_adjustments_business_key
        UNIQUE (provider, source_account, environment, invoice_id, reference, operation)
);
CREATE INDEX credit_adjustments_workspace ON credit_adjustments (workspace_id);

---- create above / drop below ----

DROP TABLE credit_adjustments;
DROP INDEX webhook_inbox_pending_since;
ALTER TABLE webhook_inbox DROP COLUMN pending_since;
ALTER TABLE webhook_inbox DROP COLUMN object_id;
