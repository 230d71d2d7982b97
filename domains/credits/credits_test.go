package credits_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
)

// F2 and lost answers: two event ids for one invoice, an attempt whose
// answer was lost and an attempt that was still running when another
// completed the row all end in one grant and one confirmation.
func TestCreditsGrantOncePerInvoiceAcrossEventsAndLostAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 1}, credits.Options{})
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 4200})
	require.NoError(t, err)
	again, err := f.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	first := f.deliver(t, paid)

	// Attempt A fetches the invoice and stalls there (a timed-out
	// activity still running); attempt B, its retry, completes the row.
	arrived, release := f.gate.hold(t, "/v1/invoices/")
	stale := make(chan hookintest.Handled, 1)
	go func() { stale <- f.h.Handle(f.ctx, first) }()
	<-arrived
	out := f.handleDone(t, first)
	require.Equal(t, "granted 100 credits for "+inv.ID, out.Note)
	require.Len(t, out.Outbox, 1, "one confirmation intent")
	require.Equal(t, credits.GrantKey("stripe", account, hookintype.Test, inv.ID), out.BusinessKey)

	// A wakes up: its commit finds the row done and writes nothing.
	release()
	late := <-stale
	require.NoError(t, late.Err)
	require.Equal(t, hookintype.StatusDone, late.Status)
	require.Contains(t, late.Note, "already done")
	require.Empty(t, late.Outbox)

	// A lost commit answer: the retry reads the persisted state and stops.
	out = f.h.Handle(f.ctx, first)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status)
	require.Empty(t, out.Outbox)

	// F2: a distinct event for the same invoice completes without a grant.
	out = f.handleDone(t, f.deliver(t, again))
	require.Contains(t, out.Note, "already granted by "+first.String())
	require.Empty(t, out.Outbox)
	require.Equal(t, credits.GrantKey("stripe", account, hookintype.Test, inv.ID), out.BusinessKey)

	require.EqualValues(t, 100, f.balance(t))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM credit_grants`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox WHERE class = $1`, credits.ClassConfirmation))
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`))
	require.Equal(t, "granted 100 credits for "+inv.ID, f.row(t, first).Note, "the stale attempt left the row's note alone")
	var amount int64
	var by string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT amount_paid, event_key FROM credit_grants`).Scan(&amount, &by))
	require.EqualValues(t, 4200, amount)
	require.Equal(t, first.String(), by)
}

func TestCreditsTrustTheProviderNotTheEvent(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 2}, credits.Options{})
	_, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	ev := f.deliver(t, paid)

	tests := []struct {
		name      string
		fault     simulator.Fault
		permanent bool
		retryable bool
	}{
		{"provider down", simulator.Fault{Status: 503, Times: 1}, false, true},
		{"404 is not a state", simulator.Fault{Status: 404, Times: 1}, false, false},
		{"403 is not a state", simulator.Fault{Status: 403, Times: 1}, true, false},
	}
	for _, tt := range tests {
		f.sim.InjectAPIFault(simulator.Fault{Path: "/v1/invoices/", Status: tt.fault.Status, RetryAfter: tt.fault.RetryAfter, Times: tt.fault.Times})
		out := f.h.Handle(f.ctx, ev)
		require.Error(t, out.Err, tt.name)
		require.Equal(t, tt.permanent, hookinbox.IsPermanent(out.Err), "%s: %v", tt.name, out.Err)
		require.Equal(t, tt.retryable, providers.IsRetryable(out.Err), "%s: %v", tt.name, out.Err)
		require.Equal(t, hookintype.StatusPending, out.Status, tt.name)
		require.EqualValues(t, 0, f.balance(t), tt.name)
		require.Zero(t, f.count(t, `SELECT count(*) FROM credit_grants`), tt.name)
		require.Zero(t, f.count(t, `SELECT count(*) FROM outbox`), tt.name)
	}
	// A 429 with the provider's Retry-After is a rate limit, not a failure:
	// the worker waits out the Retry-After, no attempt counted, nothing
	// written.
	f.sim.InjectAPIFault(simulator.Fault{Path: "/v1/invoices/", Status: 429, RetryAfter: 3 * time.Second, Times: 1})
	before := f.h.Event(f.ctx, ev).Attempts
	out := f.h.Handle(f.ctx, ev)
	require.NoError(t, out.Err, "rate limited")
	require.Equal(t, hookintype.StatusPending, out.Status)
	require.Contains(t, out.Note, "rate limited: waiting 3s", "the provider's Retry-After is how long the worker waits")
	require.Equal(t, before, f.h.Event(f.ctx, ev).Attempts, "no attempt counted")
	require.EqualValues(t, 0, f.balance(t))

	f.handleDone(t, ev)
	require.EqualValues(t, 100, f.balance(t))
}

// The event says paid; a grant needs the provider to say so too, for this
// invoice, in this mode.
func TestCreditsNeverGrantOnTheEventsWord(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 5}, credits.Options{})
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	ev := f.deliver(t, paid)
	tests := []struct {
		name      string
		from, to  string
		err       string
		permanent bool
	}{
		{"not paid (yet) at the provider", `"status":"paid"`, `"status":"open"`, "is \"open\" at the provider, not paid (yet)", false},
		{"another mode", `"livemode":false`, `"livemode":true`, "livemode=true does not match the test environment", true},
	}
	for _, tt := range tests {
		var rewritten atomic.Bool
		f.gate.rewrite("/v1/invoices/", func(b []byte) []byte {
			rewritten.Store(strings.Contains(string(b), tt.from))
			return []byte(strings.Replace(string(b), tt.from, tt.to, 1))
		})
		out := f.h.Handle(f.ctx, ev)
		require.True(t, rewritten.Load(), tt.name)
		require.ErrorContains(t, out.Err, tt.err, tt.name)
		require.ErrorContains(t, out.Err, inv.ID, tt.name)
		require.Equal(t, tt.permanent, hookinbox.IsPermanent(out.Err), tt.name)
		require.Equal(t, hookintype.StatusPending, out.Status, tt.name)
		require.EqualValues(t, 0, f.balance(t), tt.name)
		require.Zero(t, f.count(t, `SELECT count(*) FROM credit_grants`), tt.name)
	}
	f.gate.rewrite("", nil)
	f.handleDone(t, ev)
	require.EqualValues(t, 100, f.balance(t))
}

func TestCreditsWithoutAPIKeyFailPermanently(t *testing.T) {
	t.Parallel()
	f := setupEndpoint(t, simulator.Config{Seed: 3}, credits.Options{}, func(e *hookintest.Endpoint) { e.APIKey = "" })
	_, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	before := f.sim.Stats().API.Requests
	out := f.h.Handle(f.ctx, f.deliver(t, paid))
	require.True(t, hookinbox.IsPermanent(out.Err), "%v", out.Err)
	require.ErrorContains(t, out.Err, "no API key")
	require.Equal(t, before, f.sim.Stats().API.Requests, "nothing was asked")
	require.EqualValues(t, 0, f.balance(t))
	require.Zero(t, f.count(t, `SELECT count(*) FROM credit_grants`))
}

// Register's options: the credits per invoice, and refusals.
func TestCreditsPerInvoiceAndRegisterRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t, simulator.Config{Seed: 4}, credits.Options{PerInvoice: 7})
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account})
	require.NoError(t, err)
	out := f.handleDone(t, f.deliver(t, paid))
	require.Equal(t, "granted 7 credits for "+inv.ID, out.Note)
	require.EqualValues(t, 7, f.balance(t))

	require.ErrorContains(t, credits.Register(hookinbox.New(), credits.Options{PerInvoice: -1}), "must be positive")
	require.ErrorContains(t, credits.Register(hookinbox.New(), credits.Options{Policy: "refund"}), "unknown negative-balance policy")
}

// A workspace without an email gets its credits and no notices (there is
// nowhere to send them); the notes say so.
func TestCreditsWithoutWorkspaceEmailSendNoNotices(t *testing.T) {
	t.Parallel()
	f := setupEndpoint(t, simulator.Config{Seed: 6}, credits.Options{}, func(e *hookintest.Endpoint) { e.Email = "" })
	inv, paid, err := f.sim.PayInvoice(simulator.InvoiceOptions{Account: account, Amount: 2000})
	require.NoError(t, err)
	out := f.handleDone(t, f.deliver(t, paid))
	require.Equal(t, "granted 100 credits for "+inv.ID+"; no confirmation: the workspace has no email", out.Note)
	require.Empty(t, out.Outbox)
	_, created, err := f.sim.CreateCreditNote(inv.ID, 1000)
	require.NoError(t, err)
	out = f.handleDone(t, f.deliver(t, created))
	require.Contains(t, out.Note, "; no notice: the workspace has no email")
	require.Empty(t, out.Outbox)
	require.EqualValues(t, 50, f.balance(t))
	require.Zero(t, f.count(t, `SELECT count(*) FROM outbox`))
}
