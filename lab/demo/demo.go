package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soak"
	"github.com/hookinbox/hookinbox/lab/verify"
	"github.com/hookinbox/hookinbox/starter"
)

type demoFlags struct {
	target     string
	apiListen  string
	temporalUI string
	mailpitUI  string
	seed       uint64
	customers  int
	feedback   int
	drops      int
	versions   bool
	loseRate   float64
	keep       bool
	erase      bool
	github     bool
	timeout    time.Duration
}

// NewCmd is `hookinbox-lab demo`.
func NewCmd() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Drive the local stack with a misbehaving provider, then show the ground truth beside what hookinbox converged to",
		Long: `demo runs the provider simulator against the local stack ('make run' in another terminal: intake on
:8080, PostgreSQL, Temporal, Mailpit, configured by the usual DATABASE_URL / TEMPORAL_ADDRESS defaults).

Each run registers its own endpoints with unique accounts (so runs never collide): a Stripe endpoint
whose API is the demo's simulator (served on --api-listen, which the worker calls), a feedback
(Standard Webhooks) endpoint, a workspace email and a team webhook destination served by the demo
itself (it verifies the Standard Webhooks signature). Then it sends a scenario with the faults on:
duplicates, reordering, delays, a second event for some invoices, same id with another body,
answers lost between the intake and the sender (a relay answers 504 after the intake committed, so
the sender retries), provider API errors (500 and 429), and a few deliveries dropped altogether.

It waits for the work to drain (progress shown), triggers the facts backfill schedule so the dropped
deliveries are recovered from the provider's events list, then prints the ground truth beside what
the receiver converged to and the invariants. Then GitHub, which never retries: a GitHub endpoint
whose hook lives in the same simulator gets a few push deliveries, two of them dropped and one whose
answer is lost; the recover-github schedule, triggered as an operator would, reads the hook's
delivery log and asks GitHub to redeliver exactly the two the inbox lacks (--github=false skips it).
Last, the erasure of the run's workspace and where to look: the Temporal UI (workflows of this run's
accounts, the backfill and recovery runs) and Mailpit for the confirmation emails. It removes its
endpoints at the end (their API goes away with it) unless --keep-endpoints; the data stays.

Exit status 1 if the local stack is not running or an invariant does not hold.`,
		Example: `  make run    # in another terminal
  make demo   # or, with options:
  hookinbox-lab demo --versions --customers 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "http://127.0.0.1:8080", "base URL of the running intake")
	fl.StringVar(&f.apiListen, "api-listen", simulator.DefaultListen, "where to serve the simulated provider API (the worker calls it)")
	fl.StringVar(&f.temporalUI, "temporal-ui", fmt.Sprintf("http://127.0.0.1:%d", config.DefaultTemporalUI), "Temporal UI base URL, for the links")
	fl.StringVar(&f.mailpitUI, "mailpit-ui", fmt.Sprintf("http://127.0.0.1:%d", config.DefaultMailpitHTTP), "Mailpit UI base URL, for the links")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the scenario and its faults (default: from the clock; printed)")
	fl.IntVar(&f.customers, "customers", 6, "customers, one subscription each")
	fl.IntVar(&f.feedback, "feedback", 4, "feedback items")
	fl.IntVar(&f.drops, "drops", 2, "invoice.paid deliveries dropped altogether (recovered by the backfill)")
	fl.BoolVar(&f.versions, "versions", false, `subscription snapshots carry a monotonic "version" (Stripe's do not)`)
	fl.Float64Var(&f.loseRate, "lose-answer-rate", 0.15, "share of the intake's 2xx answers lost on the way back")
	fl.BoolVar(&f.keep, "keep-endpoints", false, "keep the run's endpoints registered after the demo")
	fl.BoolVar(&f.erase, "erase", true, "end by erasing the run's workspace (hookinbox workspaces erase) and redelivering an erased event")
	fl.BoolVar(&f.github, "github", true, "also show GitHub's delivery recovery: a few deliveries dropped, then recovered by the recover-github schedule")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "longest wait for the work to drain")
	return cmd
}

// demoRun is one demo's identities, unique per run.
type demoRun struct {
	id, account, project, workspace, email string
	stripeSlug, feedbackSlug, destination  string
	stripeSecret, feedbackSecret           string
	teamSecret, apiKey                     string
}

func newDemoRun() demoRun {
	id := strconv.FormatInt(time.Now().UnixMilli(), 36)
	return demoRun{
		id: id, account: "acct_demo_" + id, project: "proj_demo_" + id, workspace: "ws_demo_" + id,
		email:      "billing-" + id + "@demo.example",
		stripeSlug: "demo-" + id + "-stripe", feedbackSlug: "demo-" + id + "-feedback", destination: "team-alerts",
		stripeSecret: "whsec_demo_" + id, feedbackSecret: simulator.StandardSecret("demo-feedback-" + id),
		teamSecret: simulator.StandardSecret("demo-team-" + id),
		// An API key of its own: another endpoint registered on the same
		// address (hookinbox-lab simulate's default) gets 401, never this run's
		// account's invoices and events under its own account.
		apiKey: "sk_test_demo_" + id,
	}
}

func runDemo(cmd *cobra.Command, f *demoFlags) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, tc, err := demoPreflight(ctx, cfg, f)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), `hookinbox-lab demo needs the local stack, and it is not running:
  %v

Start it in another terminal with 'make run' (intake on :8080, PostgreSQL, Temporal, Mailpit),
wait for "hookinbox local stack is up", then run 'make demo' again.
`, err)
		return cli.ExitCode{Code: 1}
	}
	defer st.Close()
	defer tc.Close()

	if f.seed == 0 {
		f.seed = uint64(time.Now().UnixNano())
	}
	run := newDemoRun()
	sim := simulator.New(demoSimConfig(f, run))

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.apiListen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is in use (is 'hookinbox-lab simulate' running?): pick another address with --api-listen", f.apiListen)
		}
		return fmt.Errorf("listen %s: %w", f.apiListen, err)
	}
	apiURL := "http://" + ln.Addr().String()
	stopAPI := serveOn(ln, sim.Handler())
	defer stopAPI()
	team, err := soak.NewTeamReceiver(run.teamSecret, 0.2, f.seed)
	if err != nil {
		return err
	}
	teamURL, stopTeam, err := serveLocal(ctx, team)
	if err != nil {
		return err
	}
	defer stopTeam()
	target, err := url.Parse(f.target)
	if err != nil || target.Host == "" {
		return cli.Usagef("--target %q is not a URL like http://127.0.0.1:8080", f.target)
	}
	relay := soak.NewRelay(1, f.loseRate, f.seed)
	relay.SetBackend(0, target.Host)
	relayURL, stopRelay, err := serveLocal(ctx, relay)
	if err != nil {
		return err
	}
	defer stopRelay()

	fmt.Fprintf(out, "hookinbox demo %s (seed %d)\n\n", run.id, f.seed)
	if err := demoRegister(ctx, st, run, apiURL, teamURL, f.versions); err != nil {
		return err
	}
	gh := newGitHubDemo(run)
	if f.github {
		// GitHub's push events go on to a team's service the demo runs.
		secret := simulator.StandardSecret("hookinbox-demo-forward-" + run.id)
		rcv, err := newForwardReceiver(secret)
		if err != nil {
			return err
		}
		rcvURL, stopRcv, err := serveLocal(ctx, rcv)
		if err != nil {
			return err
		}
		defer stopRcv()
		gh.forward = &forwardDemo{route: "demo-github-push", url: rcvURL + "/hooks", secret: secret, receiver: rcv,
			reload: cfg.EndpointCacheTTL + time.Second}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := gh.forward.remove(cctx, st); err == nil {
				fmt.Fprintf(out, "removed the forward route %s (its service stops with the demo)\n", gh.forward.route)
			}
		}()
	}
	if !f.keep {
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			slugs := []string{run.stripeSlug, run.feedbackSlug}
			if f.github {
				slugs = append(slugs, gh.slug)
			}
			for _, slug := range slugs {
				_ = endpoints.DeleteEndpoint(cctx, st, slug)
			}
			fmt.Fprintf(out, "\nremoved the endpoints %s (their provider API stops with the demo); the data stays. --keep-endpoints keeps them.\n",
				strings.Join(slugs, ", "))
		}()
	}
	fmt.Fprintf(out, `registered (as an operator would):
  endpoint %s  stripe, account %s, provider API %s%s
  endpoint %s  standard webhooks, project %s
  workspace %s  email %s, team destination %q → %s (signature verified)

`, run.stripeSlug, run.account, apiURL, map[bool]string{true: ", versions on", false: ""}[f.versions],
		run.feedbackSlug, run.project, run.workspace, run.email, run.destination, teamURL)

	plan := sim.Generate()
	dropped := dropInvoices(&plan, sim.Truth(), f.drops, f.seed)
	fmt.Fprintf(out, "sending %d deliveries to %s through a relay that loses %.0f%% of the answers; %d invoice.paid never sent\n",
		len(plan.Deliveries), f.target, f.loseRate*100, dropped)
	targets := simulator.Targets{
		Stripe:   simulator.Endpoint{URL: relayURL + "/webhooks/" + run.stripeSlug, Secrets: []string{run.stripeSecret}},
		Standard: simulator.Endpoint{URL: relayURL + "/webhooks/" + run.feedbackSlug, Secrets: []string{run.feedbackSecret}},
	}
	rep, err := demoSend(ctx, out, sim, targets, plan)
	if err != nil {
		return err
	}

	scope := soak.Scope{Accounts: []string{run.account, run.project}, Workspaces: []string{run.workspace}}
	copts := soak.ConvergeOptions{Timeout: f.timeout, Every: 2 * time.Second, Progress: out, Label: "  converging "}
	fmt.Fprintln(out, "\nwaiting for hookinbox to converge:")
	// With deliveries dropped, what waits for them is left to the backfill.
	first := copts
	first.UntilWaiting = dropped > 0
	if err := demoConverge(ctx, out, st, scope, first); err != nil {
		return err
	}
	var backfill soak.BackfillRun
	backfillRan := false
	if len(sim.Truth().DroppedEvents) > 0 {
		fmt.Fprintln(out, "\nsome deliveries never came: triggering the facts backfill schedule to recover them from the provider's events list")
		backfill, err = soak.TriggerBackfill(ctx, tc, cfg.TaskQueue, indent(out, "  "), 2*time.Minute)
		if err != nil && ctx.Err() == nil {
			// The schedule's run also visits every other endpoint's accounts;
			// one whose provider is unreachable holds it up with retries.
			fmt.Fprintf(out, "  the scheduled run did not finish in time (%v);\n  running an operator pass over this demo's endpoint only\n", err)
			backfill, err = soak.BackfillEndpoint(ctx, tc, cfg.TaskQueue, run.stripeSlug, indent(out, "  "), 3*time.Minute)
		}
		if err != nil {
			fmt.Fprintf(out, "  the backfill did not complete: %v\n", err)
		} else {
			backfillRan = true
			if err := demoConverge(ctx, out, st, scope, copts); err != nil {
				return err
			}
		}
	}

	truth := sim.Truth()
	report, err := verify.Check(ctx, st.Pool, verify.Input{
		Runs:        []verify.Run{{Truth: truth, Sent: verify.SentFrom(rep)}},
		BackfillRan: backfillRan,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nthe provider's ground truth beside what hookinbox converged to:")
	if err := demoSideBySide(ctx, out, st, run, truth, rep, relay, team, backfill); err != nil {
		return err
	}
	fmt.Fprintln(out, "\ninvariants:")
	if err := report.WriteTable(indent(out, "  ")); err != nil {
		return err
	}
	var ghResult gitHubResult
	if f.github {
		fmt.Fprintf(out, "\nGitHub never retries a delivery: endpoint %s, hook %s #%d in the simulated GitHub (API %s)\n",
			gh.slug, gh.hook(), gh.hookID, apiURL)
		ghResult, err = demoGitHub(ctx, out, st, tc, cfg.TaskQueue, cfg.GitHubRecoveryAttempts, sim, gh, gitHubDemoPlan, apiURL, f.target, 2*time.Minute)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "\nGitHub's delivery log beside the inbox:")
		if err := ghResult.print(out); err != nil {
			return err
		}
	}
	if f.erase {
		if err := demoErase(ctx, out, st, run, sim, targets, rep); err != nil {
			return err
		}
	}
	demoWhereToLook(out, f, cfg, run, truth, backfill)
	if f.github {
		gitHubWhereToLook(out, strings.TrimRight(f.temporalUI, "/"), cfg.TemporalNamespace, gh, ghResult, cfg.ConsoleBaseURL())
	}
	if !report.OK || !ghResult.OK() {
		return cli.ExitCode{Code: 1}
	}
	return nil
}

// demoConverge waits for the run's work to drain; not draining in time is
// reported, and the invariants then show what is stuck.
func demoConverge(ctx context.Context, out io.Writer, st *store.Store, scope soak.Scope, o soak.ConvergeOptions) error {
	_, err := soak.Converge(ctx, st.Pool, scope, o)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	fmt.Fprintf(out, "  hookinbox did not converge: %v\n  (is the worker running? the invariants below show what is stuck)\n", err)
	return nil
}

// demoErase erases the run's workspace as an operator would (hookinbox
// workspaces erase), then redelivers one erased event: a duplicate that
// changes nothing, the counts the same as before.
func demoErase(ctx context.Context, out io.Writer, st *store.Store, run demoRun, sim *simulator.Simulator, t simulator.Targets, rep simulator.Report) error {
	before, err := verify.TallyRun(ctx, st.Pool, run.account, run.project, run.workspace)
	if err != nil {
		return err
	}
	res, err := records.EraseWorkspace(ctx, st, records.EraseRequest{Workspace: run.workspace, Actor: "hookinbox-lab demo", Reason: "demo: per-tenant erasure"})
	if err != nil {
		return fmt.Errorf("erase %s: %w", run.workspace, err)
	}
	c := res.Counts
	fmt.Fprintf(out, `
erasing workspace %s (as 'hookinbox workspaces erase --workspace %s --reason …' would; audited, operator action #%d):
  redacted %d inbox bodies, %d quarantine bodies, %d outbox payloads (%d feedback texts), %d email addresses; %d unsent intents stopped
  kept: event keys and body hashes, grants, reversals, projections, alerts, balances, the lineage
`, run.workspace, run.workspace, res.ActionID, c.InboxPayloads, c.QuarantinePayloads, c.OutboxPayloads, c.FeedbackAlertTexts, c.EmailAddresses, c.OutboxStopped)
	var again simulator.Event
	for _, r := range rep.Results {
		if r.Outcome == simulator.OutcomeAcked && !r.Event.Conflicting && r.Event.Type == simulator.EventInvoicePaid {
			again = r.Event
			break
		}
	}
	if again.ID == "" {
		return nil
	}
	sent, err := sim.Send(ctx, t, again)
	if err != nil {
		return fmt.Errorf("redeliver %s: %w", again.ID, err)
	}
	after, err := verify.TallyRun(ctx, st.Pool, run.account, run.project, run.workspace)
	if err != nil {
		return err
	}
	outcome := "not acknowledged"
	if len(sent.Results) > 0 && sent.Results[0].Outcome == simulator.OutcomeAcked {
		outcome = "acknowledged 2xx"
	}
	fmt.Fprintf(out, "  redelivered the erased event %s (%s, %s): a duplicate; inbox rows %d → %d, grants %d → %d, balance %d → %d\n",
		again.ID, again.Type, outcome, before.InboxRows, after.InboxRows, before.Grants, after.Grants, before.Balance, after.Balance)
	if after.InboxRows != before.InboxRows || after.Grants != before.Grants || after.Balance != before.Balance {
		return fmt.Errorf("the redelivery of an erased event changed the counts: %+v → %+v", before, after)
	}
	return nil
}

// demoPreflight checks the local stack: intake, database, Temporal and the
// backfill schedule the worker applies.
func demoPreflight(ctx context.Context, cfg config.Config, f *demoFlags) (*store.Store, client.Client, error) {
	hc := &http.Client{Timeout: 3 * time.Second}
	// The public port's bare /healthz: the detailed /readyz is on the
	// intake's internal listener, and the database is checked just below.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(f.target, "/")+"/healthz", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("no intake answers at %s: %w", f.target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("the intake at %s is not up (GET /healthz: %s)", f.target, resp.Status)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kr, err := cli.Keyring(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("the demo registers endpoints with sealed secrets: %w", err)
	}
	st, err := store.Open(pctx, cfg.DatabaseURL, 4)
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL (DATABASE_URL): %w", err)
	}
	st.Keys = kr
	tc, err := starter.Dial(pctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("temporal at %s (TEMPORAL_ADDRESS): %w", cfg.TemporalAddress, err)
	}
	id := starter.ScheduleIDOf(cfg, starter.ScheduleBackfill)
	s, err := starter.DescribeSchedule(pctx, tc, starter.ScheduleBackfill, id)
	if err == nil && !s.Exists {
		err = fmt.Errorf("the facts backfill schedule %s does not exist: is the worker running (make run starts it)? HOOKINBOX_BACKFILL_INTERVAL must not be 0", id)
	}
	if err != nil {
		tc.Close()
		st.Close()
		return nil, nil, err
	}
	return st, tc, nil
}

func demoSimConfig(f *demoFlags, run demoRun) simulator.Config {
	return simulator.Config{
		Seed: f.seed, Accounts: []string{run.account}, Projects: []string{run.project}, Versions: f.versions, APIKey: run.apiKey,
		Scenario: simulator.ScenarioKnobs{
			CustomersPerAccount: max(f.customers, 1), InvoicesPerSubscription: 2, UpdatesPerSubscription: 2,
			CancelRate: 0.5, FeedbackPerProject: max(f.feedback, 1), SecondEventRate: 0.3,
			CreditNoteRate: 0.4, VoidRate: 0.3,
		},
		Delivery: simulator.DeliveryKnobs{
			DuplicateRate: 0.25, ReorderWindow: 5, DelayRate: 0.1, ConflictRate: 0.1, Concurrency: 4,
			MaxAttempts: 30, RetryBase: time.Minute, RetryCap: 5000 * time.Second, TimeScale: 0.001,
		},
		API: simulator.APIKnobs{ErrorRate: 0.05, RateLimitRate: 0.05, RetryAfter: time.Second},
	}
}

// dropInvoices marks every delivery of up to n invoice.paid events as
// dropped (never sent; only the provider's events list shows them),
// choosing invoices announced by one event, so each drop is a grant only
// the backfill can make.
func dropInvoices(plan *simulator.Plan, truth simulator.Truth, n int, seed uint64) int {
	var single []string
	for _, inv := range truth.PaidInvoices {
		if len(inv.EventIDs) == 1 {
			single = append(single, inv.EventIDs[0])
		}
	}
	rng := rand.New(rand.NewPCG(seed, 13)) //nolint:gosec // G404: a seeded, reproducible choice of which invoices the demo drops

	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	drop := single[:min(n, len(single))]
	for i := range plan.Deliveries {
		if slices.Contains(drop, plan.Deliveries[i].Event.ID) {
			plan.Deliveries[i].Dropped = true
		}
	}
	return len(drop)
}

// demoSend delivers the plan, printing progress every second.
func demoSend(ctx context.Context, out io.Writer, sim *simulator.Simulator, t simulator.Targets, plan simulator.Plan) (simulator.Report, error) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			s := sim.Stats()
			fmt.Fprintf(out, "  sent: %d/%d acknowledged, %d retries so far\n", s.Acked, len(plan.Deliveries)-s.Dropped, s.Retries)
		}
	}()
	rep, err := sim.Deliver(ctx, t, plan)
	close(done)
	if err != nil {
		return rep, fmt.Errorf("send: %w", err)
	}
	st := rep.Stats
	fmt.Fprintf(out, "  done in %s: %d acknowledged (%d duplicates, %d conflicting, %d delayed, %d reordered), %d retries, %d never acknowledged, %d deliveries dropped\n",
		rep.Elapsed.Round(time.Millisecond), st.Acked, st.Duplicates, st.Conflicts, st.Delayed, st.Reordered, st.Retries, st.Exhausted, st.Dropped)
	return rep, nil
}

func demoRegister(ctx context.Context, st *store.Store, run demoRun, apiURL, teamURL string, versions bool) error {
	settings := keys.EndpointSettings{}
	if versions {
		settings.VersionPath = "data.object.version"
	}
	if err := endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: run.stripeSlug, Provider: "stripe", Environment: "test",
		Account: run.account, Secrets: []string{run.stripeSecret}, APIBaseURL: apiURL, APIKey: run.apiKey, Settings: settings}); err != nil {
		return err
	}
	if err := endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: run.feedbackSlug, Provider: "standard", Environment: "test",
		Secrets:  []string{run.feedbackSecret},
		Settings: keys.EndpointSettings{AccountPath: "data.project_id", ResourcePath: "data.id"}}); err != nil {
		return err
	}
	if err := endpoints.LinkAccount(ctx, st, run.stripeSlug, run.account, run.workspace); err != nil {
		return err
	}
	if err := endpoints.LinkAccount(ctx, st, run.feedbackSlug, run.project, run.workspace); err != nil {
		return err
	}
	if err := records.SetWorkspaceEmail(ctx, st.Pool, run.workspace, run.email); err != nil {
		return err
	}
	return outbox.UpsertDestination(ctx, st.Pool, st.Keys, outbox.Destination{WorkspaceID: run.workspace, Name: run.destination,
		Kind: "webhook", Target: teamURL + "/alerts", Secret: run.teamSecret, Enabled: true})
}

// demoSideBySide prints what the provider knows beside what the database holds.
func demoSideBySide(ctx context.Context, out io.Writer, st *store.Store, run demoRun, truth simulator.Truth, rep simulator.Report,
	relay *soak.Relay, team *soak.TeamReceiver, backfill soak.BackfillRun) error {
	n, err := verify.TallyRun(ctx, st.Pool, run.account, run.project, run.workspace)
	if err != nil {
		return err
	}
	paid, second := len(truth.PaidInvoices), 0
	for _, inv := range truth.PaidInvoices {
		second += len(inv.EventIDs) - 1
	}
	var canceled, access int
	for _, s := range truth.Subscriptions {
		if s.Status == simulator.StatusCanceled {
			canceled++
		}
		if s.Access {
			access++
		}
	}
	projs, err := subscriptions.List(ctx, st.Pool, "stripe", run.account, "test", subscriptionIDs(truth))
	if err != nil {
		return err
	}
	var pCanceled, pAccess int
	for _, p := range projs {
		if p.State.Status == simulator.StatusCanceled {
			pCanceled++
		}
		if p.Access && !p.Deleted && (p.AccessEndsAt == nil || p.AccessEndsAt.After(time.Now())) {
			pAccess++
		}
	}
	st2 := rep.Stats
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tPROVIDER (ground truth)\tHOOKINBOX (database)")
	fmt.Fprintf(tw, "  events\t%d distinct, %d deliveries (%d duplicates, %d same id/other body, %d answers lost)\t%d inbox rows, %d done; %d quarantined\n",
		len(verify.SentFrom(rep).Events), st2.Planned, st2.Duplicates, st2.Conflicts, relay.Stats().LostAnswers, n.InboxRows, n.InboxDone, n.Quarantined)
	fmt.Fprintf(tw, "  paid invoices\t%d (%d announced twice)\t%d credit grants\n", paid, second, n.Grants)
	var issued, voided, taken int64
	for _, cn := range truth.CreditNotes {
		if cn.Status == simulator.CreditNoteVoid {
			voided++
			continue
		}
		issued++
		taken += credits.ReversalCredits(100, cn.Total, cn.InvoiceTotal)
	}
	fmt.Fprintf(tw, "  credit notes\t%d issued, %d of them voided since\t%d reversals, %d given back by a void\n",
		issued+voided, voided, n.Reversals, n.Voids)
	fmt.Fprintf(tw, "  credits of %s\t%d × 100 − %d taken back = %d\t%d\n", run.workspace, paid, taken, int64(paid)*100-taken, n.Balance)
	fmt.Fprintf(tw, "  subscriptions\t%d, %d canceled, %d with access\t%d projections, %d canceled, %d with access\n",
		len(truth.Subscriptions), canceled, access, len(projs), pCanceled, pAccess)
	fmt.Fprintf(tw, "  feedback items\t%d\t%d alerts; team endpoint got %d (%d refused with 503 first)\n", len(truth.Feedback), n.Alerts, team.Stats().Distinct, team.Stats().Refused)
	fmt.Fprintf(tw, "  never delivered\t%d event(s)\t%d recovered by the backfill %s\n", len(truth.DroppedEvents), n.Backfilled, backfill.WorkflowID)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SUBSCRIPTION\tPROVIDER\tACCESS\tHOOKINBOX\tACCESS")
	for _, s := range truth.Subscriptions {
		want := s.Status
		if s.CancelAtPeriodEnd {
			want += " (cancel at period end)"
		}
		if s.Version != nil {
			want += fmt.Sprintf(" v%d", *s.Version)
		}
		got, gotAccess := "no projection", "-"
		if p, ok := projs[s.ID]; ok {
			got = p.State.Status
			if p.State.CancelAtPeriodEnd {
				got += " (cancel at period end)"
			}
			if p.Version != nil {
				got += fmt.Sprintf(" v%d", *p.Version)
			}
			gotAccess = strconv.FormatBool(p.Access && !p.Deleted && (p.AccessEndsAt == nil || p.AccessEndsAt.After(time.Now())))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%t\t%s\t%s\n", s.ID, want, s.Access, got, gotAccess)
	}
	return tw.Flush()
}

func subscriptionIDs(t simulator.Truth) []string {
	ids := make([]string, 0, len(t.Subscriptions))
	for _, s := range t.Subscriptions {
		ids = append(ids, s.ID)
	}
	return ids
}

// temporalQueryURL links the Temporal UI's workflow list filtered by a
// visibility query.
func temporalQueryURL(base, namespace, query string) string {
	q := strings.ReplaceAll(url.QueryEscape(query), "+", "%20")
	return fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", strings.TrimRight(base, "/"), url.PathEscape(namespace), q)
}

func demoWhereToLook(out io.Writer, f *demoFlags, cfg config.Config, run demoRun, truth simulator.Truth, backfill soak.BackfillRun) {
	ui, ns := strings.TrimRight(f.temporalUI, "/"), cfg.TemporalNamespace
	fmt.Fprintln(out, "\nwhere to look:")
	fmt.Fprintf(out, "  Temporal UI, this run's Stripe resources (one workflow per invoice and subscription):\n    %s\n",
		temporalQueryURL(ui, ns, fmt.Sprintf(`SourceAccount="%s"`, run.account)))
	for _, s := range truth.Subscriptions {
		if s.Status == simulator.StatusCanceled {
			fmt.Fprintf(out, "  a canceled subscription (its history shows stale snapshots losing to the cancellation):\n    %s\n",
				temporalQueryURL(ui, ns, fmt.Sprintf(`SourceAccount="%s" AND ResourceKind="subscription" AND ResourceID="%s"`, run.account, s.ID)))
			break
		}
	}
	for _, inv := range truth.PaidInvoices {
		if len(inv.EventIDs) > 1 {
			fmt.Fprintf(out, "  an invoice announced by two events (one grant):\n    %s\n",
				temporalQueryURL(ui, ns, fmt.Sprintf(`SourceAccount="%s" AND ResourceKind="invoice" AND ResourceID="%s"`, run.account, inv.ID)))
			break
		}
	}
	fmt.Fprintf(out, "  feedback alerts:\n    %s\n", temporalQueryURL(ui, ns, fmt.Sprintf(`SourceAccount="%s"`, run.project)))
	fmt.Fprintf(out, "  events that ended exhausted or failed (should be none):\n    %s\n",
		temporalQueryURL(ui, ns, fmt.Sprintf(`SourceAccount="%s" AND ExhaustedEvents > 0`, run.account)))
	if backfill.WorkflowID != "" {
		fmt.Fprintf(out, "  the backfill run that recovered the dropped deliveries:\n    %s/namespaces/%s/workflows/%s\n", ui, url.PathEscape(ns), url.PathEscape(backfill.WorkflowID))
	}
	fmt.Fprintf(out, "  the schedules (sweeper, backfill, reconciliation, retention, GitHub recovery):\n    %s/namespaces/%s/schedules\n", ui, url.PathEscape(ns))
	fmt.Fprintf(out, "  Mailpit, the confirmation emails (one per paid invoice):\n    %s/search?q=%s\n",
		strings.TrimRight(f.mailpitUI, "/"), url.QueryEscape("to:"+run.email))
	fmt.Fprintf(out, "  the CLI:\n    hookinbox inbox list --account %s\n    hookinbox quarantine list\n    hookinbox outbox list\n", run.account)
}

// serveOn serves h on ln until the returned stop is called.
func serveOn(ln net.Listener, h http.Handler) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}

// serveLocal serves h on a free 127.0.0.1 port.
func serveLocal(ctx context.Context, h http.Handler) (string, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return "http://" + ln.Addr().String(), serveOn(ln, h), nil
}

// indent prefixes every line written to w.
func indent(w io.Writer, prefix string) io.Writer { return &indenter{w: w, prefix: prefix, bol: true} }

type indenter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (i *indenter) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if i.bol {
			b.WriteString(i.prefix)
		}
		b.WriteRune(c)
		i.bol = c == '\n'
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
