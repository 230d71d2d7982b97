-- One OpenTelemetry trace per delivery (issue #35): the intake's request
-- span is its root, and the W3C traceparent of that span is kept with the
-- row, so that the activities that handle the event, send its outbox rows
-- and forward it (whenever they run, whichever doorbell rang) start their
-- spans under it, and the lineage and the console can name the trace. NULL
-- when tracing is off (or for rows from before it). A nullable column with
-- no default: instant, under the migration's lock timeout.
ALTER TABLE webhook_inbox ADD COLUMN traceparent text;

---- create above / drop below ----

ALTER TABLE webhook_inbox DROP COLUMN traceparent;
