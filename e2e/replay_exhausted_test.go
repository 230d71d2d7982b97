package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// An invoice.paid whose provider API is down exhausts its budget and stays
// visible; once the provider recovers, an operator's replay takes it
// through the same path and it grants once, and a second replay of the
// done event (forced) grants nothing more.
func TestReplayOfAnExhaustedEventAfterTheProviderRecovers(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	// Down for exactly the budget's attempts: then it recovers.
	w.sim.InjectAPIFault(simulator.Fault{Path: "/v1/invoices/" + inv.ID, Status: 503, Times: w.cfg.RetryBudget})
	w.send(t, paid)
	k := keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: paid.ID}
	eventually(t, 60*time.Second, "the event to be exhausted", func() bool { return w.statusOf(k) == keys.StatusExhausted })
	ev, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, k)
	require.NoError(t, err)
	require.Equal(t, w.cfg.RetryBudget, ev.Attempts)
	require.Contains(t, ev.LastError, "503")
	require.EqualValues(t, 0, w.balance(t))

	// The provider has recovered; the operator replays (audited) and rings.
	replay := func(force bool) {
		res, err := inbox.ReplayInboxEvent(w.ctx, w.store, inbox.ReplayRequest{Key: k, Actor: "test", Reason: "provider recovered", Force: force})
		require.NoError(t, err)
		require.NoError(t, app.Resources(w.cfg, w.client).Ring(w.ctx, res.Resource, keys.SignalEvent, "replay"))
	}
	replay(false)
	eventually(t, 60*time.Second, "the replayed event to be done", func() bool { return w.statusOf(k) == keys.StatusDone })
	require.EqualValues(t, 100, w.balance(t))

	replay(true) // deliberate reprocessing of a done event
	eventually(t, 60*time.Second, "the forced replay to complete", func() bool { return w.statusOf(k) == keys.StatusDone })
	require.EqualValues(t, 100, w.balance(t), "the business key holds: no second grant")
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants`))
	require.Equal(t, 2, w.count(t, `SELECT count(*) FROM operator_actions WHERE action = 'replay'`))
}
