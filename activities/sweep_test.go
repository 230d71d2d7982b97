package activities_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// countingBell records every ring, by resource.
type countingBell struct {
	mu    sync.Mutex
	rings map[keys.Resource]int
}

func (b *countingBell) Ring(_ context.Context, r keys.Resource, _, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rings[r]++
	return nil
}

func (b *countingBell) counts() (resources, rings int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.rings {
		rings += n
	}
	return len(b.rings), rings
}

// staleRows puts n pending rows on n resources in the inbox, due an hour
// ago: what a hand-off queue that overflowed leaves to the sweeper.
func staleRows(t *testing.T, st *store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		body := fmt.Appendf(nil, `{"id":"evt_%d"}`, i)
		sum := sha256.Sum256(body)
		_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{
			Key:          keys.Event{Provider: "stripe", Account: account, Environment: "test", EventID: fmt.Sprintf("evt_%d", i)},
			EndpointSlug: "sim", WorkspaceID: "ws", EventType: "invoice.paid", ResourceKind: "invoice",
			ResourceID: fmt.Sprintf("in_%d", i), Payload: body, BodySHA256: sum[:],
		})
		require.NoError(t, err)
	}
	_, err := st.Pool.Exec(ctx, `UPDATE webhook_inbox SET next_attempt_at = now() - interval '1 hour'`)
	require.NoError(t, err)
}

// TestSweepInboxPagesWithinItsBudget: with a budget, one sweep rings every
// stale resource, a page after another, each once and with several rings
// in flight; without one it rings one page, as before (the rest waits for
// the next run).
func TestSweepInboxPagesWithinItsBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		budget    time.Duration
		pace      bool
		wantRung  int
		wantStale int
	}{
		{name: "budget, paced", budget: time.Minute, pace: true, wantRung: 25, wantStale: 25},
		{name: "budget, one at a time", budget: time.Minute, wantRung: 25, wantStale: 25},
		{name: "no budget: one page", wantRung: 10, wantStale: 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := testenv.Store(t)
			staleRows(t, st, 25)
			bell := &countingBell{rings: map[keys.Resource]int{}}
			a := &activities.ControlActivities{Sweeps: storeports.Sweeps{Store: st}, Doorbell: bell}
			if tt.pace {
				a.Pace = starter.NewPacer(4, 4, time.Minute)
			}
			res := sweepInbox(t, a, activities.SweepInput{OlderThan: time.Minute, Limit: 10, Budget: tt.budget})
			require.Equal(t, activities.SweepResult{Stale: tt.wantStale, Signalled: tt.wantRung}, res)
			resources, rings := bell.counts()
			require.Equal(t, tt.wantRung, resources)
			require.Equal(t, tt.wantRung, rings, "each resource rung once")
		})
	}
}

// TestSweepInboxHoldsBackWhileTemporalHasABacklog: while Temporal holds
// MaxBacklog workflow tasks or more, the sweep rings nothing (the rows'
// doorbells are mostly there already); when the backlog drains within the
// budget it rings; without a budget it ends held back, its rows left for
// the next sweep; and a backlog it cannot read does not stop it.
// Not parallel: it sets the package's poll interval.
func TestSweepInboxHoldsBackWhileTemporalHasABacklog(t *testing.T) {
	activities.SetBacklogPoll(10 * time.Millisecond)
	for _, tt := range []struct {
		name     string
		backlogs []int64 // answers in turn; the last repeats
		fail     bool
		budget   time.Duration
		wantRung int
		wantHeld bool
	}{
		{name: "backlog, no budget: held back", backlogs: []int64{5000}, wantHeld: true},
		{name: "backlog drains within the budget", backlogs: []int64{5000, 3000, 999}, budget: time.Minute, wantRung: 25},
		{name: "backlog under the bound", backlogs: []int64{10}, budget: time.Minute, wantRung: 25},
		{name: "backlog unreadable", fail: true, budget: time.Minute, wantRung: 25},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := testenv.Store(t)
			staleRows(t, st, 25)
			bell := &countingBell{rings: map[keys.Resource]int{}}
			var mu sync.Mutex
			asked := 0
			a := &activities.ControlActivities{Sweeps: storeports.Sweeps{Store: st}, Doorbell: bell,
				Backlog: func(context.Context) (int64, error) {
					mu.Lock()
					defer mu.Unlock()
					if tt.fail {
						return 0, fmt.Errorf("no statistics")
					}
					n := tt.backlogs[min(asked, len(tt.backlogs)-1)]
					asked++
					return n, nil
				}}
			res := sweepInbox(t, a, activities.SweepInput{OlderThan: time.Minute, Limit: 10,
				Budget: tt.budget, MaxBacklog: 1000})
			require.Equal(t, tt.wantRung, res.Signalled)
			require.Equal(t, tt.wantHeld, res.HeldBack)
			_, rings := bell.counts()
			require.Equal(t, tt.wantRung, rings)
			var swept int
			require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_inbox WHERE sweeps > 0`).Scan(&swept))
			require.Equal(t, tt.wantRung, swept, "a held-back sweep marks no row rung")
		})
	}
}

// A due row whose sweeper backoff is long (rung five times: its next ring
// an hour away) is not stranded when its workflow is gone: the sweep
// probes its resource and starts a run, whatever the sweep count; a
// resource whose workflow is running keeps its backoff and is not rung
// (a busy engine already holds its rows). Before, neither was rung.
func TestASweepStartsTheWorkflowOfARowTheBackoffHoldsOnlyWhenNoneRuns(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	staleRows(t, st, 3)
	ctx := context.Background()
	// in_0 is fresh (the ring's); in_1 and in_2 were rung five times, the
	// last two minutes ago.
	_, err := st.Pool.Exec(ctx, `UPDATE webhook_inbox SET sweeps = 5, swept_at = now() - interval '2 minutes' WHERE resource_id <> 'in_0'`)
	require.NoError(t, err)
	running := keys.Resource{Provider: "stripe", Account: account, Environment: "test", Kind: "invoice", ID: "in_1"}
	gone := running
	gone.ID = "in_2"
	bell := &countingBell{rings: map[keys.Resource]int{}}
	var mu sync.Mutex
	var probed, started []keys.Resource
	a := &activities.ControlActivities{Sweeps: storeports.Sweeps{Store: st}, Doorbell: bell,
		StartIfIdle: func(_ context.Context, r keys.Resource) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			probed = append(probed, r)
			if r == running {
				return false, nil
			}
			started = append(started, r)
			return true, nil
		}}
	res := sweepInbox(t, a, activities.SweepInput{OlderThan: time.Minute, Limit: 10})
	require.Equal(t, activities.SweepResult{Stale: 1, Signalled: 1, Probed: 2, Started: 1}, res)
	require.ElementsMatch(t, []keys.Resource{running, gone}, probed)
	require.Equal(t, []keys.Resource{gone}, started, "only the resource without a running workflow")
	_, rings := bell.counts()
	require.Equal(t, 1, rings, "the fresh row's ring; no signal to the running workflow")
	rows, err := st.Pool.Query(ctx, `SELECT sweeps FROM webhook_inbox ORDER BY resource_id`)
	require.NoError(t, err)
	sweeps, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Equal(t, []int{1, 5, 5}, sweeps, "probes are not rings")

	// Looked at just now: the next sweep leaves them for ProbeEvery.
	res = sweepInbox(t, a, activities.SweepInput{OlderThan: time.Minute, Limit: 10})
	require.Zero(t, res.Probed)
}

// fakeSweeps is a ports.Sweeps with one stale resource and a trend sample
// that fails when told to.
type fakeSweeps struct {
	samples    int
	sampleFail bool
}

func (f *fakeSweeps) StalePending(context.Context, time.Duration, int) ([]keys.Resource, error) {
	return []keys.Resource{{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}}, nil
}

func (f *fakeSweeps) HeldPending(context.Context, time.Duration, time.Duration, int) ([]keys.Resource, error) {
	return nil, nil
}

func (f *fakeSweeps) StaleOutbox(context.Context, time.Duration, int) ([]string, error) {
	return nil, nil
}

func (f *fakeSweeps) SampleTrends(context.Context) error {
	f.samples++
	if f.sampleFail {
		return errors.New("console_trends: permission denied")
	}
	return nil
}

// Each inbox sweep samples the console's trends once; a sample that fails
// does not fail the sweep nor stop its doorbells.
func TestTheInboxSweepSamplesTheTrendsAndRingsWhenTheSampleFails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		fail bool
	}{{"sample ok", false}, {"sample fails", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sw := &fakeSweeps{sampleFail: tt.fail}
			sig := &signals{}
			ctl := &activities.ControlActivities{Sweeps: sw, Doorbell: sig, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			res := sweepInbox(t, ctl, activities.SweepInput{OlderThan: time.Minute, Limit: 10})
			require.Equal(t, activities.SweepResult{Stale: 1, Signalled: 1}, res)
			require.Equal(t, 1, sw.samples)
			require.Equal(t, []string{keys.SignalEvent + " in_1"}, sig.got)
		})
	}
}

// A sweep held back by Temporal's backlog for its whole budget samples the
// console's trends again as it waits, so the charts keep their minutes
// while a backlog is what an operator looks at; one that does not wait
// samples once. Not parallel: it sets the package's poll intervals.
func TestAHeldBackSweepKeepsSamplingTheTrends(t *testing.T) {
	activities.SetBacklogPoll(10 * time.Millisecond)
	activities.SetTrendsResample(50 * time.Millisecond)
	t.Cleanup(func() { activities.SetTrendsResample(30 * time.Second) })
	for _, tt := range []struct {
		name        string
		budget      time.Duration
		wantSamples func(int) bool
	}{
		{name: "held back for a 300 ms budget", budget: 300 * time.Millisecond, wantSamples: func(n int) bool { return n >= 2 }},
		{name: "held back, no budget", wantSamples: func(n int) bool { return n == 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sw := &fakeSweeps{}
			ctl := &activities.ControlActivities{Sweeps: sw, Doorbell: &signals{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Backlog: func(context.Context) (int64, error) { return 5000, nil }}
			res := sweepInbox(t, ctl, activities.SweepInput{OlderThan: time.Minute, Limit: 10,
				Budget: tt.budget, MaxBacklog: 1000})
			require.True(t, res.HeldBack)
			require.True(t, tt.wantSamples(sw.samples), "samples: %d", sw.samples)
		})
	}
}

// sweepInbox runs ctl's SweepInbox with in in Temporal's activity test
// environment and returns its result.
func sweepInbox(t *testing.T, ctl *activities.ControlActivities, in activities.SweepInput) activities.SweepResult {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(ctl)
	v, err := env.ExecuteActivity(ctl.SweepInbox, in)
	require.NoError(t, err)
	var res activities.SweepResult
	require.NoError(t, v.Get(&res))
	return res
}
