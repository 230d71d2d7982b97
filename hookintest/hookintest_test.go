package hookintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
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
	require.Equal(t, 200, stack.Post(ctx, "s", secret, nil, again.Body).Status)
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
		require.Equal(t, 200, s.Post(ctx, "s", secret, nil, paid.Body).Status, "stack %d", i)
		s.WaitFor(ctx, hookintype.EventKey{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, EventID: paid.ID},
			hookintype.StatusDone, time.Minute)
	}
}

// Two stacks in one process share the Temporal namespace (no namespace is
// created: a user's own Temporal may refuse), and an event of the same
// resource reaches both: each stack's workflow-id prefix keeps each
// resource workflow its own, so both events are done. Without it the
// second stack's doorbell rang the first stack's workflow (a subscription
// lingers 10 minutes once drained, refusing the sweeper's start), and its
// event hung.
func TestTwoStacksHandleTheSameResourceEachInItsOwnWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stack := func() (*hookintest.Harness, *hookintest.Stack) {
		app := hookinbox.New()
		app.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{Note: "ok " + ev.Resource.ID}, nil
		}, hookinbox.Name("subs"))
		h := hookintest.New(t, app)
		h.AddEndpoint(ctx, hookintest.Endpoint{Slug: "s", Provider: "stripe", Secret: secret, Account: "acct_sim_a", Workspace: "ws"})
		return h, h.Run()
	}
	a, sa := stack()
	b, sb := stack()
	// One subscription, one resource: the same body posted to both stacks.
	id := "evt_same_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	body := []byte(`{"id":"` + id + `","object":"event","type":"customer.subscription.updated","livemode":false,"account":"acct_sim_a",` +
		`"created":` + strconv.FormatInt(time.Now().Unix(), 10) + `,"data":{"object":{"id":"sub_same","object":"subscription","status":"active"}}}`)
	pa, pb := sa.Post(ctx, "s", secret, nil, body), sb.Post(ctx, "s", secret, nil, body)
	require.Equal(t, 200, pa.Status)
	require.Equal(t, 200, pb.Status)
	key := hookintype.EventKey{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, EventID: id}
	require.Equal(t, key, pa.Key)
	require.Equal(t, key, pb.Key)
	sa.WaitFor(ctx, key, hookintype.StatusDone, 2*time.Minute)
	sb.WaitFor(ctx, key, hookintype.StatusDone, 2*time.Minute)
	for _, h := range []*hookintest.Harness{a, b} {
		e := h.Event(ctx, key)
		require.Equal(t, hookintype.StatusDone, e.Status)
		require.Equal(t, "ok sub_same", e.Note)
		require.Equal(t, hookintype.Resource{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, Kind: "subscription", ID: "sub_same"},
			e.Resource)
	}
}

// The assertion helpers read an event's row, a claim, the outbox intents
// of an operation and the quarantine, so a team's test never queries
// hookinbox's tables.
func TestTheAssertionHelpersReadWhatTheHandlerRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := hookinbox.New()
	app.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
			c, err := tx.Claim(ctx, hookinbox.Key("thanks", ev.Resource.ID))
			if err != nil || !c.First {
				return hookinbox.Result{Note: "already thanked"}, err
			}
			for _, to := range []string{"a@example.com", "b@example.com"} {
				if _, err := tx.Send(ctx, hookinbox.Email(hookinbox.Key("thanks", ev.Resource.ID, to), "thanks", to, "Thanks", "paid")); err != nil {
					return hookinbox.Result{}, err
				}
			}
			return hookinbox.Result{Note: "thanked"}, nil
		})
	}, hookinbox.Name("thanks"))
	h := hookintest.New(t, app)
	h.AddEndpoint(ctx, hookintest.Endpoint{Slug: "s", Provider: "stripe", Secret: secret, Account: "acct_sim_a", Workspace: "ws"})

	sim := simulator.New(simulator.Config{Seed: 5})
	inv, paid, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	d := h.Deliver(ctx, "s", secret, nil, paid.Body)
	require.Equal(t, "accepted", d.Outcome)
	require.Equal(t, hookintype.StatusPending, h.Event(ctx, d.Key).Status)
	_, claimed := h.Claim(ctx, hookinbox.Key("thanks", inv.ID))
	require.False(t, claimed)

	require.NoError(t, h.Handle(ctx, d.Key).Err)
	e := h.Event(ctx, d.Key)
	require.Equal(t, hookintype.StatusDone, e.Status)
	require.Equal(t, "thanked", e.Note)
	require.Equal(t, "invoice.paid", e.EventType)
	c, claimed := h.Claim(ctx, hookinbox.Key("thanks", inv.ID))
	require.True(t, claimed)
	require.Equal(t, d.Key, c.By)
	require.Equal(t, "thanks", c.Handler)
	require.Equal(t, e.Resource, c.Resource)

	intents := h.Outbox(ctx, hookinbox.Key("thanks", inv.ID)+"*")
	require.Len(t, intents, 2)
	require.Equal(t, []string{"a@example.com", "b@example.com"}, []string{intents[0].Destination, intents[1].Destination})
	require.Equal(t, "email", intents[0].Kind)
	require.Equal(t, "thanks", intents[0].Class)
	require.Equal(t, "ws", intents[0].Workspace)
	require.Contains(t, string(intents[0].Payload), `"subject": "Thanks"`)
	require.Len(t, h.Outbox(ctx, hookinbox.Key("thanks", inv.ID, "b@example.com")), 1, "one operation key exactly")
	require.Empty(t, h.Outbox(ctx, hookinbox.Key("thanks", "in_other")+"*"))

	// A replay runs the handler again: the claim holds, no third intent.
	h.Replay(ctx, d.Key, "test")
	require.NoError(t, h.Handle(ctx, d.Key).Err)
	require.Equal(t, "already thanked", h.Event(ctx, d.Key).Note)
	require.Len(t, h.Outbox(ctx, hookinbox.Key("thanks", inv.ID)+"*"), 2)

	// The same event id with another body is quarantined.
	require.Empty(t, h.Quarantine(ctx, ""))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(paid.Body, &doc))
	doc["data"].(map[string]any)["object"].(map[string]any)["amount_paid"] = 1
	forged, err := json.Marshal(doc)
	require.NoError(t, err)
	q := h.Deliver(ctx, "s", secret, nil, forged)
	require.Equal(t, "quarantined", q.Outcome)
	got := h.Quarantine(ctx, "s")
	require.Len(t, got, 1)
	require.Equal(t, "conflicting_duplicate", got[0].Reason)
	require.Equal(t, "acct_sim_a", got[0].Account)
	require.Equal(t, paid.ID, got[0].EventID)
	require.Equal(t, "s", got[0].Endpoint)
	require.False(t, got[0].Resolved)
	require.Empty(t, h.Quarantine(ctx, "other"))
}

// A redelivery whose bytes differ from the stored row's (the provider's
// events list serialized the event the backfill took first) is a
// duplicate of that row: Post's Key names it. Before, Key looked the row
// up by the bytes alone and came back zero.
func TestPostNamesTheRowADuplicateInOtherBytesDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := paidApp(t, func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return hookinbox.Result{Note: "ok"}, nil
	})
	stack := h.Run()
	sim := simulator.New(simulator.Config{Seed: 5})
	_, paid, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	key := hookintype.EventKey{Provider: "stripe", Account: "acct_sim_a", Environment: hookintype.Test, EventID: paid.ID}
	first := stack.Post(ctx, "s", secret, nil, paid.Body)
	require.Equal(t, 200, first.Status)
	require.Equal(t, key, first.Key)
	// As if the backfill had stored it first, from the events list.
	_, err = h.DB.Exec(ctx, `UPDATE webhook_inbox SET origin = 'backfill' WHERE event_id = $1`, paid.ID)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(paid.Body, &v))
	other, err := json.MarshalIndent(v, "", "    ")
	require.NoError(t, err)
	require.NotEqual(t, paid.Body, other)
	again := stack.Post(ctx, "s", secret, nil, other)
	require.Equal(t, 200, again.Status)
	require.Contains(t, string(again.Body), `"duplicate"`)
	require.Equal(t, key, again.Key, "the row it duplicates")
}
