-- The credits domain's tables: the grants of paid invoices, every other
-- change of a balance (credit notes, their voids, operator corrections) and
-- the balance itself. Until issue #30 these were created by hookinbox's core
-- migrations (0001, 0002, 0010); a database that applied those keeps its
-- tables and this set adopts them: every statement here is a no-op when its
-- object exists, so the set's version starts at 1 over the same tables.

-- The balance: a column of the core's workspaces (created by core migration
-- 0001 since the beginning, and part of the contract), owned by this domain.
-- Checked first, so an existing column costs no table lock.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = 'public' AND table_name = 'workspaces' AND column_name = 'credits_balance') THEN
        ALTER TABLE workspaces ADD COLUMN credits_balance bigint NOT NULL DEFAULT 0;
    END IF;
END
$$;

-- One row per (provider, source account, environment, invoice, operation):
-- two events for the same invoice, a webhook and a repair all collapse here.
CREATE TABLE IF NOT EXISTS credit_grants (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider       text NOT NULL,
    source_account text NOT NULL,
    environment    text NOT NULL,
    invoice_id     text NOT NULL,
    operation      text NOT NULL CHECK (operation <> ''),
    workspace_id   text NOT NULL REFERENCES workspaces (id),
    credits        bigint NOT NULL CHECK (credits > 0),
    amount_paid    bigint NOT NULL,
    currency       text NOT NULL,
    -- The event whose handling created the grant.
    event_key      text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT credit_grants_business_key UNIQUE (provider, source_account, environment, invoice_id, operation)
);
CREATE INDEX IF NOT EXISTS credit_grants_workspace ON credit_grants (workspace_id);

-- Every change to a balance that is not an initial grant: a credit note's
-- reversal, the void that gives it back, an operator's correction. One row
-- per business key; the balance changes by `applied` in the same
-- transaction, once.
CREATE TABLE IF NOT EXISTS credit_adjustments (
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
CREATE INDEX IF NOT EXISTS credit_adjustments_workspace ON credit_adjustments (workspace_id);

---- create above / drop below ----

-- The balance column stays: core migration 0001 created it on databases
-- older than this set, and the contract names it.
DROP TABLE credit_adjustments;
DROP TABLE credit_grants;
