package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/providers"
)

// forwardRoutes are the API and console routes of forward routes: read by
// viewers, changed by admins (they name where events go, and a secret).
func (s *Server) forwardRoutes() []route {
	return []route{
		{api: true, method: "GET", pattern: "/api/routes", role: viewer, summary: "Forward routes with their backlogs (pending, oldest_pending_age_seconds); secrets are never shown", h: s.apiRoutesList},
		{api: true, method: "GET", pattern: "/api/routes/{name}", role: viewer, summary: "One forward route", h: s.apiRouteGet},
		{api: true, method: "POST", pattern: "/api/routes", role: admin, summary: "Add a forward route: {name, provider, event_type, url, secret, operation_key_path, fetch_current, timeout (\"10s\"), retry_budget, replace_handler, allow_private, coalesce, coalesce_max, reason}", h: s.apiRouteAdd},
		{api: true, method: "PATCH", pattern: "/api/routes/{name}", role: admin, summary: "Change a forward route: {url, secret, operation_key_path, fetch_current, timeout, retry_budget, replace_handler, allow_private, enabled, coalesce, coalesce_max, reason} (absent: unchanged)", h: s.apiRouteUpdate},
		{api: true, method: "DELETE", pattern: "/api/routes/{name}", role: admin, summary: "Remove a forward route (its pending events stay pending; its attempts stay in the lineage)", h: s.apiRouteRemove, params: []string{"reason"}},
		{method: "GET", pattern: "/routes", role: viewer, h: s.webRoutesPage},
		{method: "POST", pattern: "/routes", role: admin, h: s.webRouteAdd},
		{method: "POST", pattern: "/routes/{name}/state", role: admin, h: s.webRouteState},
		{method: "POST", pattern: "/routes/{name}/remove", role: admin, h: s.webRouteRemove},
	}
}

func (s *Server) apiRoutesList(w http.ResponseWriter, r *http.Request, p *principal) error {
	vs, err := s.listRoutes(r, p)
	return reply(w, http.StatusOK, vs, err)
}

func (s *Server) apiRouteGet(w http.ResponseWriter, r *http.Request, p *principal) error {
	v, err := s.ops.ShowRoute(r.Context(), r.PathValue("name"))
	asSeenBy(p, &v)
	return reply(w, http.StatusOK, v, err)
}

// listRoutes lists the routes as p may see them: a viewer gets each URL's
// origin only.
func (s *Server) listRoutes(r *http.Request, p *principal) ([]ops.RouteView, error) {
	vs, err := s.ops.ListRoutes(r.Context())
	eachAsSeenBy(p, vs)
	return vs, err
}

// routeBody is a forward route as the API takes it (timeout as "10s").
type routeBody struct {
	Name             string `json:"name"`
	Provider         string `json:"provider"`
	EventType        string `json:"event_type"`
	URL              string `json:"url"`
	Secret           string `json:"secret"`
	OperationKeyPath string `json:"operation_key_path"`
	FetchCurrent     bool   `json:"fetch_current"`
	Timeout          string `json:"timeout"`
	RetryBudget      int    `json:"retry_budget"`
	ReplaceHandler   bool   `json:"replace_handler"`
	AllowPrivate     bool   `json:"allow_private"`
	Coalesce         bool   `json:"coalesce"`
	CoalesceMax      int    `json:"coalesce_max"`
	Reason           string `json:"reason"`
}

func parseTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, badRequest("timeout must be a duration such as 10s or 500ms (got %q)", v)
	}
	return d, nil
}

func (s *Server) apiRouteAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b routeBody
	if err := decode(r, &b); err != nil {
		return err
	}
	d, err := parseTimeout(b.Timeout)
	if err != nil {
		return err
	}
	v, err := s.ops.AddRoute(r.Context(), p.actor(), ops.RouteSpec{Name: b.Name, Provider: b.Provider, EventType: b.EventType,
		URL: b.URL, Secret: b.Secret, OperationKeyPath: b.OperationKeyPath, FetchCurrent: b.FetchCurrent, Timeout: d,
		RetryBudget: b.RetryBudget, ReplaceHandler: b.ReplaceHandler, AllowPrivate: b.AllowPrivate,
		Coalesce: b.Coalesce, CoalesceMax: b.CoalesceMax}, b.Reason)
	return reply(w, http.StatusCreated, v, err)
}

type routePatch struct {
	URL              *string `json:"url"`
	Secret           *string `json:"secret"`
	OperationKeyPath *string `json:"operation_key_path"`
	FetchCurrent     *bool   `json:"fetch_current"`
	Timeout          *string `json:"timeout"`
	RetryBudget      *int    `json:"retry_budget"`
	ReplaceHandler   *bool   `json:"replace_handler"`
	AllowPrivate     *bool   `json:"allow_private"`
	Enabled          *bool   `json:"enabled"`
	Coalesce         *bool   `json:"coalesce"`
	CoalesceMax      *int    `json:"coalesce_max"`
	Reason           string  `json:"reason"`
}

func (s *Server) apiRouteUpdate(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b routePatch
	if err := decode(r, &b); err != nil {
		return err
	}
	c := ops.RouteChange{URL: b.URL, Secret: b.Secret, OperationKeyPath: b.OperationKeyPath, FetchCurrent: b.FetchCurrent,
		RetryBudget: b.RetryBudget, ReplaceHandler: b.ReplaceHandler, AllowPrivate: b.AllowPrivate, Enabled: b.Enabled,
		Coalesce: b.Coalesce, CoalesceMax: b.CoalesceMax}
	if b.Timeout != nil {
		d, err := parseTimeout(*b.Timeout)
		if err != nil {
			return err
		}
		c.Timeout = &d
	}
	v, err := s.ops.UpdateRoute(r.Context(), p.actor(), r.PathValue("name"), c, b.Reason)
	return reply(w, http.StatusOK, v, err)
}

func (s *Server) apiRouteRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.ops.RemoveRoute(r.Context(), p.actor(), r.PathValue("name"), r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// routesPage is the console's forward routes page.
type routesPage struct {
	Routes    []ops.RouteView
	Providers []string
}

func (s *Server) webRoutesPage(w http.ResponseWriter, r *http.Request, p *principal) error {
	vs, err := s.listRoutes(r, p)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "routes", "Forward routes", routesPage{Routes: vs, Providers: providers.Names()})
}

func (s *Server) webRouteAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("bad form: %v", err)
	}
	f := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	d, err := parseTimeout(f("timeout"))
	if err != nil {
		return err
	}
	budget := 0
	if v := f("retry_budget"); v != "" {
		if budget, err = strconv.Atoi(v); err != nil {
			return badRequest("retry budget must be a whole number of attempts (got %q)", v)
		}
	}
	v, err := s.ops.AddRoute(r.Context(), p.actor(), ops.RouteSpec{Name: f("name"), Provider: f("provider"), EventType: f("event_type"),
		URL: f("url"), Secret: f("secret"), OperationKeyPath: f("operation_key_path"), FetchCurrent: f("fetch_current") == "on",
		Timeout: d, RetryBudget: budget, ReplaceHandler: f("replace_handler") == "on", AllowPrivate: f("allow_private") == "on"},
		f("reason"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/routes#"+url.PathEscape(v.Name), flashRouteAdded)
}

func (s *Server) webRouteState(w http.ResponseWriter, r *http.Request, p *principal) error {
	name := r.PathValue("name")
	on := r.PostFormValue("enabled") == "true"
	if _, err := s.ops.UpdateRoute(r.Context(), p.actor(), name, ops.RouteChange{Enabled: &on}, r.PostFormValue("reason")); err != nil {
		return err
	}
	flash := flashRoutePaused
	if on {
		flash = flashRouteEnabled
	}
	return redirect(w, r, "/routes#"+url.PathEscape(name), flash)
}

func (s *Server) webRouteRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	name := r.PathValue("name")
	if err := s.ops.RemoveRoute(r.Context(), p.actor(), name, r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/routes", flashRouteRemoved)
}
