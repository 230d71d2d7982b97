package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers/github"
	"github.com/hookinbox/hookinbox/starter"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var labQueueSeq atomic.Int64

// labStack is what 'make run' gives the demo, in process: PostgreSQL, the
// Temporal dev server, the intake and the worker (which applies the
// schedules), each process as its own database role.
type labStack struct {
	cfg    config.Config
	store  *store.Store // the owner's, as the demo's
	client client.Client
	intake string
}

func newLabStack(t *testing.T, configure func(*config.Config)) *labStack {
	t.Helper()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.SecretsKey = testenv.SecretsKey()
	cfg.IntakeDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RoleIntake)
	cfg.WorkerDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RoleWorker)
	cfg.TemporalAddress = testenv.TemporalAddress(t)
	cfg.TaskQueue = fmt.Sprintf("lab-%d-%d", os.Getpid(), labQueueSeq.Add(1))
	cfg.RetryInitial, cfg.RetryMax, cfg.ActivityTimeout = 50*time.Millisecond, 500*time.Millisecond, 10*time.Second
	cfg.HandoffTimeout = 2 * time.Second
	cfg.EndpointCacheTTL = 200 * time.Millisecond
	// Only the pass under test: the others would act on nothing here.
	cfg.ReconcileInterval, cfg.BackfillInterval, cfg.RetentionInterval = 0, 0, 0
	if configure != nil {
		configure(&cfg)
	}
	ctx := context.Background()
	open := func(url string) *store.Store {
		st, err := store.Open(ctx, url, 8)
		require.NoError(t, err)
		st.Keys = testenv.Keys(t)
		t.Cleanup(st.Close)
		return st
	}
	s := &labStack{cfg: cfg, store: open(cfg.DatabaseURL), client: testenv.TemporalClient(t, cfg.TemporalAddress)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	wc, err := starter.Dial(ctx, cfg, log)
	require.NoError(t, err)
	m := metrics.New()
	acts, err := app.NewActivities(cfg, open(cfg.WorkerDB()), wc, m, log, builtin.MustBusiness())
	require.NoError(t, err)
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- app.RunWorker(wctx, cfg, wc, acts, m, "", log) }()

	ic, err := starter.DialLazy(cfg, log)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.intake = "http://" + ln.Addr().String()
	intakeSt := open(cfg.IntakeDB())
	in := app.NewIntake(cfg, intakeSt, ic, m, log, builtin.MustBusiness().Router(cfg, intakeSt, log))
	in.InternalListener = iln
	ictx, stopIntake := context.WithCancel(ctx)
	intakeDone := make(chan error, 1)
	go func() { intakeDone <- in.Run(ictx, "", ln, log) }()
	t.Cleanup(func() {
		stopIntake()
		<-intakeDone
		ic.Close()
		stopWorker()
		<-workerDone
		wc.Close()
	})
	return s
}

// waitSchedule waits until the worker has applied the schedule.
func (s *labStack) waitSchedule(t *testing.T, name string) {
	t.Helper()
	id := starter.ScheduleID(name, s.cfg.TaskQueue)
	require.Eventually(t, func() bool {
		st, err := starter.DescribeSchedule(context.Background(), s.client, name, id)
		return err == nil && st.Exists
	}, time.Minute, 200*time.Millisecond, "the worker applies %s", id)
}

// The demo's GitHub step against the real intake, worker, PostgreSQL and
// Temporal: of six deliveries two never reach the intake and one reaches it
// but GitHub logs a timeout. One triggered run of the recover-github
// schedule asks GitHub for the two the inbox lacks, not the timed-out one,
// and every delivery is then in the inbox exactly once.
func TestDemoGitHubRecoversTheDroppedDeliveriesOnce(t *testing.T) {
	t.Parallel()
	s := newLabStack(t, nil)
	s.waitSchedule(t, starter.ScheduleGitHubRecovery)
	run := newDemoRun()
	g := newGitHubDemo(run)
	require.NoError(t, github.Provider{}.CheckSecret(g.secret), "the demo's secret passes the operator's check")
	sim := simulator.New(simulator.Config{Seed: 16, APIKey: run.apiKey})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	secret := simulator.StandardSecret("hookinbox-demo-forward-" + run.id)
	rcv, err := newForwardReceiver(secret)
	require.NoError(t, err)
	rsrv := httptest.NewServer(rcv)
	t.Cleanup(rsrv.Close)
	g.forward = &forwardDemo{route: "demo-github-push", url: rsrv.URL + "/hooks", secret: secret, receiver: rcv, reload: time.Second}

	var out bytes.Buffer
	ctx := context.Background()
	r, err := demoGitHub(ctx, &out, s.store, s.client, s.cfg.TaskQueue, s.cfg.GitHubRecoveryAttempts, sim, g, gitHubDemoPlan, api.URL, s.intake, 2*time.Minute)
	require.NoError(t, err, out.String())
	require.Len(t, r.Sent, 6)
	require.Equal(t, 2, r.count(GitHubDropped))
	require.Equal(t, 1, r.count(GitHubLost))
	require.Equal(t, 4, r.Before.present(), "the two dropped are missing; the timed-out one is there")
	require.Len(t, r.Passes, 1, out.String())
	require.True(t, strings.HasPrefix(r.Passes[0].WorkflowID, starter.ScheduleID(starter.ScheduleGitHubRecovery, s.cfg.TaskQueue)+"-run"),
		"the schedule's own run, not the fallback: %s", r.Passes[0].WorkflowID)
	require.Equal(t, 2, r.Passes[0].Totals.Redelivered)
	require.Equal(t, 2, r.Asked, "GitHub asked for the two dropped deliveries only")
	require.Equal(t, 6, r.After.present())
	require.Empty(t, r.Problems)
	require.True(t, r.OK())
	require.Equal(t, map[string]int{"done": 6}, r.After.Statuses, "each forwarded to the team's service")
	require.Len(t, r.Forwarded, 6, "the service applied each delivery once")
	require.Zero(t, r.ForwardUnverified)
	require.GreaterOrEqual(t, r.ForwardRequests, 6)

	var linked string
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT DISTINCT workspace_id FROM webhook_inbox WHERE endpoint_slug = $1`, g.slug).Scan(&linked))
	require.Equal(t, run.workspace, linked, "the deliveries belong to the run's workspace (erased with it)")

	var table bytes.Buffer
	require.NoError(t, r.print(&table))
	t.Logf("the step's output:\n%s\n%s", out.String(), table.String())
	for _, want := range []string{
		"6 push, sent once each (GitHub never retries)", "4 in the inbox before the recovery",
		"2, logged \"failed to connect to host\"", "1, logged \"timed out\"",
		"2 asked, 1 pass", "6 in the inbox after, each exactly once", "recovered by " + r.Passes[0].WorkflowID,
		"6 done (forwarded: stored once, sent on once)",
		"6 applied by the team's service (route demo-github-push), one per delivery",
	} {
		require.Contains(t, table.String(), want)
	}
	require.NotContains(t, table.String(), "NOT")

	var look bytes.Buffer
	gitHubWhereToLook(&look, "http://ui", "default", g, r, "http://console")
	require.Contains(t, look.String(), "http://ui/namespaces/default/workflows/"+r.Passes[0].WorkflowID)
	require.Contains(t, look.String(), "hookinbox inbox list --provider github --account "+g.owner)
}

// With the schedule turned off (HOOKINBOX_GITHUB_RECOVERY_INTERVAL=0) the
// step runs an operator pass over its endpoint; a redelivery the API
// refuses (500) is asked again by the next pass, never twice by one.
func TestDemoGitHubFallsBackToAnEndpointPassAndAsksAgain(t *testing.T) {
	t.Parallel()
	s := newLabStack(t, func(c *config.Config) { c.GitHubRecoveryInterval = 0 })
	s.waitSchedule(t, starter.ScheduleSweeper)
	run := newDemoRun()
	run.id += "f"
	run.workspace += "f"
	g := newGitHubDemo(run)
	sim := simulator.New(simulator.Config{Seed: 17, APIKey: run.apiKey})
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	// The first redelivery request fails; the page is retried and skips it
	// (claimed by this pass), so only the next pass brings it.
	sim.InjectAPIFault(simulator.Fault{Path: "/" + g.logPath() + "/deliveries/", Status: 500})

	var out bytes.Buffer
	r, err := demoGitHub(context.Background(), &out, s.store, s.client, s.cfg.TaskQueue, 3, sim, g,
		[]GitHubFate{GitHubDropped, GitHubOK, GitHubDropped}, api.URL, s.intake, 2*time.Minute)
	require.NoError(t, err, out.String())
	t.Logf("the step's output:\n%s", out.String())
	require.Contains(t, out.String(), "is off (HOOKINBOX_GITHUB_RECOVERY_INTERVAL=0): running an operator pass over this demo's endpoint instead")
	require.Len(t, r.Passes, 2, out.String())
	for _, p := range r.Passes {
		require.Equal(t, starter.ScheduleID(starter.ScheduleGitHubRecovery, s.cfg.TaskQueue)+"-endpoint-"+g.slug, p.WorkflowID)
	}
	require.Contains(t, out.String(), "2 of 3 in the inbox after pass 1: the next pass asks again")
	require.Equal(t, 1, r.Before.present())
	require.Equal(t, 3, r.After.present())
	require.Equal(t, 2, r.Asked)
	require.True(t, r.OK(), "%v", r.Problems)
}

// check flags a delivery in the inbox twice, a missing one, and a
// redelivery of one the inbox had.
func TestGitHubResultCheck(t *testing.T) {
	t.Parallel()
	d := func(guid string, f GitHubFate) gitHubSent {
		return gitHubSent{Delivery: simulator.GitHubDelivery{GUID: guid}, Fate: f}
	}
	r := gitHubResult{Sent: []gitHubSent{d("a", GitHubOK), d("b", GitHubDropped), d("c", GitHubLost)}}
	r.After.Rows = map[string]int{"a": 1, "b": 1, "c": 1}
	r.check(map[string]int{"b": 1})
	require.True(t, r.OK(), "%v", r.Problems)

	r.After.Rows = map[string]int{"a": 2, "c": 1}
	r.check(map[string]int{"c": 1})
	require.False(t, r.OK())
	require.Len(t, r.Problems, 4, "%v", r.Problems) // a twice, b missing, b never redelivered, c redelivered
	require.Equal(t, "NOT each exactly once", onceText(r))
}
