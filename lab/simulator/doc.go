// Package simulator is a misbehaving provider for hookinbox to be proven
// against: it keeps its own state of customers, invoices, subscriptions and
// feedback items, speaks the real wire formats (Stripe events signed with
// Stripe-Signature, Standard Webhooks for feedback, the Stripe API subset the
// activities call, an idempotent email API) and breaks the rules on purpose,
// reproducibly from a seed.
//
// It owns no part of the receiver and must not import it: it only talks HTTP.
//
// # Driving a whole run
//
//	sim := simulator.New(simulator.Config{Seed: 7, Connect: true, Versions: true,
//		Delivery: simulator.DeliveryKnobs{DuplicateRate: 0.2, ReorderWindow: 4, DropRate: 0.05}})
//	api := httptest.NewServer(sim.Handler()) // Stripe API, email API, /_sim/truth
//	defer api.Close()
//	report, err := sim.Run(ctx, simulator.Targets{
//		Stripe:   simulator.Endpoint{URL: intake + "/webhooks/stripe-sim", Secrets: []string{stripeSecret}},
//		Standard: simulator.Endpoint{URL: intake + "/webhooks/feedback-sim", Secrets: []string{fbSecret}},
//	})
//	truth := sim.Truth() // what the receiver must converge to
//
// Run is Generate (build the scenario's state and a delivery Plan with its
// faults) followed by Deliver. The same Seed gives the same ids, the same
// event order and the same faults; with a fixed Config.Clock the same bytes.
//
// # Driving one resource
//
// Tests that need an exact story use the lower-level calls, each of which
// changes the state, records the Stripe event (so it shows in GET /v1/events)
// and returns it without sending it:
//
//	sub, created := sim.CreateSubscription("acct_sim_a", "", simulator.SubscriptionOptions{})
//	canceled, _ := sim.CancelSubscription(sub.ID, false)
//	sim.Send(ctx, targets, canceled, created) // the two snapshots in reverse order
//	sim.Send(ctx, targets, sim.Conflicting(created)) // same evt id, different body
//	res, _ := sim.Attempt(ctx, targets, created) // one signed POST, no retries
//
// Deliver takes a hand-made Plan for anything else (N concurrent copies of one
// event, delays, a late conflicting copy). Faults of the provider API are set
// by rate in Config.API or injected one by one with InjectAPIFault; the email
// API loses answers by rate or with LoseNextEmailAnswers.
//
// # Ground truth
//
// Truth (and GET /_sim/truth) lists what a correct receiver ends with: every
// paid invoice, the latest state of every subscription with the access the
// product rule gives it (active, trialing and past_due keep access until the
// current period ends; canceled has none), every feedback item, the events no
// delivery ever carried (recoverable only by reconciliation), and delivery
// statistics.
package simulator
