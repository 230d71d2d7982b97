package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

func noisyConfig(seed uint64) simulator.Config {
	return fast(simulator.Config{
		Seed: seed, Connect: true, Versions: true,
		Scenario: simulator.ScenarioKnobs{SecondEventRate: 0.5},
		Delivery: simulator.DeliveryKnobs{
			DuplicateRate: 0.3, ReorderWindow: 5, DelayRate: 0.2, ConflictRate: 0.2, DropRate: 0.2,
		},
	})
}

type planned struct {
	ID, Type                                           string
	At                                                 time.Duration
	Duplicate, Delayed, Reordered, Dropped, Late, Conf bool
	Body                                               string
}

func summarize(p simulator.Plan) []planned {
	out := make([]planned, len(p.Deliveries))
	for i, d := range p.Deliveries {
		out[i] = planned{d.Event.ID, d.Event.Type, d.At, d.Duplicate, d.Delayed, d.Reordered, d.Dropped, d.Late,
			d.Event.Conflicting, string(d.Event.Body)}
	}
	return out
}

func TestGenerateIsReproducible(t *testing.T) {
	t.Parallel()

	a := summarize(simulator.New(noisyConfig(42)).Generate())
	b := summarize(simulator.New(noisyConfig(42)).Generate())
	require.Equal(t, a, b, "same seed, same plan: ids, order, faults and bytes")

	c := summarize(simulator.New(noisyConfig(43)).Generate())
	require.NotEqual(t, a[0].ID, c[0].ID, "another seed draws other ids")

	// Every fault kind shows up in a plan this noisy.
	var dup, delayed, reordered, dropped, conflict int
	for _, d := range a {
		dup += b2i(d.Duplicate)
		delayed += b2i(d.Delayed)
		reordered += b2i(d.Reordered)
		dropped += b2i(d.Dropped)
		conflict += b2i(d.Conf)
	}
	require.Positive(t, dup)
	require.Positive(t, delayed)
	require.Positive(t, reordered)
	require.Positive(t, dropped)
	require.Positive(t, conflict)
}

func TestDeliveryKnobsDoNotChangeTheScenario(t *testing.T) {
	t.Parallel()

	quiet := fast(simulator.Config{Seed: 5})
	noisy := noisyConfig(5)
	noisy.Connect, noisy.Versions = false, false
	noisy.Scenario = quiet.Scenario
	a, b := simulator.New(quiet), simulator.New(noisy)
	a.Generate()
	b.Generate()
	ids := func(evs []simulator.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	require.Equal(t, ids(a.Events()), ids(b.Events()), "faults draw from their own random stream")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestStripeEventsVerifyWithStripeGo(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		secrets  []string
		versions bool
		connect  bool
	}{
		{name: "one secret", secrets: []string{stripeSecret}},
		{name: "rolling secret signs twice", secrets: []string{stripeSecret, "whsec_rolled"}, versions: true},
		{name: "connect carries account", secrets: []string{stripeSecret}, connect: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := simulator.New(simulator.Config{Seed: 1, Versions: tt.versions, Connect: tt.connect})
			rc := newReceiver(t, nil)
			tg := targets(rc)
			tg.Stripe.Secrets = tt.secrets

			acct := sim.Accounts()[0]
			sub, created := sim.CreateSubscription(acct, "", simulator.SubscriptionOptions{})
			inv, paid, err := sim.PayInvoice(simulator.InvoiceOptions{Subscription: sub.ID, Amount: 4200})
			require.NoError(t, err)
			canceled, err := sim.CancelSubscription(sub.ID, false)
			require.NoError(t, err)
			_, err = sim.Send(context.Background(), tg, created, paid, canceled)
			require.NoError(t, err)

			got := rc.requests()
			require.Len(t, got, 3)
			for _, r := range got {
				require.Equal(t, "application/json", r.header.Get("Content-Type"))
				sig := r.header.Get("Stripe-Signature")
				require.Equal(t, len(tt.secrets), strings.Count(sig, "v1="))
				for _, sec := range tt.secrets {
					require.NoError(t, webhook.ValidatePayload(r.body, sig, sec), "each secret verifies alone")
				}
				require.Error(t, webhook.ValidatePayload(r.body, sig, "whsec_other"))
			}

			ev, err := webhook.ConstructEvent(got[1].body, got[1].header.Get("Stripe-Signature"), tt.secrets[0])
			require.NoError(t, err, "api_version matches stripe-go's")
			require.Equal(t, paid.ID, ev.ID)
			require.Equal(t, stripe.EventType("invoice.paid"), ev.Type)
			if tt.connect {
				require.Equal(t, acct, ev.Account)
			} else {
				require.Empty(t, ev.Account)
				require.NotContains(t, string(got[1].body), `"account"`)
			}
			var in stripe.Invoice
			require.NoError(t, json.Unmarshal(ev.Data.Raw, &in))
			require.Equal(t, inv.ID, in.ID)
			require.Equal(t, stripe.InvoiceStatusPaid, in.Status)
			require.EqualValues(t, 4200, in.AmountPaid)
			require.Equal(t, sub.Customer, in.Customer.ID)
			require.Equal(t, sub.ID, in.Parent.SubscriptionDetails.Subscription.ID)

			ev, err = webhook.ConstructEvent(got[2].body, got[2].header.Get("Stripe-Signature"), tt.secrets[0])
			require.NoError(t, err)
			require.Equal(t, stripe.EventType("customer.subscription.deleted"), ev.Type)
			var s stripe.Subscription
			require.NoError(t, json.Unmarshal(ev.Data.Raw, &s))
			require.Equal(t, stripe.SubscriptionStatusCanceled, s.Status)
			require.NotZero(t, s.EndedAt)
			require.NotZero(t, s.CanceledAt)
			require.Greater(t, s.Items.Data[0].CurrentPeriodEnd, time.Now().Unix(), "period end lives on the items")
			if tt.versions {
				require.EqualValues(t, 2, ev.Data.Object["version"], "created is 1, canceled 2")
			} else {
				require.NotContains(t, ev.Data.Object, "version")
			}
		})
	}
}

func TestStandardWebhooksVerifyDuringRotation(t *testing.T) {
	t.Parallel()

	sim := simulator.New(fast(simulator.Config{Seed: 2, Delivery: simulator.DeliveryKnobs{MaxAttempts: 3}}))
	rc := newReceiver(t, func(n int, _ received) int {
		if n == 0 {
			return http.StatusServiceUnavailable // one failure: the retry must keep the msg id
		}
		return http.StatusNoContent
	})
	tg := targets(rc)
	tg.Standard.Secrets = []string{fbSecret, fbSecretNew}
	item, ev := sim.CreateFeedback("proj_x", "hello")
	rep, err := sim.Send(context.Background(), tg, ev)
	require.NoError(t, err)
	require.Equal(t, simulator.OutcomeAcked, rep.Results[0].Outcome)
	require.Equal(t, []int{503, 204}, rep.Results[0].Statuses)

	got := rc.requests()
	require.Len(t, got, 2)
	for _, r := range got {
		require.Equal(t, ev.ID, r.header.Get("webhook-id"), "same id across retries")
		require.True(t, strings.HasPrefix(ev.ID, "msg_"))
		require.Len(t, strings.Split(r.header.Get("webhook-signature"), " "), 2)
		for _, sec := range []string{fbSecret, fbSecretNew} {
			wh, err := standardwebhooks.NewWebhook(sec)
			require.NoError(t, err)
			require.NoError(t, wh.Verify(r.body, r.header), "each secret verifies alone")
		}
		other, err := standardwebhooks.NewWebhook(simulator.StandardSecret("another-key"))
		require.NoError(t, err)
		require.Error(t, other.Verify(r.body, r.header))
	}
	require.Equal(t, got[0].body, got[1].body)

	var body struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      struct {
			ID        string `json:"id"`
			ProjectID string `json:"project_id"`
			Message   string `json:"message"`
			CreatedAt string `json:"created_at"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	require.Equal(t, "feedback.created", body.Type)
	require.Equal(t, item.ID, body.Data.ID)
	require.Equal(t, "proj_x", body.Data.ProjectID)
	require.Equal(t, "hello", body.Data.Message)
	_, err = time.Parse(time.RFC3339, body.Timestamp)
	require.NoError(t, err)
}

func TestRetriesFollowTheScheduleThenStop(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		failures int
		outcome  string
		attempts int
	}{
		{name: "recovers", failures: 2, outcome: simulator.OutcomeAcked, attempts: 3},
		{name: "exhausts", failures: 99, outcome: simulator.OutcomeExhausted, attempts: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := simulator.New(fast(simulator.Config{Seed: 3, Delivery: simulator.DeliveryKnobs{MaxAttempts: 4}}))
			rc := newReceiver(t, func(n int, _ received) int {
				if n < tt.failures {
					return http.StatusInternalServerError
				}
				return http.StatusOK
			})
			_, ev, err := sim.PayInvoice(simulator.InvoiceOptions{})
			require.NoError(t, err)
			rep, err := sim.Send(context.Background(), targets(rc), ev)
			require.NoError(t, err)
			res := rep.Results[0]
			require.Equal(t, tt.outcome, res.Outcome)
			require.Equal(t, tt.attempts, res.Attempts)
			require.Len(t, rc.requests(), tt.attempts)
			require.Equal(t, tt.attempts-1, rep.Stats.Retries)
			for _, r := range rc.requests() {
				require.Equal(t, ev.Body, r.body, "a retry resends the same bytes")
			}
			truth := sim.Truth()
			if tt.outcome == simulator.OutcomeExhausted {
				require.Len(t, truth.UnackedEvents, 1)
			} else {
				require.Empty(t, truth.UnackedEvents)
			}
		})
	}
}

func TestRunDeliversEveryFaultAndTheTruthHolds(t *testing.T) {
	t.Parallel()

	cfg := noisyConfig(9)
	cfg.Clock = nil // real time, so access follows the real period end
	sim := simulator.New(cfg)
	rc := newReceiver(t, nil)
	rep, err := sim.Run(context.Background(), targets(rc))
	require.NoError(t, err)

	// Count what reached the receiver by event id and body.
	type key struct{ id, body string }
	seen := map[key]int{}
	ids := map[string]bool{}
	for _, r := range rc.requests() {
		id := r.header.Get("webhook-id")
		if id == "" {
			var e struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(r.body, &e))
			id = e.ID
		}
		seen[key{id, string(r.body)}]++
		ids[id] = true
	}
	var dropped []string
	for _, res := range rep.Results {
		switch {
		case res.Dropped:
			require.Equal(t, simulator.OutcomeDropped, res.Outcome)
			require.False(t, ids[res.Event.ID], "a dropped event is never sent")
			dropped = append(dropped, res.Event.ID)
		case res.Duplicate:
			require.GreaterOrEqual(t, seen[key{res.Event.ID, string(res.Event.Body)}], 2, "duplicate: same id, same body")
		case res.Event.Conflicting:
			original, ok := sim.Event(res.Event.ID)
			require.True(t, ok)
			require.NotEqual(t, original.Body, res.Event.Body)
			require.Equal(t, 1, seen[key{res.Event.ID, string(res.Event.Body)}], "conflict: same id, other body")
			require.Positive(t, seen[key{res.Event.ID, string(original.Body)}])
		default:
			require.Equal(t, simulator.OutcomeAcked, res.Outcome)
		}
	}
	require.NotEmpty(t, dropped)

	truth := sim.Truth()
	var truthDropped []string
	for _, e := range truth.DroppedEvents {
		truthDropped = append(truthDropped, e.ID)
	}
	require.ElementsMatch(t, dropped, truthDropped)
	require.Equal(t, len(dropped), truth.Stats.Dropped)

	// Two accounts × 3 customers × 2 paid invoices; some with a second event.
	require.Len(t, truth.PaidInvoices, 12)
	var second int
	for _, inv := range truth.PaidInvoices {
		second += len(inv.EventIDs) - 1
	}
	require.Positive(t, second, "some invoices were announced by two distinct events")
	require.Len(t, truth.Feedback, 3)
	// Each subscription's truth is what its last event said: read from the
	// bodies that were planned (sent or dropped), not from the simulator's
	// own state, the version being the one Versions puts in each body.
	type wireSub struct {
		ID                string `json:"id"`
		Status            string `json:"status"`
		CancelAtPeriodEnd bool   `json:"cancel_at_period_end"`
		Version           int64  `json:"version"`
		Items             struct {
			Data []struct {
				CurrentPeriodEnd int64 `json:"current_period_end"`
			} `json:"data"`
		} `json:"items"`
	}
	type subEvent struct {
		id  string
		sub wireSub
	}
	stories := map[string]map[int64]subEvent{} // subscription → version → its event
	for _, res := range rep.Results {
		ev := res.Event
		if ev.Conflicting || ev.ResourceKind != simulator.KindSubscription {
			continue
		}
		var body struct {
			Data struct {
				Object wireSub `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(ev.Body, &body))
		o := body.Data.Object
		require.Equal(t, ev.ResourceID, o.ID)
		if stories[o.ID] == nil {
			stories[o.ID] = map[int64]subEvent{}
		}
		if prev, ok := stories[o.ID][o.Version]; ok {
			require.Equal(t, prev.id, ev.ID, "one event per version of %s", o.ID)
		}
		stories[o.ID][o.Version] = subEvent{id: ev.ID, sub: o}
	}
	require.Len(t, stories, 6, "two accounts × 3 customers, one subscription each")
	require.Len(t, truth.Subscriptions, len(stories))
	now := time.Now()
	for _, ts := range truth.Subscriptions {
		story, ok := stories[ts.ID]
		require.True(t, ok, "%s has no event", ts.ID)
		n := int64(len(story))
		for v := int64(1); v <= n; v++ {
			require.Contains(t, story, v, "%s: versions 1..%d each have an event", ts.ID, n)
		}
		last := story[n]
		require.NotNil(t, ts.Version)
		require.Equal(t, n, *ts.Version, ts.ID)
		require.Equal(t, last.id, ts.LastEventID, ts.ID)
		require.Equal(t, last.sub.Status, ts.Status, ts.ID)
		require.Equal(t, last.sub.CancelAtPeriodEnd, ts.CancelAtPeriodEnd, ts.ID)
		require.Len(t, last.sub.Items.Data, 1)
		periodEnd := last.sub.Items.Data[0].CurrentPeriodEnd
		require.Equal(t, periodEnd, ts.CurrentPeriodEnd, ts.ID)
		live := slices.Contains([]string{simulator.StatusActive, simulator.StatusTrialing, simulator.StatusPastDue}, last.sub.Status)
		require.Equal(t, live && now.Before(time.Unix(periodEnd, 0)), ts.Access, ts.ID)
	}
}

func TestAccessRule(t *testing.T) {
	t.Parallel()

	sim := simulator.New(simulator.Config{Seed: 4})
	now, _ := sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
	atEnd, _ := sim.CreateSubscription("", "", simulator.SubscriptionOptions{Status: simulator.StatusTrialing})
	_, err := sim.CancelSubscription(now.ID, false)
	require.NoError(t, err)
	_, err = sim.CancelSubscription(atEnd.ID, true)
	require.NoError(t, err)
	ended, _ := sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
	_, err = sim.UpdateSubscription(ended.ID, func(st *simulator.SubscriptionState) {
		st.CurrentPeriodEnd = time.Now().Add(-time.Hour)
	})
	require.NoError(t, err)

	byID := map[string]simulator.TruthSubscription{}
	for _, s := range sim.Truth().Subscriptions {
		byID[s.ID] = s
	}
	require.False(t, byID[now.ID].Access, "immediate cancellation ends access")
	require.Equal(t, simulator.StatusCanceled, byID[now.ID].Status)
	require.True(t, byID[atEnd.ID].Access, "cancel at period end keeps access until the period ends")
	require.True(t, byID[atEnd.ID].CancelAtPeriodEnd)
	require.False(t, byID[ended.ID].Access, "the period is over")
	require.Nil(t, byID[now.ID].Version, "no version without the knob")
}

func TestConcurrentCopies(t *testing.T) {
	t.Parallel()

	sim := simulator.New(fast(simulator.Config{Seed: 6}))
	rc := newReceiver(t, nil)
	_, ev, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	rep, err := sim.Deliver(context.Background(), targets(rc), simulator.Copies(ev, 5))
	require.NoError(t, err)
	require.Len(t, rep.Results, 5)
	require.Equal(t, 5, rep.Stats.Acked)
	require.Equal(t, 4, rep.Stats.Duplicates)
	for _, r := range rc.requests() {
		require.True(t, bytes.Equal(ev.Body, r.body))
	}
}

func TestAttemptReturnsTheAnswer(t *testing.T) {
	t.Parallel()

	sim := simulator.New(simulator.Config{Seed: 8})
	rc := newReceiver(t, func(int, received) int { return http.StatusUnauthorized })
	_, ev := sim.CreateFeedback("", "")
	res, err := sim.Attempt(context.Background(), targets(rc), ev)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.Len(t, rc.requests(), 1, "no retry")

	_, err = sim.Attempt(context.Background(), simulator.Targets{}, ev)
	require.Error(t, err, "no target")
}

func TestConflictingChangesWhatMatters(t *testing.T) {
	t.Parallel()

	sim := simulator.New(simulator.Config{Seed: 10})
	_, paid, err := sim.PayInvoice(simulator.InvoiceOptions{Amount: 1000})
	require.NoError(t, err)
	c := sim.Conflicting(paid)
	require.Equal(t, paid.ID, c.ID)
	require.True(t, c.Conflicting)
	var e stripe.Event
	require.NoError(t, json.Unmarshal(c.Body, &e))
	require.EqualValues(t, 2000, e.Data.Object["amount_paid"])

	orig, ok := sim.Event(paid.ID)
	require.True(t, ok)
	require.Equal(t, paid.Body, orig.Body, "the provider keeps the original")
	require.True(t, slices.ContainsFunc(sim.Events(), func(x simulator.Event) bool { return x.ID == paid.ID }))
}

// With CommentsPerFeedback and VotesPerFeedback a feedback item's story
// goes on after its creation: comments (some announced twice, under
// another message id) and votes, each a Standard Webhooks message about
// the item, in the truth with their events. Without them the scenario
// draws exactly what it drew before.
func TestFeedbackItemsGetCommentsAndVotes(t *testing.T) {
	t.Parallel()
	cfg := fast(simulator.Config{Seed: 9, Scenario: simulator.ScenarioKnobs{FeedbackPerProject: 20}})
	before := summarize(simulator.New(cfg).Generate())
	cfg.Scenario.CommentsPerFeedback, cfg.Scenario.RecommentRate, cfg.Scenario.VotesPerFeedback = 3, 0.5, 3
	sim := simulator.New(cfg)
	plan := sim.Generate()
	types := map[string]int{}
	for _, d := range plan.Deliveries {
		types[d.Event.Type]++
		if d.Event.Type == simulator.EventFeedbackCommented || d.Event.Type == simulator.EventFeedbackVoted {
			require.Equal(t, simulator.ProviderStandard, d.Event.Provider)
			require.Equal(t, simulator.KindFeedback, d.Event.ResourceKind)
		}
	}
	require.Positive(t, types[simulator.EventFeedbackCommented])
	require.Positive(t, types[simulator.EventFeedbackVoted])

	tr := sim.Truth()
	comments, commentEvents, votes, twice := 0, 0, 0, 0
	for _, fb := range tr.Feedback {
		for _, c := range fb.Comments {
			comments++
			commentEvents += len(c.EventIDs)
			if len(c.EventIDs) == 2 {
				twice++
				a, ok := sim.Event(c.EventIDs[0])
				require.True(t, ok)
				b, ok := sim.Event(c.EventIDs[1])
				require.True(t, ok)
				require.Contains(t, string(a.Body), c.ID)
				require.Contains(t, string(b.Body), c.ID, "the same comment, another message")
			}
		}
		votes += len(fb.Votes)
	}
	require.Equal(t, types[simulator.EventFeedbackCommented], commentEvents)
	require.Equal(t, types[simulator.EventFeedbackVoted], votes)
	require.Positive(t, twice)
	require.Less(t, comments, commentEvents)

	again := simulator.New(cfg)
	require.Equal(t, summarize(plan), summarize(again.Generate()), "reproducible")
	cfg.Scenario.CommentsPerFeedback, cfg.Scenario.RecommentRate, cfg.Scenario.VotesPerFeedback = 0, 0, 0
	require.Equal(t, before, summarize(simulator.New(cfg).Generate()), "off: the scenario is the one before")
}
