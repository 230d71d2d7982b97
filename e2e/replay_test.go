package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/workflows"
)

// TestRealHistoriesReplayDeterministically runs a scenario that exercises
// every path of ResourceWorkflow on the real server (events, a second event
// for one invoice, outbox sends, a reconcile signal, continue-as-new), then
// replays each recorded history against the current workflow code: any
// non-determinism fails here. With HOOKINBOX_RECORD_HISTORIES=1 it also
// writes the histories to workflows/testdata, whose replay test then guards
// running workflows against incompatible changes.
func TestRealHistoriesReplayDeterministically(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: func(c *config.Config) {
		withMailpit(mp)(c)
		c.MaxEventsPerRun = 3
	}}), simulator.Config{})
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	upd, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = true })
	require.NoError(t, err)
	canceled, err := w.sim.CancelSubscription(sub.ID, false)
	require.NoError(t, err)
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account, Subscription: sub.ID})
	require.NoError(t, err)
	again, err := w.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	w.send(t, canceled, created, upd, paid, again)
	w.allDone(t, 5)
	subRes := keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "subscription", ID: sub.ID}
	require.NoError(t, app.Resources(w.cfg, w.client).Ring(w.ctx, subRes, keys.SignalReconcile, "replay test"))
	eventually(t, 30*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	time.Sleep(2 * time.Second) // let the reconcile activity finish

	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflows.ResourceWorkflow)
	resp, err := w.client.ListWorkflow(w.ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: `SourceAccount = "` + w.account + `"`,
	})
	require.NoError(t, err)
	require.NotEmpty(t, resp.Executions)
	for _, e := range resp.Executions {
		h := history(t, w.client, e.Execution.WorkflowId, e.Execution.RunId)
		require.NoError(t, replayer.ReplayWorkflowHistory(nil, h), "replay %s/%s", e.Execution.WorkflowId, e.Execution.RunId)
		if os.Getenv("HOOKINBOX_RECORD_HISTORIES") != "" {
			record(t, e.Execution.WorkflowId, e.Execution.RunId, h)
		}
	}
}

func history(t *testing.T, c client.Client, id, run string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, run, false, 0)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	return h
}

func record(t *testing.T, id, run string, h *historypb.History) {
	t.Helper()
	r, err := keys.ResourceFromWorkflowID(id)
	require.NoError(t, err)
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	name := strings.Join([]string{"resource", r.Kind, run[:8]}, "-") + ".json"
	require.NoError(t, os.WriteFile(filepath.Join(testenv.Root(t), "workflows", "testdata", name), b, 0o644))
}
