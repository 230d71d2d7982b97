package console

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// eventPath is the console page of an event (its key as one escaped segment).
func eventPath(key string) string { return "/events/" + url.PathEscape(key) }

var funcs = template.FuncMap{
	"time": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05")
		case *time.Time:
			if v == nil {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05")
		}
		return "-"
	},
	"age": func(t time.Time) string { return ops.FormatAge(time.Since(t)) },
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return d.Round(time.Second).String()
	},
	"eventURL":    eventPath,
	"resourceURL": func(r string) string { return "/resources/" + url.PathEscape(r) },
	"pathEscape":  url.PathEscape,
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"hex":     func(b []byte) string { return hex.EncodeToString(b) },
	"dash":    func(s string) string { return orDash(s) },
	"join":    strings.Join,
	"percent": func(n, total int) int { return percent(n, total) },
	"has":     func(list []string, v string) bool { return contains(list, v) },
}

func percent(n, total int) int {
	if total <= 0 {
		return 100
	}
	return min(100, n*100/total)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *Server) parseTemplates() error {
	s.pages = map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return fmt.Errorf("console template %s: %w", base, err)
		}
		s.pages[strings.TrimSuffix(base, ".html")] = t
	}
	return nil
}

// page is what every console page gets.
type page struct {
	Title  string
	Who    string
	Role   string
	CSRF   string
	Flash  string
	Active string
	// Operator and Admin say what the viewer may do (buttons are shown
	// accordingly; the handlers check again).
	Operator, Admin bool
	Data            any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, p *principal, code int, name, title string, data any) error {
	t, ok := s.pages[name]
	if !ok {
		return fmt.Errorf("no console page %q", name)
	}
	pg := page{Title: title, Flash: r.URL.Query().Get("flash"), Active: name, Data: data}
	if p != nil {
		pg.Who, pg.Role, pg.CSRF = p.token.Name, p.token.Role, p.csrf
		pg.Operator, pg.Admin = p.can(operator), p.can(admin)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, pg); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, err := w.Write(buf.Bytes())
	return err
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, p *principal, code int, msg string) {
	if err := s.render(w, r, p, code, "error", http.StatusText(code), map[string]any{"Code": code, "Message": msg}); err != nil {
		http.Error(w, msg, code)
	}
}

func redirect(w http.ResponseWriter, r *http.Request, to, flash string) error {
	if flash != "" {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "flash=" + url.QueryEscape(flash)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

func (s *Server) webRoutes() []route {
	return []route{
		{method: "GET", pattern: "/login", h: s.webLogin},
		{method: "POST", pattern: "/login", h: s.webLoginPost},
		{method: "POST", pattern: "/logout", h: s.webLogout},
		{method: "GET", pattern: "/{$}", role: viewer, h: s.webOverview},
		{method: "GET", pattern: "/inbox", role: viewer, h: s.webInbox},
		{method: "GET", pattern: "/events/{key...}", role: viewer, h: s.webEvent},
		{method: "POST", pattern: "/replay", role: operator, h: s.webReplayOne},
		{method: "POST", pattern: "/replays", role: operator, h: s.webReplayBulk},
		{method: "GET", pattern: "/replays", role: viewer, h: s.webReplays},
		{method: "GET", pattern: "/replays/{id}", role: viewer, h: s.webReplay},
		{method: "POST", pattern: "/replays/{id}/cancel", role: operator, h: s.webReplayCancel},
		{method: "GET", pattern: "/quarantine", role: viewer, h: s.webQuarantine},
		{method: "GET", pattern: "/quarantine/{id}", role: viewer, h: s.webQuarantineEntry},
		{method: "POST", pattern: "/quarantine/resolve", role: operator, h: s.webQuarantineResolve},
		{method: "GET", pattern: "/outbox", role: viewer, h: s.webOutbox},
		{method: "POST", pattern: "/outbox/{id}/release", role: operator, h: s.webOutboxRelease},
		{method: "GET", pattern: "/endpoints", role: viewer, h: s.webEndpoints},
		{method: "POST", pattern: "/endpoints/{slug}", role: admin, h: s.webEndpointUpdate},
		{method: "POST", pattern: "/endpoints/{slug}/secrets", role: admin, h: s.webSecretAdd},
		{method: "POST", pattern: "/endpoints/{slug}/secrets/bind", role: admin, h: s.webSecretBind},
		{method: "GET", pattern: "/resources/{key...}", role: viewer, h: s.webResource},
		{method: "GET", pattern: "/explain", role: viewer, h: s.webExplain},
		{method: "GET", pattern: "/audit", role: viewer, h: s.webAudit},
	}
}

func (s *Server) webLogin(w http.ResponseWriter, r *http.Request, _ *principal) error {
	return s.render(w, r, nil, http.StatusOK, "login", "Sign in", map[string]string{"Next": safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return "/"
	}
	return next
}

func (s *Server) webLoginPost(w http.ResponseWriter, r *http.Request, _ *principal) error {
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	t, err := s.ops.Authenticate(r.Context(), tok)
	if err != nil {
		s.log.Info("console login refused", "remote", r.RemoteAddr)
		return s.render(w, r, nil, http.StatusUnauthorized, "login", "Sign in",
			map[string]string{"Next": next, "Error": "That token is unknown or revoked."})
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds())})
	s.log.Info("console login", "token", t.Name, "role", t.Role)
	return redirect(w, r, next, "")
}

func (s *Server) webLogout(w http.ResponseWriter, r *http.Request, _ *principal) error {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	return redirect(w, r, "/login", "")
}

func (s *Server) webOverview(w http.ResponseWriter, r *http.Request, p *principal) error {
	st := s.ops.Status(r.Context())
	jobs, err := s.ops.ReplayJobs(r.Context(), 5)
	if err != nil {
		return err
	}
	data := map[string]any{"Status": st, "Jobs": jobs, "Windows": ops.TrendWindows, "WindowNames": trendWindowNames}
	// The trends, like the status, are shown when they can be read: a
	// failure is said on the page, not a failed page.
	tr, err := s.ops.Trends(r.Context(), r.URL.Query().Get("trends"))
	switch {
	case ops.IsInvalid(err):
		return err
	case err != nil:
		s.log.Error("console trends", "error", err.Error())
		data["TrendsError"] = "the trends could not be read (logged)"
	default:
		data["Trends"], data["Charts"] = tr, trendCharts(tr)
	}
	return s.render(w, r, p, http.StatusOK, "overview", "Overview", data)
}

func (s *Server) webInbox(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := r.URL.Query()
	data := map[string]any{"Q": q, "Statuses": ops.InboxStatuses, "Providers": ops.Providers()}
	f, err := inboxFilter(q, 50)
	if err != nil {
		data["Error"] = err.Error()
		return s.render(w, r, p, http.StatusBadRequest, "inbox", "Inbox", data)
	}
	page, err := s.ops.ListInbox(r.Context(), f, q.Get("cursor"))
	if err != nil {
		if ops.IsInvalid(err) {
			data["Error"] = err.Error()
			return s.render(w, r, p, http.StatusBadRequest, "inbox", "Inbox", data)
		}
		return err
	}
	data["Page"] = page
	data["Selected"] = f.Statuses
	data["Filtered"] = ops.FilterSelects(f)
	if page.NextCursor != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("cursor", page.NextCursor)
		data["Next"] = "/inbox?" + next.Encode()
	}
	// The bulk replay form carries the same filters.
	data["Hidden"] = filterParams(q)
	return s.render(w, r, p, http.StatusOK, "inbox", "Inbox", data)
}

func (s *Server) webEvent(w http.ResponseWriter, r *http.Request, p *principal) error {
	k, d, err := s.showEvent(r, p)
	if err != nil {
		return err
	}
	l, err := s.ops.Explain(r.Context(), ops.LineageEvent, k.String())
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "event", "Event "+k.EventID, map[string]any{"E": d, "L": l,
		"Payload": string(d.RawPayload), "Replayable": d.Status != keys.StatusPending && !d.Deleted})
}

func (s *Server) webReplayOne(w http.ResponseWriter, r *http.Request, p *principal) error {
	k, err := parseEventKey(r.PostFormValue("key"))
	if err != nil {
		return err
	}
	sum, err := s.ops.Replay(r.Context(), p.actor(), ops.ReplayRequest{Keys: []keys.Event{k}, Reason: r.PostFormValue("reason"),
		Force: r.PostFormValue("force") == "on", Selection: "console: key"})
	if err != nil {
		return err
	}
	msg := "Replayed: the event is pending again and its workflow was signalled."
	if len(sum.Events) == 1 && sum.Events[0].Result == ops.ResultAlreadyPending {
		msg = "Already pending: its workflow was signalled again."
	}
	if sum.SignalErr != "" {
		msg += " Temporal did not answer; the sweeper will deliver it."
	}
	return redirect(w, r, eventPath(k.String()), msg)
}

func (s *Server) webReplayBulk(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("bad form: %v", err)
	}
	f, err := replayFilter(filterParams(r.PostForm), 1000)
	if err != nil {
		return err
	}
	if v := r.PostFormValue("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return badRequest("max must be a whole number")
		}
		f.Limit = n
	}
	j, err := s.ops.StartReplayJob(r.Context(), p.actor(), ops.ReplayRequest{Filter: &f, Reason: r.PostFormValue("reason"),
		Force: r.PostFormValue("force") == "on"})
	if err != nil {
		return err
	}
	return redirect(w, r, "/replays/"+strconv.FormatInt(j.ID, 10), fmt.Sprintf("Replay job %d queued: %d event(s).", j.ID, j.Total))
}

func (s *Server) webReplays(w http.ResponseWriter, r *http.Request, p *principal) error {
	js, err := s.ops.ReplayJobs(r.Context(), 100)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "replays", "Replay jobs", js)
}

func (s *Server) webReplay(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	j, err := s.ops.ReplayJob(r.Context(), id)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "replay", fmt.Sprintf("Replay job %d", id), j)
}

func (s *Server) webReplayCancel(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := s.ops.CancelReplayJob(r.Context(), p.actor(), id); err != nil {
		return err
	}
	return redirect(w, r, "/replays/"+strconv.FormatInt(id, 10), "Cancel requested.")
}

func (s *Server) webQuarantine(w http.ResponseWriter, r *http.Request, p *principal) error {
	f, err := quarantineFilter(r.URL.Query())
	if err != nil {
		return err
	}
	qs, err := s.ops.ListQuarantine(r.Context(), f)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "quarantine", "Quarantine", map[string]any{"Entries": qs, "Q": r.URL.Query(),
		"Reasons": ops.QuarantineReasons, "All": !f.OpenOnly})
}

func (s *Server) webQuarantineEntry(w http.ResponseWriter, r *http.Request, p *principal) error {
	d, err := s.showQuarantine(r, p)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "quarantine_entry", fmt.Sprintf("Quarantine %d", d.ID), map[string]any{"Q": d, "Payload": string(d.RawPayload)})
}

func (s *Server) webQuarantineResolve(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("bad form: %v", err)
	}
	var ids []int64
	for _, v := range r.PostForm["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return badRequest("quarantine ids are whole numbers (got %q)", v)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return badRequest("select at least one entry")
	}
	res, err := s.ops.ResolveQuarantine(r.Context(), p.actor(), ids, r.PostFormValue("action"), r.PostFormValue("reason"))
	if err != nil {
		return err
	}
	ok, failed := 0, []string{}
	for _, x := range res {
		if x.Error != "" {
			failed = append(failed, fmt.Sprintf("#%d: %s", x.ID, x.Error))
		} else {
			ok++
		}
	}
	msg := fmt.Sprintf("%d entr(ies) resolved.", ok)
	if len(failed) > 0 {
		msg += " Not resolved (still open): " + strings.Join(failed, "; ")
	}
	back := "/quarantine"
	if len(ids) == 1 {
		back = "/quarantine/" + strconv.FormatInt(ids[0], 10)
	}
	return redirect(w, r, back, msg)
}

func (s *Server) webOutbox(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := r.URL.Query()
	rows, err := s.ops.ListOutbox(r.Context(), q.Get("status"), 100)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "outbox", "Outbox", map[string]any{"Rows": rows, "Status": q.Get("status"), "Statuses": ops.OutboxStatuses})
}

func (s *Server) webOutboxRelease(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	res, err := s.ops.ReleaseOutbox(r.Context(), p.actor(), id, r.PostFormValue("reason"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/outbox", fmt.Sprintf("Outbox #%d released (audit #%d).", res.ID, res.AuditID))
}

func (s *Server) webEndpoints(w http.ResponseWriter, r *http.Request, p *principal) error {
	eps, err := s.ops.ListEndpoints(r.Context())
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "endpoints", "Endpoints", eps)
}

func (s *Server) webEndpointUpdate(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("bad form: %v", err)
	}
	var c ops.EndpointChange
	field := func(name string) *string {
		v, ok := r.PostForm[name]
		if !ok || (name == "api_key" && v[0] == "") {
			return nil // an empty API key field leaves the key as it is
		}
		s := strings.TrimSpace(v[0])
		return &s
	}
	c.Account, c.APIBaseURL, c.APIKey = field("account"), field("api_base_url"), field("api_key")
	c.TypePath, c.ResourcePath, c.AccountPath = field("type_path"), field("resource_path"), field("account_path")
	c.ResourceKind, c.VersionPath = field("resource_kind"), field("version_path")
	slug := r.PathValue("slug")
	if _, err := s.ops.UpdateEndpoint(r.Context(), p.actor(), slug, c, r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), "Endpoint "+slug+" updated.")
}

func (s *Server) webSecretAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	slug := r.PathValue("slug")
	res, err := s.ops.AddSecret(r.Context(), p.actor(), slug, ops.NewSecret{Secret: r.PostFormValue("secret"),
		Accounts: ops.ParseAccounts(r.PostFormValue("accounts")), RetireOthers: r.PostFormValue("retire_others") == "on"},
		r.PostFormValue("reason"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), fmt.Sprintf("Secret #%d (%s) added to %s.", res.ID, res.Fingerprint, slug))
}

func (s *Server) webSecretBind(w http.ResponseWriter, r *http.Request, p *principal) error {
	slug := r.PathValue("slug")
	id, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("id")), 10, 64)
	if err != nil {
		return ops.Invalidf("secret id must be a number")
	}
	accounts := ops.ParseAccounts(r.PostFormValue("accounts"))
	if err := s.ops.BindSecret(r.Context(), p.actor(), slug, id, accounts, r.PostFormValue("reason")); err != nil {
		return err
	}
	to := "any linked account"
	if len(accounts) > 0 {
		to = strings.Join(accounts, ", ")
	}
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), fmt.Sprintf("Secret #%d of %s may sign for %s.", id, slug, to))
}

func (s *Server) webResource(w http.ResponseWriter, r *http.Request, p *principal) error {
	l, err := s.ops.Explain(r.Context(), ops.LineageResource, r.PathValue("key"))
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "lineage", "Lineage of "+l.Resource.Kind+" "+l.Resource.ID, map[string]any{"L": l})
}

func (s *Server) webExplain(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := r.URL.Query()
	data := map[string]any{"Kinds": ops.LineageKinds, "Kind": q.Get("kind"), "Ref": q.Get("ref")}
	if q.Get("ref") == "" {
		return s.render(w, r, p, http.StatusOK, "lineage", "Explain an effect", data)
	}
	l, err := s.ops.Explain(r.Context(), q.Get("kind"), q.Get("ref"))
	if err != nil {
		if ops.IsInvalid(err) || ops.IsNotFound(err) {
			data["Error"] = err.Error()
			return s.render(w, r, p, http.StatusOK, "lineage", "Explain an effect", data)
		}
		return err
	}
	data["L"] = l
	return s.render(w, r, p, http.StatusOK, "lineage", "Lineage", data)
}

func (s *Server) webAudit(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := r.URL.Query()
	acts, err := s.ops.RecentActions(r.Context(), q.Get("actor"), q.Get("action"), 200)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "audit", "Operator acts", map[string]any{"Acts": acts, "Q": q})
}
