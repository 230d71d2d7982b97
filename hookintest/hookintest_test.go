package hookintest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
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

// SetNow is the clock deliveries are signed with: the intake Deliver
// admits through checks their signatures at it too, so a test can move
// time and still deliver. The stack Run starts keeps the real clock, and
// Post signs at it.
func TestSetNowIsTheIntakesClockToo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := paidApp(t, func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return hookinbox.Result{Note: "ok"}, nil
	})
	sim := simulator.New(simulator.Config{Seed: 1})
	_, paid, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)

	later := time.Now().Add(73 * time.Hour)
	h.SetNow(func() time.Time { return later })
	d := h.Deliver(ctx, "s", secret, nil, paid.Body)
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	out := h.Handle(ctx, d.Key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status)

	stack := h.Run()
	_, again, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	require.Equal(t, 200, stack.Post(ctx, "s", secret, nil, again.Body))
	stack.WaitFor(ctx, hookintype.EventKey{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, EventID: again.ID},
		hookintype.StatusDone, time.Minute)
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
	require.Equal(t, hookintype.StatusPending, out.Status)
	require.Equal(t, "bk", out.BusinessKey)
	require.Equal(t, hookintype.StatusPending, h.Status(ctx, d.Key))

	fail = false
	out = h.Handle(ctx, d.Key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status)
	require.Equal(t, "did it", out.Note)
	require.Equal(t, "bk", out.BusinessKey)
	require.Empty(t, out.Outbox)

	// Done: another attempt runs nothing; a replay runs it again.
	fail = true
	out = h.Handle(ctx, d.Key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status)
	h.Replay(ctx, d.Key, "test")
	require.Equal(t, hookintype.StatusPending, h.Status(ctx, d.Key))
	require.ErrorIs(t, h.Handle(ctx, d.Key).Err, boom)
}

// Stacks of parallel tests (or of test packages run at once) do not share
// a listening port: each runs on its own.
func TestStacksRunSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ok := func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return hookinbox.Result{Note: "ok"}, nil
	}
	harnesses := []*hookintest.Harness{paidApp(t, ok), paidApp(t, ok)}
	var stacks []*hookintest.Stack
	for _, h := range harnesses {
		stacks = append(stacks, h.Run())
	}
	time.Sleep(200 * time.Millisecond) // an intake whose internal listener failed has stopped by now
	sim := simulator.New(simulator.Config{Seed: 3})
	for i, s := range stacks {
		_, paid, err := sim.PayInvoice(simulator.InvoiceOptions{})
		require.NoError(t, err)
		require.Equal(t, 200, s.Post(ctx, "s", secret, nil, paid.Body), "stack %d", i)
		s.WaitFor(ctx, hookintype.EventKey{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, EventID: paid.ID},
			hookintype.StatusDone, time.Minute)
	}
}
