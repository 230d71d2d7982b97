package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
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
	desc, err := s.client.DescribeWorkflowExecution(s.ctx, id, "")
	require.NoError(t, err)
	runID := desc.WorkflowExecutionInfo.Execution.RunId

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
