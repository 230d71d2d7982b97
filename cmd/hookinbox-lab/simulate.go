package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/lab/demo"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Simulator defaults, shared with docs/simulator.md.
const (
	simDefaultListen       = simulator.DefaultListen
	simDefaultTarget       = "http://127.0.0.1:8080"
	simDefaultStripeSlug   = "stripe-sim"
	simDefaultFeedbackSlug = "feedback-sim"
	simDefaultStripeSecret = "whsec_hookinbox_simulator_stripe_signing_secret"
	simDefaultGitHubHook   = "repo:sim-owner/widgets"
	// simDefaultGitHubSecret is 32 bytes in hex, as 'endpoints add' asks of a GitHub secret.
	simDefaultGitHubSecret = "6f8c2a9d41e07b35c6d9e2f18a4b70c35e9d1a2b8c4f6e0d7a3b5c9e1f2d4a68"
)

var simDefaultFeedbackSecret = simulator.StandardSecret("hookinbox-simulator-feedback-key")

type simulateFlags struct {
	listen, target                string
	stripeSlug, feedbackSlug      string
	stripeSecrets, feedbackSecret []string
	noSend, exit, quiet           bool
	cfg                           simulator.Config
	gh                            simGitHubFlags
}

// simGitHubFlags: a GitHub hook whose deliveries go to the intake once
// each, some dropped, and whose delivery log the simulator serves.
type simGitHubFlags struct {
	slug, secret, hook            string
	hookID                        int64
	deliveries, drops, lostAnswer int
}

func newSimulateCmd() *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run a misbehaving provider: signed webhooks with faults, its API, an email API and the ground truth",
		Long: `simulate plays the providers hookinbox receives from, reproducibly from --seed.

It serves on --listen:
  the Stripe API subset the activities call (GET /v1/invoices/{id},
  /v1/subscriptions/{id}, /v1/subscriptions, /v1/events) with key --api-key,
  an email API (POST/GET /v1/emails, Idempotency-Key), and
  GET /_sim/truth: what the receiver must end up with, plus delivery stats.

Then it generates a scenario (customers, subscriptions that change and get
cancelled, paid invoices, feedback items) and sends its events to the intake at
--target: Stripe events to /webhooks/<stripe-slug> signed with Stripe-Signature,
feedback.created to /webhooks/<feedback-slug> signed as Standard Webhooks (give
--stripe-secret or --feedback-secret twice to sign with both during a rotation).
Deliveries go wrong on purpose as the knobs say: duplicates, reordering, delays,
retries with an exponential schedule (--time-scale compresses provider time),
second distinct events for one invoice, conflicting redeliveries, drops that only
the events list shows. Afterwards it keeps serving the API until interrupted
(reconciliation needs it) unless --exit is given.

With --github-slug it is also GitHub: a hook (--github-hook, --github-hook-id) whose push
deliveries go to /webhooks/<github-slug> once each, signed with X-Hub-Signature-256, after the
Stripe run; --github-drops of them never reach the intake and --github-lose-answers reach it but
are logged as timed out. It serves the hook's delivery log (GET /repos/{owner}/{repo}/hooks/{id}/
deliveries, redeliveries with POST …/attempts, key --api-key), so the recover-github schedule
brings back the dropped ones.

Register the endpoints it prints before the first run (see docs/simulator.md).`,
		Example: `  hookinbox-lab simulate --seed 7 --duplicate-rate 0.2 --reorder-window 5 --drop-rate 0.05
  hookinbox-lab simulate --connect --versions --api-429-rate 0.1 --exit
  hookinbox-lab simulate --no-send   # only serve the API, email API and truth
  hookinbox-lab simulate --github-slug github-sim --github-drops 2   # then: hookinbox schedules trigger recover-github`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", simDefaultListen, "address to serve the provider API, email API and /_sim/truth on")
	fl.StringVar(&f.target, "target", simDefaultTarget, "base URL of the hookinbox intake")
	fl.StringVar(&f.stripeSlug, "stripe-slug", simDefaultStripeSlug, "endpoint slug for Stripe events")
	fl.StringArrayVar(&f.stripeSecrets, "stripe-secret", []string{simDefaultStripeSecret}, "Stripe signing secret (repeat to sign with two during a roll)")
	fl.StringVar(&f.feedbackSlug, "feedback-slug", simDefaultFeedbackSlug, `endpoint slug for feedback (Standard Webhooks); "" sends no feedback`)
	fl.StringArrayVar(&f.feedbackSecret, "feedback-secret", []string{simDefaultFeedbackSecret}, "Standard Webhooks secret whsec_<base64> (repeat during a rotation)")
	fl.BoolVar(&f.noSend, "no-send", false, "only serve; send nothing")
	fl.BoolVar(&f.exit, "exit", false, "exit after the run instead of serving until interrupted")
	fl.BoolVar(&f.quiet, "quiet", false, "no line per delivery")
	fl.StringVar(&f.gh.slug, "github-slug", "", `endpoint slug for GitHub push deliveries ("": no GitHub hook)`)
	fl.StringVar(&f.gh.secret, "github-secret", simDefaultGitHubSecret, "the GitHub hook's secret (X-Hub-Signature-256)")
	fl.StringVar(&f.gh.hook, "github-hook", simDefaultGitHubHook, "the hook whose delivery log is served: repo:OWNER/NAME or org:LOGIN")
	fl.Int64Var(&f.gh.hookID, "github-hook-id", 1, "the hook's id")
	fl.IntVar(&f.gh.deliveries, "github-deliveries", 6, "GitHub push deliveries, each sent once (GitHub never retries)")
	fl.IntVar(&f.gh.drops, "github-drops", 2, "of them, never sent (only the hook's delivery log shows them)")
	fl.IntVar(&f.gh.lostAnswer, "github-lose-answers", 1, "of them, stored by the intake but logged as timed out")

	c := &f.cfg
	fl.Uint64Var(&c.Seed, "seed", 1, "seed of every random choice (same seed, same run)")
	fl.StringSliceVar(&c.Accounts, "accounts", nil, "Stripe accounts (default acct_sim_a; with --connect also acct_sim_b)")
	fl.BoolVar(&c.Connect, "connect", false, `Connect platform: events carry "account" and the API needs Stripe-Account`)
	fl.StringSliceVar(&c.Projects, "projects", nil, "feedback projects (default proj_sim_a)")
	fl.BoolVar(&c.Livemode, "livemode", false, "send livemode events (environment live)")
	fl.StringVar(&c.APIKey, "api-key", simulator.DefaultAPIKey, "secret key the provider API accepts")
	fl.BoolVar(&c.Versions, "versions", false, `add a monotonic "version" to subscription snapshots`)
	fl.StringVar(&c.ThinEvents, "thin-events", simulator.ThinOff,
		`Stripe thin events (an event destination): "" none, "thin" instead of snapshot events, "both" each snapshot then its thin twin`)

	s := &c.Scenario
	fl.IntVar(&s.CustomersPerAccount, "customers", 3, "customers (one subscription each) per account")
	fl.IntVar(&s.InvoicesPerSubscription, "invoices", 2, "paid invoices per subscription")
	fl.IntVar(&s.UpdatesPerSubscription, "updates", 2, "state changes per subscription")
	fl.Float64Var(&s.CancelRate, "cancel-rate", 0.5, "share of subscriptions cancelled (half at once, half at period end)")
	fl.IntVar(&s.FeedbackPerProject, "feedback", 3, "feedback items per project")
	fl.Float64Var(&s.SecondEventRate, "second-event-rate", 0, "share of paid invoices announced by a second, distinct event")
	fl.Float64Var(&s.CreditNoteRate, "credit-note-rate", 0, "share of paid invoices that get a credit note (credit_note.created)")
	fl.Float64Var(&s.VoidRate, "void-rate", 0, "share of credit notes voided afterwards (credit_note.voided)")

	d := &c.Delivery
	fl.Float64Var(&d.DuplicateRate, "duplicate-rate", 0, "share of deliveries sent twice (same id, same body)")
	fl.DurationVar(&d.DuplicateSpread, "duplicate-spread", 30*time.Second, "a duplicate follows its original within this (provider time)")
	fl.IntVar(&d.ReorderWindow, "reorder-window", 0, "shuffle deliveries within windows of this size")
	fl.Float64Var(&d.DelayRate, "delay-rate", 0, "share of deliveries delayed by up to --max-delay")
	fl.DurationVar(&d.MaxDelay, "max-delay", 10*time.Minute, "longest delay (provider time)")
	fl.DurationVar(&d.Interval, "interval", 0, "gap between planned deliveries (provider time)")
	fl.Float64Var(&d.ConflictRate, "conflict-rate", 0, "share of events redelivered late with the same id and a different body")
	fl.Float64Var(&d.DropRate, "drop-rate", 0, "share of Stripe events never sent (only GET /v1/events shows them)")
	fl.IntVar(&d.Concurrency, "concurrency", 4, "concurrent senders")
	fl.IntVar(&d.MaxAttempts, "max-attempts", 16, "attempts per delivery, the first included")
	fl.DurationVar(&d.RetryBase, "retry-base", time.Minute, "first retry delay; doubles each time (provider time)")
	fl.DurationVar(&d.RetryCap, "retry-cap", 12*time.Hour, "longest retry delay (provider time)")
	fl.Float64Var(&d.TimeScale, "time-scale", 0.001, "real seconds per provider second (0.001: an hour takes 3.6 s)")
	fl.DurationVar(&d.AttemptTimeout, "attempt-timeout", 10*time.Second, "real-time limit of one POST")

	a := &c.API
	fl.DurationVar(&a.Latency, "api-latency", 0, "latency added to each API answer")
	fl.DurationVar(&a.LatencyJitter, "api-latency-jitter", 0, "random extra latency up to this")
	fl.Float64Var(&a.ErrorRate, "api-5xx-rate", 0, "share of API answers that are 500 api_error")
	fl.Float64Var(&a.RateLimitRate, "api-429-rate", 0, "share of API answers that are 429 with Retry-After")
	fl.Float64Var(&a.NotFoundRate, "api-404-rate", 0, "share of API answers that are a spurious 404")
	fl.Float64Var(&a.ForbiddenRate, "api-403-rate", 0, "share of API answers that are 403")
	fl.DurationVar(&a.RetryAfter, "retry-after", time.Second, "Retry-After sent with 429s")

	e := &c.Email
	fl.BoolVar(&e.NoIdempotency, "email-no-idempotency", false, "email API ignores Idempotency-Key (every POST is an email)")
	fl.Float64Var(&e.LoseAnswerRate, "email-lose-rate", 0, "share of accepted emails whose answer is lost")
	fl.StringVar(&e.LoseMode, "email-lose-mode", simulator.LoseClose, "how an answer is lost: close, 5xx or timeout")
	fl.StringVar(&e.APIKey, "email-api-key", "", "Bearer key the email API requires (none by default)")
	return cmd
}

func runSimulate(cmd *cobra.Command, f *simulateFlags) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout()

	if !slices.Contains([]string{simulator.LoseClose, simulator.Lose5xx, simulator.LoseTimeout}, f.cfg.Email.LoseMode) {
		return cli.UsageError{Msg: fmt.Sprintf("--email-lose-mode must be close, 5xx or timeout, not %q", f.cfg.Email.LoseMode)}
	}
	if !slices.Contains([]string{simulator.ThinOff, simulator.ThinOnly, simulator.ThinBoth}, f.cfg.ThinEvents) {
		return cli.UsageError{Msg: fmt.Sprintf(`--thin-events must be "", thin or both, not %q`, f.cfg.ThinEvents)}
	}
	if !f.cfg.Connect && len(f.cfg.Accounts) > 1 {
		return cli.UsageError{Msg: "several --accounts need --connect (without Connect each account has its own endpoint)"}
	}
	gh, err := f.gh.parse()
	if err != nil {
		return err
	}
	// A flag's 0 means none; the Config's 0 means its default.
	sc := &f.cfg.Scenario
	for _, n := range []*int{&sc.InvoicesPerSubscription, &sc.UpdatesPerSubscription, &sc.FeedbackPerProject} {
		if *n == 0 {
			*n = -1
		}
	}
	if sc.CancelRate == 0 {
		sc.CancelRate = -1
	}
	if f.feedbackSlug == "" {
		sc.FeedbackPerProject = -1
	}
	if !f.quiet {
		f.cfg.Logf = func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	}
	sim := simulator.New(f.cfg)

	if gh != nil {
		sim.AddGitHubHook(gh.path, simulator.Endpoint{URL: joinURL(f.target, "webhooks", f.gh.slug), Secrets: []string{f.gh.secret}})
	}

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", f.listen, err)
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer func() {
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}()
	apiURL := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "simulator (seed %d) serving the provider API on %s (key %s); truth at %s/_sim/truth\n",
		f.cfg.Seed, apiURL, sim.Config().APIKey, apiURL)
	printRegistration(out, f, sim, apiURL)
	if gh != nil {
		gh.printRegistration(out, f, apiURL, sim.Config().APIKey)
	}

	if !f.noSend {
		t := simulator.Targets{
			Stripe: simulator.Endpoint{URL: joinURL(f.target, "webhooks", f.stripeSlug), Secrets: f.stripeSecrets},
		}
		if f.feedbackSlug != "" {
			t.Standard = simulator.Endpoint{URL: joinURL(f.target, "webhooks", f.feedbackSlug), Secrets: f.feedbackSecret}
		}
		fmt.Fprintf(out, "sending to %s\n", f.target)
		rep, err := sim.Run(ctx, t)
		printSummary(out, rep, sim.Truth())
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("run: %w", err)
		}
		if gh != nil && ctx.Err() == nil {
			if err := gh.send(ctx, out, sim, f.gh, f.cfg.Seed); err != nil {
				return err
			}
		}
	}
	if f.exit || ctx.Err() != nil {
		return nil
	}
	fmt.Fprintln(out, "still serving the API for reconciliation; Ctrl-C to stop")
	select {
	case <-ctx.Done():
		if gh != nil {
			fmt.Fprintf(out, "GitHub was asked for %d redeliveries\n", sim.GitHubRedeliveries())
		}
		return nil
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
}

func joinURL(base string, parts ...string) string {
	return strings.TrimRight(base, "/") + "/" + strings.Join(parts, "/")
}

func printRegistration(out io.Writer, f *simulateFlags, sim *simulator.Simulator, apiURL string) {
	env := "test"
	if f.cfg.Livemode {
		env = "live"
	}
	fmt.Fprintln(out, "register once (any workspace names):")
	add := fmt.Sprintf("  hookinbox endpoints add --slug %s --provider stripe --environment %s", f.stripeSlug, env)
	for _, s := range f.stripeSecrets {
		add += " --secret " + s
	}
	if f.cfg.Versions {
		add += " --version-path data.object.version"
	}
	// The simulator is not Stripe's API: the registration says so.
	fmt.Fprintf(out, "%s --api-base-url %s --allow-custom-api-host --api-key %s\n", add, apiURL, sim.Config().APIKey)
	for _, acct := range sim.Accounts() {
		fmt.Fprintf(out, "  hookinbox endpoints link --slug %s --account %s --workspace ws_%s\n", f.stripeSlug, acct, acct)
	}
	if f.feedbackSlug == "" {
		return
	}
	add = fmt.Sprintf("  hookinbox endpoints add --slug %s --provider standard --environment %s", f.feedbackSlug, env)
	for _, s := range f.feedbackSecret {
		add += " --secret " + s
	}
	fmt.Fprintf(out, "%s --account-path data.project_id --resource-path data.id\n", add)
	for _, p := range sim.Projects() {
		fmt.Fprintf(out, "  hookinbox endpoints link --slug %s --account %s --workspace ws_%s\n", f.feedbackSlug, p, p)
	}
}

func printSummary(out io.Writer, rep simulator.Report, truth simulator.Truth) {
	st := rep.Stats
	fmt.Fprintf(out, "\ndeliveries: %d planned, %d acked, %d exhausted, %d dropped, %d canceled; faults: %d duplicates, %d conflicting (%d skipped), %d delayed, %d reordered\n",
		st.Planned, st.Acked, st.Exhausted, st.Dropped, st.Canceled, st.Duplicates, st.Conflicts, st.Skipped, st.Delayed, st.Reordered)
	codes := make([]string, 0, len(st.StatusCodes))
	for _, code := range slices.Sorted(func(yield func(int) bool) {
		for c := range st.StatusCodes {
			if !yield(c) {
				return
			}
		}
	}) {
		codes = append(codes, fmt.Sprintf("%d×%d", code, st.StatusCodes[code]))
	}
	fmt.Fprintf(out, "attempts: %d (%d 2xx, %d other, %d transport errors of which %d timeouts), %d retries; statuses %s\n",
		st.Attempts, st.Responses2xx, st.ResponsesNon2xx, st.TransportErrors, st.Timeouts, st.Retries, strings.Join(codes, " "))
	var second, access int
	for _, inv := range truth.PaidInvoices {
		second += len(inv.EventIDs) - 1
	}
	for _, s := range truth.Subscriptions {
		if s.Access {
			access++
		}
	}
	fmt.Fprintf(out, "truth: %d paid invoices (%d second events), %d subscriptions (%d with access), %d feedback items; %d events only in the events list, %d never acknowledged\n",
		len(truth.PaidInvoices), second, len(truth.Subscriptions), access, len(truth.Feedback),
		len(truth.DroppedEvents), len(truth.UnackedEvents))
	fmt.Fprintf(out, "elapsed %s\n", rep.Elapsed.Round(time.Millisecond))
}

// simGitHub is the parsed GitHub hook of simulate.
type simGitHub struct {
	path, owner, repo string
}

func (g simGitHubFlags) parse() (*simGitHub, error) {
	if g.slug == "" {
		return nil, nil
	}
	if g.deliveries < 0 || g.drops < 0 || g.lostAnswer < 0 || g.drops+g.lostAnswer > g.deliveries {
		return nil, cli.Usagef("--github-drops (%d) and --github-lose-answers (%d) are some of the --github-deliveries (%d)",
			g.drops, g.lostAnswer, g.deliveries)
	}
	if g.hookID <= 0 {
		return nil, cli.Usagef("--github-hook-id must be positive")
	}
	kind, name, _ := strings.Cut(g.hook, ":")
	owner, repo, isRepo := strings.Cut(name, "/")
	switch {
	case kind == "repo" && isRepo && owner != "" && repo != "" && !strings.Contains(repo, "/"):
		return &simGitHub{path: simulator.GitHubRepoHook(owner, repo, g.hookID), owner: owner, repo: repo}, nil
	case kind == "org" && !isRepo && name != "":
		return &simGitHub{path: simulator.GitHubOrgHook(name, g.hookID), owner: name, repo: "widgets"}, nil
	}
	return nil, cli.Usagef("--github-hook %q is not repo:OWNER/NAME or org:LOGIN", g.hook)
}

func (g *simGitHub) printRegistration(out io.Writer, f *simulateFlags, apiURL, apiKey string) {
	fmt.Fprintf(out, "  hookinbox endpoints add --slug %s --provider github --environment test --secret %s --api-base-url %s --allow-custom-api-host --api-key %s --github-hook %s --github-hook-id %d\n",
		f.gh.slug, f.gh.secret, apiURL, apiKey, f.gh.hook, f.gh.hookID)
	fmt.Fprintf(out, "  hookinbox endpoints link --slug %s --account %s --workspace ws_%s\n", f.gh.slug, g.owner, g.owner)
}

// send makes the GitHub deliveries once each; the seed picks which are
// dropped and which lose their answer.
func (g *simGitHub) send(ctx context.Context, out io.Writer, sim *simulator.Simulator, fl simGitHubFlags, seed uint64) error {
	fates := make([]demo.GitHubFate, fl.deliveries)
	for i := range fates {
		fates[i] = demo.GitHubOK
		switch {
		case i < fl.drops:
			fates[i] = demo.GitHubDropped
		case i < fl.drops+fl.lostAnswer:
			fates[i] = demo.GitHubLost
		}
	}
	rng := rand.New(rand.NewPCG(seed, 16))
	rng.Shuffle(len(fates), func(i, j int) { fates[i], fates[j] = fates[j], fates[i] })
	sent, err := demo.SendGitHubPushes(ctx, sim, g.path, g.owner, g.repo, fates)
	if err != nil {
		return err
	}
	for _, s := range sent {
		fmt.Fprintf(out, "github delivery %s (push): %s, logged %q\n", s.Delivery.GUID, s.Fate, s.Delivery.Status)
	}
	fmt.Fprintf(out, "github: %d deliveries to /webhooks/%s, %d dropped, %d answers lost; 'hookinbox schedules trigger recover-github' asks for the dropped ones\n",
		len(sent), fl.slug, fl.drops, fl.lostAnswer)
	return nil
}
