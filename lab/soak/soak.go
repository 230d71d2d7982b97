package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soakteam"
	"github.com/hookinbox/hookinbox/lab/verify"
	"github.com/hookinbox/hookinbox/starter"
)

// Options shape one soak. Zero values take the defaults named.
type Options struct {
	// Binary is the service binary whose `webhook` and `worker` run
	// (required): cmd/hookinbox-soak, the shipped app with the soak team's
	// handler (lab/soakteam), or any hookinbox binary (without the team's
	// handler its events are ignored and team-table-exact is skipped).
	Binary string
	// Root is the project root (the Temporal CLI is built into its .tools/
	// on first use). Default devenv.FindRoot.
	Root string
	// Dir holds the run's Temporal database and process logs. Default: a new
	// temporary folder, removed at the end unless Keep or a violation.
	Dir  string
	Keep bool
	// Seed makes the scenario, its faults and the chaos reproducible (the
	// timing of a soak never is). Default 1.
	Seed uint64
	// Events is about how many distinct events the two simulators generate.
	// Default 20,000.
	Events int
	// Intakes and Workers are the processes run side by side. Default 2 each.
	Intakes, Workers int
	// Concurrency of each simulator's sender. Default 4.
	Concurrency int
	// SendOver spreads the first attempts of the deliveries over at least
	// this long (0: as fast as the intake takes them).
	SendOver time.Duration
	// KillEvery is the mean time between two process kills. Default 10 s.
	KillEvery time.Duration
	// MinKills of each kind (intake, worker) before the chaos may stop. Default 2.
	MinKills int
	// DropConnsEvery: how often the application's database connections are
	// terminated. Default 7 s. MinConnDrops rounds at least. Default 3.
	DropConnsEvery time.Duration
	MinConnDrops   int
	// NoTemporalRestart skips the restart of the Temporal dev server.
	NoTemporalRestart bool
	// Outages: how many times PostgreSQL is stopped while the events flow
	// (0: never), each for a random time in [OutageMin, OutageMax]
	// (defaults 30 s and 60 s). Process kills and connection drops pause
	// meanwhile; the intakes answer 5xx and the senders retry.
	Outages              int
	OutageMin, OutageMax time.Duration
	// DropAfterSendRate of the email API's accepted sends after which the
	// workers' database connections are terminated before the answer goes
	// back, so marking the row sent fails (0: never).
	DropAfterSendRate float64
	// LoseAnswerRate of the intake's 2xx answers lost on the way back.
	// Default 0.02; negative: none.
	LoseAnswerRate float64
	// ChaosLimit stops the chaos after this long even if the backlog has not
	// drained. Default half of ConvergeTimeout.
	ChaosLimit time.Duration
	// ConvergeTimeout bounds each wait for the backlog to drain. Default 30 min.
	ConvergeTimeout time.Duration
	// TemporalUI serves the dev server's UI on a free port (printed).
	TemporalUI bool
	// UpgradeFrom, when set, is the previous release's binary: it migrates
	// the database, registers the endpoints through its own CLI and runs
	// the fleet first; once UpgradeAt of the deliveries have an outcome,
	// every process is killed (work in flight), Binary migrates the same
	// database and the fleet comes back on Binary (make test-upgrade).
	UpgradeFrom string
	// Coalesce makes the GitHub part's forward route coalescing
	// (--fetch-current --coalesce): each send carries the issue fetched from
	// the simulator's GitHub, a run of an issue's pending events goes as one
	// document, and the receiver's last document of each issue must hold its
	// final state. In an upgrade run this build makes the route coalescing
	// right after the upgrade (the previous release has no --coalesce).
	Coalesce bool
	// UpgradeAt is the share of deliveries after which the upgrade happens
	// (default 0.5).
	UpgradeAt float64
	// Progress receives progress lines every ProgressEvery (default 5 s).
	Progress      io.Writer
	ProgressEvery time.Duration
}

func (o *Options) defaults() error {
	if o.Binary == "" {
		return errors.New("soak: no hookinbox binary")
	}
	if o.UpgradeFrom != "" && o.UpgradeAt <= 0 {
		o.UpgradeAt = 0.5
	}
	if o.Root == "" {
		r, err := devenv.FindRoot()
		if err != nil {
			return err
		}
		o.Root = r
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Events <= 0 {
		o.Events = 20000
	}
	if o.Intakes <= 0 {
		o.Intakes = 2
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.KillEvery <= 0 {
		o.KillEvery = 10 * time.Second
	}
	if o.MinKills <= 0 {
		o.MinKills = 2
	}
	if o.DropConnsEvery <= 0 {
		o.DropConnsEvery = 7 * time.Second
	}
	if o.MinConnDrops <= 0 {
		o.MinConnDrops = 3
	}
	if o.OutageMin <= 0 {
		o.OutageMin = 30 * time.Second
	}
	if o.OutageMax < o.OutageMin {
		o.OutageMax = max(60*time.Second, o.OutageMin)
	}
	if o.LoseAnswerRate == 0 {
		o.LoseAnswerRate = 0.02
	}
	o.LoseAnswerRate = max(o.LoseAnswerRate, 0)
	if o.ConvergeTimeout <= 0 {
		o.ConvergeTimeout = 30 * time.Minute
	}
	if o.ChaosLimit <= 0 {
		o.ChaosLimit = o.ConvergeTimeout / 2
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	return nil
}

// Result is the outcome of a soak.
type Result struct {
	// Report holds the invariants; Report.OK is the verdict.
	Report  *verify.Report
	Summary Summary
	// Dir is where the logs are; Kept says whether it was kept (Keep, a
	// violation, or the backlog not draining).
	Dir  string
	Kept bool
	// Converged: the backlog drained within ConvergeTimeout.
	Converged bool
}

// Summary is what a soak did, in figures.
type Summary struct {
	Seed uint64 `json:"seed"`
	// Events are the distinct events generated; Resources what they are about.
	Events     int            `json:"events"`
	EventKinds map[string]int `json:"event_kinds"`
	Resources  int            `json:"resources"`
	// Delivery statistics of both simulators.
	Planned     int         `json:"deliveries_planned"`
	Duplicates  int         `json:"duplicates"`
	Conflicts   int         `json:"conflicts"`
	Delayed     int         `json:"delayed"`
	Reordered   int         `json:"reordered"`
	Dropped     int         `json:"dropped"`
	Attempts    int         `json:"attempts"`
	Acked       int         `json:"acked"`
	Retries     int         `json:"retries"`
	Unacked     int         `json:"unacknowledged"`
	StatusCodes map[int]int `json:"status_codes"`
	// Chaos.
	IntakeKills      int      `json:"intake_kills"`
	WorkerKills      int      `json:"worker_kills"`
	UnexpectedExits  int      `json:"unexpected_exits"`
	Exits            []string `json:"exits,omitempty"`
	TemporalRestarts int      `json:"temporal_restarts"`
	// Upgraded: the run began on Options.UpgradeFrom and was replaced by
	// this build with work in flight.
	Upgraded        bool  `json:"upgraded,omitempty"`
	ConnDropRounds  int   `json:"conn_drop_rounds"`
	ConnsTerminated int64 `json:"conns_terminated"`
	// PostgreSQL outages and their total length; sends after which the
	// workers' connections were cut; attempts the workers logged as
	// waiting for the database (events, outbox sends).
	Outages        int           `json:"postgres_outages"`
	OutageTime     time.Duration `json:"postgres_outage_time"`
	DropsAfterSend int64         `json:"drops_after_send"`
	EventWaits     int           `json:"event_waits_for_database"`
	SendWaits      int           `json:"send_waits_for_database"`
	Relay          RelayStats    `json:"relay"`
	// Provider API, email API and team endpoint.
	API   simulator.APIStats   `json:"api"`
	Email simulator.EmailStats `json:"email"`
	Team  TeamStats            `json:"team"`
	// Forward: the forward route's receiver; ForwardRoute its name.
	ForwardRoute string       `json:"forward_route"`
	Forward      ForwardStats `json:"forward"`
	// TeamHandler: the binary registers the soak team's handler
	// (lab/soakteam); TeamVotes is what its table holds in all.
	// GitHub: the issues events of the GitHub part (per issue, one after
	// another), the redeliveries it took to get each one acknowledged, and
	// the forward route that carried them.
	GitHubIssues       int    `json:"github_issues"`
	GitHubEvents       int    `json:"github_events"`
	GitHubRedeliveries int64  `json:"github_redeliveries"`
	GitHubRoute        string `json:"github_route"`
	GitHubCoalesce     bool   `json:"github_coalesce,omitempty"`
	TeamHandler        bool   `json:"team_handler"`
	TeamVotes          int64  `json:"team_votes"`
	// Backfill: events recovered by the facts backfill.
	BackfillRan      bool    `json:"backfill_ran"`
	BackfillInserted int     `json:"backfill_inserted"`
	Final            Backlog `json:"final_backlog"`
	// Elapsed: sending, draining after the send, in all.
	SendElapsed     time.Duration `json:"send_elapsed"`
	ConvergeElapsed time.Duration `json:"converge_elapsed"`
	Elapsed         time.Duration `json:"elapsed"`
	// Throughput: distinct delivered events per second from the first
	// delivery until the work was seen drained (before the backfill);
	// AckRate: acknowledged deliveries per second while sending.
	Throughput float64 `json:"events_per_second"`
	AckRate    float64 `json:"acks_per_second"`
}

// Write prints the summary.
func (s Summary) Write(w io.Writer) {
	kinds := make([]string, 0, len(s.EventKinds))
	for _, k := range slices.Sorted(mapsKeys(s.EventKinds)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, s.EventKinds[k]))
	}
	var codes []string
	for _, c := range slices.Sorted(mapsKeys(s.StatusCodes)) {
		codes = append(codes, fmt.Sprintf("%d×%d", c, s.StatusCodes[c]))
	}
	fmt.Fprintf(w, "soak summary (seed %d)\n", s.Seed)
	fmt.Fprintf(w, "  events       %d distinct (%s) about %d resources\n", s.Events, strings.Join(kinds, ", "), s.Resources)
	fmt.Fprintf(w, "  deliveries   %d planned: %d duplicates, %d conflicting (same id, other body), %d delayed, %d reordered, %d dropped\n",
		s.Planned, s.Duplicates, s.Conflicts, s.Delayed, s.Reordered, s.Dropped)
	fmt.Fprintf(w, "  attempts     %d (%d retries), %d acknowledged, %d never; answers %s\n", s.Attempts, s.Retries, s.Acked, s.Unacked, strings.Join(codes, " "))
	fmt.Fprintf(w, "  chaos        %d intake kills, %d worker kills (SIGKILL), %d unexpected exits, %d Temporal restart(s), %d connection drop rounds (%d connections), %d answers lost, %d deliveries to a dead intake\n",
		s.IntakeKills, s.WorkerKills, s.UnexpectedExits, s.TemporalRestarts, s.ConnDropRounds, s.ConnsTerminated, s.Relay.LostAnswers, s.Relay.Unreachable)
	if s.Outages > 0 || s.DropsAfterSend > 0 {
		fmt.Fprintf(w, "               %d PostgreSQL outage(s) (%s down in all), %d sends followed by the workers' connections cut; the workers waited for the database %d time(s) handling events, %d sending\n",
			s.Outages, s.OutageTime.Round(time.Second), s.DropsAfterSend, s.EventWaits, s.SendWaits)
	}
	for _, e := range s.Exits {
		fmt.Fprintf(w, "               %s\n", e)
	}
	fmt.Fprintf(w, "  provider API %d requests: %d 5xx, %d 429, %d spurious 404\n", s.API.Requests, s.API.Errors5xx, s.API.RateLimited, s.API.NotFound)
	fmt.Fprintf(w, "  email API    %d posts: %d emails, %d deduplicated repeats, %d answers lost\n", s.Email.Posts, s.Email.Accepted, s.Email.Deduped, s.Email.LostAnswers)
	fmt.Fprintf(w, "  team webhook %d alerts received (%d posts, %d refused with 503, %d bad signatures)\n", s.Team.Distinct, s.Team.Accepted, s.Team.Refused, s.Team.Rejected)
	f := s.Forward
	fmt.Fprintf(w, "  forward      route %s: %d operations applied at the receiver (%d posts, %d resends answered as applied, %d refused with 503, %d answers lost after applying, %d bad), receiver killed %d time(s), %s down\n",
		s.ForwardRoute, f.Applied, f.Posts, f.Repeats, f.Refused, f.Lost, f.Rejected, f.Kills, f.Down.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  github       %d issues events about %d issues of one repository, acknowledged after %d redelivery(ies), forwarded by route %s\n",
		s.GitHubEvents, s.GitHubIssues, s.GitHubRedeliveries, s.GitHubRoute)
	if s.GitHubCoalesce {
		fmt.Fprintf(w, "               coalescing (--fetch-current --coalesce): %d document(s) covered %d events\n", s.Forward.Coalesced, s.Forward.Covered)
	}
	if s.TeamHandler {
		fmt.Fprintf(w, "  team handler %s: %d vote(s) counted in %s\n", soakteam.HandlerName, s.TeamVotes, soakteam.Table)
	} else {
		fmt.Fprintf(w, "  team handler none: the binary does not register %s (its events are ignored)\n", soakteam.HandlerName)
	}
	if s.BackfillRan {
		fmt.Fprintf(w, "  backfill     %d dropped event(s) recovered from the provider's events list\n", s.BackfillInserted)
	}
	fmt.Fprintf(w, "  final        %s\n", s.Final)
	fmt.Fprintf(w, "  elapsed      %s in all: sending %s, draining after it %s\n",
		s.Elapsed.Round(time.Second), s.SendElapsed.Round(time.Second), s.ConvergeElapsed.Round(time.Second))
	fmt.Fprintf(w, "  throughput   %.1f events/s end to end (first delivery until drained), %.1f acknowledged deliveries/s while sending\n",
		s.Throughput, s.AckRate)
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Accounts and workspaces of a soak. The database and the Temporal server
// are the soak's own, so fixed names are safe.
const (
	accountVersions = "acct_soak_versions"
	accountNotices  = "acct_soak_notices"
	projectFeedback = "proj_soak"
	wsVersions      = "ws_soak_versions"
	wsNotices       = "ws_soak_notices"
	slugVersions    = "stripe-versions"
	slugNotices     = "stripe-notices"
	slugFeedback    = "feedback"
	teamDestination = "oncall"
	appNamePrefix   = "hookinbox-soak-app-"
)

var (
	// Fixed, but as strong as the CLI asks (an upgrade run registers them
	// through the previous release's `endpoints add`).
	secretVersions = "whsec_Qe7Ma2Vx9Lk4Rt1Zb8Np3Hs6Dw0Gc5Yf"
	secretNotices  = "whsec_Jq2Lm9Xv4Rb1Tz8Nw3Hc6Pd0Kf5Gy7Sa"
	secretFeedback = simulator.StandardSecret("soak-feedback/7Qe2Ma9Vx4Lk1Rt8Zb3Np6Hs")
	secretTeam     = simulator.StandardSecret("soak-team/Wd0Gc5Yf7Jq2Lm9Xv4Rb1Tz8Nw3")
	secretForward  = simulator.StandardSecret("soak-forward/Lk4Rt1Zb8Np3Hs6Dw0Gc5Yf")
)

// forwardRoute is the soak's forward route: the feedback tool's comments
// POSTed to the receiver, one operation per comment (a comment announced
// twice is forwarded once), with a budget that outlasts the receiver's
// deaths. Its flags are here alone, so a run with another kind of route
// (issue 34's --coalesce) changes this list and the forward invariants.
const forwardRoute = "soak-comments"

func forwardRouteArgs(url string) []string {
	return []string{"routes", "add", "--name", forwardRoute, "--provider", "standard", "--event-type", simulator.EventFeedbackCommented,
		"--forward", url + "/comments", "--secret-env", "SOAK_SECRET_FORWARD", "--operation-key-path", "data.comment_id",
		"--allow-private", "--retry-budget", "60", "--timeout", "5s"}
}

// soakScope is what the soak's events are about: its accounts (the
// GitHub installation's included) and workspaces.
func soakScope() Scope {
	return Scope{Accounts: []string{accountVersions, accountNotices, projectFeedback, githubInstallation}, Workspaces: []string{wsVersions, wsNotices}}
}

// harness is one soak in progress.
type harness struct {
	o Options
	// githubRedeliveries counts the GitHub part's redeliveries.
	githubRedeliveries atomic.Int64
	dir                string
	logDir             string
	cleanups           []func()
	logMu              sync.Mutex

	pg       *devenv.Postgres
	pgDir    string
	temporal *devenv.Temporal
	st       *store.Store
	admin    *pgxpool.Pool
	tc       client.Client
	fleet    *fleet
	relay    *Relay
	team     *TeamReceiver
	forward  *ForwardReceiver
	// teamHandler: the fleet's binary registers the soak team's handler.
	teamHandler bool
	simV        *simulator.Simulator
	simN        *simulator.Simulator
	plans       [2]simulator.Plan
	emailAPI    string
	// secretsKey seals the endpoints' secrets: the harness's store and
	// every process it starts share it.
	secretsKey string
	drops      *dropAfterSend

	mu               sync.Mutex
	temporalRestarts int
	// upgraded: the fleet runs UpgradeFrom's successor (Options.UpgradeFrom).
	upgraded        bool
	dropRounds      int
	connsTerminated int64
	outages         int
	outageTime      time.Duration
}

func (h *harness) logf(format string, args ...any) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	fmt.Fprintf(h.o.Progress, format+"\n", args...)
}

func (h *harness) onTeardown(f func()) { h.cleanups = append(h.cleanups, f) }

func (h *harness) teardown() {
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
}

// Run runs one soak: it returns an error only when the harness itself could
// not run; violations are in Result.Report.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	h := &harness{o: o}
	defer h.teardown()
	if err := h.prepareDir(); err != nil {
		return nil, err
	}
	res = &Result{Dir: h.dir}
	keep := o.Keep
	h.onTeardown(func() {
		if !keep {
			os.RemoveAll(h.dir)
		}
	})
	if err := h.startServices(ctx); err != nil {
		return nil, err
	}
	h.newSimulators()
	targetsV, targetsN, err := h.serve(ctx)
	if err != nil {
		keep = true
		return nil, err
	}
	h.startFleet(ctx)
	h.logf("soak: waiting for %d intake and %d worker process(es)", o.Intakes, o.Workers)
	if err := h.fleet.waitAllUp(ctx, 3*time.Minute); err != nil {
		keep = true
		return nil, err
	}
	h.plans[0], h.plans[1] = h.simV.Generate(), h.simN.Generate()
	planned := len(h.plans[0].Deliveries) + len(h.plans[1].Deliveries)
	h.logf("soak: %d deliveries planned; sending through the relay while the chaos runs", planned)

	start := time.Now()
	var reports [2]simulator.Report
	var sendErr [2]error
	var senders sync.WaitGroup
	for i, t := range []simulator.Targets{targetsV, targetsN} {
		sim := []*simulator.Simulator{h.simV, h.simN}[i]
		senders.Add(1)
		go func() {
			defer senders.Done()
			reports[i], sendErr[i] = sim.Deliver(ctx, t, h.plans[i])
		}()
	}
	var githubDelivered map[string][]string
	var githubErr error
	senders.Add(1)
	go func() {
		defer senders.Done()
		githubDelivered, githubErr = h.sendGitHub(ctx, max(o.SendOver, 10*time.Second))
	}()
	sendDone := make(chan struct{})
	chaosDone := make(chan error, 1)
	go func() { chaosDone <- h.chaos(ctx, start, sendDone, planned) }()
	progressStop := make(chan struct{})
	var progressWG sync.WaitGroup
	progressWG.Add(1)
	go func() {
		defer progressWG.Done()
		h.progress(ctx, start, planned, progressStop)
	}()
	senders.Wait()
	sendElapsed := time.Since(start)
	close(sendDone)
	h.logf("soak: sending done in %s; the chaos goes on until the backlog drains and its minimums are met", sendElapsed.Round(time.Second))
	chaosErr := <-chaosDone
	close(progressStop)
	progressWG.Wait()
	if err := errors.Join(sendErr[0], sendErr[1], githubErr, chaosErr); err != nil {
		keep = true
		return nil, err
	}
	h.logf("soak: chaos over; making sure every process is up")
	if err := h.fleet.waitAllUp(ctx, 3*time.Minute); err != nil {
		h.logf("soak: %v", err)
	}

	scope := soakScope()
	truthV, truthN := h.simV.Truth(), h.simN.Truth()
	// The notices simulator sends no feedback: the project, its alerts and
	// its workspace belong to the versions run alone.
	truthN.Projects = []string{}
	dropped := len(truthV.DroppedEvents)+len(truthN.DroppedEvents) > 0
	// With deliveries dropped, what waits for their facts (a credit note
	// for its invoice's grant) cannot drain before the backfill brings
	// them: the wait ends when only such rows are left.
	final, cerr := Converge(ctx, h.st.Pool, scope, ConvergeOptions{Timeout: o.ConvergeTimeout, Every: o.ProgressEvery,
		Progress: o.Progress, Label: "converge ", UntilWaiting: dropped})
	res.Converged = cerr == nil
	drained := final.At
	if cerr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var sum Summary
	if dropped {
		h.logf("soak: %d event(s) were never delivered; running the facts backfill", len(truthV.DroppedEvents)+len(truthN.DroppedEvents))
		run, err := TriggerBackfill(ctx, h.tc, "hookinbox", o.Progress, 15*time.Minute)
		if err != nil {
			h.logf("soak: backfill: %v", err)
		} else {
			sum.BackfillRan, sum.BackfillInserted = true, run.Totals.Inserted
			final, cerr = Converge(ctx, h.st.Pool, scope, ConvergeOptions{Timeout: o.ConvergeTimeout, Every: o.ProgressEvery, Progress: o.Progress, Label: "converge "})
			res.Converged = res.Converged && cerr == nil
		}
	}
	convergeElapsed := time.Since(start) - sendElapsed

	applied := h.forward.Applied() // the receiver's one log: the comments' route and the GitHub route
	rep, err := verify.Check(ctx, h.st.Pool, verify.Input{
		Runs: []verify.Run{
			{Label: "versions", Truth: truthV, Sent: verify.SentFrom(reports[0])},
			{Label: "notices", Truth: truthN, Sent: verify.SentFrom(reports[1])},
		},
		BackfillRan: sum.BackfillRan,
		CheckEmails: true, Emails: h.simV.Emails(),
		Forwards:     &verify.Forwards{Route: forwardRoute, Applied: applied},
		GitHubIssues: h.githubCheck(githubDelivered, applied),
		TeamVotes:    h.teamHandler,
	})
	if err != nil {
		keep = true
		return nil, err
	}
	res.Report = rep
	if !rep.OK || !res.Converged {
		keep = true
	}
	res.Kept = keep
	h.summarize(&sum, reports, truthV, truthN, final)
	sum.GitHubIssues, sum.GitHubRoute, sum.GitHubRedeliveries = len(githubDelivered), githubRoute, h.githubRedeliveries.Load()
	sum.GitHubCoalesce = o.Coalesce
	for _, ids := range githubDelivered {
		sum.GitHubEvents += len(ids)
	}
	sum.SendElapsed, sum.ConvergeElapsed, sum.Elapsed = sendElapsed, convergeElapsed, time.Since(start)
	if s := drained.Sub(start).Seconds(); s > 0 && res.Converged {
		sum.Throughput = float64(sum.Events-sum.BackfillInserted) / s
	}
	if s := sendElapsed.Seconds(); s > 0 {
		sum.AckRate = float64(sum.Acked) / s
	}
	res.Summary = sum
	return res, nil
}

func (h *harness) prepareDir() error {
	h.dir = h.o.Dir
	if h.dir == "" {
		d, err := os.MkdirTemp("", "hookinbox-soak-")
		if err != nil {
			return err
		}
		h.dir = d
	}
	h.logDir = filepath.Join(h.dir, "logs")
	return os.MkdirAll(h.logDir, 0o755)
}

func (h *harness) logFile(name string) (io.Writer, error) {
	f, err := os.OpenFile(filepath.Join(h.logDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	h.onTeardown(func() { f.Close() })
	return f, nil
}

// startServices starts PostgreSQL (ephemeral: the soak kills the
// application, not the database) and the Temporal dev server (persisted to a
// file so it can be restarted), migrates, and connects.
func (h *harness) startServices(ctx context.Context) error {
	pgLog, err := h.logFile("postgres.log")
	if err != nil {
		return err
	}
	// Outside h.dir: the server runs as the postgres user when we are root
	// and must reach its folder.
	h.pgDir, err = os.MkdirTemp("", "hookinbox-soak-pg-")
	if err != nil {
		return err
	}
	h.onTeardown(func() { os.RemoveAll(h.pgDir) })
	port, err := devenv.FreePort()
	if err != nil {
		return err
	}
	h.pg, err = devenv.StartPostgres(ctx, devenv.PostgresOptions{Dir: h.pgDir, Port: port, Ephemeral: true, Log: pgLog, Progress: h.o.Progress})
	if err != nil {
		return err
	}
	h.onTeardown(func() { _ = h.pg.Stop() })
	if err := h.pg.EnsureDatabase(ctx, "hookinbox", "hookinbox"); err != nil {
		return err
	}
	h.secretsKey = secretbox.GenerateKey()
	// The fleet's binary migrates, as an operator's would: hookinbox's
	// schema and its App's own (the soak team's table). In an upgrade the
	// previous release's schema comes first; the new one migrates later.
	if err := h.runBinary(ctx, h.fleetBinary(), "migrate"); err != nil {
		return err
	}
	// The processes' roles (their team's grants too: the binary knows its
	// App's tables), created by a superuser as an operator's DBA would; the
	// fleet connects as them. Later migrations re-apply the grants.
	if err := h.runBinary(ctx, h.fleetBinary(), "db", "roles"); err != nil {
		return err
	}
	if h.st, err = store.Open(ctx, h.pg.URL("hookinbox", "hookinbox")+"&application_name=hookinbox-soak-harness", 8); err != nil {
		return err
	}
	// The team's invariant needs its handler from the first delivery on:
	// a binary without it (the shipped one, a previous release) records
	// the team's events ignored.
	if h.o.UpgradeFrom == "" {
		if err := h.st.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, soakteam.Table).Scan(&h.teamHandler); err != nil {
			return err
		}
	}
	if h.st.Keys, err = secretbox.ParseKey(h.secretsKey); err != nil {
		return err
	}
	h.onTeardown(h.st.Close)
	if h.admin, err = pgxpool.New(ctx, h.pg.AdminURL("hookinbox")+"&application_name=hookinbox-soak-chaos&pool_max_conns=2"); err != nil {
		return err
	}
	h.onTeardown(h.admin.Close)

	bin, err := devenv.TemporalCLI.Ensure(ctx, h.o.Root, h.o.Progress)
	if err != nil {
		return err
	}
	tLog, err := h.logFile("temporal.log")
	if err != nil {
		return err
	}
	tport, err := devenv.FreePort()
	if err != nil {
		return err
	}
	uiPort := 0
	if h.o.TemporalUI {
		if uiPort, err = devenv.FreePort(); err != nil {
			return err
		}
	}
	h.temporal, err = devenv.StartTemporal(ctx, devenv.TemporalOptions{
		Binary: bin, DBFile: filepath.Join(h.dir, "temporal.db"), Port: tport, UIPort: uiPort,
		SearchAttributes: starter.SearchAttributeTypes(), Log: tLog, Progress: h.o.Progress,
	})
	if err != nil {
		return err
	}
	h.onTeardown(func() { _ = h.temporal.Stop() })
	cfg := config.Default()
	cfg.TemporalAddress = h.temporal.Address
	if h.tc, err = starter.Dial(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return err
	}
	h.onTeardown(h.tc.Close)
	return nil
}

// scenario sizes each simulator for about events distinct events in all:
// a subscription's story is about 6 events (created, 2 paid invoices of
// which 30% get a second event, 2 changes, a cancellation half the time),
// and feedback items' stories about a tenth of the total (an item is about
// 4.3 events: created, 1.5 comments of which a fifth are announced twice,
// 1.5 votes).
func scenario(events int) (customers, feedback int) {
	feedback = max(2, int(math.Round(float64(events)/10/4.3)))
	customers = max(2, int(math.Round((float64(events)-4.3*float64(feedback))/6.1/2)))
	return customers, feedback
}

func (h *harness) simConfig(account string, versions bool, customers, feedback int) simulator.Config {
	cfg := simulator.Config{
		Seed: h.o.Seed, Accounts: []string{account}, Projects: []string{projectFeedback}, Versions: versions,
		Scenario: simulator.ScenarioKnobs{
			CustomersPerAccount: customers, InvoicesPerSubscription: 2, UpdatesPerSubscription: 2,
			CancelRate: 0.5, FeedbackPerProject: feedback, SecondEventRate: 0.3,
			// Credit notes ride in their invoice's step, so reordering puts
			// some before their invoice's event and some voids before
			// their credit note's.
			CreditNoteRate: 0.2, VoidRate: 0.3,
			// A feedback item's comments go to the forward route (some
			// announced twice), its votes to the team's handler.
			CommentsPerFeedback: 3, RecommentRate: 0.2, VotesPerFeedback: 3,
		},
		Delivery: simulator.DeliveryKnobs{
			DuplicateRate: 0.1, ReorderWindow: 8, DelayRate: 0.05, ConflictRate: 0.02, DropRate: 0.01,
			Concurrency: h.o.Concurrency,
			// Retry until acknowledged: 60 attempts, every 10 s at most
			// (provider time ×0.001), about 9 minutes in all.
			MaxAttempts: 60, RetryBase: time.Minute, RetryCap: 10000 * time.Second, TimeScale: 0.001,
			AttemptTimeout: 15 * time.Second,
		},
		API: simulator.APIKnobs{ErrorRate: 0.02, RateLimitRate: 0.02, NotFoundRate: 0.01, RetryAfter: time.Second},
	}
	if !versions {
		cfg.Seed = h.o.Seed + 1_000_003
		cfg.Scenario.FeedbackPerProject = -1 // the versions simulator sends the feedback
	} else {
		cfg.Email = simulator.EmailKnobs{LoseAnswerRate: 0.05}
	}
	if h.o.SendOver > 0 {
		deliveries := (float64(customers)*6.1 + 4.3*float64(max(cfg.Scenario.FeedbackPerProject, 0))) * (1 + cfg.Delivery.DuplicateRate)
		cfg.Delivery.Interval = time.Duration(float64(h.o.SendOver) / deliveries / cfg.Delivery.TimeScale)
	}
	return cfg
}

// newSimulators builds the two providers: one with versioned subscription
// snapshots (it also sends the feedback), one without (Stripe's default).
func (h *harness) newSimulators() {
	customers, feedback := scenario(h.o.Events)
	h.simV = simulator.New(h.simConfig(accountVersions, true, customers, feedback))
	h.simN = simulator.New(h.simConfig(accountNotices, false, customers, feedback))
}

// serve starts the simulators' APIs, the team receiver and the relay, and
// registers what an operator would: the endpoints pointing at them, the
// account links, the workspaces' emails and the team destination.
func (h *harness) serve(ctx context.Context) (targetsV, targetsN simulator.Targets, err error) {
	apiV, err := h.listen(ctx, h.simV.Handler())
	if err != nil {
		return targetsV, targetsN, err
	}
	apiN, err := h.listen(ctx, h.simN.Handler())
	if err != nil {
		return targetsV, targetsN, err
	}
	if h.team, err = NewTeamReceiver(secretTeam, 0.03, h.o.Seed); err != nil {
		return targetsV, targetsN, err
	}
	teamURL, err := h.listen(ctx, h.team)
	if err != nil {
		return targetsV, targetsN, err
	}
	if h.forward, err = NewForwardReceiver(secretForward, 0.05, 0.03, h.o.Seed); err != nil {
		return targetsV, targetsN, err
	}
	forwardURL, err := h.forward.Start(ctx)
	if err != nil {
		return targetsV, targetsN, err
	}
	h.onTeardown(h.forward.Close)
	h.relay = NewRelay(h.o.Intakes, h.o.LoseAnswerRate, h.o.Seed)
	relayURL, err := h.listen(ctx, h.relay)
	if err != nil {
		return targetsV, targetsN, err
	}
	if h.o.UpgradeFrom != "" {
		if err := h.registerWithCLI(ctx, h.o.UpgradeFrom, apiV, apiN, teamURL); err != nil {
			return targetsV, targetsN, err
		}
	} else if err := h.register(ctx, apiV, apiN, teamURL); err != nil {
		return targetsV, targetsN, err
	}
	// The forward route through the CLI, as an operator adds one (the
	// previous release's in an upgrade).
	if err := h.runBinary(ctx, h.fleetBinary(), forwardRouteArgs(forwardURL)...); err != nil {
		return targetsV, targetsN, err
	}
	if err := h.runBinary(ctx, h.fleetBinary(), githubRouteArgs(forwardURL)...); err != nil {
		return targetsV, targetsN, err
	}
	if h.o.Coalesce && h.o.UpgradeFrom == "" {
		if err := h.runBinary(ctx, h.o.Binary, githubCoalesceArgs()...); err != nil {
			return targetsV, targetsN, err
		}
	}
	h.simV.AddGitHubHook(githubHook, simulator.Endpoint{URL: relayURL + "/webhooks/" + slugGitHub, Secrets: []string{secretGitHub}})
	feedbackTarget := simulator.Endpoint{URL: relayURL + "/webhooks/" + slugFeedback, Secrets: []string{secretFeedback}}
	targetsV = simulator.Targets{
		Stripe:   simulator.Endpoint{URL: relayURL + "/webhooks/" + slugVersions, Secrets: []string{secretVersions}},
		Standard: feedbackTarget,
	}
	targetsN = simulator.Targets{
		Stripe:   simulator.Endpoint{URL: relayURL + "/webhooks/" + slugNotices, Secrets: []string{secretNotices}},
		Standard: feedbackTarget,
	}
	// The email API the workers use: the versions simulator's, cutting the
	// workers' database connections after some accepted sends.
	h.drops = newDropAfterSend(h.simV.Handler(), h.admin, h.o.DropAfterSendRate, h.o.Seed, h.logf)
	if h.emailAPI, err = h.listen(ctx, h.drops); err != nil {
		return targetsV, targetsN, err
	}
	return targetsV, targetsN, nil
}

// listen serves h on a free local port and returns its base URL.
func (h *harness) listen(ctx context.Context, handler http.Handler) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	h.onTeardown(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return "http://" + ln.Addr().String(), nil
}

// register is what an operator would register, through the store: the
// endpoints pointing at the simulators, the account links, the
// workspaces' emails and the team destination.
func (h *harness) register(ctx context.Context, apiV, apiN, teamURL string) error {
	st := h.st
	for _, e := range []endpoints.NewEndpoint{
		{Slug: slugVersions, Provider: "stripe", Environment: "test", Account: accountVersions, Secrets: []string{secretVersions},
			APIBaseURL: apiV, APIKey: simulator.DefaultAPIKey, Settings: keys.EndpointSettings{VersionPath: "data.object.version"}},
		{Slug: slugNotices, Provider: "stripe", Environment: "test", Account: accountNotices, Secrets: []string{secretNotices},
			APIBaseURL: apiN, APIKey: simulator.DefaultAPIKey},
		{Slug: slugFeedback, Provider: "standard", Environment: "test", Secrets: []string{secretFeedback},
			Settings: keys.EndpointSettings{AccountPath: "data.project_id", ResourcePath: "data.id"}},
	} {
		if err := endpoints.InsertEndpoint(ctx, st, e); err != nil {
			return err
		}
	}
	for _, l := range [][3]string{{slugVersions, accountVersions, wsVersions}, {slugNotices, accountNotices, wsNotices}, {slugFeedback, projectFeedback, wsVersions}} {
		if err := endpoints.LinkAccount(ctx, st, l[0], l[1], l[2]); err != nil {
			return err
		}
	}
	for _, ws := range []string{wsVersions, wsNotices} {
		if err := records.SetWorkspaceEmail(ctx, st.Pool, ws, "billing@"+strings.ReplaceAll(ws, "_", "-")+".example"); err != nil {
			return err
		}
	}
	if err := outbox.UpsertDestination(ctx, st.Pool, st.Keys, outbox.Destination{WorkspaceID: wsVersions, Name: teamDestination, Kind: "webhook",
		Target: teamURL + "/alerts", Secret: secretTeam, Enabled: true}); err != nil {
		return err
	}
	return h.registerGitHub(ctx, apiV)
}

// registerWithCLI registers the same through bin's own operator CLI (the
// previous release's, in an upgrade: its schema may lack what this
// build's store writes).
func (h *harness) registerWithCLI(ctx context.Context, bin, apiV, apiN, teamURL string) error {
	cmds := [][]string{
		{"endpoints", "add", "--slug", slugVersions, "--provider", "stripe", "--environment", "test", "--account", accountVersions,
			"--secret-env", "SOAK_SECRET_VERSIONS", "--api-base-url", apiV, "--allow-custom-api-host", "--api-key-env", "SOAK_API_KEY", "--version-path", "data.object.version"},
		{"endpoints", "add", "--slug", slugNotices, "--provider", "stripe", "--environment", "test", "--account", accountNotices,
			"--secret-env", "SOAK_SECRET_NOTICES", "--api-base-url", apiN, "--allow-custom-api-host", "--api-key-env", "SOAK_API_KEY"},
		{"endpoints", "add", "--slug", slugFeedback, "--provider", "standard", "--environment", "test",
			"--secret-env", "SOAK_SECRET_FEEDBACK", "--account-path", "data.project_id", "--resource-path", "data.id"},
		{"endpoints", "link", "--slug", slugVersions, "--account", accountVersions, "--workspace", wsVersions},
		{"endpoints", "link", "--slug", slugNotices, "--account", accountNotices, "--workspace", wsNotices},
		{"endpoints", "link", "--slug", slugFeedback, "--account", projectFeedback, "--workspace", wsVersions},
		{"workspaces", "set", "--id", wsVersions, "--email", "billing@" + strings.ReplaceAll(wsVersions, "_", "-") + ".example"},
		{"workspaces", "set", "--id", wsNotices, "--email", "billing@" + strings.ReplaceAll(wsNotices, "_", "-") + ".example"},
		{"workspaces", "add-destination", "--workspace", wsVersions, "--name", teamDestination, "--webhook", teamURL + "/alerts",
			"--secret-env", "SOAK_SECRET_TEAM"},
	}
	cmds = append(cmds, githubCLI(apiV)...)
	for _, c := range cmds {
		if err := h.runBinary(ctx, bin, c...); err != nil {
			return err
		}
	}
	return nil
}

// runBinary runs one command of bin on the soak's database as its owner,
// with the soak's secrets key, logging its output.
func (h *harness) runBinary(ctx context.Context, bin string, args ...string) error {
	log, err := h.logFile("commands.log")
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "$ %s %s\n", filepath.Base(bin), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	dbURL := h.pg.URL("hookinbox", "hookinbox")
	if len(args) > 0 && args[0] == "db" {
		dbURL = h.pg.AdminURL("hookinbox") // creating roles needs CREATEROLE
	}
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "HOOKINBOX_SECRETS_KEY="+h.secretsKey,
		"SOAK_SECRET_VERSIONS="+secretVersions, "SOAK_SECRET_NOTICES="+secretNotices, "SOAK_SECRET_FEEDBACK="+secretFeedback,
		"SOAK_SECRET_TEAM="+secretTeam, "SOAK_SECRET_FORWARD="+secretForward, "SOAK_SECRET_GITHUB="+secretGitHub, "SOAK_API_KEY="+simulator.DefaultAPIKey,
		"HOOKINBOX_OUTBOUND_ALLOW_PRIVATE=true")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w (see %s)", bin, strings.Join(args, " "), err, filepath.Join(h.logDir, "commands.log"))
	}
	return nil
}

// processEnv is the processes' configuration: only environment variables,
// none inherited from the soak's own environment.
func (h *harness) processEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "HOOKINBOX_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"TEMPORAL_ADDRESS="+h.temporal.Address,
		"TEMPORAL_NAMESPACE=default",
		"HOOKINBOX_SECRETS_KEY="+h.secretsKey,
		// Short sweeps so what a kill interrupted is picked up quickly.
		"HOOKINBOX_SWEEP_INTERVAL=2s",
		"HOOKINBOX_SWEEP_AFTER=2s",
		// Workflows complete when idle and continue-as-new often, so both
		// paths run under the chaos.
		"HOOKINBOX_IDLE_TIMEOUT=20s",
		"HOOKINBOX_MAX_EVENTS_PER_RUN=4",
		"HOOKINBOX_ACTIVITY_TIMEOUT=10s",
		"HOOKINBOX_HANDOFF_TIMEOUT=2s",
		"HOOKINBOX_RETRY_BUDGET=25",
		"HOOKINBOX_RETRY_INITIAL=200ms",
		"HOOKINBOX_RETRY_MAX=3s",
		"HOOKINBOX_OUTBOX_BUDGET=30",
		"HOOKINBOX_MAILER=http",
		"HOOKINBOX_OUTBOUND_ALLOW_PRIVATE=true", // team destinations are on loopback here
		"HOOKINBOX_EMAIL_API_URL="+h.emailAPI,
		// The backfill and reconciliation schedules exist (so the soak can
		// trigger the backfill) but do not run on their own during a soak.
		"HOOKINBOX_BACKFILL_INTERVAL=24h",
		"HOOKINBOX_RECONCILE_INTERVAL=24h",
		"HOOKINBOX_RETENTION_INTERVAL=0",
		"HOOKINBOX_LOG_FORMAT=json",
		"HOOKINBOX_LOG_LEVEL=info",
	)
}

// fleetBinary is the binary the fleet starts on: Binary, or in an upgrade
// the previous release (Binary takes over later).
func (h *harness) fleetBinary() string {
	if h.o.UpgradeFrom != "" {
		return h.o.UpgradeFrom
	}
	return h.o.Binary
}

func (h *harness) startFleet(ctx context.Context) {
	dbURL := func(role, app string) string {
		if role == "" {
			role = "hookinbox"
		}
		return h.pg.URL(role, "hookinbox") + "&application_name=" + app
	}
	h.fleet = newFleet(h.fleetBinary(), h.processEnv(), dbURL, h.logDir, h.relay, h.logf)
	h.fleet.add(KindIntake, h.o.Intakes)
	h.fleet.add(KindWorker, h.o.Workers)
	fctx, cancel := context.WithCancel(ctx)
	h.fleet.run(fctx)
	h.onTeardown(func() {
		h.fleet.shutdown(10 * time.Second)
		cancel()
	})
}

// acked is the share of planned deliveries that have an outcome.
func (h *harness) sendProgress(planned int) (acked int, frac float64) {
	st := h.simV.Stats().Plus(h.simN.Stats())
	acked = st.Acked
	done := acked + st.Dropped + st.Exhausted + st.Skipped
	if planned == 0 {
		return acked, 1
	}
	return acked, float64(done) / float64(planned)
}

// chaos kills processes, drops connections and restarts Temporal once,
// until sending is done, the backlog has drained (or ChaosLimit passed)
// and each kind of fault happened its minimum number of times.
func (h *harness) chaos(ctx context.Context, start time.Time, sendDone <-chan struct{}, planned int) error {
	o := h.o
	rng := rand.New(rand.NewPCG(o.Seed, 11))
	jitter := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.5 + rng.Float64())) }
	nextKill, nextDrop := time.Now().Add(jitter(o.KillEvery)), time.Now().Add(jitter(o.DropConnsEvery))
	// The forward receiver dies about half as often as a process.
	nextReceiverKill := time.Now().Add(jitter(2 * o.KillEvery))
	var receiverDown sync.WaitGroup
	defer receiverDown.Wait()
	restarted := o.NoTemporalRestart
	outages := 0
	scope := soakScope()
	drained, lastDrainCheck := false, time.Time{}
	sent, upgraded := false, false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if !sent {
			select {
			case <-sendDone:
				sent = true
			default:
			}
		}
		kills, _, _ := h.fleet.counts()
		h.mu.Lock()
		drops := h.dropRounds
		h.mu.Unlock()
		minimums := kills[KindIntake] >= o.MinKills && kills[KindWorker] >= o.MinKills && drops >= o.MinConnDrops && restarted &&
			outages >= o.Outages && (o.UpgradeFrom == "" || upgraded) && h.forward.Stats().Kills >= 1
		if _, frac := h.sendProgress(planned); o.UpgradeFrom != "" && !upgraded && (frac >= o.UpgradeAt || sent) {
			if err := h.upgrade(ctx); err != nil {
				return err
			}
			upgraded = true
			continue
		}
		if sent && time.Since(lastDrainCheck) > time.Second {
			lastDrainCheck = time.Now()
			b, err := ReadBacklog(ctx, h.st.Pool, scope)
			// What waits for a dropped event's fact drains only after the
			// backfill, at the end.
			drained = err == nil && (b.Settled() || (h.anyDropped() && b.OnlyWaiting()))
		}
		if sent && minimums && (drained || time.Since(start) > o.ChaosLimit) {
			return nil
		}
		if _, frac := h.sendProgress(planned); outages < o.Outages && (frac >= 0.15+0.7*float64(outages)/float64(o.Outages) || sent) {
			// While the events are being handled; the loop (so the kills
			// and drops) waits for the database to come back.
			d := o.OutageMin + time.Duration(rng.Float64()*float64(o.OutageMax-o.OutageMin))
			if err := h.outage(ctx, d); err != nil {
				return fmt.Errorf("PostgreSQL outage: %w", err)
			}
			outages++
			nextKill, nextDrop = time.Now().Add(jitter(o.KillEvery)), time.Now().Add(jitter(o.DropConnsEvery))
			continue
		}
		if _, frac := h.sendProgress(planned); !restarted && (frac >= 0.4 || sent) {
			if err := h.restartTemporal(ctx); err != nil {
				return err
			}
			restarted = true
			continue
		}
		now := time.Now()
		if now.After(nextKill) {
			kind := KindIntake
			switch {
			case kills[KindIntake] < o.MinKills && kills[KindWorker] >= o.MinKills:
			case kills[KindWorker] < o.MinKills && kills[KindIntake] >= o.MinKills:
				kind = KindWorker
			case rng.IntN(2) == 1:
				kind = KindWorker
			}
			var pool []*slot
			for _, s := range h.fleet.slots {
				if s.kind == kind {
					pool = append(pool, s)
				}
			}
			s := pool[rng.IntN(len(pool))]
			down := 200*time.Millisecond + time.Duration(rng.Float64()*float64(1800*time.Millisecond))
			if pid, ok := h.fleet.kill(s, down); ok {
				h.logf("chaos: kill -9 %s (pid %d); back in %s", s.name, pid, down.Round(10*time.Millisecond))
			}
			every := o.KillEvery
			if sent && (kills[KindIntake] < o.MinKills || kills[KindWorker] < o.MinKills) {
				every = max(every/2, time.Second) // sending was quick: reach the minimums
			}
			nextKill = now.Add(jitter(every))
		}
		if now.After(nextDrop) {
			h.dropConnections(ctx)
			nextDrop = now.Add(jitter(o.DropConnsEvery))
		}
		if now.After(nextReceiverKill) {
			down := 300*time.Millisecond + time.Duration(rng.Float64()*float64(1700*time.Millisecond))
			h.logf("chaos: the forward receiver dies; back in %s", down.Round(10*time.Millisecond))
			receiverDown.Add(1)
			go func() {
				defer receiverDown.Done()
				if err := h.forward.Kill(ctx, down); err != nil {
					h.logf("chaos: %v", err)
				}
			}()
			nextReceiverKill = now.Add(down + jitter(2*o.KillEvery))
		}
	}
}

// anyDropped reports whether the simulators dropped deliveries on purpose
// (only the backfill at the end brings their events).
func (h *harness) anyDropped() bool {
	return h.simV.Stats().Dropped+h.simN.Stats().Dropped > 0
}

// upgrade replaces the previous release's processes by this build's with
// work in flight: every process killed, this build's migrations applied to
// the same database, the fleet back on the new binary.
func (h *harness) upgrade(ctx context.Context) error {
	scope := soakScope()
	b, _ := ReadBacklog(ctx, h.st.Pool, scope)
	h.logf("upgrade: killing every process of %s with %d event(s) pending", filepath.Base(h.o.UpgradeFrom), b.Pending)
	err := h.fleet.replace(h.o.Binary, func() error {
		if err := h.runBinary(ctx, h.o.Binary, "migrate"); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
		h.logf("upgrade: %s migrated the database; starting it", filepath.Base(h.o.Binary))
		return nil
	})
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.upgraded = true
	h.mu.Unlock()
	if h.o.Coalesce {
		// The previous release has no coalescing: the route becomes
		// coalescing now, with the old rule's rows still pending.
		if err := h.runBinary(ctx, h.o.Binary, githubCoalesceArgs()...); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
		h.logf("upgrade: route %s coalesces from now on", githubRoute)
	}
	return h.fleet.waitAllUp(ctx, 3*time.Minute)
}

// restartTemporal kills the dev server as a crash would and starts it again
// on its database file.
func (h *harness) restartTemporal(ctx context.Context) error {
	h.logf("chaos: killing the Temporal dev server")
	h.temporal.Kill()
	sleep(ctx, 2*time.Second)
	var err error
	for i := range 3 {
		if err = h.temporal.Restart(ctx); err == nil {
			break
		}
		h.logf("chaos: Temporal restart attempt %d failed: %v", i+1, err)
		sleep(ctx, 2*time.Second)
	}
	if err != nil {
		return fmt.Errorf("restart Temporal: %w", err)
	}
	h.mu.Lock()
	h.temporalRestarts++
	h.mu.Unlock()
	h.logf("chaos: Temporal dev server restarted on its database file")
	return nil
}

// dropConnections terminates every database connection of the application
// processes (pg_terminate_backend).
func (h *harness) dropConnections(ctx context.Context) {
	var n int64
	err := h.admin.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		  FROM pg_stat_activity WHERE application_name LIKE $1`, appNamePrefix+"%").Scan(&n)
	if err != nil {
		h.logf("chaos: could not drop connections: %v", err)
		return
	}
	h.mu.Lock()
	h.dropRounds++
	h.connsTerminated += n
	h.mu.Unlock()
}

func (h *harness) progress(ctx context.Context, start time.Time, planned int, stop <-chan struct{}) {
	scope := soakScope()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-time.After(h.o.ProgressEvery):
		}
		acked, _ := h.sendProgress(planned)
		kills, crashes, _ := h.fleet.counts()
		h.mu.Lock()
		restarts, drops, conns := h.temporalRestarts, h.dropRounds, h.connsTerminated
		h.mu.Unlock()
		b, err := ReadBacklog(ctx, h.st.Pool, scope)
		backlog := b.String()
		if err != nil {
			backlog = "backlog unreadable: " + err.Error()
		}
		h.logf("[%4ds] sent %d/%d acknowledged · %s · kills %d intake %d worker, %d unexpected exits, %d Temporal restart(s), %d conn drops (%d conns)",
			int(time.Since(start).Seconds()), acked, planned, backlog, kills[KindIntake], kills[KindWorker],
			crashes[KindIntake]+crashes[KindWorker], restarts, drops, conns)
	}
}

func (h *harness) summarize(sum *Summary, reports [2]simulator.Report, truthV, truthN simulator.Truth, final Backlog) {
	sum.Seed = h.o.Seed
	sum.EventKinds = map[string]int{}
	resources := map[string]bool{}
	for _, rep := range reports {
		sent := verify.SentFrom(rep)
		for _, id := range sent.Order {
			ev := sent.Events[id]
			sum.Events++
			sum.EventKinds[ev.ResourceKind]++
			resources[ev.ResourceKind+"/"+ev.ResourceID] = true
		}
	}
	sum.Resources = len(resources)
	// The versions simulator serves the email API: Plus keeps its Email.
	st := h.simV.Stats().Plus(h.simN.Stats())
	sum.Planned, sum.Duplicates, sum.Conflicts, sum.Delayed = st.Planned, st.Duplicates, st.Conflicts, st.Delayed
	sum.Reordered, sum.Dropped, sum.Attempts, sum.Acked, sum.Retries = st.Reordered, st.Dropped, st.Attempts, st.Acked, st.Retries
	sum.StatusCodes, sum.API, sum.Email = st.StatusCodes, st.API, st.Email
	sum.Unacked = len(truthV.UnackedEvents) + len(truthN.UnackedEvents)
	kills, crashes, exits := h.fleet.counts()
	sum.IntakeKills, sum.WorkerKills = kills[KindIntake], kills[KindWorker]
	sum.UnexpectedExits, sum.Exits = crashes[KindIntake]+crashes[KindWorker], exits
	h.mu.Lock()
	sum.TemporalRestarts, sum.ConnDropRounds, sum.ConnsTerminated = h.temporalRestarts, h.dropRounds, h.connsTerminated
	sum.Upgraded = h.upgraded
	sum.Outages, sum.OutageTime = h.outages, h.outageTime
	h.mu.Unlock()
	sum.DropsAfterSend = h.drops.dropped.Load()
	sum.EventWaits, sum.SendWaits = h.databaseWaits()
	sum.Relay = h.relay.Stats()
	sum.Team = h.team.Stats()
	sum.ForwardRoute, sum.Forward = forwardRoute, h.forward.Stats()
	sum.TeamHandler = h.teamHandler
	if h.teamHandler {
		if err := h.st.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(votes), 0) FROM `+soakteam.Table).Scan(&sum.TeamVotes); err != nil {
			h.logf("soak: could not read %s: %v", soakteam.Table, err)
		}
	}
	sum.Final = final
}
