package issues_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"

	"example.com/github-issues/issues"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	slug   = "github"
	secret = "gh-webhook-secret-7f3a9c1e5b2d4f60"
	// The examples come from a repository hook (no installation): the
	// source account is the repository's owner.
	account = "Codertocat"
	ws      = "ws_team"
	triage  = "triage@team.example"
	repo    = "Codertocat/Hello-World"
	issue1  = repo + "#1"
	// GitHub's own examples: the issue was opened, edited and labeled
	// within the second 15:20:18 (their issue.updated_at).
	openedAt = "2019-05-15T15:20:18Z"
)

// setup is the team's program on a fresh database, its endpoint fetching
// from the simulator's GitHub (sim) with the simulator's token, its
// workspace's email the team's triage address.
func setup(t *testing.T) (*hookintest.Harness, *simulator.Simulator) {
	t.Helper()
	sim := simulator.New(simulator.Config{Seed: 33})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	h := hookintest.New(t, issues.New())
	h.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: slug, Provider: "github", Secret: secret,
		APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey, Account: account, Workspace: ws, Email: triage})
	return h, sim
}

// fixture is testdata/issues.NAME.json (GitHub's example payload, see
// testdata/README.md) as a document, for the changes a test makes.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "issues."+name+".json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	return doc
}

// issueOf is the issue a document carries.
func issueOf(doc map[string]any) map[string]any { return doc["issue"].(map[string]any) }

// closed is the opened example as GitHub sends the issue's closing at at:
// the corpus has no issues.closed example (testdata/README.md).
func closed(t *testing.T, at string) map[string]any {
	t.Helper()
	doc := fixture(t, "opened")
	doc["action"] = "closed"
	in := issueOf(doc)
	in["state"], in["state_reason"], in["closed_at"], in["updated_at"] = "closed", "completed", at, at
	return doc
}

// current makes the simulator's GitHub hold in (an issue of repo) as the
// issue's current state: what GET /repos/OWNER/REPO/issues/N answers.
func current(t *testing.T, sim *simulator.Simulator, in map[string]any, change func(map[string]any)) {
	t.Helper()
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var cp map[string]any
	require.NoError(t, json.Unmarshal(b, &cp))
	if change != nil {
		change(cp)
	}
	b, err = json.Marshal(cp)
	require.NoError(t, err)
	n := int64(cp["number"].(float64))
	require.NoError(t, sim.SetGitHubObject(simulator.GitHubObjectPath("Codertocat", "Hello-World", simulator.GitHubIssues, n), b))
}

// deliver sends doc as GitHub does (compact, signed, X-GitHub-Event
// issues) under the delivery id guid.
func deliver(t *testing.T, h *hookintest.Harness, guid string, doc map[string]any) hookintest.Delivery {
	t.Helper()
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	return h.Deliver(context.Background(), slug, secret, headers(guid), body)
}

func headers(guid string) http.Header {
	return http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"issues"}, "X-Github-Delivery": {guid},
		"User-Agent": {"GitHub-Hookshot/044aadd"}}
}

// handle delivers doc, which must be accepted, and makes one attempt.
func handle(t *testing.T, h *hookintest.Harness, guid string, doc map[string]any) (hookintest.Delivery, hookintest.Handled) {
	t.Helper()
	d := deliver(t, h, guid, doc)
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	res := h.Handle(context.Background(), d.Key)
	require.NoError(t, res.Err)
	return d, res
}

// row is the team_issues row of issue.
type row struct {
	title     string
	state     string
	labels    []string
	author    *string
	updatedAt time.Time
	eventSeq  int64
	eventKey  string
	writeSeq  int64
}

func rowOf(t *testing.T, h *hookintest.Harness, issue string) row {
	t.Helper()
	var r row
	require.NoError(t, h.DB.QueryRow(context.Background(), `SELECT title, state, labels, author, updated_at, event_seq, event_key, write_seq
		FROM team_issues WHERE issue = $1`, issue).Scan(&r.title, &r.state, &r.labels, &r.author, &r.updatedAt, &r.eventSeq, &r.eventKey, &r.writeSeq))
	return r
}

func count(t *testing.T, h *hookintest.Harness, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, h.DB.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// resource is the workflow an event of the endpoint's account runs in.
func resource(kind, id string) hookintype.Resource {
	return hookintype.Resource{Provider: "github", Account: account, Environment: hookintype.Test, Kind: kind, ID: id}
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

// 1. An opened issue delivered three times and replayed is one row and
// one email intent: GitHub's redelivery of a delivery is a duplicate at
// the intake, and so is its body under another delivery id (GitHub signs
// no id), but another delivery of the same opening (GitHub's second
// example of it, without the issue's body) is a new event that the
// handler runs, and the email's operation key sends it once.
func TestAnOpenedIssueDeliveredThreeTimesIsOneRowAndOneEmail(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	opened := fixture(t, "opened")
	current(t, sim, issueOf(opened), nil)

	first, res := handle(t, h, "d-opened-1", opened)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Equal(t, resource("issue", issue1), h.Event(ctx, first.Key).Resource, "the issue is the resource")
	require.Contains(t, res.Note, "opened "+issue1+": open as of "+openedAt)
	require.Contains(t, res.Note, "opening email")

	again := deliver(t, h, "d-opened-1", opened)
	require.Equal(t, "duplicate", again.Outcome, "GitHub's redelivery keeps X-GitHub-Delivery: stored once")

	require.Equal(t, "duplicate", deliver(t, h, "d-opened-2", opened).Outcome, "the same body under a new delivery id")

	_, res = handle(t, h, "d-opened-3", fixture(t, "opened-without-body"))
	require.Equal(t, hookintype.StatusDone, res.Status)
	h.Replay(ctx, first.Key, "a replay sends no second email")
	res = h.Handle(ctx, first.Key)
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)

	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM team_issues`), "one row")
	r := rowOf(t, h, issue1)
	require.Equal(t, "open", r.state)
	require.Equal(t, "Spelling error in the README file", r.title)
	require.Equal(t, []string{"bug"}, r.labels)
	require.Equal(t, "Codertocat", *r.author)
	require.True(t, at(t, openedAt).Equal(r.updatedAt))

	require.Len(t, h.Outbox(ctx, "*"), 1, "one email intent, and no other")
	sent := h.Outbox(ctx, issues.OpenedKey(ws, issue1))
	require.Len(t, sent, 1, "under the issue's operation key")
	require.Equal(t, issues.ClassOpened, sent[0].Class)
	require.Equal(t, "email", sent[0].Kind)
	require.Equal(t, triage, sent[0].Destination)
	require.Contains(t, string(sent[0].Payload), "New issue "+issue1+": Spelling error in the README file")
	require.Equal(t, 3, sim.GitHubObjectReads(), "each handled event fetched the issue once")
}

// 2. The close, delivered before an older edit: the projection ends
// closed, and the edit, whose change is older than the stored state,
// fetches and writes nothing.
func TestAnOutOfOrderCloseBeforeAnOlderEditEndsClosed(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	opened := fixture(t, "opened")
	current(t, sim, issueOf(opened), nil)
	handle(t, h, "d-opened", opened)

	// On GitHub the issue was edited (15:20:18) and closed (15:20:30);
	// the close arrives first. GitHub's API holds the closed issue.
	const closedAt = "2019-05-15T15:20:30Z"
	shut := closed(t, closedAt)
	current(t, sim, issueOf(shut), nil)
	cd, res := handle(t, h, "d-closed", shut)
	require.Equal(t, "closed "+issue1+": closed as of "+closedAt, res.Note)
	after := rowOf(t, h, issue1)
	require.Equal(t, "closed", after.state)
	require.True(t, at(t, closedAt).Equal(after.updatedAt))
	require.Equal(t, cd.Key.String(), after.eventKey)
	reads := sim.GitHubObjectReads()

	edited := fixture(t, "edited") // GitHub's example, unchanged: updated_at 15:20:18
	ed, res := handle(t, h, "d-edited", edited)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Contains(t, res.Note, "the row holds a newer state (2019-05-15T15:20:30Z) than the event's change (2019-05-15T15:20:18Z), nothing fetched or written")
	require.Equal(t, after, rowOf(t, h, issue1), "the older edit changed nothing: not even the write sequence")
	require.Equal(t, reads, sim.GitHubObjectReads(), "nothing fetched for a change older than the row")
	require.Len(t, h.Outbox(ctx, issues.OpenedKey(ws, issue1)), 1, "one email still")

	// A replay of the close, after the older edit, changes nothing either:
	// it fetches (the row is as new as its change), and (updated_at, seq)
	// is not newer than the stored pair.
	h.Replay(ctx, cd.Key, "replay the close")
	res = h.Handle(ctx, cd.Key)
	require.NoError(t, res.Err)
	require.Contains(t, res.Note, "the row holds a newer state: nothing written")
	require.Equal(t, after, rowOf(t, h, issue1))
	require.Equal(t, hookintype.StatusDone, h.Event(ctx, ed.Key).Status)
}

// 3. Two changes of one issue within one second of updated_at (GitHub's
// own opened and labeled examples: 15:20:18) both apply, in the order the
// intake committed them; replaying the first afterwards writes nothing.
func TestTwoChangesInOneSecondApplyInIntakeOrder(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	opened, labeled := fixture(t, "opened"), fixture(t, "labeled")
	require.Equal(t, issueOf(opened)["updated_at"], issueOf(labeled)["updated_at"], "the corpus's two changes share one second")

	// Opened without a label; labeled "bug" within the same second.
	current(t, sim, issueOf(opened), func(in map[string]any) { in["labels"] = []any{} })
	od, res := handle(t, h, "d-opened", opened)
	require.Equal(t, hookintype.StatusDone, res.Status)
	first := rowOf(t, h, issue1)
	require.Empty(t, first.labels)

	current(t, sim, issueOf(labeled), nil)
	ld, res := handle(t, h, "d-labeled", labeled)
	require.Equal(t, "labeled "+issue1+": open as of "+openedAt, res.Note, "a second change in the same second is written")
	second := rowOf(t, h, issue1)
	require.Equal(t, []string{"bug"}, second.labels)
	require.True(t, first.updatedAt.Equal(second.updatedAt), "one version")
	require.Greater(t, second.eventSeq, first.eventSeq, "the tie-breaker is the intake's order")
	require.Equal(t, ld.Key.String(), second.eventKey)
	require.Equal(t, first.writeSeq+1, second.writeSeq)

	// The first change replayed after the second: its (updated_at, seq) is
	// older than the stored pair, so the row keeps the second change.
	h.Replay(ctx, od.Key, "replay the opening")
	res = h.Handle(ctx, od.Key)
	require.NoError(t, res.Err)
	require.Contains(t, res.Note, "nothing written")
	require.Equal(t, second, rowOf(t, h, issue1))
	require.Len(t, h.Outbox(ctx, issues.OpenedKey(ws, issue1)), 1)
}

// 4. Two issues of one repository are two resources (OWNER/REPO#N), two
// rows and two emails; an issues event about a pull request is the pull
// request's, and the handler leaves it alone.
func TestTwoIssuesOfOneRepositoryAreTwoResources(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	one := fixture(t, "opened")
	two := fixture(t, "opened")
	in := issueOf(two)
	in["number"], in["id"], in["title"] = 2, 444500042, "The README has a second spelling error"
	in["html_url"], in["url"] = "https://github.com/Codertocat/Hello-World/issues/2", "https://api.github.com/repos/Codertocat/Hello-World/issues/2"
	current(t, sim, issueOf(one), nil)
	current(t, sim, in, nil)

	d1, _ := handle(t, h, "d-one", one)
	d2, _ := handle(t, h, "d-two", two)
	require.Equal(t, resource("issue", issue1), h.Event(ctx, d1.Key).Resource)
	require.Equal(t, resource("issue", repo+"#2"), h.Event(ctx, d2.Key).Resource,
		"another issue of the repository: another resource, another workflow")
	require.Equal(t, 2, count(t, h, `SELECT count(*) FROM team_issues WHERE repository = $1`, repo))
	require.Equal(t, "The README has a second spelling error", rowOf(t, h, repo+"#2").title)
	require.Len(t, h.Outbox(ctx, issues.OpenedKey(ws, issue1)), 1)
	require.Len(t, h.Outbox(ctx, issues.OpenedKey(ws, repo+"#2")), 1)
	require.Len(t, h.Outbox(ctx, "*"), 2)

	pr := fixture(t, "opened")
	in = issueOf(pr)
	in["number"] = 3
	in["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/3"}
	reads := sim.GitHubObjectReads()
	d, res := handle(t, h, "d-pr", pr)
	require.Equal(t, resource("pull_request", repo+"#3"), h.Event(ctx, d.Key).Resource)
	require.Equal(t, hookintype.StatusIgnored, res.Status)
	require.Contains(t, res.Note, "is a pull_request, not an issue")
	require.Equal(t, reads, sim.GitHubObjectReads())
	require.Equal(t, 2, count(t, h, `SELECT count(*) FROM team_issues`))
}

// GitHub's API may answer an issue older than the change the webhook just
// reported (its reads lag): the event is retried, nothing written, until
// the fetch is at least as new. Labeled and unlabeled follow the fetch,
// not the payload (GitHub's unlabeled example still lists the label).
func TestAFetchOlderThanTheEventIsRetried(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	opened := fixture(t, "opened")
	current(t, sim, issueOf(opened), nil)
	handle(t, h, "d-opened", opened)

	unlabeled := fixture(t, "unlabeled") // updated_at 15:20:26
	d := deliver(t, h, "d-unlabeled", unlabeled)
	res := h.Handle(ctx, d.Key)
	require.Error(t, res.Err, "GitHub still answers the 15:20:18 issue")
	require.Contains(t, res.Err.Error(), "older than the change the event reports")
	require.Equal(t, hookintype.StatusPending, res.Status, "retried")
	require.Equal(t, []string{"bug"}, rowOf(t, h, issue1).labels)

	current(t, sim, issueOf(unlabeled), func(in map[string]any) { in["labels"] = []any{} })
	res = h.Handle(ctx, d.Key)
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)
	r := rowOf(t, h, issue1)
	require.Empty(t, r.labels, "the fetched issue, not the payload's list")
	require.True(t, at(t, "2019-05-15T15:20:26Z").Equal(r.updatedAt))

	// A payload that gives no updated_at says nothing about its age: the
	// issue is fetched.
	bare := fixture(t, "labeled")
	delete(issueOf(bare), "updated_at")
	reads := sim.GitHubObjectReads()
	_, res = handle(t, h, "d-bare", bare)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Equal(t, reads+1, sim.GitHubObjectReads(), "fetched")
	require.Empty(t, rowOf(t, h, issue1).labels, "the fetched issue, not the payload's label")

	other := fixture(t, "opened")
	other["action"] = "assigned"
	require.Equal(t, "ignored", deliver(t, h, "d-assigned", other).Outcome, "an action the handler does not keep is ignored at the intake")
}

// The team's grants: the worker writes the table, the operator reads it
// but not who opened the issue, the intake not at all.
func TestTheTeamsTableIsCoveredByTheRoles(t *testing.T) {
	t.Parallel()
	h, _ := setup(t)
	var worker, operatorAuthor, operatorState, intake bool
	require.NoError(t, h.DB.QueryRow(context.Background(), `SELECT
		has_table_privilege('hookinbox_worker', 'team_issues', 'UPDATE'),
		has_column_privilege('hookinbox_operator', 'team_issues', 'author', 'SELECT'),
		has_column_privilege('hookinbox_operator', 'team_issues', 'state', 'SELECT'),
		has_table_privilege('hookinbox_intake', 'team_issues', 'SELECT')`).Scan(&worker, &operatorAuthor, &operatorState, &intake))
	require.True(t, worker)
	require.False(t, operatorAuthor, "who opened an issue is personal data")
	require.True(t, operatorState)
	require.False(t, intake)
}

// On the real stack (the intake over HTTP, Temporal, the worker, the
// outbox, Mailpit): an opened issue posted twice is one row and one
// email in the team's mailbox.
func TestTheOpenedIssueEmailReachesTheMailbox(t *testing.T) {
	t.Parallel()
	h, sim := setup(t)
	ctx := context.Background()
	opened := fixture(t, "opened")
	current(t, sim, issueOf(opened), nil)
	s := h.Run()
	body, err := json.Marshal(opened)
	require.NoError(t, err)
	p := s.Post(ctx, slug, secret, headers("d-live-1"), body)
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	again := s.Post(ctx, slug, secret, headers("d-live-1"), body)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, p.Key, again.Key, "the redelivery is the same row")
	s.WaitFor(ctx, p.Key, hookintype.StatusDone, 2*time.Minute)
	require.Equal(t, "open", rowOf(t, h, issue1).state)
	require.Eventually(t, func() bool {
		o := h.Outbox(ctx, issues.OpenedKey(ws, issue1))
		return len(o) == 1 && o[0].Status == "sent"
	}, time.Minute, 200*time.Millisecond, "the email was sent")
	if s.MailURL == "" {
		return // a mail server of your own whose mail cannot be read back
	}
	require.Eventually(t, func() bool { return mails(s.MailURL, triage) == 1 }, time.Minute, 200*time.Millisecond)
}

// mails counts the messages Mailpit holds for to.
func mails(base, to string) int {
	res, err := http.Get(base + "/api/v1/search?query=to:" + to)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	var body struct {
		Total int `json:"messages_count"`
	}
	if json.NewDecoder(res.Body).Decode(&body) != nil {
		return -1
	}
	return body.Total
}
