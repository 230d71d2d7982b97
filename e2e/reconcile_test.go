package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/worker"
	"github.com/hookinbox/hookinbox/workflows"
)

// noPassSchedules turns the reconcile, backfill, retention and GitHub
// recovery schedules off: these tests run the workflows themselves, at the
// moment they choose.
func noPassSchedules(c *config.Config) {
	c.ReconcileInterval, c.BackfillInterval, c.RetentionInterval, c.GitHubRecoveryInterval = 0, 0, 0, 0
}

// run executes a workflow on the stack's task queue and waits for its result.
func (s *stack) run(t *testing.T, id string, wf, in, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	r, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.ControlTaskQueue(s.cfg.TaskQueue)}, wf, in)
	require.NoError(t, err)
	require.NoError(t, r.Get(ctx, out))
}

func (w *simWorld) checkpoint(t *testing.T, name string) *keys.Checkpoint {
	t.Helper()
	cp, err := passes.GetCheckpoint(w.ctx, w.store.Pool, name)
	require.NoError(t, err)
	return cp
}

func (w *simWorld) scope() keys.Scope {
	return keys.Scope{Provider: "stripe", Endpoint: "stripe-sim", Account: w.account, Environment: "test"}
}

// inSync reports whether the subscription's projection holds the
// simulator's current state.
func (w *simWorld) inSync(t *testing.T, id string) bool {
	t.Helper()
	sub, ok := w.sim.Subscription(id)
	require.True(t, ok)
	cur := sub.Current()
	p, err := subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", id)
	if err != nil || p == nil {
		return false
	}
	if p.State.Status != cur.Status || p.State.CancelAtPeriodEnd != cur.CancelAtPeriodEnd ||
		p.State.CurrentPeriodEnd == nil || !p.State.CurrentPeriodEnd.Equal(cur.CurrentPeriodEnd) {
		return false
	}
	return !w.sim.Config().Versions || (p.Version != nil && *p.Version == cur.Version)
}

func TestBackfillRecoversADroppedInvoicePaidExactlyOnce(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, newStack(t, stackOptions{configure: noPassSchedules}), simulator.Config{})
	_, delivered, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, delivered)
	dropped, droppedEv, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account}) // its webhook never comes
	require.NoError(t, err)
	w.allDone(t, 1)
	require.EqualValues(t, 100, w.balance(t))

	in := workflows.BackfillFactsInput{PassSettings: workflows.PassSettings{Endpoint: "stripe-sim", PageSize: 1}}
	var first workflows.PassTotals
	w.run(t, "backfill-1-"+w.account, workflows.BackfillFactsWorkflow, in, &first)
	require.Equal(t, 1, first.Scopes)
	require.Equal(t, 2, first.Pages, "two events, one per page")
	require.Equal(t, 1, first.Inserted)
	require.Equal(t, 1, first.Duplicates)
	w.allDone(t, 2)
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, dropped.ID))
	require.EqualValues(t, 200, w.balance(t))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = $1 AND origin = 'backfill'`, droppedEv.ID))
	cp := w.checkpoint(t, activities.CheckpointName(activities.PassFacts, w.scope(), ""))
	require.False(t, cp.Unfinished())
	require.NotNil(t, cp.Watermark, "a full pass advances the watermark")

	// A second run lists the same window again (overlap): nothing is missing.
	var second workflows.PassTotals
	w.run(t, "backfill-2-"+w.account, workflows.BackfillFactsWorkflow, in, &second)
	require.Equal(t, 0, second.Inserted)
	require.Equal(t, 2, second.Duplicates)
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, 2, w.count(t, `SELECT count(*) FROM webhook_inbox`))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, dropped.ID))
	require.Equal(t, 2, w.count(t, `SELECT count(*) FROM credit_grants`))
	require.EqualValues(t, 200, w.balance(t))
	require.Equal(t, 0, w.count(t, `SELECT count(*) FROM inbox_quarantine`))
}

func TestReconcileCorrectsStaleProjectionsWhileWebhooksKeepArriving(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, newStack(t, stackOptions{configure: noPassSchedules}), simulator.Config{Versions: true})
	// quiet: its last change never came (a stale projection); missing: no
	// webhook ever came; hot: webhooks keep coming during the pass.
	quiet, quietCreated := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	missing, _ := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	hot, hotCreated := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	w.send(t, quietCreated, hotCreated)
	w.allDone(t, 2)
	_, err := w.sim.UpdateSubscription(quiet.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	require.False(t, w.inSync(t, quiet.ID))

	// Watch the hot projection: its version must never go down.
	stop := make(chan struct{})
	var regressions []string
	var watched sync.WaitGroup
	watched.Add(1)
	go func() {
		defer watched.Done()
		var last int64
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			p, err := subscriptions.Get(w.ctx, w.store.Pool, "stripe", w.account, "test", hot.ID)
			if err != nil || p == nil || p.Version == nil {
				continue
			}
			if *p.Version < last {
				regressions = append(regressions, fmt.Sprintf("v%d after v%d", *p.Version, last))
			}
			last = *p.Version
		}
	}()

	in := workflows.ReconcileSubscriptionsInput{PassSettings: workflows.PassSettings{Endpoint: "stripe-sim", PageSize: 1}, SignalAll: true}
	runID := "reconcile-hot-" + w.account
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	run, err := w.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runID, TaskQueue: workflows.ControlTaskQueue(w.cfg.TaskQueue)},
		workflows.ReconcileSubscriptionsWorkflow, in)
	require.NoError(t, err)
	sent := 2
	for i := range 6 {
		ev, err := w.sim.UpdateSubscription(hot.ID, func(s *simulator.SubscriptionState) {
			s.CancelAtPeriodEnd = i%2 == 0
			s.CurrentPeriodEnd = s.CurrentPeriodEnd.Add(time.Hour)
		})
		require.NoError(t, err)
		w.send(t, ev)
		sent++
		time.Sleep(150 * time.Millisecond)
	}
	var totals workflows.PassTotals
	require.NoError(t, run.Get(ctx, &totals))
	require.Equal(t, 3, totals.Seen)
	require.Equal(t, 3, totals.Signalled)

	w.allDone(t, sent)
	for _, id := range []string{quiet.ID, missing.ID, hot.ID} {
		eventually(t, 60*time.Second, "subscription "+id+" to match the provider", func() bool { return w.inSync(t, id) })
	}
	close(stop)
	watched.Wait()
	require.Empty(t, regressions, "the hot projection never went backwards")

	detectedBy := "reconcile: scheduled pass " + runID
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM reconcile_divergences
		WHERE resource_id = $1 AND field = 'cancel_at_period_end' AND local_value = 'false' AND provider_value = 'true'
		  AND corrected AND detected_by = $2`, quiet.ID, detectedBy))
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM reconcile_divergences
		WHERE resource_id = $1 AND field = 'missing' AND corrected AND detected_by = $2`, missing.ID, detectedBy))
	cp := w.checkpoint(t, activities.CheckpointName(activities.PassSubscriptions, w.scope(), ""))
	require.False(t, cp.Unfinished())
	require.EqualValues(t, 3, cp.Pages)
	require.EqualValues(t, 3, cp.Seen)
}

// listGate sits in front of the provider API: it counts subscription list
// calls and answers 429 (Retry-After: 1) to those beyond allow.
type listGate struct {
	mu      sync.Mutex
	allow   int
	served  int
	refused int
	// after records the starting_after of every list call served.
	after []string
}

func (g *listGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/subscriptions" {
			g.mu.Lock()
			if g.served >= g.allow {
				g.refused++
				g.mu.Unlock()
				rw.Header().Set("Retry-After", "1")
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(http.StatusTooManyRequests)
				_, _ = rw.Write([]byte(`{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`))
				return
			}
			g.served++
			g.after = append(g.after, r.URL.Query().Get("starting_after"))
			g.mu.Unlock()
		}
		h.ServeHTTP(rw, r)
	})
}

func (g *listGate) set(allow int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allow = allow
}

func (g *listGate) state() (served, refused int, after []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.served, g.refused, append([]string(nil), g.after...)
}

func TestReconcileRunKilledMidwayResumesFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{configure: noPassSchedules})
	w := newSimWorld(t, s, simulator.Config{})
	const n = 7 // four pages of two
	var ids []string
	for range n {
		sub, _ := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{}) // never sent
		ids = append(ids, sub.ID)
	}
	gate := &listGate{allow: 2}
	api := httptest.NewServer(gate.wrap(w.sim.Handler()))
	t.Cleanup(api.Close)
	// A new base URL takes its key again: a key never follows its URL
	// (migration 0021's trigger clears one that is not given anew).
	key := simulator.DefaultAPIKey
	_, err := w.ops().UpdateEndpoint(s.ctx, ops.Actor{Name: "e2e"}, "stripe-sim",
		ops.EndpointChange{APIBaseURL: &api.URL, APIKey: &key, AllowCustomAPIHost: true}, "the gated simulator")
	require.NoError(t, err)
	name := activities.CheckpointName(activities.PassSubscriptions, w.scope(), "")
	pagesDone := func(p int64) func() bool {
		return func() bool {
			cp, err := passes.GetCheckpoint(w.ctx, w.store.Pool, name)
			_, refused, _ := gate.state()
			return err == nil && cp.Pages == p && refused > 0
		}
	}

	in := workflows.ReconcileSubscriptionsInput{PassSettings: workflows.PassSettings{Endpoint: "stripe-sim", PageSize: 2, PageAttempts: 1000}}
	first := "reconcile-killed-1-" + w.account
	_, err = s.client.ExecuteWorkflow(s.ctx, client.StartWorkflowOptions{ID: first, TaskQueue: workflows.ControlTaskQueue(s.cfg.TaskQueue)},
		workflows.ReconcileSubscriptionsWorkflow, in)
	require.NoError(t, err)
	eventually(t, 60*time.Second, "two pages, then the provider refuses", pagesDone(2))

	// The worker dies and a new one starts: the same run carries on.
	s.stopWorker()
	gate.set(3)
	s.startWorker()
	eventually(t, 2*time.Minute, "the third page after the worker restart", pagesDone(3))
	cp := w.checkpoint(t, name)
	require.True(t, cp.Unfinished())
	require.Equal(t, first+"/", cp.Owner[:len(first)+1])
	cursorAtKill := cp.Cursor
	require.NotEmpty(t, cursorAtKill)

	// The run is killed; the next run takes the pass over at its checkpoint.
	require.NoError(t, s.client.TerminateWorkflow(s.ctx, first, "", "test: the run is killed mid-pass"))
	gate.set(100)
	var totals workflows.PassTotals
	w.run(t, "reconcile-killed-2-"+w.account, workflows.ReconcileSubscriptionsWorkflow, in, &totals)
	require.Equal(t, 1, totals.Resumed)
	require.Equal(t, 1, totals.Pages, "only the last page was listed by the new run")
	require.Equal(t, 1, totals.Scopes)

	served, _, after := gate.state()
	require.Equal(t, 4, served)
	require.Equal(t, []string{"", ids[n-2], ids[n-4], cursorAtKill}, after, "newest first; the pass never restarted at page 1")
	require.Equal(t, ids[1], cursorAtKill)
	done := w.checkpoint(t, name)
	require.False(t, done.Unfinished())
	require.EqualValues(t, 4, done.Pages)
	require.EqualValues(t, n, done.Seen)
	require.EqualValues(t, n, done.Divergences)
	for _, id := range ids {
		eventually(t, 60*time.Second, "subscription "+id+" to be reconciled", func() bool { return w.inSync(t, id) })
	}
	require.Equal(t, n, w.count(t, `SELECT count(*) FROM reconcile_divergences WHERE field = 'missing' AND corrected`))
}

// Failed and exhausted rows past the payload window are redacted too (they
// stay, replayable by key); pending rows never are.
func TestRetentionRunKeepsKeysInsideTheWindowAndRedactsOldPayloadsOnly(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, newStack(t, stackOptions{configure: noPassSchedules}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	const day = 24 * time.Hour
	// Age copies of the handled row: each a distinct event key.
	ages := map[string]struct {
		status string
		age    time.Duration
	}{
		"evt_fresh": {"done", time.Hour}, "evt_3d": {"done", 3 * day}, "evt_6d": {"ignored", 6 * day},
		"evt_8d": {"done", 8 * day}, "evt_9d": {"ignored", 9 * day}, "evt_failed": {"failed", 40 * day},
		"evt_exhausted": {"exhausted", 40 * day}, "evt_pending": {"pending", 40 * day},
	}
	for id, a := range ages {
		_, err := w.store.Pool.Exec(w.ctx, `
			INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug, workspace_id,
				event_type, resource_kind, resource_id, payload, body_sha256, status, received_at, processed_at)
			SELECT provider, source_account, environment, $1, endpoint_slug, workspace_id, event_type, resource_kind,
			       resource_id, payload, body_sha256, $2, now() - make_interval(secs => $3),
			       CASE WHEN $2 <> 'pending' THEN now() - make_interval(secs => $3) END
			  FROM webhook_inbox WHERE event_id = $4`, id, a.status, a.age.Seconds(), paid.ID)
		require.NoError(t, err)
	}
	_, err = w.store.Pool.Exec(w.ctx, `UPDATE credit_grants SET created_at = now() - interval '90 days'`)
	require.NoError(t, err)

	var res workflows.RetentionResult
	w.run(t, "retention-"+w.account, workflows.RetentionWorkflow, workflows.RetentionInput{
		PayloadRetention: 2 * day, DedupRetention: 7 * day, BatchSize: 1, BatchesPerActivity: 2,
	}, &res)
	require.EqualValues(t, 6, res.Redacted, "3d, 6d, 8d, 9d finished rows, and the failed and exhausted ones past the window")
	require.EqualValues(t, 2, res.DeletedRows, "8d and 9d finished rows")
	require.GreaterOrEqual(t, res.Batches, 6, "one row per statement")

	for id, want := range map[string]string{
		paid.ID: "payload", "evt_fresh": "payload", "evt_3d": "redacted", "evt_6d": "redacted", "evt_8d": "gone",
		"evt_9d": "gone", "evt_failed": "redacted", "evt_exhausted": "redacted", "evt_pending": "payload",
	} {
		var redacted bool
		err := w.store.Pool.QueryRow(w.ctx, `SELECT payload IS NULL FROM webhook_inbox WHERE event_id = $1`, id).Scan(&redacted)
		switch want {
		case "gone":
			require.Error(t, err, id)
		default:
			require.NoError(t, err, id)
			require.Equal(t, want == "redacted", redacted, id)
		}
	}
	// A sender retrying a key inside the window is still a duplicate.
	rep, err := w.sim.Send(w.ctx, w.targets, paid)
	require.NoError(t, err)
	require.Equal(t, simulator.OutcomeAcked, rep.Results[0].Outcome)
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = $1`, paid.ID))
	// Business records stay.
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, inv.ID))
	require.EqualValues(t, 100, w.balance(t))
}

func TestSchedulesAreAppliedIdempotentlyPausedAndTriggered(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{configure: func(c *config.Config) {
		noPassSchedules(c)
		c.ReconcileInterval = time.Hour
	}})
	w := newSimWorld(t, s, simulator.Config{})
	sub, _ := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{}) // only reconciliation learns of it
	id := starter.ScheduleID(starter.ScheduleReconcile, s.cfg.TaskQueue)
	t.Cleanup(func() { _, _ = starter.DeleteSchedule(context.Background(), s.client, id) })

	var st starter.ScheduleStatus
	eventually(t, 30*time.Second, "the worker to apply its schedules", func() bool {
		var err error
		st, err = starter.DescribeSchedule(s.ctx, s.client, starter.ScheduleReconcile, id)
		return err == nil && st.Exists
	})
	require.Equal(t, time.Hour, st.Every)
	require.Equal(t, "ReconcileSubscriptionsWorkflow", st.Workflow)
	require.False(t, st.Paused)
	off, err := starter.DescribeSchedule(s.ctx, s.client, starter.ScheduleBackfill, starter.ScheduleID(starter.ScheduleBackfill, s.cfg.TaskQueue))
	require.NoError(t, err)
	require.False(t, off.Exists, "a 0 interval disables the schedule")

	require.NoError(t, starter.PauseSchedule(s.ctx, s.client, id, "test: paused by an operator"))
	changes, err := worker.ApplySchedules(s.ctx, s.client, s.cfg)
	require.NoError(t, err)
	actions := map[string]string{}
	for _, c := range changes {
		actions[c.ID] = c.Action
	}
	require.Equal(t, worker.ScheduleUpdated, actions[id], "applied again: updated in place, never duplicated")
	require.Equal(t, worker.ScheduleAbsent, actions[starter.ScheduleID(starter.ScheduleBackfill, s.cfg.TaskQueue)])
	st, err = starter.DescribeSchedule(s.ctx, s.client, starter.ScheduleReconcile, id)
	require.NoError(t, err)
	require.True(t, st.Paused, "applying keeps an operator's pause")
	require.Equal(t, "test: paused by an operator", st.Note)
	require.NoError(t, starter.UnpauseSchedule(s.ctx, s.client, id, "test: resumed"))

	// Triggered by hand, the schedule runs a pass now.
	require.NoError(t, starter.TriggerSchedule(s.ctx, s.client, id))
	eventually(t, 60*time.Second, "the triggered pass to reconcile the subscription", func() bool { return w.inSync(t, sub.ID) })
	eventually(t, 30*time.Second, "the run to show as the last run", func() bool {
		st, err := starter.DescribeSchedule(s.ctx, s.client, starter.ScheduleReconcile, id)
		return err == nil && st.LastRun != nil && len(st.Running) == 0 && st.Actions >= 1
	})
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM reconcile_divergences WHERE resource_id = $1`, sub.ID))
}
