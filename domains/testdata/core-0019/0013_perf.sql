-- The sweeper's ring counter per inbox row (issue #17). Under a backlog a
-- row waits in Temporal for minutes; the sweeper used to ring its resource
-- again every HOOKINBOX_SWEEP_AFTER (0.72 sweeper signals per event at
-- 10,000 resources), each ring a signal and a workflow task more on the
-- server that is already the bottleneck. Now the n-th ring of a row waits
-- HOOKINBOX_SWEEP_AFTER × 4^n after the previous one (capped at an hour):
-- a ring that got through is enough until the backlog has had its time.
-- Both columns are bookkeeping of the sweeper only; the workflow's own
-- retry schedule stays next_attempt_at.
ALTER TABLE webhook_inbox ADD COLUMN sweeps integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_inbox ADD COLUMN swept_at timestamptz;

---- create above / drop below ----

ALTER TABLE webhook_inbox DROP COLUMN swept_at;
ALTER TABLE webhook_inbox DROP COLUMN sweeps;
