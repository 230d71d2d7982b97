package e2e

import (
	"context"
	"crypto/sha256"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
	hworker "github.com/hookinbox/hookinbox/worker"
	"github.com/hookinbox/hookinbox/workflows"
)

// A credit note that arrived before its invoice's event, and the invoice's
// invoice.paid recovered by the facts backfill (its webhook was dropped),
// loaded by one run of the invoice's workflow in id order: the credit note
// waits, the grant wakes it, and the same run handles it again before it
// completes (issue 36: the run completed with {"handled":3} and left the
// woken credit notes to a sweeper ring up to an hour away). The sweeper
// schedule is paused, so nothing but that run can apply the credit note.
func TestACreditNoteWokenByItsBackfilledGrantIsDoneInTheSameRun(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	s := newStack(t, stackOptions{noWorker: true, configure: func(c *config.Config) {
		withMailpit(mp)(c)
		noPassSchedules(c)
	}})
	w := newSimWorld(t, s, simulator.Config{})
	inv, _, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account, Amount: 4000}) // its webhook never comes
	require.NoError(t, err)
	cn, created, err := w.sim.CreateCreditNote(inv.ID, 1000) // 25 credits
	require.NoError(t, err)

	// The control and provider workers run (the sweeper paused, the
	// backfill runs); the resource workflows have no worker yet.
	log := testLogger()
	wc, err := starter.Dial(s.ctx, s.cfg, log)
	require.NoError(t, err)
	t.Cleanup(wc.Close)
	acts, err := app.NewActivities(s.cfg, s.workerStore, wc, s.metrics, log, s.business)
	require.NoError(t, err)
	require.NoError(t, hworker.Prepare(s.ctx, wc, s.cfg, log))
	require.NoError(t, starter.PauseSchedule(s.ctx, wc, starter.ScheduleID(starter.ScheduleSweeper, s.cfg.TaskQueue),
		"test: only the invoice's run may apply the woken credit note"))
	for _, wk := range []worker.Worker{hworker.NewControl(wc, acts.Control, s.cfg), hworker.NewProvider(wc, acts.Provider, s.cfg)} {
		require.NoError(t, wk.Start())
		t.Cleanup(wk.Stop)
	}

	w.send(t, created)
	in := workflows.BackfillFactsInput{PassSettings: workflows.PassSettings{Endpoint: "stripe-sim"}}
	var totals workflows.PassTotals
	w.run(t, "backfill-"+w.account, workflows.BackfillFactsWorkflow, in, &totals)
	require.Equal(t, 1, totals.Inserted, "the dropped invoice.paid")
	require.Equal(t, 1, totals.Duplicates, "the credit note was delivered")

	invoice := keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "invoice", ID: inv.ID}
	id := keys.ResourceWorkflowID(invoice)
	desc, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)
	runID := desc.RawResponse.WorkflowExecutionInfo.Execution.RunId

	// Now the resource worker: the run's first pass loads the credit note
	// and the backfilled invoice.paid, in that order.
	rw := hworker.New(wc, acts.Resource, s.cfg)
	require.NoError(t, rw.Start())
	t.Cleanup(rw.Stop)
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	var out workflows.ResourceResult
	require.NoError(t, s.client.GetWorkflow(ctx, id, runID).Get(ctx, &out))
	require.Equal(t, 3, out.Handled, "the credit note, the grant, the credit note again: one run")
	require.Equal(t, keys.StatusDone, s.statusOf(keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: created.ID}), "the credit note is done when the run that granted its invoice ends")
	require.EqualValues(t, 75, w.balance(t), "100 granted, 25 taken back")
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_adjustments WHERE reference = $1`, cn.ID))

	h := history(t, s.client, id, runID)
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflows.ResourceWorkflow)
	require.NoError(t, replayer.ReplayWorkflowHistory(nil, h))
	if os.Getenv("HOOKINBOX_RECORD_HISTORIES") != "" {
		record(t, id, runID, h)
	}
}

// A due row whose sweeper backoff is long (rung eight times: its next ring
// an hour away) and whose resource has no workflow running is rung by the
// next sweep all the same: the sweeper probes it, and the probe starts a
// run. The probe is not a ring: the row's sweep count is unchanged. A
// probe of a resource whose run is going starts nothing and writes nothing
// into that run's history. Before, the row waited out the hour.
func TestTheSweeperCannotStrandADueRowWhateverItsSweepCount(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{handlers: map[string]engine.Handler{
		credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
	}})
	s.stripeEndpoint("ep", "acct_strand", "ws_strand")
	k := keys.Event{Provider: "stripe", Account: "acct_strand", Environment: "test", EventID: "evt_strand"}
	body := []byte(`{"id":"evt_strand"}`)
	sum := sha256.Sum256(body)
	_, err := inbox.InsertInboxEvent(s.ctx, s.store.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws_strand",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_strand", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	// Its doorbells were rung eight times and lost with the runs that got
	// them; the last ring was 40 s ago.
	_, err = s.store.Pool.Exec(s.ctx, `UPDATE webhook_inbox SET next_attempt_at = now() - interval '1 hour', sweeps = 8,
		swept_at = now() - interval '40 seconds' WHERE event_id = 'evt_strand'`)
	require.NoError(t, err)

	eventually(t, time.Minute, "the stranded row handled", func() bool { return s.statusOf(k) == keys.StatusDone })
	require.EqualValues(t, 1, calls.Load())
	var sweeps int
	require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT sweeps FROM webhook_inbox WHERE event_id = 'evt_strand'`).Scan(&sweeps))
	require.Equal(t, 8, sweeps, "a probe is not a ring")

	// A probe of a resource with a run going: nothing started, nothing
	// written into the run's history.
	res := app.Resources(s.cfg, s.client)
	sub := keys.Resource{Provider: "stripe", Account: "acct_strand", Environment: "test", Kind: "subscription", ID: "sub_busy"}
	started, err := res.StartIfIdle(s.ctx, sub)
	require.NoError(t, err)
	require.True(t, started, "no run: started")
	id := keys.ResourceWorkflowID(sub)
	eventually(t, 30*time.Second, "the run idling", func() bool {
		d, err := s.client.DescribeWorkflow(s.ctx, id, "")
		return err == nil && d.RawResponse.WorkflowExecutionInfo.HistoryLength >= 6
	})
	before, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)
	started, err = res.StartIfIdle(s.ctx, sub)
	require.NoError(t, err)
	require.False(t, started, "a run is going")
	after, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, before.RawResponse.WorkflowExecutionInfo.Execution.RunId, after.RawResponse.WorkflowExecutionInfo.Execution.RunId)
	require.Equal(t, before.RawResponse.WorkflowExecutionInfo.HistoryLength, after.RawResponse.WorkflowExecutionInfo.HistoryLength)
}
