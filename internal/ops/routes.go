package ops

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/providers"
)

// Bounds of a forward route's settings.
const (
	DefaultForwardTimeout = 10 * time.Second
	MinForwardTimeout     = 100 * time.Millisecond
	MaxForwardTimeout     = 5 * time.Minute
	MaxForwardBudget      = 1000
)

// RouteSpec is a forward route to add or, with every field given, the new
// settings of one (UpdateRoute takes a RouteChange).
type RouteSpec struct {
	Name      string `json:"name"`
	Provider  string `json:"provider"`
	EventType string `json:"event_type"`
	// URL is where each operation is POSTed: https, or any scheme-http(s)
	// URL on a private or loopback address with AllowPrivate.
	URL string `json:"url"`
	// Secret is the route's Standard Webhooks secret (whsec_…): the
	// service verifies every document with it.
	Secret           string        `json:"secret"`
	OperationKeyPath string        `json:"operation_key_path,omitempty"`
	FetchCurrent     bool          `json:"fetch_current,omitempty"`
	Timeout          time.Duration `json:"timeout,omitempty"`
	RetryBudget      int           `json:"retry_budget,omitempty"`
	// ReplaceHandler forwards a type a built-in handler takes, instead of
	// that handler, on purpose.
	ReplaceHandler bool `json:"replace_handler,omitempty"`
	// AllowPrivate lets the URL be a loopback or private address (a
	// service beside hookinbox); audited.
	AllowPrivate bool `json:"allow_private,omitempty"`
	// Coalesce sends one document for the run of a resource's pending
	// events the route takes, with the latest current object (only with
	// FetchCurrent, never with OperationKeyPath); CoalesceMax bounds the
	// events one document covers (0: 100).
	Coalesce    bool `json:"coalesce,omitempty"`
	CoalesceMax int  `json:"coalesce_max,omitempty"`
}

// RouteChange changes a route; nil fields stay.
type RouteChange struct {
	URL              *string        `json:"url,omitempty"`
	Secret           *string        `json:"secret,omitempty"`
	OperationKeyPath *string        `json:"operation_key_path,omitempty"`
	FetchCurrent     *bool          `json:"fetch_current,omitempty"`
	Timeout          *time.Duration `json:"timeout,omitempty"`
	RetryBudget      *int           `json:"retry_budget,omitempty"`
	ReplaceHandler   *bool          `json:"replace_handler,omitempty"`
	AllowPrivate     *bool          `json:"allow_private,omitempty"`
	Enabled          *bool          `json:"enabled,omitempty"`
	Coalesce         *bool          `json:"coalesce,omitempty"`
	CoalesceMax      *int           `json:"coalesce_max,omitempty"`
}

// RouteView is a forward route as shown: its secret as a fingerprint's
// absence (never its value), its backlog and what it replaces.
type RouteView struct {
	Name             string   `json:"name"`
	Provider         string   `json:"provider"`
	EventType        string   `json:"event_type"`
	URL              string   `json:"url"`
	OperationKeyPath string   `json:"operation_key_path,omitempty"`
	FetchCurrent     bool     `json:"fetch_current"`
	Timeout          string   `json:"timeout"`
	RetryBudget      int      `json:"retry_budget,omitempty"`
	ReplacesHandler  bool     `json:"replaces_handler"`
	Replaces         []string `json:"replaces,omitempty"`
	AllowPrivate     bool     `json:"allow_private"`
	Enabled          bool     `json:"enabled"`
	Coalesce         bool     `json:"coalesce"`
	CoalesceMax      int      `json:"coalesce_max,omitempty"`
	SecretKeyID      string   `json:"secret_key_id"`
	CreatedAt        string   `json:"created_at"`
	UpdatedAt        string   `json:"updated_at"`
	// Pending is the route's backlog: pending inbox rows of its types.
	Pending              int64   `json:"pending"`
	OldestPendingSeconds float64 `json:"oldest_pending_age_seconds"`
}

func routeTarget(name string) string { return "route:" + name }

// validateURL checks a forward URL: http(s), no credentials, https unless
// the route allows private addresses, and no literal private address
// without that flag (a name resolving to one is refused at each send).
func validateURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return Invalidf("forward URL must be an http(s) URL (got %q)", raw)
	}
	if u.User != nil {
		return Invalidf("forward URL must not carry credentials: the route's secret signs every document")
	}
	if u.Fragment != "" {
		return Invalidf("forward URL must not have a fragment")
	}
	if addr, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !allowPrivate &&
		!(outbound.Guard{}).Allowed(addr) {
		return Invalidf("forward URL %s is a private, loopback or link-local address: pass --allow-private to forward to a service beside hookinbox", outbound.Origin(raw))
	}
	if u.Hostname() == "localhost" && !allowPrivate {
		return Invalidf("forward URL %s is loopback: pass --allow-private to forward to a service beside hookinbox", outbound.Origin(raw))
	}
	if u.Scheme != "https" && !allowPrivate {
		return Invalidf("forward URL must be https (plain http only to a private address, with --allow-private)")
	}
	return nil
}

func validateEventType(t string) error {
	if t == "" || len(t) > 255 || strings.ContainsAny(t, " \t\n") {
		return Invalidf("event type must be a provider's type such as invoice.paid, or a prefix such as customer.subscription.* (got %q)", t)
	}
	if strings.Contains(strings.TrimSuffix(t, "*"), "*") || t == "*" {
		return Invalidf("event type %q: '*' may only end a prefix (customer.subscription.*), and never stand alone", t)
	}
	return nil
}

func validateRoute(r forwards.Route, secretGiven bool) error {
	if !SlugPattern.MatchString(r.Name) {
		return Invalidf("route name must be 1-63 lowercase letters, digits, '-' or '_' (got %q)", r.Name)
	}
	if _, ok := providers.Lookup(r.Provider); !ok {
		return Invalidf("provider must be %s (got %q)", providers.OneOf(), r.Provider)
	}
	if err := validateEventType(r.EventType); err != nil {
		return err
	}
	if err := validateURL(r.URL, r.AllowPrivate); err != nil {
		return err
	}
	if secretGiven {
		if err := validateSecret(keys.ProviderStandard, r.Secret); err != nil {
			return Invalidf("secret: %v (a Standard Webhooks secret: whsec_ and base64)", err)
		}
	}
	if r.OperationKeyPath != "" {
		if err := validatePath("operation key path", r.OperationKeyPath); err != nil {
			return err
		}
	}
	if r.Timeout < MinForwardTimeout || r.Timeout > MaxForwardTimeout {
		return Invalidf("timeout must be between %s and %s (got %s)", MinForwardTimeout, MaxForwardTimeout, r.Timeout)
	}
	if r.RetryBudget < 0 || r.RetryBudget > MaxForwardBudget {
		return Invalidf("retry budget must be between 1 and %d attempts (0: the worker's)", MaxForwardBudget)
	}
	if r.CoalesceMax != 0 && (r.CoalesceMax < 2 || r.CoalesceMax > MaxCoalesce) {
		return Invalidf("coalesce max must be between 2 and %d events (got %d)", MaxCoalesce, r.CoalesceMax)
	}
	if r.Coalesce && !r.FetchCurrent {
		return Invalidf("--coalesce needs --fetch-current: a coalesced document carries the provider's latest object, not each event's")
	}
	if r.Coalesce && r.OperationKeyPath != "" {
		return Invalidf("--coalesce never goes with --operation-key-path: the receiver would drop a coalesced document " +
			"as a duplicate of an operation it already applied")
	}
	return nil
}

// MaxCoalesce is the most events one coalesced document may cover.
const MaxCoalesce = 1000

// checkOverlaps refuses a route that takes a type a handler takes, unless
// it replaces the handler on purpose, and one that the other forward
// routes' table could not hold.
func (s *Service) checkOverlaps(ctx context.Context, r forwards.Route) ([]string, error) {
	if s.Handled == nil {
		return nil, errors.New("this process does not know the App's route table: forward routes cannot be checked against its handlers")
	}
	var replaced []string
	for _, h := range s.Handled.Overlaps(r.Provider, r.EventType) {
		replaced = append(replaced, fmt.Sprintf("%s (%s)", h.Name, h.Type))
	}
	if len(replaced) > 0 && !r.ReplacesHandler {
		return nil, &ConflictError{Err: fmt.Errorf("%s %s is handled by %s: pass --replace-handler to forward it instead of the handler, on purpose",
			r.Provider, r.EventType, strings.Join(replaced, ", "))}
	}
	others, err := forwards.List(ctx, s.Store.Pool)
	if err != nil {
		return nil, err
	}
	var t routes.Table
	for _, o := range others {
		if o.Name == r.Name {
			continue
		}
		if err := t.Add(routes.Route{Name: o.Name, Provider: o.Provider, Type: o.EventType}); err != nil {
			return nil, err
		}
	}
	if err := t.Add(routes.Route{Name: r.Name, Provider: r.Provider, Type: r.EventType}); err != nil {
		return nil, &ConflictError{Err: fmt.Errorf("forward route %s: %w", r.Name, err)}
	}
	return replaced, nil
}

// AddRoute registers a forward route. Audited (the secret never, the URL
// by its origin). Its types are routed within the route table's reload
// (HOOKINBOX_ENDPOINT_CACHE_TTL).
func (s *Service) AddRoute(ctx context.Context, who Actor, spec RouteSpec, reason string) (RouteView, error) {
	if err := who.check(); err != nil {
		return RouteView{}, err
	}
	if spec.Timeout == 0 {
		spec.Timeout = DefaultForwardTimeout
	}
	r := forwards.Route{Name: spec.Name, Provider: spec.Provider, EventType: spec.EventType, URL: spec.URL, Secret: spec.Secret,
		OperationKeyPath: spec.OperationKeyPath, FetchCurrent: spec.FetchCurrent, Timeout: spec.Timeout,
		RetryBudget: spec.RetryBudget, ReplacesHandler: spec.ReplaceHandler, AllowPrivate: spec.AllowPrivate, Enabled: true,
		Coalesce: spec.Coalesce, CoalesceMax: spec.CoalesceMax}
	if err := validateRoute(r, true); err != nil {
		return RouteView{}, err
	}
	replaced, err := s.checkOverlaps(ctx, r)
	if err != nil {
		return RouteView{}, err
	}
	kr, err := s.Store.Keyring()
	if err != nil {
		return RouteView{}, err
	}
	err = pgx.BeginFunc(ctx, s.Store.Pool, func(tx pgx.Tx) error {
		if err := forwards.Insert(ctx, tx, kr, r); err != nil {
			return err
		}
		_, err := s.audit(ctx, tx, who, "route_add", routeTarget(r.Name), reason, routeDetails(r, replaced))
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return RouteView{}, &ConflictError{Err: err}
	}
	if err != nil {
		return RouteView{}, err
	}
	s.reloadRoutes()
	return s.ShowRoute(ctx, r.Name)
}

func routeDetails(r forwards.Route, replaced []string) map[string]any {
	d := map[string]any{"provider": r.Provider, "event_type": r.EventType, "url": outbound.Origin(r.URL),
		"operation_key_path": r.OperationKeyPath, "fetch_current": r.FetchCurrent, "timeout": r.Timeout.String(),
		"retry_budget": r.RetryBudget, "replaces_handler": r.ReplacesHandler, "allow_private": r.AllowPrivate, "enabled": r.Enabled,
		"coalesce": r.Coalesce, "coalesce_max": r.CoalesceMax}
	if len(replaced) > 0 {
		d["replaces"] = replaced
	}
	return d
}

// UpdateRoute changes a route's settings (its name, provider and type
// stay: remove and add to move it). Audited.
func (s *Service) UpdateRoute(ctx context.Context, who Actor, name string, c RouteChange, reason string) (RouteView, error) {
	if err := who.check(); err != nil {
		return RouteView{}, err
	}
	r, err := forwards.Get(ctx, s.Store.Pool, name)
	if err != nil {
		return RouteView{}, err
	}
	changed := []string{}
	set := func(field string, apply func()) {
		apply()
		changed = append(changed, field)
	}
	if c.URL != nil && *c.URL != r.URL && (c.Secret == nil || *c.Secret == "") {
		// The secret was given for the old URL: it never follows the URL
		// (the database refuses it too, migration 0021).
		return RouteView{}, Invalidf("changing the URL of forward route %s needs its secret again (--secret-file, "+
			"--secret-env or --secret-stdin; secret in the API): a secret is never sent to a URL it was not given for", name)
	}
	if c.URL != nil {
		set("url", func() { r.URL = *c.URL })
	}
	if c.Secret != nil {
		set("secret", func() { r.Secret = *c.Secret })
	}
	if c.OperationKeyPath != nil {
		set("operation_key_path", func() { r.OperationKeyPath = *c.OperationKeyPath })
	}
	if c.FetchCurrent != nil {
		set("fetch_current", func() { r.FetchCurrent = *c.FetchCurrent })
	}
	if c.Timeout != nil {
		set("timeout", func() { r.Timeout = *c.Timeout })
	}
	if c.RetryBudget != nil {
		set("retry_budget", func() { r.RetryBudget = *c.RetryBudget })
	}
	if c.ReplaceHandler != nil {
		set("replaces_handler", func() { r.ReplacesHandler = *c.ReplaceHandler })
	}
	if c.AllowPrivate != nil {
		set("allow_private", func() { r.AllowPrivate = *c.AllowPrivate })
	}
	if c.Enabled != nil {
		set("enabled", func() { r.Enabled = *c.Enabled })
	}
	if c.Coalesce != nil {
		set("coalesce", func() { r.Coalesce = *c.Coalesce })
	}
	if c.CoalesceMax != nil {
		set("coalesce_max", func() { r.CoalesceMax = *c.CoalesceMax })
	}
	if len(changed) == 0 {
		return RouteView{}, Invalidf("nothing to change: give at least one setting")
	}
	if err := validateRoute(*r, c.Secret != nil); err != nil {
		return RouteView{}, err
	}
	replaced, err := s.checkOverlaps(ctx, *r)
	if err != nil {
		return RouteView{}, err
	}
	kr, err := s.Store.Keyring()
	if err != nil {
		return RouteView{}, err
	}
	err = pgx.BeginFunc(ctx, s.Store.Pool, func(tx pgx.Tx) error {
		if err := forwards.Update(ctx, tx, kr, *r); err != nil {
			return err
		}
		d := routeDetails(*r, replaced)
		d["changed"] = changed
		_, err := s.audit(ctx, tx, who, "route_update", routeTarget(name), reason, d)
		return err
	})
	if err != nil {
		return RouteView{}, err
	}
	s.reloadRoutes()
	return s.ShowRoute(ctx, name)
}

// RemoveRoute removes a route. Its pending events stay pending (no
// handler) until a route or handler takes their type again; its attempts
// stay for the lineage. Audited.
func (s *Service) RemoveRoute(ctx context.Context, who Actor, name, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.Store.Pool, func(tx pgx.Tx) error {
		if err := forwards.Delete(ctx, tx, name); err != nil {
			return err
		}
		_, err := s.audit(ctx, tx, who, "route_remove", routeTarget(name), reason, nil)
		return err
	})
	if err != nil {
		return err
	}
	s.reloadRoutes()
	return nil
}

// OriginsOnly cuts the route's URL to its origin, for viewers: a
// receiver's path and query may carry its token, as a team destination's
// do (WorkspaceView.OriginsOnly).
func (v *RouteView) OriginsOnly() { v.URL = URLOrigin(v.URL) }

// ListRoutes lists every forward route with its backlog, by name.
func (s *Service) ListRoutes(ctx context.Context) ([]RouteView, error) {
	rs, err := forwards.List(ctx, s.Store.Pool)
	if err != nil {
		return nil, err
	}
	backlogs, err := s.routeBacklogs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RouteView, 0, len(rs))
	for _, r := range rs {
		out = append(out, s.routeView(&r, backlogs[r.Name]))
	}
	return out, nil
}

// ShowRoute reads one route with its backlog.
func (s *Service) ShowRoute(ctx context.Context, name string) (RouteView, error) {
	r, err := forwards.Get(ctx, s.Store.Pool, name)
	if err != nil {
		return RouteView{}, err
	}
	backlogs, err := s.routeBacklogs(ctx)
	if err != nil {
		return RouteView{}, err
	}
	return s.routeView(r, backlogs[r.Name]), nil
}

func (s *Service) routeBacklogs(ctx context.Context) (map[string]forwards.Backlog, error) {
	bs, err := forwards.Backlogs(ctx, s.Store.Pool)
	if err != nil {
		return nil, err
	}
	out := make(map[string]forwards.Backlog, len(bs))
	for _, b := range bs {
		out[b.Route] = b
	}
	return out, nil
}

func (s *Service) routeView(r *forwards.Route, b forwards.Backlog) RouteView {
	v := RouteView{Name: r.Name, Provider: r.Provider, EventType: r.EventType, URL: r.URL, OperationKeyPath: r.OperationKeyPath,
		FetchCurrent: r.FetchCurrent, Timeout: r.Timeout.String(), RetryBudget: r.RetryBudget, ReplacesHandler: r.ReplacesHandler,
		AllowPrivate: r.AllowPrivate, Enabled: r.Enabled, Coalesce: r.Coalesce, CoalesceMax: r.CoalesceMax, SecretKeyID: r.SecretKeyID,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: r.UpdatedAt.UTC().Format(time.RFC3339),
		Pending: b.Pending, OldestPendingSeconds: b.OldestPendingSeconds}
	if r.ReplacesHandler {
		for _, h := range s.Handled.Overlaps(r.Provider, r.EventType) {
			v.Replaces = append(v.Replaces, h.Name)
		}
	}
	return v
}

// reloadRoutes makes this process's route table read the forward routes
// again at its next lookup (other processes within their TTL).
func (s *Service) reloadRoutes() {
	if l, ok := s.Routes.(interface{ Reload() }); ok {
		l.Reload()
	}
}

// ForwardSkipped is the outcome of a forward attempt that sent nothing:
// another event of its operation was forwarded.
const ForwardSkipped = forwards.OutcomeSkipped
