-- An index every intake insert paid for and no reader needs (issue #26, the
-- intake's own cost; every statement that reads the inbox is EXPLAINed by
-- scripts/explain-inbox.sql, the plans are in docs/benchmarks.md).
--
-- webhook_inbox_pending_since cannot answer any statement: the
-- oldest-pending gauge reads min(coalesce(pending_since, received_at)) over
-- the pending rows, an expression the index does not hold, so the planner
-- only walked it as one of three partial indexes over the pending rows;
-- webhook_inbox_pending_due and webhook_inbox_resource_pending serve the same
-- plans. Dropping an index is instant (under the migration's lock timeout).
DROP INDEX webhook_inbox_pending_since;

---- create above / drop below ----

CREATE INDEX webhook_inbox_pending_since ON webhook_inbox (pending_since) WHERE status = 'pending';
