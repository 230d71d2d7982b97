// Package routes is the route table: which (provider, event type) pairs a
// handler takes, under which handler name, serialized on which resource,
// with which retry budget. The intake reads it to record an authenticated
// event pending (handled) or ignored, and to choose the resource workflow
// it runs in; the worker reads it to route a pending row to its handler.
// Both processes build the same table from the same registrations (the
// public App's Handle calls), so they agree. It is a leaf: it knows no
// handler code, no store and no Temporal.
package routes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Route is how one provider's event type (or a family of them) is handled.
type Route struct {
	// Name names the handler: its key among the worker's handlers and its
	// metrics label.
	Name string
	// Provider is the provider name (stripe, github, …).
	Provider string
	// Type is an exact event type, or a prefix ending in "*"
	// ("customer.subscription.*"). An exact type wins over a prefix, and a
	// longer prefix over a shorter one.
	Type string
	// Resource, when set, is the resource the event is serialized on
	// instead of the one the provider normalized: its kind, and the JSON
	// path (gjson syntax) of its id in the verified payload. The
	// normalized resource's id is then kept as the event's object id.
	Resource *ResourceRule
	// Budget is the number of attempts before the event ends exhausted
	// (0: the worker's HOOKINBOX_RETRY_BUDGET).
	Budget int
	// Forward: a forward route (a team's HTTP service, from the database):
	// the worker's forwarder sends its events, Name being the route's.
	Forward bool
	// Replaces: a forward route that takes a type a handler takes, on
	// purpose; it wins over the handler.
	Replaces bool
	// Paused: a disabled forward route. The intake still records its
	// events pending; the worker holds them until it is enabled again.
	Paused bool
	// Since is when a forward route began to take its types (added, its
	// type changed, or enabled again), on the database's clock; Age is how
	// long ago that was when the table was read (the same clock).
	Since time.Time
	Age   time.Duration
}

// ResourceRule derives the resource from the verified payload.
type ResourceRule struct {
	Kind   string
	IDPath string
}

// Router answers which route takes an event type. RouteType providers
// (Stripe's thin v1.* types) are resolved by the caller first.
type Router interface {
	Route(provider, eventType string) (Route, bool)
}

// Table is a static set of routes, built at start-up and read-only after:
// safe for concurrent lookups.
type Table struct {
	exact    map[string]map[string]Route
	prefixes map[string][]Route // longest prefix first
}

// ErrConflict is a route added twice for the same provider and type.
var ErrConflict = errors.New("route conflict")

// Add adds r. Two routes for one provider and type, a route without a name,
// provider or type, or a "*" anywhere but at the end is an error.
func (t *Table) Add(r Route) error {
	switch {
	case r.Name == "" || r.Provider == "" || r.Type == "":
		return fmt.Errorf("route %+v: name, provider and event type are required", r)
	case strings.Contains(strings.TrimSuffix(r.Type, "*"), "*"):
		return fmt.Errorf("route %s: event type %q: '*' may only end a prefix", r.Name, r.Type)
	case r.Budget < 0:
		return fmt.Errorf("route %s: a retry budget is 1 or more (0: the worker's)", r.Name)
	case r.Resource != nil && (r.Resource.Kind == "" || r.Resource.IDPath == ""):
		return fmt.Errorf("route %s: a resource rule needs a kind and an id path", r.Name)
	}
	if t.exact == nil {
		t.exact, t.prefixes = map[string]map[string]Route{}, map[string][]Route{}
	}
	if strings.HasSuffix(r.Type, "*") {
		for _, p := range t.prefixes[r.Provider] {
			if p.Type == r.Type {
				return fmt.Errorf("%w: %s %s is taken by %s and %s", ErrConflict, r.Provider, r.Type, p.Name, r.Name)
			}
		}
		ps := append(t.prefixes[r.Provider], r)
		sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].Type) > len(ps[j].Type) })
		t.prefixes[r.Provider] = ps
	} else {
		if prev, ok := t.exact[r.Provider][r.Type]; ok {
			return fmt.Errorf("%w: %s %s is taken by %s and %s", ErrConflict, r.Provider, r.Type, prev.Name, r.Name)
		}
		if t.exact[r.Provider] == nil {
			t.exact[r.Provider] = map[string]Route{}
		}
		t.exact[r.Provider][r.Type] = r
	}
	return nil
}

// Route returns the route of a provider's event type: the exact one, else
// the longest matching prefix.
func (t *Table) Route(provider, eventType string) (Route, bool) {
	if t == nil {
		return Route{}, false
	}
	if r, ok := t.exact[provider][eventType]; ok {
		return r, true
	}
	for _, r := range t.prefixes[provider] {
		if strings.HasPrefix(eventType, strings.TrimSuffix(r.Type, "*")) {
			return r, true
		}
	}
	return Route{}, false
}

// ExactTypes lists provider's exact event types, sorted: what a listing
// API that takes no wildcard (Stripe's events filter) is asked for.
func (t *Table) ExactTypes(provider string) []string {
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t.exact[provider]))
	for typ := range t.exact[provider] {
		out = append(out, typ)
	}
	sort.Strings(out)
	return out
}

// Routes lists every route, by provider then type.
func (t *Table) Routes() []Route {
	if t == nil {
		return nil
	}
	var out []Route
	for _, m := range t.exact {
		for _, r := range m {
			out = append(out, r)
		}
	}
	for _, ps := range t.prefixes {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// Overlaps lists the routes of t that would take some event type that a
// route for (provider, eventType) takes: the same exact type, a prefix that
// matches it, or (for a prefix) every route under it.
func (t *Table) Overlaps(provider, eventType string) []Route {
	if t == nil {
		return nil
	}
	var out []Route
	prefix, isPrefix := strings.CutSuffix(eventType, "*")
	for _, r := range t.Routes() {
		if r.Provider != provider {
			continue
		}
		rp, rIsPrefix := strings.CutSuffix(r.Type, "*")
		switch {
		case !isPrefix && !rIsPrefix && r.Type == eventType,
			!isPrefix && rIsPrefix && strings.HasPrefix(eventType, rp),
			isPrefix && !rIsPrefix && strings.HasPrefix(r.Type, prefix),
			isPrefix && rIsPrefix && (strings.HasPrefix(rp, prefix) || strings.HasPrefix(prefix, rp)):
			out = append(out, r)
		}
	}
	return out
}

// Layered routes by a static table (the App's handlers) and a dynamic one
// (the forward routes of the database), reloaded when it is older than TTL.
// A dynamic route wins only over no handler, or when it Replaces one. A
// failed reload keeps the table it had (and is logged); none loaded yet
// routes by the static table alone.
type Layered struct {
	Static *Table
	// Load lists the dynamic routes.
	Load func(ctx context.Context) ([]Route, error)
	// TTL between reloads (0: 5 s).
	TTL time.Duration
	// Now is the clock (tests).
	Now    func() time.Time
	Logger *slog.Logger
	// OnMiss, when positive, makes a lookup that finds no dynamic route
	// (or a paused one) reload the table first when it is at least this
	// old: a route just added or enabled shows at once rather than after
	// TTL. The one lookup that reloads waits for it; the others route by
	// the table they have.
	OnMiss time.Duration
	// Applied, when set, is called by a reload, before its table routes
	// anything, with the routes that began to take their types less than
	// AppliedWindow ago: the intake re-queues what it recorded ignored for
	// them under its table of before. It is called on every reload while a
	// route is that young, and again 2 s after each, so an event that was
	// being recorded under the old table as the new one loaded is
	// re-queued too. It must be safe to call again (and concurrently).
	Applied func(ctx context.Context, young []Route)

	mu          sync.Mutex
	dynamic     *Table
	loadedAt    time.Time
	loading     bool
	missPending bool
}

// appliedAgain is when a reload calls Applied a second time.
const appliedAgain = 2 * time.Second

// AppliedWindow is how young a route is when Applied is told about it: a
// few reloads' worth (TTL), and at least 30 s.
func (l *Layered) AppliedWindow() time.Duration {
	return max(3*l.ttl(), 30*time.Second)
}

func (l *Layered) ttl() time.Duration {
	if l.TTL <= 0 {
		return 5 * time.Second
	}
	return l.TTL
}

func (l *Layered) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Route returns the route of a provider's event type.
func (l *Layered) Route(provider, eventType string) (Route, bool) {
	s, sok := l.Static.Route(provider, eventType)
	t := l.current(false)
	d, dok := t.Route(provider, eventType)
	if l.OnMiss > 0 && l.Load != nil && (!dok || d.Paused) && (!sok || dok) {
		// Not routed here (or held): the route may have just been added
		// or enabled. The static table wins without a dynamic route, so
		// there is nothing to look for then.
		if l.stale(l.OnMiss) {
			d, dok = l.current(true).Route(provider, eventType)
		} else {
			// Too fresh to reload for this request: reload once the table
			// is OnMiss old anyway, so a route added just before this miss
			// applies (Applied re-queues what was recorded by the table of
			// before) even if no other request comes.
			l.reloadLater()
		}
	}
	switch {
	case dok && (!sok || d.Replaces):
		return d, true
	case sok:
		return s, true
	}
	return Route{}, false
}

// reloadLater reloads the table once it is OnMiss old; one such reload is
// pending at a time.
func (l *Layered) reloadLater() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.missPending {
		return
	}
	l.missPending = true
	wait := l.OnMiss - l.now().Sub(l.loadedAt)
	if wait < 0 {
		wait = 0
	}
	time.AfterFunc(wait, func() {
		l.mu.Lock()
		l.missPending = false
		l.mu.Unlock()
		l.current(true)
	})
}

// stale reports whether the table is at least age old and no reload is
// under way.
func (l *Layered) stale(age time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.loading && l.now().Sub(l.loadedAt) >= age
}

// Reload forces the next Route to load the dynamic routes again (after an
// operator changed them in this process).
func (l *Layered) Reload() {
	l.mu.Lock()
	l.loadedAt = time.Time{}
	l.mu.Unlock()
}

// current is the dynamic table, reloaded first when it is older than TTL
// (or, with force, whatever its age) unless another caller is reloading it.
func (l *Layered) current(force bool) *Table {
	if l.Load == nil {
		return nil
	}
	now := l.now
	ttl := l.ttl()
	l.mu.Lock()
	if (!force && !l.loadedAt.IsZero() && now().Sub(l.loadedAt) < ttl) || (l.loading && l.dynamic != nil) {
		// Fresh, or being reloaded by another caller: the intake never
		// waits on a reload once one table is loaded.
		d := l.dynamic
		l.mu.Unlock()
		return d
	}
	l.loading = true
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rs, err := l.Load(ctx)
	if err == nil && l.Applied != nil {
		var young []Route
		for _, r := range rs {
			if !r.Since.IsZero() && r.Age < l.AppliedWindow() {
				young = append(young, r)
			}
		}
		if len(young) > 0 {
			apply := func() {
				actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer acancel()
				l.Applied(actx, young)
			}
			apply()
			// Once more when the requests that were routing by the table
			// of before (while this one loaded) have committed, whether or
			// not another request comes to reload it.
			time.AfterFunc(appliedAgain, apply)
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	l.loading, l.loadedAt = false, now()
	if err != nil {
		if l.Logger != nil {
			l.Logger.Warn("could not reload the forward routes; keeping the ones loaded", "error", err.Error())
		}
		return l.dynamic
	}
	var t Table
	for _, r := range rs {
		if err := t.Add(r); err != nil && l.Logger != nil {
			l.Logger.Warn("a forward route is not routed", "route", r.Name, "error", err.Error())
		}
	}
	l.dynamic = &t
	return l.dynamic
}
