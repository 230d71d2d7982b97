-- One row per Slack message, never going backwards: the latest state of
-- the message (posted, edited, deleted) by the time of its change
-- (provider_version: the change's event_ts in microseconds).
CREATE TABLE slack_messages (
	team_id text NOT NULL,
	channel text NOT NULL,
	-- ts is the message's id in its channel (Slack's "ts").
	ts text NOT NULL,
	thread_ts text,
	user_id text,
	text text,
	edited_ts text,
	-- deleted is a tombstone: a deleted message stays deleted, its text gone.
	deleted boolean NOT NULL DEFAULT false,
	provider_version bigint,
	write_seq bigint NOT NULL DEFAULT 1,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (team_id, channel, ts)
);

---- create above / drop below ----

DROP TABLE slack_messages;
