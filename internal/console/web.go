package console

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
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
	Title string
	Who   string
	Role  string
	CSRF  string
	// PreCSRF is the pre-session CSRF token of the sign-in and sign-out
	// forms (their login_csrf field; the same value is in a cookie).
	PreCSRF string
	Flash   string
	Active  string
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
	pg := page{Title: title, Flash: flashes[r.URL.Query().Get("flash")], Active: name, Data: data, PreCSRF: s.preSession(w, r)}
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

// flashes are the notices a redirect may ask the next page to show
// (?flash=ID): fixed texts by id, so a crafted link cannot make the
// console say anything it would not.
var flashes = map[string]string{
	flashReplayed:            "Replayed: the event is pending again and its workflow was signalled.",
	flashReplayedUnsignalled: "Replayed: the event is pending again. Temporal did not answer; the sweeper will deliver it.",
	flashAlreadyPending:      "Already pending: its workflow was signalled again.",
	flashPendingUnsignalled:  "Already pending. Temporal did not answer; the sweeper will deliver it.",
	flashJobQueued:           "Replay job queued.",
	flashCancelRequested:     "Cancel requested.",
	flashResolved:            "Resolved.",
	flashOutboxReleased:      "Released: the row will be sent again (audited).",
	flashEndpointUpdated:     "Endpoint updated.",
	flashSecretAdded:         "Secret added: its fingerprint is below.",
	flashSecretBound:         "The secret's accounts were changed.",
	flashRouteAdded:          "Forward route added: its types are routed within the route table's reload (HOOKINBOX_ENDPOINT_CACHE_TTL).",
	flashRoutePaused:         "Forward route paused: its events are held pending, nothing is sent.",
	flashRouteEnabled:        "Forward route enabled.",
	flashRouteRemoved:        "Forward route removed: its pending events stay pending until a route or handler takes their type.",
}

// Flash ids.
const (
	flashReplayed            = "replayed"
	flashReplayedUnsignalled = "replayed-unsignalled"
	flashAlreadyPending      = "already-pending"
	flashPendingUnsignalled  = "already-pending-unsignalled"
	flashJobQueued           = "job-queued"
	flashCancelRequested     = "cancel-requested"
	flashResolved            = "resolved"
	flashOutboxReleased      = "outbox-released"
	flashEndpointUpdated     = "endpoint-updated"
	flashSecretAdded         = "secret-added"
	flashSecretBound         = "secret-bound"
	flashRouteAdded          = "route-added"
	flashRoutePaused         = "route-paused"
	flashRouteEnabled        = "route-enabled"
	flashRouteRemoved        = "route-removed"
)

// redirect sends the browser to to (303), the next page showing the
// notice of flash id (none when "").
func redirect(w http.ResponseWriter, r *http.Request, to, flash string) error {
	if flash != "" {
		u, err := url.Parse(to)
		if err != nil {
			return err
		}
		q := u.Query()
		q.Set("flash", flash)
		u.RawQuery = q.Encode()
		to = u.String()
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

// safeNext keeps a post-login redirect on this site: a path of its own,
// nothing a browser could read as another host. Control bytes are refused
// (browsers strip tabs and newlines from URLs, so "/\t/evil.example" lands
// on //evil.example), and so is anything whose parse names a scheme or a
// host, or that starts with // or holds a backslash (which browsers read
// as a slash).
func safeNext(next string) string {
	if !localPath(next) {
		return "/"
	}
	u, err := url.Parse(next)
	// The decoded path must pass too: "/%09/evil.example" is harmless to a
	// browser, but not to every proxy or log reader in between.
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !localPath(u.Path) {
		return "/"
	}
	return next
}

// localPath reports whether p is a path of this site: a leading slash, no
// second one after it, no backslash, no control byte.
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Contains(p, `\`) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return false
		}
	}
	return true
}

// preSession returns the pre-session CSRF token of r's browser, setting
// its cookie when the browser has none yet.
func (s *Server) preSession(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(s.cookie(preCookieName)); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	v := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: s.cookie(preCookieName), Value: v, Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode})
	return v
}

// checkPreSession refuses a sign-in or sign-out form whose login_csrf
// field is not the browser's pre-session cookie: posted from another site
// (login CSRF: signing the victim in as the attacker; or signing them out).
func (s *Server) checkPreSession(r *http.Request) error {
	c, err := r.Cookie(s.cookie(preCookieName))
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("login_csrf"))) != 1 {
		return &statusError{http.StatusForbidden, "the form expired or came from another site: reload the page"}
	}
	return nil
}

func (s *Server) webLoginPost(w http.ResponseWriter, r *http.Request, _ *principal) error {
	if err := s.checkPreSession(r); err != nil {
		return err
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	give, ok := s.attempts.take(r)
	if !ok {
		s.log.Info("console login refused: too many attempts", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", retryAfter())
		return s.render(w, r, nil, http.StatusTooManyRequests, "login", "Sign in",
			map[string]string{"Next": next, "Error": "Too many failed attempts from this address: wait a minute."})
	}
	t, err := s.ops.Authenticate(r.Context(), tok)
	if err == nil {
		give()
	}
	if err != nil {
		s.log.Info("console login refused", "remote", r.RemoteAddr)
		return s.render(w, r, nil, http.StatusUnauthorized, "login", "Sign in",
			map[string]string{"Next": next, "Error": "That token is unknown or revoked."})
	}
	session, err := s.ops.StartSession(r.Context(), t, s.sessionTTL)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie(cookieName), Value: session, Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(s.sessionTTL.Seconds())})
	s.log.Info("console login", "token", t.Name, "role", t.Role)
	return redirect(w, r, next, "")
}

func (s *Server) webLogout(w http.ResponseWriter, r *http.Request, _ *principal) error {
	if err := s.checkPreSession(r); err != nil {
		return err
	}
	if c, err := r.Cookie(s.cookie(cookieName)); err == nil {
		if err := s.ops.EndSession(r.Context(), c.Value); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie(cookieName), Value: "", Path: "/", HttpOnly: true, Secure: s.secure,
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
	pending := len(sum.Events) == 1 && sum.Events[0].Result == ops.ResultAlreadyPending
	msg := flashReplayed
	switch {
	case pending && sum.SignalErr != "":
		msg = flashPendingUnsignalled
	case pending:
		msg = flashAlreadyPending
	case sum.SignalErr != "":
		msg = flashReplayedUnsignalled
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
	return redirect(w, r, "/replays/"+strconv.FormatInt(j.ID, 10), flashJobQueued)
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
	return redirect(w, r, "/replays/"+strconv.FormatInt(id, 10), flashCancelRequested)
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
	if len(failed) > 0 {
		// Said here rather than through a notice: the reasons are the
		// entries' own, which no link may carry.
		return &statusError{http.StatusConflict, fmt.Sprintf("%d entr(ies) resolved. Not resolved (still open): %s",
			ok, strings.Join(failed, "; "))}
	}
	back := "/quarantine"
	if len(ids) == 1 {
		back = "/quarantine/" + strconv.FormatInt(ids[0], 10)
	}
	return redirect(w, r, back, flashResolved)
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
	if _, err := s.ops.ReleaseOutbox(r.Context(), p.actor(), id, r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/outbox", flashOutboxReleased)
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
	c.AllowCustomAPIHost = r.PostFormValue("allow_custom_api_host") == "on"
	slug := r.PathValue("slug")
	if _, err := s.ops.UpdateEndpoint(r.Context(), p.actor(), slug, c, r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), flashEndpointUpdated)
}

func (s *Server) webSecretAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	slug := r.PathValue("slug")
	if _, err := s.ops.AddSecret(r.Context(), p.actor(), slug, ops.NewSecret{Secret: r.PostFormValue("secret"),
		Accounts: ops.ParseAccounts(r.PostFormValue("accounts")), RetireOthers: r.PostFormValue("retire_others") == "on"},
		r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), flashSecretAdded)
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
	return redirect(w, r, "/endpoints#"+url.PathEscape(slug), flashSecretBound)
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
