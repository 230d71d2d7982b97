package e2e

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// newConnectWorld is a simWorld whose Stripe endpoint is a Connect
// platform's (its own account the platform's, the connected account
// linked): what an event destination for connected accounts delivers to.
func newConnectWorld(t *testing.T, s *stack) *simWorld {
	t.Helper()
	n := accountSeq.Add(1)
	w := &simWorld{stack: s, account: fmt.Sprintf("acct_e2econn%d", n), workspace: fmt.Sprintf("ws_e2econn%d", n)}
	platform := fmt.Sprintf("acct_e2eplat%d", n)
	w.sim = simulator.New(simulator.Config{Seed: uint64(n), Connect: true, Accounts: []string{w.account}, PlatformAccount: platform})
	api := httptest.NewServer(w.sim.Handler())
	t.Cleanup(api.Close)
	const secret = "whsec_e2e_thin_destination"
	require.NoError(t, endpoints.InsertEndpoint(s.ctx, s.store, endpoints.NewEndpoint{Slug: "stripe-dest", Provider: "stripe",
		Environment: "test", Account: platform, Secrets: []string{secret}, APIBaseURL: api.URL, APIKey: simulator.DefaultAPIKey}))
	require.NoError(t, endpoints.LinkAccount(s.ctx, s.store, "stripe-dest", w.account, w.workspace))
	require.NoError(t, records.SetWorkspaceEmail(s.ctx, s.store.Pool, w.workspace, "billing@"+w.workspace+".example"))
	w.targets = simulator.Targets{Stripe: simulator.Endpoint{URL: s.url + "/webhooks/stripe-dest", Secrets: []string{secret}}}
	return w
}

// TestAThinEventAndItsSnapshotTwinAreOneOperation: an event destination
// sends the thin v1.invoice.paid of a paid invoice (naming its snapshot in
// snapshot_event) and the snapshot invoice.paid reaches the same endpoint
// too. Whichever comes first, the invoice is granted once, with one
// confirmation intent, and both inbox rows end done: the business key is
// the invoice's, and both rows' resource is the invoice.
func TestAThinEventAndItsSnapshotTwinAreOneOperation(t *testing.T) {
	t.Parallel()
	for _, thinFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "thin first", false: "snapshot first"}[thinFirst], func(t *testing.T) {
			t.Parallel()
			w := newConnectWorld(t, newStack(t, stackOptions{}))
			inv, snap, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account, Amount: 1500})
			require.NoError(t, err)
			thin, err := w.sim.ThinEvent(snap.ID)
			require.NoError(t, err)
			require.Equal(t, "v1.invoice.paid", thin.Type)
			if thinFirst {
				w.send(t, thin, snap)
			} else {
				w.send(t, snap, thin)
			}
			w.allDone(t, 2)

			require.Equal(t, 2, w.count(t, `SELECT count(*) FROM webhook_inbox`))
			require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants WHERE invoice_id = $1`, inv.ID))
			require.Equal(t, 1, w.count(t, `SELECT count(*) FROM outbox WHERE operation_key LIKE '%:confirmation'`))
			require.EqualValues(t, 100, w.balance(t))

			key := func(id string) keys.Event {
				return keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: id}
			}
			thinRow, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, key(thin.ID))
			require.NoError(t, err, "the thin event's context is its source account")
			snapRow, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, key(snap.ID))
			require.NoError(t, err)
			require.Equal(t, "v1.invoice.paid", thinRow.EventType)
			require.Equal(t, thinRow.Resource(), snapRow.Resource(), "one resource, one workflow")
			first, second := thinRow, snapRow
			if !thinFirst {
				first, second = snapRow, thinRow
			}
			require.Contains(t, noteOf(t, w, second.Key), "already granted by "+first.Key.String())
		})
	}
}

// noteOf is the outcome note the worker recorded for k's row.
func noteOf(t *testing.T, w *simWorld, k keys.Event) string {
	t.Helper()
	var note string
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT coalesce(note, '') FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(&note))
	return note
}
