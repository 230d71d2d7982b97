package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/migrations"
)

// Business is what a public App registered: the route table the intake and
// the worker share, the handlers by route name, the reconcilers by
// resource kind, and the team's own migrations and grants. Every process
// of one binary is built from the same Business, so they agree on which
// events are handled and where they run.
type Business struct {
	Routes *routes.Table
	// Handlers by route name; tests replace or remove some before the
	// worker starts.
	Handlers engine.Set
	// WaitLimits by route name: how long an event may wait for another fact.
	WaitLimits map[string]time.Duration
	// Reconcilers by resource kind.
	Reconcilers map[string]engine.Reconciler
	// Projections compares a reconciliation page with the local
	// projections (nil: the subscriptions pass has nothing to compare with).
	Projections engine.Lister
	// Policies are the uncertain-outcome policies of the outbox classes the
	// handlers declared (HOOKINBOX_UNCERTAIN_POLICY overrides them).
	Policies map[string]string
	// Migrations are the team's own, applied after hookinbox's.
	Migrations []migrations.Set
	// Grants are the process roles' privileges on the team's tables.
	Grants []store.Grant
	// Forwarder is the handler of every forward route, driving s (set by
	// the root package: it is written on the public API).
	Forwarder func(s *forward.Sender) engine.Handler
}

// ForwardHandler is b's forward handler on s (nil when b has none).
func (b Business) ForwardHandler(s *forward.Sender) engine.Handler {
	if b.Forwarder == nil {
		return nil
	}
	return b.Forwarder(s)
}

// Clone copies b's maps, so a test can replace handlers without touching
// the App it came from.
func (b Business) Clone() Business {
	c := b
	c.Handlers = engine.Set{}
	for k, v := range b.Handlers {
		c.Handlers[k] = v
	}
	c.WaitLimits = map[string]time.Duration{}
	for k, v := range b.WaitLimits {
		c.WaitLimits[k] = v
	}
	c.Policies = map[string]string{}
	for k, v := range b.Policies {
		c.Policies[k] = v
	}
	c.Reconcilers = map[string]engine.Reconciler{}
	for k, v := range b.Reconcilers {
		c.Reconcilers[k] = v
	}
	return c
}

type businessKey struct{}

// WithBusiness carries b to the commands run under ctx (the public App's
// Main puts its registrations there).
func WithBusiness(ctx context.Context, b Business) context.Context {
	return context.WithValue(ctx, businessKey{}, b)
}

// BusinessFrom is the Business ctx carries (none: nothing is handled).
func BusinessFrom(ctx context.Context) Business {
	b, _ := ctx.Value(businessKey{}).(Business)
	return b
}

// BusinessOf returns the Business of a public *hookinbox.App. The root
// package sets it (it imports this one, not the other way round), so the
// harness and the tests can build processes from an App.
var BusinessOf func(app any) Business

// HandlerOf adapts a public hookinbox.Handler to the engine's, as App.Handle
// does (set by the root package too): tests wrap a domain's handler with
// a fault of their own.
var HandlerOf func(h any) engine.Handler

// Router is the route table a process on st routes by: b's handlers, and
// the forward routes of st's database, reloaded at most every
// HOOKINBOX_ENDPOINT_CACHE_TTL (a route added shows at the intake and the
// worker within that).
func (b Business) Router(cfg config.Config, st *store.Store, log *slog.Logger) *routes.Layered {
	return &routes.Layered{Static: b.Routes, TTL: cfg.EndpointCacheTTL, Logger: log,
		Load: func(ctx context.Context) ([]routes.Route, error) {
			rows, err := forwards.Table(ctx, st.Pool)
			if err != nil {
				return nil, err
			}
			out := make([]routes.Route, len(rows))
			for i, r := range rows {
				out[i] = routes.Route{Name: r.Name, Provider: r.Provider, Type: r.EventType, Budget: r.RetryBudget,
					Forward: true, Replaces: r.ReplacesHandler, Paused: !r.Enabled, Since: r.AppliesAt, Age: r.Now.Sub(r.AppliesAt)}
			}
			return out, nil
		}}
}
