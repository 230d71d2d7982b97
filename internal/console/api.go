package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/access"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

const (
	viewer   = access.TokenViewer
	operator = access.TokenOperator
	admin    = access.TokenAdmin
)

var inboxParams = []string{"status", "provider", "account", "workspace", "endpoint", "type", "resource", "since", "older_than", "from", "to", "limit", "cursor"}

func (s *Server) apiRoutes() []route {
	return []route{
		{api: true, method: "GET", pattern: "/api/openapi.json", summary: "This document: every route with its least role", h: s.apiOpenAPI},
		{api: true, method: "GET", pattern: "/api/whoami", role: viewer, summary: "The token's name and role", h: s.apiWhoami},
		{api: true, method: "GET", pattern: "/api/status", role: viewer, summary: "Pending, oldest pending age, exhausted, quarantine, outbox backlog, schedule health", h: s.apiStatus},
		{api: true, method: "GET", pattern: "/api/trends", role: viewer, summary: "The overview's trends: pending, handled per minute, exhausted and failed, quarantine, outbox; window=1h (by minute, the default) or 24h (by 15 minutes)", h: s.apiTrends, params: []string{"window"}},
		{api: true, method: "GET", pattern: "/api/inbox", role: viewer, summary: "Inbox events, newest first, filtered, one page (next_cursor continues)", h: s.apiInbox, params: inboxParams},
		{api: true, method: "GET", pattern: "/api/events/{key...}", role: viewer, summary: "One event: attempts, errors, workflow, operator acts; payload=true (operator) adds the raw body", h: s.apiEvent, params: []string{"payload"}},
		{api: true, method: "POST", pattern: "/api/replay", role: operator, summary: "Replay one event now: {key, reason, force}", h: s.apiReplayOne},
		{api: true, method: "POST", pattern: "/api/replays", role: operator, summary: "Bulk replay job: {filter | keys, reason, force, limit}; dry_run answers what would happen", h: s.apiReplayJob},
		{api: true, method: "GET", pattern: "/api/replays", role: viewer, summary: "Replay jobs, newest first", h: s.apiReplayJobs, params: []string{"limit"}},
		{api: true, method: "GET", pattern: "/api/replays/{id}", role: viewer, summary: "One replay job and its progress", h: s.apiReplayJobGet},
		{api: true, method: "POST", pattern: "/api/replays/{id}/cancel", role: operator, summary: "Cancel a replay job (after its current event)", h: s.apiReplayJobCancel},
		{api: true, method: "GET", pattern: "/api/quarantine", role: viewer, summary: "Quarantine entries, newest first (open unless all=true)", h: s.apiQuarantine, params: []string{"reason", "endpoint", "all", "limit"}},
		{api: true, method: "GET", pattern: "/api/quarantine/{id}", role: viewer, summary: "One quarantine entry with kept headers; payload=true (operator) adds the body", h: s.apiQuarantineGet, params: []string{"payload"}},
		{api: true, method: "POST", pattern: "/api/quarantine/{id}/resolve", role: operator, summary: "Re-admit or discard one entry: {action, reason}", h: s.apiQuarantineResolveOne},
		{api: true, method: "POST", pattern: "/api/quarantine/resolve", role: operator, summary: "Re-admit or discard several entries: {ids, action, reason}", h: s.apiQuarantineResolve},
		{api: true, method: "GET", pattern: "/api/outbox", role: viewer, summary: "Outbox rows, newest first", h: s.apiOutbox, params: []string{"status", "limit"}},
		{api: true, method: "GET", pattern: "/api/outbox/{id}", role: viewer, summary: "One outbox row, its workflow and operator acts; payload=true (operator) adds the payload (recipient, message)", h: s.apiOutboxGet, params: []string{"payload"}},
		{api: true, method: "POST", pattern: "/api/outbox/{id}/release", role: operator, summary: "Send a held_for_review or failed row again: {reason}", h: s.apiOutboxRelease},
		{api: true, method: "GET", pattern: "/api/endpoints", role: viewer, summary: "Endpoints with secret and API key fingerprints (never values)", h: s.apiEndpoints},
		{api: true, method: "GET", pattern: "/api/endpoints/{slug}", role: viewer, summary: "One endpoint", h: s.apiEndpointGet},
		{api: true, method: "POST", pattern: "/api/endpoints", role: admin, summary: "Register an endpoint: {slug, provider, environment, secrets, secret_accounts, account, api_base_url, api_key, allow_custom_api_host, settings, reason}", h: s.apiEndpointAdd},
		{api: true, method: "PATCH", pattern: "/api/endpoints/{slug}", role: admin, summary: "Change account, api_base_url (with api_key again; allow_custom_api_host for a host other than the provider's API), api_key or paths (null/absent: unchanged, \"\": cleared)", h: s.apiEndpointUpdate},
		{api: true, method: "DELETE", pattern: "/api/endpoints/{slug}", role: admin, summary: "Remove an endpoint (its inbox rows stay)", h: s.apiEndpointRemove, params: []string{"reason"}},
		{api: true, method: "POST", pattern: "/api/endpoints/{slug}/links", role: admin, summary: "Map a source account to a workspace: {account, workspace, reason}", h: s.apiEndpointLink},
		{api: true, method: "DELETE", pattern: "/api/endpoints/{slug}/links/{account}", role: admin, summary: "Remove an account mapping", h: s.apiEndpointUnlink, params: []string{"reason"}},
		{api: true, method: "POST", pattern: "/api/endpoints/{slug}/secrets", role: admin, summary: "Rotate: add a signing secret {secret, accounts, retire_others, reason}; answers its fingerprint", h: s.apiSecretAdd},
		{api: true, method: "PUT", pattern: "/api/endpoints/{slug}/secrets/{id}/accounts", role: admin, summary: "Bind a signing secret to the source accounts it may sign for: {accounts, reason} (empty: any linked account)", h: s.apiSecretBind},
		{api: true, method: "DELETE", pattern: "/api/endpoints/{slug}/secrets/{id}", role: admin, summary: "Remove a signing secret (never the last)", h: s.apiSecretRemove, params: []string{"reason"}},
		{api: true, method: "PUT", pattern: "/api/endpoints/{slug}/account", role: admin, summary: "Name the endpoint's own account, the source account of its events that name none: {account, reason} (\"\": none); answers where those events go", h: s.apiEndpointOwnAccount},
		{api: true, method: "GET", pattern: "/api/workspaces", role: viewer, summary: "Workspaces: credits, access, links, destinations", h: s.apiWorkspaces, params: []string{"limit"}},
		{api: true, method: "GET", pattern: "/api/workspaces/{id}", role: viewer, summary: "One workspace", h: s.apiWorkspaceGet},
		{api: true, method: "PUT", pattern: "/api/workspaces/{id}/email", role: admin, summary: "Set the confirmation email: {email, reason}", h: s.apiWorkspaceEmail},
		{api: true, method: "POST", pattern: "/api/workspaces/{id}/adjustments", role: admin, summary: "Correct the credits balance once per operation id: {credits, operation_id, reason, policy}; 201 adjusted, 200 already applied, 409 the id was used for another correction", h: s.apiWorkspaceAdjust},
		{api: true, method: "POST", pattern: "/api/workspaces/{id}/erase", role: admin, summary: "Redact every stored payload and email address of the workspace (keys, records and balances stay): {reason}; answers the counts", h: s.apiWorkspaceErase},
		{api: true, method: "POST", pattern: "/api/secrets/reseal", role: admin, summary: "Re-encrypt every stored secret under the keyring's current key (after a key rotation): {reason}; answers the counts", h: s.apiSecretsReseal},
		{api: true, method: "GET", pattern: "/api/schedules", role: viewer, summary: "The Temporal Schedules: interval, paused, last and next run", h: s.apiSchedules},
		{api: true, method: "POST", pattern: "/api/schedules/{name}/{act}", role: operator, summary: "act = pause, unpause or trigger: {note}", h: s.apiScheduleAct},
		{api: true, method: "GET", pattern: "/api/explain/{kind}/{ref...}", role: viewer, summary: "Lineage of an effect: kind grant, subscription, alert, outbox, resource or event", h: s.apiExplain},
		{api: true, method: "GET", pattern: "/api/audit", role: viewer, summary: "Operator acts, newest first", h: s.apiAudit, params: []string{"actor", "action", "limit"}},
	}
}

func (s *Server) apiWhoami(w http.ResponseWriter, _ *http.Request, p *principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"name": p.token.Name, "role": p.token.Role})
	return nil
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request, _ *principal) error {
	writeJSON(w, http.StatusOK, s.ops.Status(r.Context()))
	return nil
}

func (s *Server) apiTrends(w http.ResponseWriter, r *http.Request, _ *principal) error {
	v, err := s.ops.Trends(r.Context(), r.URL.Query().Get("window"))
	return reply(w, http.StatusOK, v, err)
}

// queryInt reads an integer query parameter (def when absent).
func queryInt(q url.Values, name string, def int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest("%s must be a whole number (got %q)", name, v)
	}
	return n, nil
}

func queryBool(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("%s must be true or false (got %q)", name, v)
	}
	return b, nil
}

// inboxFilter reads the inbox filters of a query (the API's and the
// console's search form alike).
func inboxFilter(q url.Values, defLimit int) (inbox.InboxFilter, error) {
	f := inbox.InboxFilter{Provider: q.Get("provider"), Account: q.Get("account"), Workspace: q.Get("workspace"),
		Endpoint: q.Get("endpoint"), EventType: q.Get("type"), Resource: q.Get("resource")}
	for _, v := range q["status"] {
		for _, st := range strings.Split(v, ",") {
			if st = strings.TrimSpace(st); st != "" {
				f.Statuses = append(f.Statuses, st)
			}
		}
	}
	var err error
	if v := q.Get("since"); v != "" {
		if f.Since, err = ops.ParseAge(v); err != nil {
			return f, err
		}
	}
	if v := q.Get("older_than"); v != "" {
		if f.OlderThan, err = ops.ParseAge(v); err != nil {
			return f, err
		}
	}
	if v := q.Get("from"); v != "" {
		if f.From, err = ops.ParseTime(v); err != nil {
			return f, err
		}
	}
	if v := q.Get("to"); v != "" {
		if f.To, err = ops.ParseTime(v); err != nil {
			return f, err
		}
	}
	if f.Limit, err = queryInt(q, "limit", defLimit); err != nil {
		return f, err
	}
	return f, ops.ValidateInboxFilter(f)
}

// filterParams keeps the inbox filters of q that are set, without the
// listing's cursor and limit: what a bulk replay of the listing selects.
func filterParams(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range inboxParams {
		if k != "cursor" && k != "limit" && q.Get(k) != "" {
			out[k] = q[k]
		}
	}
	return out
}

// replayFilter reads a bulk replay's filter from q (which it changes): the
// filters are checked as a listing's, then the job takes up to limit events.
func replayFilter(q url.Values, limit int) (inbox.InboxFilter, error) {
	q.Set("limit", "1")
	f, err := inboxFilter(q, 1)
	if err != nil {
		return f, err
	}
	f.Limit = limit
	return f, nil
}

func (s *Server) apiInbox(w http.ResponseWriter, r *http.Request, _ *principal) error {
	q := r.URL.Query()
	f, err := inboxFilter(q, 50)
	if err != nil {
		return err
	}
	page, err := s.ops.ListInbox(r.Context(), f, q.Get("cursor"))
	return reply(w, http.StatusOK, page, err)
}

func parseEventKey(raw string) (keys.Event, error) {
	k, err := keys.ParseEvent(raw)
	if err != nil {
		return k, badRequest("event key must be provider/account/environment/event_id (escape '/' inside a part as %%2F, and '%%' as %%25): %v", err)
	}
	return k, nil
}

// wantPayload reads ?payload=true, which needs the operator role.
func wantPayload(r *http.Request, p *principal) (bool, error) {
	want, err := queryBool(r.URL.Query(), "payload")
	if err != nil {
		return false, err
	}
	if want && !p.can(operator) {
		return false, &statusError{http.StatusForbidden, "payloads are access-restricted: reading one needs the operator role"}
	}
	return want, nil
}

// showEvent reads the event whose key is in the path, with its payload when
// asked for and allowed (and logs who read it), for the API and the console.
func (s *Server) showEvent(r *http.Request, p *principal) (keys.Event, *ops.EventDetail, error) {
	k, err := parseEventKey(r.PathValue("key"))
	if err != nil {
		return k, nil, err
	}
	withPayload, err := wantPayload(r, p)
	if err != nil {
		return k, nil, err
	}
	d, err := s.ops.ShowEvent(r.Context(), k, withPayload)
	if err != nil {
		return k, nil, err
	}
	if withPayload {
		s.log.Info("payload read", "event_key", k.String(), "token", p.token.Name)
	}
	return k, d, nil
}

func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request, p *principal) error {
	_, d, err := s.showEvent(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

type replayOneBody struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
	Force  bool   `json:"force"`
}

func (s *Server) apiReplayOne(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b replayOneBody
	if err := decode(r, &b); err != nil {
		return err
	}
	k, err := parseEventKey(b.Key)
	if err != nil {
		return err
	}
	sum, err := s.ops.Replay(r.Context(), p.actor(), ops.ReplayRequest{Keys: []keys.Event{k}, Reason: b.Reason, Force: b.Force, Selection: "api: key"})
	return reply(w, http.StatusOK, sum, err)
}

// jobFilter is a bulk replay's filter in a request body.
type jobFilter struct {
	Statuses  []string `json:"status"`
	Provider  string   `json:"provider"`
	Account   string   `json:"account"`
	Workspace string   `json:"workspace"`
	Endpoint  string   `json:"endpoint"`
	Type      string   `json:"type"`
	Resource  string   `json:"resource"`
	Since     string   `json:"since"`
	OlderThan string   `json:"older_than"`
	From      string   `json:"from"`
	To        string   `json:"to"`
}

func (jf jobFilter) values() url.Values {
	q := url.Values{}
	for name, v := range map[string]string{"provider": jf.Provider, "account": jf.Account, "workspace": jf.Workspace,
		"endpoint": jf.Endpoint, "type": jf.Type, "resource": jf.Resource, "since": jf.Since, "older_than": jf.OlderThan,
		"from": jf.From, "to": jf.To} {
		if v != "" {
			q.Set(name, v)
		}
	}
	for _, st := range jf.Statuses {
		q.Add("status", st)
	}
	return q
}

type replayJobBody struct {
	Filter *jobFilter `json:"filter"`
	Keys   []string   `json:"keys"`
	Reason string     `json:"reason"`
	Force  bool       `json:"force"`
	DryRun bool       `json:"dry_run"`
	Limit  int        `json:"limit"`
}

func (b replayJobBody) request() (ops.ReplayRequest, error) {
	req := ops.ReplayRequest{Reason: b.Reason, Force: b.Force, DryRun: b.DryRun}
	if b.Filter != nil {
		limit := b.Limit
		if limit == 0 {
			limit = 1000
		}
		f, err := replayFilter(b.Filter.values(), limit)
		if err != nil {
			return req, err
		}
		req.Filter = &f
	}
	for _, raw := range b.Keys {
		k, err := parseEventKey(raw)
		if err != nil {
			return req, err
		}
		req.Keys = append(req.Keys, k)
	}
	return req, nil
}

func (s *Server) apiReplayJob(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b replayJobBody
	if err := decode(r, &b); err != nil {
		return err
	}
	req, err := b.request()
	if err != nil {
		return err
	}
	if req.DryRun {
		sum, err := s.ops.Replay(r.Context(), p.actor(), req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sum)
		return nil
	}
	j, err := s.ops.StartReplayJob(r.Context(), p.actor(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/replays/"+strconv.FormatInt(j.ID, 10))
	writeJSON(w, http.StatusAccepted, j)
	return nil
}

func (s *Server) apiReplayJobs(w http.ResponseWriter, r *http.Request, _ *principal) error {
	limit, err := queryInt(r.URL.Query(), "limit", 50)
	if err != nil {
		return err
	}
	js, err := s.ops.ReplayJobs(r.Context(), limit)
	return reply(w, http.StatusOK, js, err)
}

func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest("%s must be a positive whole number (got %q)", name, v)
	}
	return id, nil
}

func (s *Server) apiReplayJobGet(w http.ResponseWriter, r *http.Request, _ *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	j, err := s.ops.ReplayJob(r.Context(), id)
	return reply(w, http.StatusOK, j, err)
}

func (s *Server) apiReplayJobCancel(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	j, err := s.ops.CancelReplayJob(r.Context(), p.actor(), id)
	return reply(w, http.StatusOK, j, err)
}

func quarantineFilter(q url.Values) (inbox.QuarantineFilter, error) {
	f := inbox.QuarantineFilter{Reason: q.Get("reason"), Endpoint: q.Get("endpoint"), OpenOnly: true}
	all, err := queryBool(q, "all")
	if err != nil {
		return f, err
	}
	f.OpenOnly = !all
	if f.Limit, err = queryInt(q, "limit", 50); err != nil {
		return f, err
	}
	return f, ops.ValidateQuarantineFilter(f)
}

func (s *Server) apiQuarantine(w http.ResponseWriter, r *http.Request, _ *principal) error {
	f, err := quarantineFilter(r.URL.Query())
	if err != nil {
		return err
	}
	qs, err := s.ops.ListQuarantine(r.Context(), f)
	return reply(w, http.StatusOK, qs, err)
}

// showQuarantine reads the quarantine entry whose id is in the path, with its
// payload when asked for and allowed, for the API and the console.
func (s *Server) showQuarantine(r *http.Request, p *principal) (*ops.QuarantineDetail, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	withPayload, err := wantPayload(r, p)
	if err != nil {
		return nil, err
	}
	return s.ops.ShowQuarantine(r.Context(), id, withPayload)
}

func (s *Server) apiQuarantineGet(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.showQuarantine(r, p)
	return reply(w, http.StatusOK, d, err)
}

type resolveBody struct {
	IDs    []int64 `json:"ids"`
	Action string  `json:"action"`
	Reason string  `json:"reason"`
}

func (s *Server) apiQuarantineResolveOne(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var b resolveBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if len(b.IDs) > 0 {
		return badRequest("ids belong to POST /api/quarantine/resolve; this route resolves the entry in its path")
	}
	res, err := s.ops.ResolveQuarantine(r.Context(), p.actor(), []int64{id}, b.Action, b.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res[0])
	return nil
}

func (s *Server) apiQuarantineResolve(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b resolveBody
	if err := decode(r, &b); err != nil {
		return err
	}
	res, err := s.ops.ResolveQuarantine(r.Context(), p.actor(), b.IDs, b.Action, b.Reason)
	return reply(w, http.StatusOK, res, err)
}

func (s *Server) apiOutbox(w http.ResponseWriter, r *http.Request, _ *principal) error {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", 50)
	if err != nil {
		return err
	}
	rows, err := s.ops.ListOutbox(r.Context(), q.Get("status"), limit)
	return reply(w, http.StatusOK, rows, err)
}

func (s *Server) apiOutboxGet(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	withPayload, err := wantPayload(r, p)
	if err != nil {
		return err
	}
	o, err := s.ops.ShowOutbox(r.Context(), id, withPayload)
	if err == nil && withPayload {
		s.log.Info("payload read", "outbox_id", id, "token", p.token.Name)
	}
	return reply(w, http.StatusOK, o, err)
}

type reasonBody struct {
	Reason string `json:"reason"`
}

func (s *Server) apiOutboxRelease(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var b reasonBody
	if err := decode(r, &b); err != nil {
		return err
	}
	res, err := s.ops.ReleaseOutbox(r.Context(), p.actor(), id, b.Reason)
	return reply(w, http.StatusOK, res, err)
}

func (s *Server) apiEndpoints(w http.ResponseWriter, r *http.Request, _ *principal) error {
	eps, err := s.ops.ListEndpoints(r.Context())
	return reply(w, http.StatusOK, eps, err)
}

func (s *Server) apiEndpointGet(w http.ResponseWriter, r *http.Request, _ *principal) error {
	e, err := s.ops.ShowEndpoint(r.Context(), r.PathValue("slug"))
	return reply(w, http.StatusOK, e, err)
}

type endpointBody struct {
	Slug        string   `json:"slug"`
	Provider    string   `json:"provider"`
	Environment string   `json:"environment"`
	Secrets     []string `json:"secrets"`
	// SecretAccounts binds every secret to these source accounts.
	SecretAccounts []string              `json:"secret_accounts"`
	Account        string                `json:"account"`
	APIBaseURL     string                `json:"api_base_url"`
	APIKey         string                `json:"api_key"`
	Settings       keys.EndpointSettings `json:"settings"`
	// AllowCustomAPIHost lets api_base_url name a host other than the
	// provider's official API (audited).
	AllowCustomAPIHost bool   `json:"allow_custom_api_host"`
	Reason             string `json:"reason"`
}

func (s *Server) apiEndpointAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b endpointBody
	if err := decode(r, &b); err != nil {
		return err
	}
	e := endpoints.NewEndpoint{Slug: b.Slug, Provider: b.Provider, Environment: b.Environment, Account: b.Account,
		APIBaseURL: b.APIBaseURL, APIKey: b.APIKey, Settings: b.Settings, Secrets: b.Secrets, SecretAccounts: b.SecretAccounts,
		AllowCustomAPIHost: b.AllowCustomAPIHost}
	if err := s.ops.AddEndpoint(r.Context(), p.actor(), e, b.Reason); err != nil {
		return err
	}
	v, err := s.ops.ShowEndpoint(r.Context(), b.Slug)
	return reply(w, http.StatusCreated, v, err)
}

type endpointPatch struct {
	ops.EndpointChange
	Reason string `json:"reason"`
}

func (s *Server) apiEndpointUpdate(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b endpointPatch
	if err := decode(r, &b); err != nil {
		return err
	}
	v, err := s.ops.UpdateEndpoint(r.Context(), p.actor(), r.PathValue("slug"), b.EndpointChange, b.Reason)
	return reply(w, http.StatusOK, v, err)
}

func (s *Server) apiEndpointRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.ops.RemoveEndpoint(r.Context(), p.actor(), r.PathValue("slug"), r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type linkBody struct {
	Account   string `json:"account"`
	Workspace string `json:"workspace"`
	Reason    string `json:"reason"`
}

func (s *Server) apiEndpointLink(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b linkBody
	if err := decode(r, &b); err != nil {
		return err
	}
	slug := r.PathValue("slug")
	if _, err := s.ops.LinkAccount(r.Context(), p.actor(), slug, b.Account, b.Workspace, b.Reason); err != nil {
		return err
	}
	v, err := s.ops.ShowEndpoint(r.Context(), slug)
	return reply(w, http.StatusOK, v, err)
}

func (s *Server) apiEndpointUnlink(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.ops.UnlinkAccount(r.Context(), p.actor(), r.PathValue("slug"), r.PathValue("account"), r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type secretBody struct {
	ops.NewSecret
	Reason string `json:"reason"`
}

func (s *Server) apiSecretAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b secretBody
	if err := decode(r, &b); err != nil {
		return err
	}
	res, err := s.ops.AddSecret(r.Context(), p.actor(), r.PathValue("slug"), b.NewSecret, b.Reason)
	return reply(w, http.StatusCreated, res, err)
}

type bindBody struct {
	Accounts []string `json:"accounts"`
	Reason   string   `json:"reason"`
}

func (s *Server) apiSecretBind(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var b bindBody
	if err := decode(r, &b); err != nil {
		return err
	}
	slug := r.PathValue("slug")
	if err := s.ops.BindSecret(r.Context(), p.actor(), slug, id, b.Accounts, b.Reason); err != nil {
		return err
	}
	v, err := s.ops.ShowEndpoint(r.Context(), slug)
	return reply(w, http.StatusOK, v, err)
}

func (s *Server) apiSecretRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.ops.RemoveSecret(r.Context(), p.actor(), r.PathValue("slug"), id, r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) apiWorkspaces(w http.ResponseWriter, r *http.Request, _ *principal) error {
	limit, err := queryInt(r.URL.Query(), "limit", 200)
	if err != nil {
		return err
	}
	ws, err := s.ops.ListWorkspaces(r.Context(), limit)
	return reply(w, http.StatusOK, ws, err)
}

func (s *Server) apiWorkspaceGet(w http.ResponseWriter, r *http.Request, p *principal) error {
	v, err := s.ops.ShowWorkspace(r.Context(), r.PathValue("id"))
	if err == nil {
		asSeenBy(p, v)
	}
	return reply(w, http.StatusOK, v, err)
}

type emailBody struct {
	Email  string `json:"email"`
	Reason string `json:"reason"`
}

func (s *Server) apiWorkspaceEmail(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b emailBody
	if err := decode(r, &b); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.ops.SetWorkspaceEmail(r.Context(), p.actor(), id, b.Email, b.Reason); err != nil {
		return err
	}
	v, err := s.ops.ShowWorkspace(r.Context(), id)
	return reply(w, http.StatusOK, v, err)
}

type adjustBody struct {
	ops.WorkspaceAdjustment
}

func (s *Server) apiWorkspaceAdjust(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b adjustBody
	if err := decode(r, &b); err != nil {
		return err
	}
	a, err := s.ops.AdjustWorkspace(r.Context(), p.actor(), r.PathValue("id"), b.WorkspaceAdjustment)
	if err != nil {
		return err
	}
	code := http.StatusCreated
	if !a.Adjusted {
		code = http.StatusOK
	}
	writeJSON(w, code, a)
	return nil
}

func (s *Server) apiWorkspaceErase(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b reasonBody
	if err := decode(r, &b); err != nil {
		return err
	}
	res, err := s.ops.EraseWorkspace(r.Context(), p.actor(), r.PathValue("id"), b.Reason)
	return reply(w, http.StatusOK, res, err)
}

type ownAccountBody struct {
	Account *string `json:"account"`
	Reason  string  `json:"reason"`
}

func (s *Server) apiEndpointOwnAccount(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b ownAccountBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Account == nil {
		return badRequest(`account is required ("" removes the endpoint's own account)`)
	}
	v, err := s.ops.SetOwnAccount(r.Context(), p.actor(), r.PathValue("slug"), *b.Account, b.Reason)
	return reply(w, http.StatusOK, v, err)
}

func (s *Server) apiSecretsReseal(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b reasonBody
	if r.ContentLength != 0 {
		if err := decode(r, &b); err != nil {
			return err
		}
	}
	res, err := s.ops.Reseal(r.Context(), p.actor(), b.Reason)
	return reply(w, http.StatusOK, res, err)
}

func (s *Server) apiSchedules(w http.ResponseWriter, r *http.Request, _ *principal) error {
	sts, err := s.ops.ListSchedules(r.Context())
	return reply(w, http.StatusOK, sts, err)
}

type noteBody struct {
	Note string `json:"note"`
}

func (s *Server) apiScheduleAct(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b noteBody
	if r.ContentLength != 0 {
		if err := decode(r, &b); err != nil {
			return err
		}
	}
	name, act := r.PathValue("name"), r.PathValue("act")
	var out map[string]string
	switch act {
	case "pause", "unpause":
		id, note, err := s.ops.PauseSchedule(r.Context(), p.actor(), name, act == "pause", b.Note)
		if err != nil {
			return err
		}
		out = map[string]string{"id": id, "note": note, "state": act + "d"}
	case "trigger":
		id, run, err := s.ops.TriggerSchedule(r.Context(), p.actor(), name, b.Note)
		if err != nil {
			return err
		}
		out = map[string]string{"id": id, "workflow": run, "state": "triggered"}
	default:
		return &statusError{http.StatusNotFound, "act must be pause, unpause or trigger"}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiExplain(w http.ResponseWriter, r *http.Request, _ *principal) error {
	l, err := s.ops.Explain(r.Context(), r.PathValue("kind"), r.PathValue("ref"))
	return reply(w, http.StatusOK, l, err)
}

func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request, _ *principal) error {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", 100)
	if err != nil {
		return err
	}
	acts, err := s.ops.RecentActions(r.Context(), q.Get("actor"), q.Get("action"), limit)
	return reply(w, http.StatusOK, acts, err)
}

// reply writes v as JSON with status, unless err: the tail of every API
// handler that answers what one ops call returned.
func reply(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, status, v)
	return nil
}
