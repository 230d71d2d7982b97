-- The console's trends (issue #26): a small rollup the sweeper keeps, one
-- row per minute, read by the overview's charts and GET /api/trends (the
-- last hour by minute, the last day by 15 minutes). The inbox cannot say
-- afterwards how many rows were pending at 3:12, nor the outbox how many
-- were held: the levels are sampled as they are. Rows older than two days
-- are deleted as the sweeper samples.
CREATE TABLE console_trends (
    -- The minute (UTC, date_bin on 2000-01-01) this row describes.
    minute          timestamptz PRIMARY KEY,
    -- The minute's latest sample of the levels; all NULL for a minute no
    -- sweep sampled (a gap), whose handled count is known all the same.
    sampled_at      timestamptz,
    pending         bigint,
    exhausted       bigint,
    failed          bigint,
    quarantine_open bigint,
    -- Outbox rows pending or uncertain (still to send), held for review, failed.
    outbox_unsent   bigint,
    outbox_held     bigint,
    outbox_failed   bigint,
    -- Inbox rows that reached a final status (done, ignored, failed,
    -- exhausted) during the minute: processed_at in it, counted from the
    -- index below by the samples in and just after the minute.
    handled         bigint NOT NULL DEFAULT 0
);

-- The handled count of each sample: the rows processed in the last
-- minute or two, found by processed_at (an index-only scan) instead of
-- reading the whole inbox every sweep (300,000 rows: 1 ms against 240-430
-- ms). Partial: a pending row has no processed_at, so the intake's insert of
-- a routed delivery adds no entry (only a row the intake records ignored
-- does); a completion changes status, which other indexes hold, so it was
-- never a HOT update anyway.
CREATE INDEX webhook_inbox_processed ON webhook_inbox (processed_at) WHERE processed_at IS NOT NULL;

-- The sample's outbox counts (still to send, held, failed): the rows not
-- sent, by an index-only scan, instead of reading every sent row (200,000
-- rows: under 1 ms against 27 ms).
CREATE INDEX outbox_unsettled ON outbox (status) WHERE status <> 'sent';

---- create above / drop below ----

DROP INDEX outbox_unsettled;
DROP INDEX webhook_inbox_processed;
DROP TABLE console_trends;
