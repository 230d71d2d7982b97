package simulator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Two snapshots of one subscription delivered in reverse order, then a
// conflicting redelivery, against a stand-in intake.
func Example() {
	intake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer intake.Close()

	sim := simulator.New(simulator.Config{Seed: 1, Versions: true})
	targets := simulator.Targets{
		Stripe: simulator.Endpoint{URL: intake.URL + "/webhooks/stripe-sim", Secrets: []string{"whsec_test"}},
	}
	sub, created := sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
	canceled, _ := sim.CancelSubscription(sub.ID, false)
	report, _ := sim.Send(context.Background(), targets, canceled, created)
	for _, r := range report.Results {
		fmt.Println(r.Event.Type, r.Outcome)
	}
	conflict, _ := sim.Send(context.Background(), targets, sim.Conflicting(created))
	fmt.Println("conflicting copy:", conflict.Results[0].Outcome)

	truth := sim.Truth()
	fmt.Println(truth.Subscriptions[0].Status, *truth.Subscriptions[0].Version, truth.Subscriptions[0].Access)
	// Output:
	// customer.subscription.deleted acked
	// customer.subscription.created acked
	// conflicting copy: acked
	// canceled 2 false
}
