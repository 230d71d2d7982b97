// Package issues is a team's business on hookinbox built on GitHub's
// issues events: one team_issues row per issue, in a table of the team's
// own migration, that never goes backwards whatever order GitHub's
// deliveries, redeliveries and replays come in, and one email per opened
// issue through hookinbox's outbox. The webhook is a notice: the row is
// what GitHub's API says the issue is now (Event.Fetch), versioned by the
// issue's updated_at with the intake's order as the tie-breaker. It
// imports only hookinbox's public API.
package issues

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
)

//go:embed migrations/*.sql
var files embed.FS

// Migrations are the team's own migrations (the folder's files).
func Migrations() fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the folder is embedded above
	}
	return sub
}

// Name is the handler's name (its metrics label).
const Name = "team-issues"

// ClassOpened is the outbox class of the email about an opened issue.
const ClassOpened = "team_issue_opened"

// Table is the team's table and what hookinbox's roles may do with it: the
// worker (where handlers run) reads and writes it, the operator reads it
// but never who opened the issue.
var Table = hookinbox.Table{Name: "team_issues", Worker: []string{"SELECT", "INSERT", "UPDATE"}, Private: []string{"author"}}

// Projection is the table as a projection that never goes backwards: a row
// is written only when (updated_at, event_seq) is greater than the stored
// pair. GitHub's updated_at has one-second resolution; event_seq is the
// inbox row's sequence (Event.Seq), so two changes within one second both
// apply, in the order the intake committed them, and an older event, or
// the same one replayed, writes nothing.
var Projection = hookinbox.Projection{Table: "team_issues", Key: []string{"issue"},
	VersionColumn: "updated_at", TieColumn: "event_seq", TouchedColumn: "written_at"}

// Actions are the issues events the handler keeps the row by. The others
// (assigned, milestoned, deleted, transferred, …) are answered and recorded
// ignored at the intake.
var Actions = []string{"opened", "edited", "closed", "reopened", "labeled", "unlabeled"}

// New is the team's whole program: hookinbox's processes and CLI with the
// issues handler and its migrations; opts are more options (WithProgram).
func New(opts ...hookinbox.Option) *hookinbox.App {
	app := hookinbox.New(append([]hookinbox.Option{hookinbox.WithMigrations("team_issues", Migrations(), Table)}, opts...)...)
	Register(app)
	return app
}

// Register adds the handler to app.
func Register(app *hookinbox.App) {
	// An email about a new issue twice is better than none.
	app.OutboxClass(ClassOpened, hookinbox.AcceptDuplicate)
	for _, a := range Actions {
		app.Handle("github", "issues."+a, Issues{}, hookinbox.Name(Name))
	}
}

// OpenedKey is the operation key of the email about an opened issue (its
// resource id, OWNER/REPO#N) sent to a workspace: one per issue, however
// many events, redeliveries and replays say it was opened.
func OpenedKey(workspace, issue string) string {
	return hookinbox.Key("github-issue-opened", workspace, issue)
}

// issue is what the handler reads of a GitHub issue, as the REST API
// answers it (GET /repos/OWNER/REPO/issues/N); an issues event carries
// the same object.
type issue struct {
	Number      int64                   `json:"number"`
	Title       string                  `json:"title"`
	State       string                  `json:"state"`
	StateReason *string                 `json:"state_reason"`
	HTMLURL     string                  `json:"html_url"`
	User        *struct{ Login string } `json:"user"`
	Labels      []struct{ Name string } `json:"labels"`
	ClosedAt    *time.Time              `json:"closed_at"`
	UpdatedAt   time.Time               `json:"updated_at"`
	PullRequest json.RawMessage         `json:"pull_request"`
}

// payload is what the handler reads of the event.
type payload struct {
	Issue      *issue `json:"issue"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// Row is a team_issues row; hookinbox.RowOf reads its db tags.
type Row struct {
	Issue       string     `db:"issue"`
	Workspace   string     `db:"workspace_id"`
	Repository  string     `db:"repository"`
	Number      int64      `db:"number"`
	Title       string     `db:"title"`
	State       string     `db:"state"`
	StateReason *string    `db:"state_reason"`
	Labels      []string   `db:"labels"`
	Author      *string    `db:"author"`
	HTMLURL     string     `db:"html_url"`
	ClosedAt    *time.Time `db:"closed_at"`
	UpdatedAt   time.Time  `db:"updated_at"` // the version
	EventSeq    int64      `db:"event_seq"`  // the tie-breaker: Event.Seq
	EventKey    string     `db:"event_key"`  // the event that wrote it
}

// Issues keeps the team_issues row of the issue an event is about and
// sends the email of an opened one.
type Issues struct{}

// Handle fetches the current issue from GitHub, unless the stored row is
// already newer than the change the event reports (then nothing is fetched:
// GitHub allows 5,000 requests an hour per installation), and writes it if
// (updated_at, Seq) is newer than the stored pair. An opened issue's email
// is an outbox intent under the issue's operation key, in the same
// transaction, whether or not the row was written.
func (Issues) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	if ev.Resource.Kind != "issue" {
		// Issues and pull requests share one number space: an issues event
		// about a pull request is the pull request's (its resource).
		return hookinbox.Result{Ignored: true, Note: fmt.Sprintf("%s is a %s, not an issue", ev.Resource.ID, ev.Resource.Kind)}, nil
	}
	action := strings.TrimPrefix(ev.RouteType, "issues.")
	var p payload
	if ev.Payload != nil { // nil once retention redacted it: then the fetch alone decides
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("read the issues event: %w", err))
		}
	}
	stored, err := storedVersion(ctx, ev)
	if err != nil {
		return hookinbox.Result{}, err
	}

	var cur *issue
	if p.Issue == nil || p.Issue.UpdatedAt.IsZero() || stored == nil || !stored.After(p.Issue.UpdatedAt) {
		raw, err := ev.Fetch(ctx)
		if err != nil {
			return hookinbox.Result{}, err
		}
		cur = new(issue)
		if err := json.Unmarshal(raw, cur); err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("read issue %s from GitHub: %w", ev.Resource.ID, err))
		}
		switch {
		case cur.PullRequest != nil && string(cur.PullRequest) != "null":
			return hookinbox.Result{Ignored: true, Note: ev.Resource.ID + " is a pull request, GitHub says"}, nil
		case cur.UpdatedAt.IsZero() || (cur.State != "open" && cur.State != "closed"):
			return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("GitHub answered issue %s without updated_at or with state %q", ev.Resource.ID, cur.State))
		case p.Issue != nil && cur.UpdatedAt.Before(p.Issue.UpdatedAt):
			// GitHub's read lags behind the change the webhook reports:
			// writing it would store an older state than the event's.
			// Retried with backoff until GitHub catches up.
			return hookinbox.Result{}, fmt.Errorf("GitHub answered issue %s as of %s, older than the change the event reports (%s): retried",
				ev.Resource.ID, cur.UpdatedAt.Format(time.RFC3339), p.Issue.UpdatedAt.Format(time.RFC3339))
		}
	}

	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		var res hookinbox.Result
		switch {
		case cur == nil:
			res.Note = fmt.Sprintf("%s %s: the row holds a newer state (%s) than the event's change (%s), nothing fetched or written",
				action, ev.Resource.ID, stored.UTC().Format(time.RFC3339), p.Issue.UpdatedAt.UTC().Format(time.RFC3339))
		default:
			row, err := hookinbox.RowOf(rowOf(ev, p.Repository.FullName, cur))
			if err != nil {
				return hookinbox.Result{}, hookinbox.Permanent(err)
			}
			wrote, err := tx.WriteNewer(ctx, Projection, row)
			if err != nil {
				return hookinbox.Result{}, err
			}
			res.Note = fmt.Sprintf("%s %s: %s as of %s", action, ev.Resource.ID, cur.State, cur.UpdatedAt.UTC().Format(time.RFC3339))
			if !wrote {
				res.Note += ", the row holds a newer state: nothing written"
			}
		}
		if action != "opened" {
			return res, nil
		}
		ws, err := tx.Workspace(ctx, "")
		if err != nil {
			return hookinbox.Result{}, err
		}
		if ws.Email == "" {
			res.Note += "; no email: workspace " + ws.ID + " has no email"
			return res, nil
		}
		opened := p.Issue // the opening, as the event reports it
		if opened == nil {
			opened = cur
		}
		id, err := tx.Send(ctx, hookinbox.Email(OpenedKey(ev.Workspace, ev.Resource.ID), ClassOpened, ws.Email,
			"New issue "+ev.Resource.ID+": "+opened.Title, openedText(ev.Resource.ID, opened)))
		if err != nil {
			return hookinbox.Result{}, err
		}
		res.Note += fmt.Sprintf("; opening email: outbox intent %d", id)
		return res, nil
	})
	res.BusinessKey = hookinbox.Key("github-issue", ev.Resource.ID)
	return res, err
}

// storedVersion is the row's updated_at, nil when there is no row. It is
// read outside the transaction only to spare a fetch; WriteNewer compares
// again in the write.
func storedVersion(ctx context.Context, ev *hookinbox.Event) (*time.Time, error) {
	var at time.Time
	err := ev.DB().QueryRow(ctx, `SELECT updated_at FROM team_issues WHERE issue = $1`, ev.Resource.ID).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the row of %s: %w", ev.Resource.ID, err)
	}
	return &at, nil
}

// rowOf is the row of the fetched issue cur: its own fields, its
// updated_at as the version and the event's Seq as the tie-breaker.
func rowOf(ev *hookinbox.Event, repository string, cur *issue) Row {
	if repository == "" { // a redacted payload: the resource says it
		repository, _, _ = strings.Cut(ev.Resource.ID, "#")
	}
	labels := make([]string, 0, len(cur.Labels))
	for _, l := range cur.Labels {
		labels = append(labels, l.Name)
	}
	r := Row{Issue: ev.Resource.ID, Workspace: ev.Workspace, Repository: repository, Number: cur.Number, Title: cur.Title,
		State: cur.State, StateReason: cur.StateReason, Labels: labels, HTMLURL: cur.HTMLURL, ClosedAt: cur.ClosedAt,
		UpdatedAt: cur.UpdatedAt, EventSeq: ev.Seq, EventKey: ev.Key.String()}
	if cur.User != nil && cur.User.Login != "" {
		r.Author = &cur.User.Login
	}
	return r
}

func openedText(id string, in *issue) string {
	by := "someone"
	if in.User != nil && in.User.Login != "" {
		by = in.User.Login
	}
	return fmt.Sprintf("%s opened issue %s: %s\n\n%s\n", by, id, in.Title, in.HTMLURL)
}
