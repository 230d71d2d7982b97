-- What handling did, kept apart from last_error (which holds only errors
-- and why an event was ignored).
ALTER TABLE webhook_inbox ADD COLUMN note text;

---- create above / drop below ----

ALTER TABLE webhook_inbox DROP COLUMN note;
