// Package soakteam is the chaos soak's team: what a team adds to hookinbox
// through the public API alone, on a table of its own. Its handler counts
// each feedback item's votes (feedback.voted, a type no built-in domain
// takes) in soak_team_votes, once per vote (Tx.Claim), in the event's one
// transaction. New is the soak's app: the shipped one (domains.New) with the
// team's migrations and handler, as a team's own binary is built;
// cmd/hookinbox-soak runs it. The soak's invariants check the table
// against the simulator's ground truth (lab/verify).
package soakteam

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains"
)

// Names of what the team registers.
const (
	// Table holds each feedback item's votes: (project, feedback_id) →
	// votes, last_vote.
	Table = "soak_team_votes"
	// MigrationSet names the team's migrations (their version table is
	// schema_version_soak_team).
	MigrationSet = "soak_team"
	// HandlerName is the votes handler's route name.
	HandlerName = "soak-team-votes"
	// EventVoted is the type the handler takes (the feedback tool's vote).
	EventVoted = "feedback.voted"
)

//go:embed migrations/*.sql
var files embed.FS

// Files are the team's migration files (tern's format, at the root).
func Files() fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the embedded folder is part of this package
	}
	return sub
}

// Migrations are the team's own migrations, and its table's grants.
func Migrations() hookinbox.Option {
	return hookinbox.WithMigrations(MigrationSet, Files(), hookinbox.Table{Name: Table, Worker: []string{"SELECT", "INSERT", "UPDATE"}})
}

// Register adds the team's handler to app (whose options include Migrations).
func Register(app *hookinbox.App) {
	app.Handle("standard", EventVoted, Votes{}, hookinbox.Name(HandlerName))
}

// New is the soak's app: the shipped domains, the team's migrations and
// its handler, configured from the environment as hookinbox is.
func New() (*hookinbox.App, error) {
	app, err := domains.New(Migrations())
	if err != nil {
		return nil, err
	}
	Register(app)
	return app, app.Err()
}

// Votes counts a feedback item's votes: one per vote id, whatever the
// deliveries, retries and replays.
type Votes struct{}

type voted struct {
	Data struct {
		VoteID string `json:"vote_id"`
	} `json:"data"`
}

// Handle counts one vote.
func (Votes) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	var v voted
	if err := json.Unmarshal(ev.Payload, &v); err != nil || v.Data.VoteID == "" {
		return hookinbox.Result{}, hookinbox.Permanent(errors.New("a vote without data.vote_id"))
	}
	key := hookinbox.Key("soak-team-vote", ev.Key.Account, ev.Resource.ID, v.Data.VoteID)
	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		c, err := tx.Claim(ctx, key)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !c.First {
			return hookinbox.Result{Note: "vote already counted by " + c.By.String()}, nil
		}
		_, err = tx.Conn().Exec(ctx, `
			INSERT INTO soak_team_votes (project, feedback_id, votes, last_vote) VALUES ($1, $2, 1, $3)
			ON CONFLICT (project, feedback_id) DO UPDATE SET votes = soak_team_votes.votes + 1, last_vote = $3`,
			ev.Key.Account, ev.Resource.ID, v.Data.VoteID)
		if err != nil {
			return hookinbox.Result{}, err
		}
		return hookinbox.Result{Note: fmt.Sprintf("vote %s counted for %s", v.Data.VoteID, ev.Resource.ID)}, nil
	})
	res.BusinessKey = key
	return res, err
}
