package hookintest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const secret = "whsec_hookintest_own_test"

// paidApp handles invoice.paid with h.
func paidApp(t *testing.T, h hookinbox.HandlerFunc) *hookintest.Harness {
	t.Helper()
	app := hookinbox.New()
	app.HandleFunc("stripe", "invoice.paid", h, hookinbox.Name("paid"))
	hi := hookintest.New(t, app)
	hi.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: "s", Provider: "stripe", Secret: secret, Account: "acct_sim_a", Workspace: "ws"})
	return hi
}

// Handle reports what the handler told the worker: its business key and
// the error it returned.
func TestHandleReportsTheHandlersResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("boom")
	fail := true
	h := paidApp(t, func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		if fail {
			return hookinbox.Result{BusinessKey: "bk"}, boom
		}
		return hookinbox.Result{Note: "did it", BusinessKey: "bk"}, nil
	})
	sim := simulator.New(simulator.Config{Seed: 2})
	_, paid, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	d := h.Deliver(ctx, "s", secret, nil, paid.Body)
	require.Equal(t, "accepted", d.Outcome, d.Reason)

	out := h.Handle(ctx, d.Key)
	require.ErrorIs(t, out.Err, boom)
	require.Equal(t, hookinbox.StatusPending, out.Status)
	require.Equal(t, "bk", out.BusinessKey)
	require.Equal(t, hookinbox.StatusPending, h.Status(ctx, d.Key))

	fail = false
	out = h.Handle(ctx, d.Key)
	require.NoError(t, out.Err)
	require.Equal(t, hookinbox.StatusDone, out.Status)
	require.Equal(t, "did it", out.Note)
	require.Equal(t, "bk", out.BusinessKey)
	require.Empty(t, out.Outbox)

	// Done: another attempt runs nothing; a replay runs it again.
	fail = true
	out = h.Handle(ctx, d.Key)
	require.NoError(t, out.Err)
	require.Equal(t, hookinbox.StatusDone, out.Status)
	h.Replay(ctx, d.Key, "test")
	require.Equal(t, hookinbox.StatusPending, h.Status(ctx, d.Key))
	require.ErrorIs(t, h.Handle(ctx, d.Key).Err, boom)
}
