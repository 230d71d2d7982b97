-- Business keys claimed through the public API (issue 22: a team's own
-- handlers). tx.Claim inserts a key once, in the handler's one transaction
-- with its effect and the inbox row's completion: the UNIQUE constraint
-- (the primary key) settles two events of one operation, a replay and a
-- repair alike (SPEC R12). Each claim names the event that made it and the
-- resource it ran on, so the lineage (`hookinbox explain`) shows which
-- delivery produced a team's effect without knowing its tables. Claims are
-- business records: retention never deletes them.
CREATE TABLE business_claims (
    business_key text PRIMARY KEY CHECK (business_key <> '' AND length(business_key) <= 1024),
    event_key    text NOT NULL,
    resource_key text NOT NULL,
    handler      text NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX business_claims_resource ON business_claims (resource_key);

---- create above / drop below ----

DROP TABLE business_claims;
