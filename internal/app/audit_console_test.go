package app_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// auditConsole is the operator console and API as `hookinbox console`
// runs it, on a fresh database, with a token per role.
type auditConsole struct {
	ctx    context.Context
	cfg    config.Config
	owner  *store.Store // the schema owner's store, for fixtures and checks
	svc    *ops.Service
	url    string
	tokens map[string]string // role → token
	logs   *syncBuffer
}

// syncBuffer is the console's log, read by the tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type consoleOptions struct {
	configure func(*config.Config)
}

func startAuditConsole(t *testing.T, o consoleOptions) *auditConsole {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.SecretsKey = testenv.SecretsKey()
	cfg.TemporalAddress = "127.0.0.1:1" // replays ring no workflow here: the sweeper's job
	// As `hookinbox console` opens them: its own role, and payloads on a
	// pool of their own.
	cfg.ConsoleDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RoleConsole)
	cfg.PayloadDatabaseURL = testenv.RoleURL(t, cfg.DatabaseURL, store.RolePayloadReader)
	if o.configure != nil {
		o.configure(&cfg)
	}
	owner, err := store.Open(ctx, cfg.DatabaseURL, 4)
	require.NoError(t, err)
	owner.Keys = testenv.Keys(t)
	t.Cleanup(owner.Close)

	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := starter.DialLazy(cfg, log)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	p, err := app.OpenConsole(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	srv, err := app.NewConsole(cfg, p.Store, p.Payloads, c, log, app.Business{Routes: routestest.Builtin()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.RunConsole(rctx, srv, "", ln, log) }()
	t.Cleanup(func() { cancel(); <-done })

	a := &auditConsole{ctx: ctx, cfg: cfg, owner: owner, url: "http://" + ln.Addr().String(), tokens: map[string]string{}, logs: logs,
		svc: app.Operations(cfg, owner, c, log, app.Business{Routes: routestest.Builtin()})}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("console log:\n%s", logs.String())
		}
	})
	for _, role := range ops.Roles {
		nt, err := a.svc.CreateToken(ctx, ops.Actor{Name: "audit"}, role+"-token", role)
		require.NoError(t, err)
		a.tokens[role] = nt.Token
	}
	return a
}

// api calls the API as role ("" for no token) and returns the status and body.
func (a *auditConsole) api(t *testing.T, role, method, path string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+a.tokens[role])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// browser is a cookie-keeping client that does not follow redirects, as a
// test needs to see where the console sends the browser.
func (a *auditConsole) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// page GETs path with c and returns the status, body and response.
func (a *auditConsole) page(t *testing.T, c *http.Client, path string) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Get(a.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw), resp
}

// signIn signs c in with role's token through the login form (as a
// browser does: the login page first, then its form), asking to land on
// next; it returns the answer to the form.
func (a *auditConsole) signIn(t *testing.T, c *http.Client, role, next string) *http.Response {
	t.Helper()
	_, body, _ := a.page(t, c, "/login?next="+url.QueryEscape(next))
	form := url.Values{"token": {a.tokens[role]}, "next": {next}}
	for name, v := range hiddenFields(body) {
		if name != "next" {
			form.Set(name, v)
		}
	}
	resp, err := c.PostForm(a.url+"/login", form)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
