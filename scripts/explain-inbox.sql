-- EXPLAIN every statement of internal/store/... that reads webhook_inbox, on a
-- database migrated by `hookinbox migrate` and filled with a realistic inbox:
-- which index each one uses, so that an index no reader needs can be dropped
-- (docs/benchmarks.md, issue #26 item 6). Run it on a throw-away database:
--
--   psql "$URL" -v ON_ERROR_STOP=1 -f scripts/explain-inbox.sql
--
-- It fills the inbox with 300,000 rows (a week at 0.5 deliveries per second:
-- 90% Stripe, 10% GitHub with a replay hash, 2,000 pending, some failed and
-- exhausted), ANALYZEs, then prints one plan per statement, in the order of
-- the store's files. The statements are the store's own, with literal values
-- for their parameters (a custom plan, what pgx's prepared statements get
-- for values that a partial index's predicate names).

\set QUIET on
\pset pager off
SET client_min_messages = warning;

TRUNCATE webhook_inbox, inbox_quarantine, event_lineage;
INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug, workspace_id,
    event_type, resource_kind, resource_id, occurred_at, payload, body_sha256, origin, status,
    next_attempt_at, received_at, processed_at, pending_since, replay_sha256)
SELECT p, 'acct_' || (g % 40), 'test', 'evt_' || g, CASE WHEN p = 'github' THEN 'gh' ELSE 'stripe_' || (g % 3) END,
       'ws_' || (g % 40), CASE WHEN g % 4 = 0 THEN 'customer.subscription.updated' ELSE 'invoice.paid' END,
       CASE WHEN g % 4 = 0 THEN 'subscription' ELSE 'invoice' END, 'obj_' || (g / 3),
       at, convert_to(repeat('x', 1300), 'UTF8'), sha256(convert_to(g::text, 'UTF8')), 'webhook', st,
       at, at, CASE WHEN st = 'pending' THEN NULL ELSE at + interval '2 s' END, at,
       CASE WHEN p = 'github' THEN sha256(convert_to('b' || g, 'UTF8')) END
  FROM generate_series(1, 300000) g,
       LATERAL (SELECT CASE WHEN g % 10 = 0 THEN 'github' ELSE 'stripe' END AS p,
                       now() - (300000 - g) * interval '2 s' AS at,
                       CASE WHEN g > 298000 THEN 'pending' WHEN g % 1000 = 7 THEN 'exhausted'
                            WHEN g % 1000 = 8 THEN 'failed' WHEN g % 50 = 9 THEN 'ignored' ELSE 'done' END AS st) x;
INSERT INTO inbox_quarantine (endpoint_slug, provider, source_account, environment, event_id, reason, detail, payload, body_sha256, headers)
SELECT 'gh', 'github', 'acct_1', 'test', 'q_' || g, 'malformed', 'x', '\x00', sha256(convert_to('q' || g, 'UTF8')), '{}'
  FROM generate_series(1, 2000) g;
ANALYZE webhook_inbox;
ANALYZE inbox_quarantine;
ANALYZE event_lineage;

\echo
\echo '== webhook_inbox indexes (size) =='
SELECT indexrelname AS index, pg_size_pretty(pg_relation_size(indexrelid)) AS size
  FROM pg_stat_user_indexes WHERE relname = 'webhook_inbox' ORDER BY indexrelname;

\set QUIET off
\echo '== inbox.InsertInboxEvent: the won row (event key) =='
EXPLAIN (COSTS OFF) SELECT id, false, body_sha256, status FROM webhook_inbox
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND environment = 'test' AND event_id = 'evt_1';
\echo '== inbox.InsertInboxEvent / BodySeen: the won row (body on an endpoint) =='
EXPLAIN (COSTS OFF) SELECT id FROM webhook_inbox WHERE endpoint_slug = 'gh' AND replay_sha256 = sha256('b10');
\echo '== inbox.LoadPending =='
EXPLAIN (COSTS OFF) SELECT id, event_id, event_type, attempts FROM webhook_inbox
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND environment = 'test'
   AND resource_kind = 'invoice' AND resource_id = 'obj_99500'
   AND status = 'pending' AND next_attempt_at <= now() ORDER BY id LIMIT 101;
\echo '== inbox.LoadPending: next due; WakeResource =='
EXPLAIN (COSTS OFF) SELECT min(next_attempt_at) FROM webhook_inbox
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND environment = 'test'
   AND resource_kind = 'invoice' AND resource_id = 'obj_99500' AND status = 'pending' AND next_attempt_at > now();
\echo '== inbox.GetInboxEvent, LockInboxEvent, CompleteInboxEvent, RecordInboxFailure, DeferInboxEvent, StopInboxEvent, InspectInboxEvent, lockReplayState, ResetInboxEvent =='
EXPLAIN (COSTS OFF) UPDATE webhook_inbox SET status = 'done', processed_at = now()
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND environment = 'test' AND event_id = 'evt_299001' AND status = 'pending';
\echo '== inbox.InspectInboxEvent: payload size (view by id) =='
EXPLAIN (COSTS OFF) SELECT s.payload_bytes FROM webhook_inbox_payload_size s WHERE s.id = 12345;
\echo '== inbox.StalePendingResources (the sweeper) =='
EXPLAIN (COSTS OFF) WITH eligible AS (
	SELECT id, provider, source_account, environment, resource_kind, resource_id, next_attempt_at
	  FROM webhook_inbox
	 WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => 60)
	   AND (swept_at IS NULL OR swept_at < now() - make_interval(secs => least(60 * power(4, least(sweeps, 8)), 3600)))
), stale AS (
	SELECT provider, source_account, environment, resource_kind, resource_id, min(next_attempt_at) AS oldest
	  FROM eligible GROUP BY provider, source_account, environment, resource_kind, resource_id ORDER BY oldest LIMIT 1000
), rung AS (
	UPDATE webhook_inbox w SET sweeps = w.sweeps + 1, swept_at = now()
	  FROM eligible e JOIN stale s USING (provider, source_account, environment, resource_kind, resource_id) WHERE w.id = e.id
)
SELECT provider, source_account, environment, resource_kind, resource_id FROM stale ORDER BY oldest;
\echo '== inbox.HeldPendingResources (the sweeper's probes) =='
EXPLAIN (COSTS OFF) WITH held AS (
	SELECT id, provider, source_account, environment, resource_kind, resource_id, swept_at
	  FROM webhook_inbox
	 WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => 60)
	   AND swept_at >= now() - make_interval(secs => least(60 * power(4, least(sweeps, 8)), 3600))
	   AND swept_at < now() - make_interval(secs => 30)
), probe AS (
	SELECT provider, source_account, environment, resource_kind, resource_id, min(swept_at) AS looked
	  FROM held GROUP BY provider, source_account, environment, resource_kind, resource_id ORDER BY looked LIMIT 1000
), looked AS (
	UPDATE webhook_inbox w SET swept_at = now()
	  FROM held h JOIN probe p USING (provider, source_account, environment, resource_kind, resource_id) WHERE w.id = h.id
)
SELECT provider, source_account, environment, resource_kind, resource_id FROM probe ORDER BY looked;
\echo '== inbox.ReadBacklog (status, the oldest-pending gauge) =='
EXPLAIN (COSTS OFF) SELECT
  (SELECT count(*) FROM webhook_inbox WHERE status = 'pending'),
  (SELECT extract(epoch FROM now() - min(coalesce(pending_since, received_at))) FROM webhook_inbox WHERE status = 'pending'),
  (SELECT count(*) FROM webhook_inbox WHERE status = 'exhausted'),
  (SELECT count(*) FROM webhook_inbox WHERE status = 'failed');
\echo '== inbox.ListInboxEvents, by status =='
EXPLAIN (COSTS OFF) SELECT id, status FROM webhook_inbox WHERE status = ANY('{exhausted}'::text[])
 ORDER BY received_at DESC, id DESC LIMIT 50;
\echo '== inbox.ListInboxEvents, no filter =='
EXPLAIN (COSTS OFF) SELECT id, status FROM webhook_inbox ORDER BY received_at DESC, id DESC LIMIT 50;
\echo '== inbox.ListInboxEvents, by account and resource =='
EXPLAIN (COSTS OFF) SELECT id, status FROM webhook_inbox
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND ((resource_kind = 'invoice' AND resource_id = 'obj_1') OR resource_id = 'invoice/obj_1')
 ORDER BY received_at DESC, id DESC LIMIT 50;
\echo '== inbox.NextInboxForJob / CountInboxForJob (replay jobs, by id window) =='
EXPLAIN (COSTS OFF) SELECT id FROM webhook_inbox WHERE status = ANY('{failed,exhausted}'::text[]) AND id > 0 AND id <= 300000 ORDER BY id LIMIT 100;
\echo '== access.InsertReplayJob: max(id) =='
EXPLAIN (COSTS OFF) SELECT coalesce(max(id), 0) FROM webhook_inbox;
\echo '== inbox.ResourceLineage (explain resource) =='
EXPLAIN (COSTS OFF) SELECT id FROM webhook_inbox
 WHERE provider = 'stripe' AND source_account = 'acct_1' AND environment = 'test' AND resource_kind = 'invoice' AND resource_id = 'obj_1';
\echo '== inbox.RedactInboxPayloads (retention) =='
EXPLAIN (COSTS OFF) SELECT id FROM webhook_inbox
 WHERE status IN ('done', 'ignored', 'failed', 'exhausted') AND payload IS NOT NULL
   AND received_at < now() - make_interval(secs => 259200) AND coalesce(processed_at, received_at) < now() - make_interval(secs => 259200)
 ORDER BY received_at LIMIT 1000 FOR UPDATE SKIP LOCKED;
\echo '== inbox.DeleteExpiredInboxRows (retention) =='
EXPLAIN (COSTS OFF) SELECT id FROM webhook_inbox
 WHERE status IN ('done', 'ignored') AND received_at < now() - make_interval(secs => 259200)
   AND coalesce(processed_at, received_at) < now() - make_interval(secs => 259200)
 ORDER BY received_at LIMIT 1000 FOR UPDATE SKIP LOCKED;
\echo '== passes.ReceivedDeliveries (GitHub recovery) =='
EXPLAIN (COSTS OFF) SELECT event_id FROM webhook_inbox WHERE provider = 'github' AND environment = 'test' AND event_id = ANY('{evt_10,evt_20,evt_9999999}')
UNION SELECT event_id FROM inbox_quarantine WHERE endpoint_slug = 'gh' AND event_id = ANY('{evt_10,evt_20,evt_9999999}');
\echo '== forwards.Backlogs =='
EXPLAIN (COSTS OFF) SELECT count(i.id) FROM webhook_inbox i WHERE i.status = 'pending' AND i.provider = 'stripe' AND i.event_type = 'invoice.paid';
\echo '== records.EraseWorkspace =='
EXPLAIN (COSTS OFF) UPDATE webhook_inbox SET payload = NULL WHERE workspace_id = 'ws_1' AND payload IS NOT NULL;
