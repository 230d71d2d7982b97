package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// stripeSource is the bench's Stripe for the designs that fetch the
// current object: the lab simulator (subscriptions with a version that
// grows with every change) holding one subscription per resource of the
// load, serving its current state on the API a fetch reads. Each update
// is made just before its event is sent, so the state moves while the
// events queue, as a provider's does.
type stripeSource struct {
	sim  *simulator.Simulator
	url  string
	subs []string
	stop func()
}

// startStripeSource creates resources subscriptions on a fresh simulator
// and serves its API on loopback.
func startStripeSource(ctx context.Context, resources int) (*stripeSource, error) {
	// A seed of its own per run: the subscriptions' ids (and so their
	// workflows' ids) are new on a Temporal server that kept an earlier
	// run's workflows (--fresh-temporal=false).
	seed := uint64(time.Now().UnixNano()) ^ uint64(runSeq.Add(1))<<48
	sim := simulator.New(simulator.Config{Accounts: []string{benchAccount}, Versions: true, Seed: seed})
	s := &stripeSource{sim: sim}
	for range resources {
		sub, _ := sim.CreateSubscription(benchAccount, "", simulator.SubscriptionOptions{})
		s.subs = append(s.subs, sub.ID)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: sim.Handler()}
	go func() { _ = srv.Serve(ln) }()
	s.url, s.stop = "http://"+ln.Addr().String(), func() { _ = srv.Close() }
	return s, nil
}

// update changes subscription sub (its cancel_at_period_end flips) and
// returns the body of its customer.subscription.updated event.
func (s *stripeSource) update(sub string) ([]byte, error) {
	ev, err := s.sim.UpdateSubscription(sub, func(st *simulator.SubscriptionState) { st.CancelAtPeriodEnd = !st.CancelAtPeriodEnd })
	if err != nil {
		return nil, err
	}
	return ev.Body, nil
}

// latest is every subscription's current version.
func (s *stripeSource) latest() (map[string]int64, error) {
	out := make(map[string]int64, len(s.subs))
	for _, id := range s.subs {
		sub, ok := s.sim.Subscription(id)
		if !ok {
			return nil, fmt.Errorf("stripe source: no subscription %s", id)
		}
		out[id] = sub.Current().Version
	}
	return out, nil
}

// registerSourceEndpoint registers the benchmark's Stripe endpoint as
// registerEndpoint does, with apiURL as its API (the bench's Stripe, and
// the simulator's key) when given.
func registerSourceEndpoint(ctx context.Context, st *store.Store, apiURL string) error {
	if apiURL == "" {
		return registerEndpoint(ctx, st)
	}
	if err := endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: benchSlug, Provider: keys.ProviderStripe,
		Environment: keys.EnvTest, Account: benchAccount, Secrets: []string{benchSecret},
		APIBaseURL: apiURL, APIKey: simulator.DefaultAPIKey}); err != nil {
		return err
	}
	return endpoints.LinkAccount(ctx, st, benchSlug, benchAccount, benchWorkspace)
}
