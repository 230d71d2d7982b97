package hookinbox_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// A GitHub issues handler on the public API: each issue is its own
// resource, Event.Fetch returns the current issue from the simulator's
// GitHub with the endpoint's token, and the projection is ordered by the
// fetched updated_at with the intake's order as the tie-breaker.
func TestAGitHubIssueHandlerFetchesTheCurrentIssue(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Config{Seed: 9})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	setIssue := func(n int64, state, updated string) {
		b, _ := json.Marshal(map[string]any{"number": n, "state": state, "updated_at": updated})
		require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("acme", "widgets", simulator.GitHubIssues, n), b))
	}
	files := fstest.MapFS{"0001_issues.sql": {Data: []byte(`
CREATE TABLE team_issues (issue text PRIMARY KEY, state text NOT NULL, updated_at timestamptz, event_seq bigint, write_seq bigint NOT NULL DEFAULT 1);
---- create above / drop below ----
DROP TABLE team_issues;`)}}
	issues := hookinbox.Projection{Table: "team_issues", Key: []string{"issue"}, VersionColumn: "updated_at", TieColumn: "event_seq"}
	type issueRow struct {
		Issue     string    `db:"issue"`
		State     string    `db:"state"`
		UpdatedAt time.Time `db:"updated_at"`
		EventSeq  int64     `db:"event_seq"`
	}
	var resources []hookintype.Resource
	app := hookinbox.New(hookinbox.WithMigrations("issues", files, hookinbox.Table{Name: "team_issues", Worker: []string{"SELECT", "INSERT", "UPDATE"}}))
	h := hookinbox.HandlerFunc(func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		resources = append(resources, ev.Resource)
		cur, err := ev.Fetch(ctx)
		if err != nil {
			return hookinbox.Result{}, err
		}
		at, err := time.Parse(time.RFC3339, gjson.GetBytes(cur, "updated_at").String())
		if err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(err)
		}
		row, err := hookinbox.RowOf(issueRow{Issue: ev.Resource.ID, State: gjson.GetBytes(cur, "state").String(), UpdatedAt: at, EventSeq: ev.Seq})
		if err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(err)
		}
		return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
			_, err := tx.WriteNewer(ctx, issues, row)
			return hookinbox.Result{}, err
		})
	})
	for _, typ := range []string{"issues.opened", "issues.edited", "issues.closed"} {
		app.Handle("github", typ, h)
	}
	hh := hookintest.New(t, app)
	const ghSecret = "github-issues-secret-0123456789abcdef"
	hh.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: "gh", Provider: "github", Secret: ghSecret, Account: "7", Workspace: "ws_1",
		APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey})
	ctx := context.Background()
	deliver := func(id, action string, n int) hookintype.EventKey {
		body := []byte(`{"action":"` + action + `","issue":{"number":` + string(rune('0'+n)) + `},"repository":{"full_name":"acme/widgets","owner":{"login":"acme"}},"installation":{"id":7}}`)
		d := hh.Deliver(ctx, "gh", ghSecret, http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"issues"}, "X-Github-Delivery": {id}}, body)
		require.Equal(t, "accepted", d.Outcome, d.Reason)
		return d.Key
	}
	state := func(issue string) string {
		var s string
		require.NoError(t, hh.DB.QueryRow(ctx, `SELECT state FROM team_issues WHERE issue = $1`, issue).Scan(&s))
		return s
	}

	setIssue(1, "open", "2026-12-02T10:00:00Z")
	setIssue(2, "open", "2026-12-02T10:00:00Z")
	require.NoError(t, hh.Handle(ctx, deliver("d-1", "opened", 1)).Err)
	require.NoError(t, hh.Handle(ctx, deliver("d-2", "opened", 2)).Err)
	require.Equal(t, "open", state("acme/widgets#1"))
	// Closed within the same second as it was opened: fetched, and applied.
	setIssue(1, "closed", "2026-12-02T10:00:00Z")
	require.NoError(t, hh.Handle(ctx, deliver("d-3", "closed", 1)).Err)
	require.Equal(t, "closed", state("acme/widgets#1"), "a second change within one second applies")
	require.Equal(t, "open", state("acme/widgets#2"))
	require.Equal(t, []hookintype.Resource{resources[0], resources[1], resources[0]}, resources)
	require.Equal(t, "issue", resources[0].Kind)
	require.Equal(t, "acme/widgets#1", resources[0].ID)
	require.Equal(t, "acme/widgets#2", resources[1].ID, "two issues of one repository: two resources")
	require.Equal(t, 3, sim.GitHubObjectReads(), "one fetch per event, where the handler asks")
}
