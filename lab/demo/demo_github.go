package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soak"
	"github.com/hookinbox/hookinbox/starter"
)

// The demo's GitHub step: GitHub sends each delivery once and never
// retries, so what never reached the intake is only in the hook's delivery
// log. The recover-github schedule reads that log and asks GitHub to
// redeliver exactly what the inbox lacks.

// GitHubFate is what happens to one demo delivery on its way.
type GitHubFate string

// The fates of a demo delivery.
const (
	GitHubOK      GitHubFate = "ok"
	GitHubDropped GitHubFate = "dropped"     // never reaches the intake; logged "failed to connect to host"
	GitHubLost    GitHubFate = "answer lost" // stored by the intake, logged "timed out" by GitHub
)

// gitHubDemoPlan is the demo's deliveries, in order: two dropped, one whose
// answer is lost.
var gitHubDemoPlan = []GitHubFate{GitHubOK, GitHubDropped, GitHubOK, GitHubLost, GitHubOK, GitHubDropped}

// gitHubDemo is the run's GitHub endpoint and repository hook.
type gitHubDemo struct {
	slug, owner, repo, secret string
	hookID                    int64
	apiKey, workspace         string
	// forward, when set, forwards the push events to a team's service.
	forward *forwardDemo
}

func newGitHubDemo(run demoRun) gitHubDemo {
	// GitHub signs with any string; hookinbox asks for 32 random bytes.
	sum := sha256.Sum256([]byte("hookinbox-demo-github-" + run.id))
	return gitHubDemo{
		slug: "demo-" + run.id + "-github", owner: "demo-" + run.id, repo: "widgets",
		secret: hex.EncodeToString(sum[:]), hookID: 16,
		apiKey: run.apiKey, workspace: run.workspace,
	}
}

// hook is the setting hookinbox knows the hook by (--github-hook).
func (g gitHubDemo) hook() string { return "repo:" + g.owner + "/" + g.repo }

// logPath is the hook's delivery log in the simulator.
func (g gitHubDemo) logPath() string { return simulator.GitHubRepoHook(g.owner, g.repo, g.hookID) }

// register adds the endpoint as an operator would ('hookinbox endpoints add
// --provider github --github-hook repo:OWNER/NAME --github-hook-id N
// --api-base-url … --api-key …', then 'endpoints link'), and the hook in
// the simulated GitHub, delivering to the intake at target.
func (g gitHubDemo) register(ctx context.Context, st *store.Store, sim *simulator.Simulator, apiURL, target string) error {
	if err := endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: g.slug, Provider: "github", Environment: "test",
		Secrets: []string{g.secret}, APIBaseURL: apiURL, APIKey: g.apiKey,
		Settings: keys.EndpointSettings{GitHubHook: g.hook(), GitHubHookID: g.hookID}}); err != nil {
		return err
	}
	// The account of a repository's event is its owner's login.
	if err := endpoints.LinkAccount(ctx, st, g.slug, g.owner, g.workspace); err != nil {
		return err
	}
	sim.AddGitHubHook(g.logPath(), simulator.Endpoint{URL: strings.TrimRight(target, "/") + "/webhooks/" + g.slug, Secrets: []string{g.secret}})
	return nil
}

// gitHubSent is one delivery the demo made and its fate.
type gitHubSent struct {
	Delivery simulator.GitHubDelivery
	Fate     GitHubFate
}

// send makes one push delivery per fate, once each as GitHub does.
func (g gitHubDemo) send(ctx context.Context, sim *simulator.Simulator, plan []GitHubFate) ([]gitHubSent, error) {
	return SendGitHubPushes(ctx, sim, g.logPath(), g.owner, g.repo, plan)
}

// SendGitHubPushes makes one push delivery of owner/repo per fate on the
// simulated hook at path.
func SendGitHubPushes(ctx context.Context, sim *simulator.Simulator, path, owner, repo string, plan []GitHubFate) ([]gitHubSent, error) {
	sent := make([]gitHubSent, 0, len(plan))
	for i, fate := range plan {
		if fate == GitHubLost {
			sim.LoseNextGitHubAnswers(1)
		}
		body := fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"%040d","after":"%040d","pusher":{"name":"%s"},`+
			`"repository":{"full_name":"%s/%s","name":"%s","owner":{"login":"%s"}},"sender":{"login":"%s"}}`,
			i, i+1, owner, owner, repo, repo, owner, owner)
		d, err := sim.GitHubDeliver(ctx, path, "push", body, fate == GitHubDropped)
		if err != nil {
			return sent, fmt.Errorf("github delivery %d: %w", i+1, err)
		}
		sent = append(sent, gitHubSent{Delivery: d, Fate: fate})
	}
	return sent, nil
}

// gitHubInbox is how often each delivery GUID is in the inbox, and the
// statuses of those rows.
type gitHubInbox struct {
	Rows     map[string]int
	Statuses map[string]int
}

// present counts the deliveries in the inbox at least once.
func (in gitHubInbox) present() int {
	n := 0
	for _, c := range in.Rows {
		if c > 0 {
			n++
		}
	}
	return n
}

func readGitHubInbox(ctx context.Context, db store.DB, g gitHubDemo, sent []gitHubSent) (gitHubInbox, error) {
	guids := make([]string, len(sent))
	for i, s := range sent {
		guids[i] = s.Delivery.GUID
	}
	rows, err := db.Query(ctx, `
		SELECT event_id, status, count(*) FROM webhook_inbox
		 WHERE provider = 'github' AND endpoint_slug = $1 AND event_id = ANY($2)
		 GROUP BY event_id, status`, g.slug, guids)
	if err != nil {
		return gitHubInbox{}, fmt.Errorf("read the github deliveries in the inbox: %w", err)
	}
	defer rows.Close()
	in := gitHubInbox{Rows: map[string]int{}, Statuses: map[string]int{}}
	for rows.Next() {
		var guid, status string
		var n int
		if err := rows.Scan(&guid, &status, &n); err != nil {
			return gitHubInbox{}, err
		}
		in.Rows[guid] += n
		in.Statuses[status] += n
	}
	return in, rows.Err()
}

// gitHubResult is what the step saw, side by side.
type gitHubResult struct {
	Sent   []gitHubSent
	Before gitHubInbox
	After  gitHubInbox
	Passes []soak.PassRun
	Asked  int // redeliveries GitHub was asked for (its own count)
	// What the team's service behind the forward route got: requests,
	// ones that failed verification, and the operations it applied
	// (operation key → event key).
	Route             string
	ForwardRequests   int
	ForwardUnverified int
	Forwarded         map[string]string
	Problems          []string
}

func (r gitHubResult) count(f GitHubFate) int {
	n := 0
	for _, s := range r.Sent {
		if s.Fate == f {
			n++
		}
	}
	return n
}

// OK: every delivery is in the inbox exactly once, and GitHub was asked
// to redeliver the dropped ones only.
func (r gitHubResult) OK() bool { return len(r.Problems) == 0 }

// check compares the inbox after the recovery with the deliveries made.
func (r *gitHubResult) check(redelivered map[string]int) {
	r.Problems = nil
	for _, s := range r.Sent {
		guid := s.Delivery.GUID
		if n := r.After.Rows[guid]; n != 1 {
			r.Problems = append(r.Problems, fmt.Sprintf("delivery %s (%s) is in the inbox %d times, not once", guid, s.Fate, n))
		}
		switch n := redelivered[guid]; {
		case s.Fate == GitHubDropped && n != 1:
			r.Problems = append(r.Problems, fmt.Sprintf("the dropped delivery %s was redelivered %d times, not once", guid, n))
		case s.Fate != GitHubDropped && n != 0:
			r.Problems = append(r.Problems, fmt.Sprintf("delivery %s (%s) reached the inbox, yet GitHub redelivered it %d times", guid, s.Fate, n))
		}
	}
}

// demoGitHub registers the run's GitHub endpoint and hook, makes the
// deliveries of plan (some dropped, one answer lost), then triggers the
// recover-github schedule as an operator would ('hookinbox schedules
// trigger recover-github'), pass after pass until the inbox has every
// delivery or the passes the worker allows (attempts) are spent. When the
// schedule is off or its run does not finish in time (another endpoint's
// hook unreachable), it runs an operator pass over this endpoint instead.
func demoGitHub(ctx context.Context, out io.Writer, st *store.Store, tc client.Client, taskQueue string, attempts int,
	sim *simulator.Simulator, g gitHubDemo, plan []GitHubFate, apiURL, target string, passTimeout time.Duration,
) (gitHubResult, error) {
	var r gitHubResult
	if err := g.register(ctx, st, sim, apiURL, target); err != nil {
		return r, fmt.Errorf("register the github endpoint: %w", err)
	}
	var err error
	if g.forward != nil {
		if err := g.forward.install(ctx, out, st); err != nil {
			return r, err
		}
		r.Route = g.forward.route
	}
	if r.Sent, err = g.send(ctx, sim, plan); err != nil {
		return r, err
	}
	if r.Before, err = readGitHubInbox(ctx, st.Pool, g, r.Sent); err != nil {
		return r, err
	}
	fmt.Fprintf(out, "  %d push deliveries to %s, once each: %d dropped (never reached the intake), %d whose answer GitHub lost (logged timed out)\n",
		len(r.Sent), target, r.count(GitHubDropped), r.count(GitHubLost))
	fmt.Fprintf(out, "  %d of %d in the inbox; recovering the rest from the hook's delivery log, as 'hookinbox schedules trigger recover-github' would\n",
		r.Before.present(), len(r.Sent))
	endpointOnly := false
	id := starter.ScheduleID(starter.ScheduleGitHubRecovery, taskQueue)
	if sch, err := starter.DescribeSchedule(ctx, tc, starter.ScheduleGitHubRecovery, id); err == nil && !sch.Exists {
		fmt.Fprintf(out, "  the schedule %s is off (HOOKINBOX_GITHUB_RECOVERY_INTERVAL=0): running an operator pass over this demo's endpoint instead\n", id)
		endpointOnly = true
	}
	for pass := 1; pass <= max(attempts, 1); pass++ {
		var run soak.PassRun
		if !endpointOnly {
			run, err = soak.TriggerSchedule(ctx, tc, starter.ScheduleGitHubRecovery, taskQueue, indent(out, "  "), passTimeout)
			if err != nil && ctx.Err() == nil {
				// The schedule is off, or its run visits another endpoint
				// whose hook is unreachable and retries.
				fmt.Fprintf(out, "  the scheduled run did not complete (%v);\n  running an operator pass over this demo's endpoint only\n", err)
				endpointOnly = true
			}
		}
		if endpointOnly {
			run, err = soak.RecoverGitHubEndpoint(ctx, tc, taskQueue, g.slug, indent(out, "  "), passTimeout)
		}
		if err != nil {
			return r, fmt.Errorf("github recovery: %w", err)
		}
		r.Passes = append(r.Passes, run)
		if r.After, err = readGitHubInbox(ctx, st.Pool, g, r.Sent); err != nil {
			return r, err
		}
		if r.After.present() == len(r.Sent) {
			break
		}
		// A redelivery the API refused (500 or 429) is asked again by the
		// next pass; one pass never asks twice.
		fmt.Fprintf(out, "  %d of %d in the inbox after pass %d: the next pass asks again\n", r.After.present(), len(r.Sent), pass)
	}
	r.Asked = sim.GitHubRedeliveries()
	redelivered := map[string]int{}
	for _, d := range sim.GitHubDeliveries(g.logPath()) {
		if d.Redelivery && d.Sent {
			redelivered[d.GUID]++
		}
	}
	r.check(redelivered)
	if g.forward != nil {
		if err := r.awaitForwards(ctx, st.Pool, g, passTimeout); err != nil {
			return r, err
		}
	}
	return r, nil
}

// awaitForwards waits until no delivery is pending (each was forwarded),
// then checks that the service applied each delivery once.
func (r *gitHubResult) awaitForwards(ctx context.Context, db store.DB, g gitHubDemo, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		in, err := readGitHubInbox(ctx, db, g, r.Sent)
		if err != nil {
			return err
		}
		r.After = in
		if in.Statuses[keys.StatusPending] == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	r.ForwardRequests, r.ForwardUnverified, r.Forwarded = g.forward.receiver.seen()
	applied := map[string]int{}
	for _, ev := range r.Forwarded {
		if k, err := keys.ParseEvent(ev); err == nil {
			applied[k.EventID]++
		}
	}
	for _, s := range r.Sent {
		if n := applied[s.Delivery.GUID]; n != 1 {
			r.Problems = append(r.Problems, fmt.Sprintf("delivery %s (%s) was applied by the team's service %d times, not once", s.Delivery.GUID, s.Fate, n))
		}
	}
	if r.ForwardUnverified > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d forwarded request(s) failed the service's signature check", r.ForwardUnverified))
	}
	return nil
}

// print writes the step's side by side, in the style of the demo's others.
func (r gitHubResult) print(out io.Writer) error {
	ids := make([]string, 0, len(r.Passes))
	for _, p := range r.Passes {
		ids = append(ids, p.WorkflowID)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tGITHUB (hook delivery log)\tHOOKINBOX (database)")
	fmt.Fprintf(tw, "  deliveries\t%d push, sent once each (GitHub never retries)\t%d in the inbox before the recovery\n", len(r.Sent), r.Before.present())
	fmt.Fprintf(tw, "  dropped\t%d, logged \"failed to connect to host\"\tmissing until the recovery\n", r.count(GitHubDropped))
	fmt.Fprintf(tw, "  answer lost\t%d, logged \"timed out\"\tin the inbox already: not asked again\n", r.count(GitHubLost))
	fmt.Fprintf(tw, "  redeliveries\t%d asked, %s\t%d in the inbox after, %s\n",
		r.Asked, plural(len(r.Passes), "pass", "passes"), r.After.present(), onceText(r))
	fmt.Fprintf(tw, "  handled\t-\t%s\n", statusText(r.After.Statuses))
	if r.Route != "" {
		fmt.Fprintf(tw, "  forwarded\t-\t%d applied by the team's service (route %s), %s; %d request(s), %d unverified\n",
			len(r.Forwarded), r.Route, appliedText(r), r.ForwardRequests, r.ForwardUnverified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "  recovered by %s\n", strings.Join(ids, ", "))
	for _, p := range r.Problems {
		fmt.Fprintf(out, "  NOT OK: %s\n", p)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func appliedText(r gitHubResult) string {
	if len(r.Forwarded) == len(r.Sent) {
		return "one per delivery"
	}
	return fmt.Sprintf("NOT one per delivery (%d deliveries)", len(r.Sent))
}

func onceText(r gitHubResult) string {
	for _, s := range r.Sent {
		if r.After.Rows[s.Delivery.GUID] != 1 {
			return "NOT each exactly once"
		}
	}
	return "each exactly once"
}

// statusText says what the rows ended as. hookinbox has no handler for
// GitHub's events: the intake stores them (deduplicated) as ignored.
func statusText(statuses map[string]int) string {
	names := make([]string, 0, len(statuses))
	for s := range statuses {
		names = append(names, s)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, s := range names {
		parts = append(parts, fmt.Sprintf("%d %s", statuses[s], s))
	}
	text := strings.Join(parts, ", ")
	if len(names) == 1 && names[0] == string(keys.StatusIgnored) {
		text += " (no handler for GitHub push events: stored once, nothing to run)"
	}
	if len(names) == 1 && names[0] == string(keys.StatusDone) {
		text += " (forwarded: stored once, sent on once)"
	}
	return text
}

// gitHubWhereToLook adds the step's links and commands.
func gitHubWhereToLook(out io.Writer, ui, ns string, g gitHubDemo, r gitHubResult, consoleURL string) {
	if len(r.Passes) == 0 {
		return
	}
	fmt.Fprintln(out, "  the GitHub recovery run(s) that asked for the dropped deliveries:")
	for _, p := range r.Passes {
		fmt.Fprintf(out, "    %s/namespaces/%s/workflows/%s\n", ui, url.PathEscape(ns), url.PathEscape(p.WorkflowID))
	}
	fmt.Fprintf(out, "  the GitHub deliveries in the console (sign in with a token from 'hookinbox tokens create'):\n    %s/inbox?provider=github&account=%s\n",
		strings.TrimRight(consoleURL, "/"), url.QueryEscape(g.owner))
	fmt.Fprintf(out, "  the GitHub deliveries from the CLI:\n    hookinbox inbox list --provider github --account %s\n    hookinbox schedules trigger recover-github\n", g.owner)
}
