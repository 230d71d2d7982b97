package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store/access"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	Ops    *ops.Service
	Logger *slog.Logger
	// SecureCookies marks the cookies Secure and names them with the
	// __Host- prefix (the console is served over TLS, e.g. behind a proxy).
	SecureCookies bool
	// SessionTTL is how long a sign-in lasts (default 12h,
	// HOOKINBOX_CONSOLE_SESSION_TTL).
	SessionTTL time.Duration
}

// Server is the operator API and console.
type Server struct {
	ops        *ops.Service
	log        *slog.Logger
	secure     bool
	sessionTTL time.Duration
	pages      map[string]*template.Template
	routes     []route
	mux        *http.ServeMux
	// attempts limits each client's credential attempts.
	attempts *attempts
}

// principal is who a request acts as.
type principal struct {
	token *access.APIToken
	// session is the console session's id ("" for a bearer token); csrf
	// is its forms' token.
	session, csrf string
}

func (p *principal) actor() ops.Actor { return ops.Actor{Name: p.token.Name} }

func (p *principal) can(role string) bool { return p != nil && ops.RoleAtLeast(p.token.Role, role) }

// originCutter is a view whose URLs can be cut to their origins.
type originCutter interface{ OriginsOnly() }

// asSeenBy cuts each view to its URLs' origins unless p is an operator or
// more: a destination's or a receiver's path and query may carry its token.
func asSeenBy(p *principal, vs ...originCutter) {
	if p.can(operator) {
		return
	}
	for _, v := range vs {
		v.OriginsOnly()
	}
}

// eachAsSeenBy is asSeenBy for every view of a listing.
func eachAsSeenBy[V any, PV interface {
	*V
	originCutter
}](p *principal, vs []V) {
	for i := range vs {
		asSeenBy(p, PV(&vs[i]))
	}
}

// handler serves one route; a returned error becomes the response.
type handler func(w http.ResponseWriter, r *http.Request, p *principal) error

// route is one API or console route and its least role ("" is public).
type route struct {
	method, pattern, role, summary string
	// api routes answer JSON and take bearer tokens; console routes take
	// the login cookie (and a CSRF field on POST).
	api bool
	h   handler
	// params documents query parameters (OpenAPI).
	params []string
}

const (
	// cookieName is the session cookie, __Host- prefixed under TLS
	// (Server.cookie); it holds a random session id, never the token.
	cookieName = "hookinbox_session"
	// preCookieName is the pre-session CSRF cookie of the sign-in and
	// sign-out forms (double-submitted as their login_csrf field).
	preCookieName = "hookinbox_presession"
	// maxBodyBytes bounds an API request's body (413 above).
	maxBodyBytes = 1 << 20
	// maxFormBytes bounds a console form: the largest, a bulk resolution
	// of a thousand quarantine ids, is a few KiB.
	maxFormBytes = 256 << 10
)

// parseForm reads a console form, already bounded by maxFormBytes: a body
// over it is a *http.MaxBytesError (413); no file of a multipart form is
// kept on disk.
func parseForm(r *http.Request) error {
	var err error
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		err = r.ParseMultipartForm(maxFormBytes) //nolint:gosec // bounded: wrap's MaxBytesReader (maxFormBytes) is already on the body
		if r.MultipartForm != nil {
			_ = r.MultipartForm.RemoveAll() // the console takes no files
		}
	} else {
		err = r.ParseForm()
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	if err != nil {
		return badRequest("bad form: %v", err)
	}
	return nil
}

// New builds the server and its routes.
func New(o Options) (*Server, error) {
	s := &Server{ops: o.Ops, log: o.Logger, secure: o.SecureCookies, sessionTTL: o.SessionTTL, mux: http.NewServeMux(),
		attempts: newAttempts()}
	if s.sessionTTL <= 0 {
		s.sessionTTL = 12 * time.Hour
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	s.routes = append(append(append(s.apiRoutes(), s.webRoutes()...), s.forwardRoutes()...), s.notificationRoutes()...)
	for _, rt := range s.routes {
		s.mux.HandleFunc(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("Cache-Control", "no-store")
		s.mux.ServeHTTP(w, r)
	})
}

// RunJobs carries out replay jobs until ctx ends.
func (s *Server) RunJobs(ctx context.Context) { s.ops.RunReplayJobs(ctx, time.Second) }

// csrfToken is the form token of a session: derived from its secret id,
// so a page of another site, which cannot read the cookie, cannot know it.
func csrfToken(session string) string {
	h := sha256.Sum256([]byte("hookinbox-console-csrf:" + session))
	return hex.EncodeToString(h[:16])
}

// cookie is the name of a console cookie: with the __Host- prefix under
// TLS, so no other host of the domain can set or shadow it.
func (s *Server) cookie(name string) string {
	if s.secure {
		return "__Host-" + name
	}
	return name
}

// authenticate finds the request's principal: a bearer token for the API,
// the login cookie for the console.
func (s *Server) authenticate(r *http.Request, api bool) (*principal, error) {
	var tok, session string
	if h := r.Header.Get("Authorization"); h != "" {
		b, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, ops.ErrBadToken
		}
		tok = strings.TrimSpace(b)
	} else if c, err := r.Cookie(s.cookie(cookieName)); err == nil && (!api || r.Method == http.MethodGet) {
		// The API reads with the console's cookie (same origin); it
		// changes state only with a bearer token (no CSRF by cookie).
		session = c.Value
	}
	if tok == "" && session == "" {
		return nil, ops.ErrBadToken
	}
	give, ok := s.attempts.take(r)
	if !ok {
		return nil, errTooManyAttempts
	}
	var t *access.APIToken
	var err error
	if session != "" {
		t, err = s.ops.SessionToken(r.Context(), session)
	} else {
		t, err = s.ops.Authenticate(r.Context(), tok)
	}
	if err != nil {
		return nil, err
	}
	give() // a good credential costs nothing
	p := &principal{token: t}
	if session != "" {
		p.session, p.csrf = session, csrfToken(session)
	}
	return p, nil
}

// errTooManyAttempts: the client presented too many bad credentials lately.
var errTooManyAttempts = &statusError{http.StatusTooManyRequests,
	"too many failed sign-in attempts from this address: wait a minute and try again"}

type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) wrap(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var p *principal
		var err error
		// Bounded before anything reads it: the form's CSRF check below
		// parses the body, and a JSON handler decodes it.
		limit := int64(maxBodyBytes)
		if !rt.api {
			limit = maxFormBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !rt.api && r.Method == http.MethodPost {
			err = parseForm(r)
		}
		if err == nil && rt.role != "" {
			p, err = s.authenticate(r, rt.api)
			switch {
			case errors.Is(err, errTooManyAttempts):
				w.Header().Set("Retry-After", retryAfter())
			case errors.Is(err, ops.ErrBadToken):
				if !rt.api && r.Method == http.MethodGet {
					http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				err = &statusError{http.StatusUnauthorized, "a valid API token is required (Authorization: Bearer hki_…)"}
			case err == nil && !p.can(rt.role):
				err = &statusError{http.StatusForbidden, fmt.Sprintf("this needs the %s role; token %q has %s", rt.role, p.token.Name, p.token.Role)}
			case err == nil && !rt.api && r.Method == http.MethodPost:
				if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(p.csrf)) != 1 {
					err = &statusError{http.StatusForbidden, "the form expired or came from another site: reload the page"}
				}
			}
		}
		if err == nil {
			err = rt.h(w, r, p)
		}
		if err != nil {
			s.fail(w, r, rt, p, err)
		}
		who := ""
		if p != nil {
			who = p.token.Name
		}
		s.log.Debug("console request", "method", r.Method, "route", rt.pattern, "token", who, "ms", time.Since(start).Milliseconds())
	}
}

// fail answers err: 400 bad input, 401/403 auth, 404 not found, 409 refused
// by the current state, 500 otherwise (logged; the answer says no more, as
// a database error may quote values).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, rt route, p *principal, err error) {
	code, msg := http.StatusInternalServerError, "internal error (logged)"
	var se *statusError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &se):
		code, msg = se.code, se.msg
	case errors.As(err, &mbe):
		code, msg = http.StatusRequestEntityTooLarge, "request body too large"
	case ops.IsInvalid(err):
		code, msg = http.StatusBadRequest, err.Error()
	case ops.IsNotFound(err):
		code, msg = http.StatusNotFound, err.Error()
	case ops.IsConflict(err):
		code, msg = http.StatusConflict, err.Error()
	case errors.Is(err, ops.ErrNoTemporal), errors.Is(err, secretbox.ErrNoKey):
		code, msg = http.StatusServiceUnavailable, err.Error()
	default:
		s.log.Error("console request failed", "method", r.Method, "route", rt.pattern, "error", err.Error())
	}
	if rt.api {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	s.renderError(w, r, p, code, msg)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// decode reads a JSON body strictly: unknown fields and trailing data are
// bad requests.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("request body must be a JSON object of this route's fields: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("request body must hold one JSON object")
	}
	return nil
}
