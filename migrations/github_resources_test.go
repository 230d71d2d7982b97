package migrations_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/hookinbox/hookinbox/providers/github"
)

const githubResourcesMigration = "_github_object_resources.sql"

// splitAtGitHubResources is the migrations before the one that moves GitHub
// rows onto their objects, and that one renumbered to follow them (the
// coordinator renumbers at merge: found by its name).
func splitAtGitHubResources(t *testing.T) (before, with fstest.MapFS) {
	t.Helper()
	before, with = fstest.MapFS{}, fstest.MapFS{}
	var mine []byte
	n := 0
	entries, err := fs.ReadDir(migrations.FS(), ".")
	require.NoError(t, err)
	for _, e := range entries {
		if mine != nil {
			break // the ones after it are not the database it meets
		}
		b, err := fs.ReadFile(migrations.FS(), e.Name())
		require.NoError(t, err)
		if strings.HasSuffix(e.Name(), githubResourcesMigration) {
			mine = b
			continue
		}
		if strings.HasSuffix(e.Name(), ".sql") {
			before[e.Name()] = &fstest.MapFile{Data: b}
			with[e.Name()] = &fstest.MapFile{Data: b}
			n++
		}
	}
	require.NotNil(t, mine, "the migration *%s", githubResourcesMigration)
	with[fmt.Sprintf("%04d%s", n+1, githubResourcesMigration)] = &fstest.MapFile{Data: mine}
	return before, with
}

// TestGitHubResourcesMigrationMatchesNormalize: pending GitHub rows recorded
// under the old rule (every event of a repository on the repository) are
// moved onto the object Normalize now gives them, exactly; rows that are
// not pending, not JSON, or serialized elsewhere stay where they are.
func TestGitHubResourcesMigrationMatchesNormalize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, _ := freshDatabase(t, "mig_ghres")
	before, with := splitAtGitHubResources(t)
	_, err := migrations.UpFS(ctx, conn, before, 10*time.Second, nil)
	require.NoError(t, err)

	const repo = `"repository":{"full_name":"octo/hello","owner":{"login":"octo"}},"installation":{"id":7}`
	payloads := []struct{ event, body string }{
		{"issues", `{"action":"opened","issue":{"number":12},` + repo + `}`},
		{"issues", `{"action":"labeled","issue":{"number":12},` + repo + `}`},
		{"issue_comment", `{"action":"created","issue":{"number":12},` + repo + `}`},
		{"issue_comment", `{"action":"created","issue":{"number":13,"pull_request":{"url":"x"}},` + repo + `}`},
		{"pull_request", `{"action":"opened","number":13,"pull_request":{"number":13},` + repo + `}`},
		{"pull_request_review_thread", `{"action":"resolved","pull_request":{"number":13},` + repo + `}`},
		{"check_run", `{"action":"created","check_run":{"id":5,"check_suite":{"id":99}},` + repo + `}`},
		{"check_suite", `{"action":"completed","check_suite":{"id":99},` + repo + `}`},
		{"workflow_job", `{"action":"queued","workflow_job":{"id":6,"run_id":42},` + repo + `}`},
		{"workflow_run", `{"action":"completed","workflow_run":{"id":42},` + repo + `}`},
		{"release", `{"action":"published","release":{"id":3},` + repo + `}`},
		{"discussion_comment", `{"action":"created","discussion":{"number":8},` + repo + `}`},
		{"deployment_status", `{"action":"created","deployment":{"id":4},` + repo + `}`},
		{"push", `{"ref":"refs/heads/main",` + repo + `}`},
		{"issues", `{"action":"opened",` + repo + `}`}, // no issue: the repository
	}
	insert := func(i int, event, body, status, objectID string) {
		t.Helper()
		typ := event
		if a := gjson.Get(body, "action"); a.Exists() {
			typ += "." + a.String()
		}
		sum := sha256.Sum256([]byte(body))
		_, err := conn.Exec(ctx, `INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug,
			workspace_id, event_type, resource_kind, resource_id, payload, body_sha256, status, object_id)
			VALUES ('github', '7', 'live', $1, 'gh', 'ws', $2, 'repository', 'octo/hello', $3, $4, $5, nullif($6, ''))`,
			fmt.Sprintf("d-%d", i), typ, []byte(body), sum[:], status, objectID)
		require.NoError(t, err)
	}
	for i, p := range payloads {
		insert(i, p.event, p.body, "pending", "")
	}
	issue := `{"action":"opened","issue":{"number":12},` + repo + `}`
	insert(100, "issues", issue, "done", "")                 // handled: history stays
	insert(101, "issues", issue, "pending", "octo/hello#12") // serialized by a route
	insert(102, "issues", "payload=%7B%7D", "pending", "")   // a form: not read
	_, err = migrations.UpFS(ctx, conn, with, 10*time.Second, nil)
	require.NoError(t, err)

	for i, p := range payloads {
		var kind, id string
		require.NoError(t, conn.QueryRow(ctx, `SELECT resource_kind, resource_id FROM webhook_inbox WHERE event_id = $1`,
			fmt.Sprintf("d-%d", i)).Scan(&kind, &id))
		h := http.Header{"X-Github-Delivery": {"d"}, "X-Github-Event": {p.event}}
		n, err := github.Provider{}.Normalize(hookintype.EndpointSettings{}, h, gjson.Parse(p.body))
		require.NoError(t, err)
		require.Equal(t, n.ResourceKind+" "+n.ResourceID, kind+" "+id, "%s %s", p.event, p.body)
	}
	for _, e := range []string{"d-100", "d-101", "d-102"} {
		var kind, id string
		require.NoError(t, conn.QueryRow(ctx, `SELECT resource_kind, resource_id FROM webhook_inbox WHERE event_id = $1`, e).Scan(&kind, &id))
		require.Equal(t, "repository octo/hello", kind+" "+id, e)
	}
}
