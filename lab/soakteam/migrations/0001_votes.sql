-- The soak team's own table: each feedback item's votes, one per vote
-- (feedback.voted), counted by the team's handler in the event's commit.
CREATE TABLE soak_team_votes (
    project     text NOT NULL,
    feedback_id text NOT NULL,
    votes       integer NOT NULL,
    last_vote   text NOT NULL,
    PRIMARY KEY (project, feedback_id)
);

---- create above / drop below ----

DROP TABLE soak_team_votes;
