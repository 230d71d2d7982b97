package github_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers/github"
)

func normalize(t *testing.T, event, body string) (kind, id string) {
	t.Helper()
	h := http.Header{"X-Github-Delivery": {"d-1"}, "X-Github-Event": {event}}
	n, err := github.Provider{}.Normalize(hookintype.EndpointSettings{}, h, gjson.Parse(body))
	require.NoError(t, err)
	return n.ResourceKind, n.ResourceID
}

// TestResourceIsTheObject: the table of docs/providers.md on hand-written
// payloads, the edge cases included (a comment on a pull request, a check
// run's suite, a job's run).
func TestResourceIsTheObject(t *testing.T) {
	t.Parallel()
	const repo = `"repository":{"full_name":"octo/hello","owner":{"login":"octo"}},"installation":{"id":7}`
	for _, tt := range []struct {
		event, body, kind, id string
	}{
		{"issues", `{"action":"opened","issue":{"number":12},` + repo + `}`, "issue", "octo/hello#12"},
		{"issues", `{"action":"labeled","issue":{"number":12},"label":{"name":"bug"},` + repo + `}`, "issue", "octo/hello#12"},
		{"issue_comment", `{"action":"created","issue":{"number":12},` + repo + `}`, "issue", "octo/hello#12"},
		{"issue_comment", `{"action":"created","issue":{"number":13,"pull_request":{"url":"x"}},` + repo + `}`, "pull_request", "octo/hello#13"},
		{"pull_request", `{"action":"opened","number":13,"pull_request":{"number":13},` + repo + `}`, "pull_request", "octo/hello#13"},
		{"pull_request_review", `{"action":"submitted","pull_request":{"number":13},` + repo + `}`, "pull_request", "octo/hello#13"},
		{"pull_request_review_comment", `{"action":"created","pull_request":{"number":13},` + repo + `}`, "pull_request", "octo/hello#13"},
		{"pull_request_review_thread", `{"action":"resolved","pull_request":{"number":13},` + repo + `}`, "pull_request", "octo/hello#13"},
		{"check_suite", `{"action":"completed","check_suite":{"id":99},` + repo + `}`, "check_suite", "octo/hello/99"},
		{"check_run", `{"action":"created","check_run":{"id":5,"check_suite":{"id":99}},` + repo + `}`, "check_suite", "octo/hello/99"},
		{"workflow_run", `{"action":"completed","workflow_run":{"id":42},` + repo + `}`, "workflow_run", "octo/hello/42"},
		{"workflow_job", `{"action":"queued","workflow_job":{"id":6,"run_id":42},` + repo + `}`, "workflow_run", "octo/hello/42"},
		{"release", `{"action":"published","release":{"id":3},` + repo + `}`, "release", "octo/hello/3"},
		{"discussion", `{"action":"created","discussion":{"number":8},` + repo + `}`, "discussion", "octo/hello#8"},
		{"discussion_comment", `{"action":"created","discussion":{"number":8},` + repo + `}`, "discussion", "octo/hello#8"},
		{"deployment", `{"action":"created","deployment":{"id":4},` + repo + `}`, "deployment", "octo/hello/4"},
		{"deployment_status", `{"action":"created","deployment":{"id":4},` + repo + `}`, "deployment", "octo/hello/4"},
		{"push", `{"ref":"refs/heads/main",` + repo + `}`, "repository", "octo/hello"},
		{"label", `{"action":"created","label":{"name":"bug"},` + repo + `}`, "repository", "octo/hello"},
		{"organization", `{"action":"member_added","organization":{"login":"octo-org"},"installation":{"id":7}}`, "organization", "octo-org"},
		{"installation", `{"action":"created","installation":{"id":7},"sender":{"login":"alice"}}`, "installation", "7"},
		{"marketplace_purchase", `{"action":"purchased","marketplace_purchase":{"account":{"id":31,"login":"acme"}},"sender":{"login":"alice"}}`, "account", "31"},
		{"security_advisory", `{"action":"published","security_advisory":{"ghsa_id":"GHSA-abcd-1234-wxyz"}}`, "security_advisory", "GHSA-abcd-1234-wxyz"},
		{"sponsorship", `{"action":"created","sponsorship":{"node_id":"S_1"},"sender":{"login":"alice"}}`, "sponsorship", "S_1"},
		{"github_app_authorization", `{"action":"revoked","sender":{"login":"alice"}}`, "user", "alice"},
	} {
		kind, id := normalize(t, tt.event, tt.body)
		require.Equal(t, tt.kind, kind, "%s %s", tt.event, tt.body)
		require.Equal(t, tt.id, id, "%s %s", tt.event, tt.body)
	}
	// Two issues of one repository are two resources; the issue and the pull
	// request of one number are one object (GitHub numbers them together).
	_, a := normalize(t, "issues", `{"action":"opened","issue":{"number":1},`+repo+`}`)
	_, b := normalize(t, "issues", `{"action":"opened","issue":{"number":2},`+repo+`}`)
	require.NotEqual(t, a, b)
}

// wantKind is the kind docs/providers.md's table gives an event of a
// repository ("" for the repository itself).
var wantKind = map[string]string{
	"issues": "issue", "issue_comment": "issue", "pull_request": "pull_request", "pull_request_review": "pull_request",
	"pull_request_review_comment": "pull_request", "pull_request_review_thread": "pull_request",
	"check_suite": "check_suite", "check_run": "check_suite", "workflow_run": "workflow_run", "workflow_job": "workflow_run",
	"release": "release", "discussion": "discussion", "discussion_comment": "discussion",
	"deployment": "deployment", "deployment_status": "deployment", "deployment_review": "workflow_run",
	"deployment_protection_rule": "deployment",
}

// TestEveryOctokitExampleHasAResource: every payload of
// @octokit/webhooks-examples (GitHub's own, for github.com and each GHES
// release) gets a resource with a non-empty id, of the kind the table says.
func TestEveryOctokitExampleHasAResource(t *testing.T) {
	t.Parallel()
	dir := testenv.NPMPackage(t, devenv.OctokitWebhooks)
	files, err := filepath.Glob(filepath.Join(dir, "*", "index.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no index.json under %s", dir)
	kinds := map[string]int{}
	total := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var events []struct {
			Name     string            `json:"name"`
			Examples []json.RawMessage `json:"examples"`
		}
		require.NoError(t, json.Unmarshal(raw, &events), f)
		for _, e := range events {
			for i, ex := range e.Examples {
				var b bytes.Buffer
				require.NoError(t, json.Compact(&b, ex))
				src := fmt.Sprintf("%s/%s#%d", filepath.Base(filepath.Dir(f)), e.Name, i)
				kind, id := normalize(t, e.Name, b.String())
				require.NotEmpty(t, kind, src)
				require.NotEmpty(t, id, src)
				doc := gjson.Parse(b.String())
				if doc.Get("repository.full_name").Exists() {
					want := wantKind[e.Name]
					if (e.Name == "issues" || e.Name == "issue_comment") && doc.Get("issue.pull_request").Exists() {
						want = "pull_request"
					}
					if want == "" {
						want = "repository"
					}
					require.Equal(t, want, kind, src)
				}
				kinds[kind]++
				total++
			}
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	summary := ""
	for _, k := range names {
		summary += fmt.Sprintf(" %s=%d", k, kinds[k])
	}
	t.Logf("%d examples:%s", total, summary)
	require.Greater(t, total, 300)
}
