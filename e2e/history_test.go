package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// A paid invoice's workflow, its confirmation email included, costs at
// most 10 history events on the real server (issue #17; 19 before): it
// completes as soon as it is drained (invoices rarely get a second event)
// and the email's first attempt is a local activity.
func TestAPaidInvoiceWithItsEmailCostsAtMostTenHistoryEvents(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	eventually(t, 30*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })

	id := keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "invoice", ID: inv.ID})
	eventually(t, 30*time.Second, "the invoice's workflow to complete", func() bool {
		d, err := w.client.DescribeWorkflow(w.ctx, id, "")
		return err == nil && d.RawResponse.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	h := history(t, w.client, id, "")
	var types []string
	for _, ev := range h.Events {
		types = append(types, ev.GetEventType().String())
	}
	require.LessOrEqual(t, len(h.Events), 10, "history of %s: %v", id, types)
	require.Contains(t, types, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED.String())
	require.Equal(t, 1, mailpitCount(t, mp))
}
