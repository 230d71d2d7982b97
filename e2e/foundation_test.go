package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestWebhookReachesItsResourceWorkflow(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{handlers: map[string]engine.Handler{credits.NameGrants: nil}})
	s.stripeEndpoint("ep", "acct_reach", "ws_reach")

	// With no handler registered for invoice.paid in this worker, its
	// workflow looks at the event and leaves it pending with the reason
	// (never ignored: a worker with the handler must get it).
	require.Equal(t, http.StatusOK, s.sendStripe("ep", "evt_r1", "invoice.paid", "invoice", "in_r1"))
	k := keys.Event{Provider: "stripe", Account: "acct_reach", Environment: "test", EventID: "evt_r1"}
	eventually(t, 30*time.Second, "the workflow to leave the event pending with the reason", func() bool {
		ev, err := inbox.GetInboxEvent(s.ctx, s.store.Pool, k)
		return err == nil && strings.Contains(ev.LastError, "no handler registered")
	})
	ev, err := inbox.GetInboxEvent(s.ctx, s.store.Pool, k)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, ev.Status)
	require.Zero(t, ev.Attempts)
	require.True(t, ev.NextAttemptAt.After(time.Now()), "due again later, not looped on")

	// The workflow is findable by its ID and its search attributes.
	r := keys.Resource{Provider: "stripe", Account: "acct_reach", Environment: "test", Kind: "invoice", ID: "in_r1"}
	id := keys.ResourceWorkflowID(r)
	require.Equal(t, "resource/stripe/acct_reach/test/invoice/in_r1", id)
	desc, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, "ResourceWorkflow", desc.RawResponse.WorkflowExecutionInfo.Type.Name)
	eventually(t, 30*time.Second, "visibility to index the search attributes", func() bool {
		resp, err := s.client.ListWorkflow(s.ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: `SourceAccount = "acct_reach" AND ResourceKind = "invoice" AND ResourceID = "in_r1" AND Provider = "stripe" AND Environment = "test"`,
		})
		return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == id
	})
}

func TestRegisteredHandlerRunsOncePerEvent(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{handlers: map[string]engine.Handler{
		credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
	}})
	s.stripeEndpoint("ep", "acct_h", "ws_h")
	for i := range 5 {
		id := fmt.Sprintf("evt_h%d", i)
		require.Equal(t, http.StatusOK, s.sendStripe("ep", id, "invoice.paid", "invoice", "in_h"))
		require.Equal(t, http.StatusOK, s.sendStripe("ep", id, "invoice.paid", "invoice", "in_h")) // duplicate delivery
	}
	eventually(t, 30*time.Second, "5 events done", func() bool { return s.countStatus(keys.StatusDone) == 5 })
	var balance int
	require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT credits_balance FROM workspaces WHERE id = 'ws_h'`).Scan(&balance))
	require.Equal(t, 5, balance, "one effect per accepted event, none for duplicate deliveries")
	require.EqualValues(t, 5, calls.Load())

	// The worker exports its own metrics and the Temporal SDK's, with
	// bounded labels only (no event or resource ids).
	fams, err := s.metrics.Registry.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				require.NotContains(t, l.GetValue(), "evt_h", "metric %s carries an event id", f.GetName())
				require.NotContains(t, l.GetValue(), "in_h", "metric %s carries a resource id", f.GetName())
			}
		}
	}
	for _, want := range []string{"hookinbox_intake_requests_total", "hookinbox_intake_ack_seconds", "hookinbox_events_handled_total",
		"hookinbox_inbox_pending", "hookinbox_inbox_oldest_pending_age_seconds", "hookinbox_outbox_rows", "hookinbox_quarantine_open"} {
		require.True(t, names[want], "missing metric %s", want)
	}
	sdk := 0
	for n := range names {
		if strings.HasPrefix(n, "temporal_") {
			sdk++
		}
	}
	require.Positive(t, sdk, "Temporal SDK metrics are exported")

	// Scraped as Prometheus does: on the intake's internal listener, never
	// on its public port.
	// The intake counts a delivery just after answering it: the last
	// one's count may land a moment after its answer.
	const accepted = `hookinbox_intake_requests_total{endpoint="ep",outcome="accepted",provider="stripe"} 5`
	eventually(t, 5*time.Second, "the five accepted deliveries counted", func() bool {
		return strings.Contains(scrape(t, s.internalURL+"/metrics", http.StatusOK), accepted)
	})
	require.Contains(t, scrape(t, s.internalURL+"/readyz", http.StatusOK), `"database":"ok"`)
	scrape(t, s.url+"/metrics", http.StatusNotFound)
	scrape(t, s.url+"/readyz", http.StatusNotFound)
}

func f3TemporalDownDuringIntake(t *testing.T) {
	srv := testenv.NewTemporal(t)
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{temporalAddr: srv.Address, handlers: map[string]engine.Handler{
		credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
	}})
	s.stripeEndpoint("ep", "acct_down", "ws_down")

	srv.Kill()
	for i := range 6 {
		code := s.sendStripe("ep", fmt.Sprintf("evt_down%d", i), "invoice.paid", "invoice", fmt.Sprintf("in_down%d", i%3))
		require.Equal(t, http.StatusOK, code, "the intake accepts while Temporal is down")
	}
	require.Equal(t, 6, s.countStatus(keys.StatusPending))
	eventually(t, 30*time.Second, "failed hand-offs to be counted", func() bool {
		return counterValue(t, s, "hookinbox_handoff_signals_total", "failed") >= 1
	})

	require.NoError(t, srv.Restart(context.Background()))
	// The worker reconnects; the sweeper schedule re-signals the stale rows.
	eventually(t, 90*time.Second, "all 6 events done after Temporal returns", func() bool {
		return s.countStatus(keys.StatusDone) == 6
	})
	require.EqualValues(t, 6, calls.Load())
	require.GreaterOrEqual(t, counterValue(t, s, "hookinbox_sweeper_resignals_total", ""), 1.0)
}

func f3CrashAfterIntakeCommit(t *testing.T) {
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{handlers: map[string]engine.Handler{
		credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
	}})
	s.stripeEndpoint("ep", "acct_crash", "ws_crash")
	// F3: the intake committed and died before ringing the doorbell.
	ev := &inbox.InboxEvent{
		Key:          keys.Event{Provider: "stripe", Account: "acct_crash", Environment: "test", EventID: "evt_orphan"},
		EndpointSlug: "ep", WorkspaceID: "ws_crash", EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_orphan",
		Payload: []byte(`{}`), BodySHA256: []byte{0},
	}
	_, err := inbox.InsertInboxEvent(s.ctx, s.store.Pool, ev)
	require.NoError(t, err)
	eventually(t, 60*time.Second, "the orphaned row to be processed", func() bool { return s.statusOf(ev.Key) == keys.StatusDone })
	require.EqualValues(t, 1, calls.Load())
}

func TestSignalsAcrossContinueAsNewAreNotLost(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{
		configure: func(c *config.Config) { c.MaxEventsPerRun = 3 },
		handlers: map[string]engine.Handler{
			credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
		},
	})
	s.stripeEndpoint("ep", "acct_can", "ws_can")
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, http.StatusOK, s.sendStripe("ep", fmt.Sprintf("evt_can%02d", i), "invoice.paid", "invoice", "in_hot"))
		}()
	}
	wg.Wait()
	eventually(t, 90*time.Second, "all events of the hot resource done", func() bool { return s.countStatus(keys.StatusDone) == n })
	require.EqualValues(t, n, calls.Load())

	// The resource's workflow continued-as-new several times on the way.
	id := keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", Account: "acct_can", Environment: "test", Kind: "invoice", ID: "in_hot"})
	eventually(t, 30*time.Second, "runs to be listed", func() bool {
		resp, err := s.client.ListWorkflow(s.ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf(`WorkflowId = %q`, id),
		})
		if err != nil {
			return false
		}
		continued := 0
		for _, e := range resp.Executions {
			if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				continued++
			}
		}
		return continued >= 2
	})
}

func TestIdleWorkflowCompletesAndNextEventStartsANewRun(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var s *stack
	s = newStack(t, stackOptions{
		configure: func(c *config.Config) { c.IdleTimeout = time.Second },
		handlers: map[string]engine.Handler{
			credits.NameGrants: countingHandler(func() *store.Store { return s.workerStore }, &calls),
		},
	})
	s.stripeEndpoint("ep", "acct_idle", "ws_idle")
	id := keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", Account: "acct_idle", Environment: "test", Kind: "invoice", ID: "in_idle"})

	require.Equal(t, http.StatusOK, s.sendStripe("ep", "evt_idle1", "invoice.paid", "invoice", "in_idle"))
	eventually(t, 30*time.Second, "the workflow to complete after its idle period", func() bool {
		d, err := s.client.DescribeWorkflow(s.ctx, id, "")
		return err == nil && d.RawResponse.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	first, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, s.sendStripe("ep", "evt_idle2", "invoice.paid", "invoice", "in_idle"))
	eventually(t, 30*time.Second, "the second event done", func() bool { return s.countStatus(keys.StatusDone) == 2 })
	second, err := s.client.DescribeWorkflow(s.ctx, id, "")
	require.NoError(t, err)
	require.NotEqual(t, first.RawResponse.WorkflowExecutionInfo.Execution.RunId, second.RawResponse.WorkflowExecutionInfo.Execution.RunId)
}
