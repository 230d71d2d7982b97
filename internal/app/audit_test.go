package app_test

// The audit's findings (issue "Least privilege for the console too, and
// the audit's findings"), one attack per item, each played against the
// real component the item is about: the intake, the console and the
// operator API as app wires them, on a real PostgreSQL, real HTTP, a real
// Temporal dev server and its UI in a real Chromium. docs/security.md lists
// them (item → attack → test).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers/providertest"
	"github.com/hookinbox/hookinbox/starter"
)

// Item 8: a team destination that names an internal address in a form the
// guard did not know (NAT64, 6to4, IPv4-compatible IPv6, the reserved IPv4
// blocks) must be refused like the plain address, at dial time.
func TestAuditSSRFGuardRefusesEmbeddedAndReservedAddresses(t *testing.T) {
	t.Parallel()
	refused := []string{
		"64:ff9b::7f00:1",    // NAT64 of 127.0.0.1
		"64:ff9b::a9fe:a9fe", // NAT64 of the metadata endpoint 169.254.169.254
		"64:ff9b::a00:1",     // NAT64 of 10.0.0.1
		"64:ff9b:1::a00:1",   // local-use NAT64 (RFC 8215)
		"2002:7f00:1::1",     // 6to4 of 127.0.0.1
		"2002:a9fe:a9fe::1",  // 6to4 of 169.254.169.254
		"::7f00:1",           // IPv4-compatible ::127.0.0.1
		"::a9fe:a9fe",        // IPv4-compatible ::169.254.169.254
		"0.1.2.3",            // 0.0.0.0/8 ("this network", reaches the host on Linux)
		"192.0.0.8",          // IETF protocol assignments
		"198.18.0.1",         // benchmarking
		"198.19.255.254",     // benchmarking
		"240.0.0.1",          // reserved
		"255.255.255.255",    // broadcast
		"fec0::1",            // site-local
		"100::1",             // discard-only
		"2001:db8::1",        // documentation
	}
	for _, a := range refused {
		require.False(t, outbound.Guard{}.Allowed(netip.MustParseAddr(a)), "%s is allowed", a)
	}
	for _, a := range []string{"8.8.8.8", "2001:4860:4860::8888", "64:ff9b::808:808", "2002:808:808::1", "100.128.0.1"} {
		require.True(t, outbound.Guard{}.Allowed(netip.MustParseAddr(a)), "%s (global unicast) is refused", a)
	}

	// At dial time: the sender's client refuses before any packet leaves,
	// whatever the network would have done with the address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, host := range []string{"[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[::7f00:1]", "0.0.0.1"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+":"+port+"/hook", nil)
		require.NoError(t, err)
		resp, err := outbound.Guard{}.Client(5 * time.Second).Do(req)
		cancel()
		if resp != nil {
			resp.Body.Close()
		}
		require.True(t, errors.Is(err, outbound.ErrForbiddenAddress), "%s: want a refusal by the guard, got %v", host, err)
	}
}

// hiddenFields are the hidden inputs of a page's forms, by name.
func hiddenFields(page string) map[string]string {
	out := map[string]string{}
	for _, m := range hiddenRe.FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(m[1])] = html.UnescapeString(m[2])
	}
	return out
}

var hiddenRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// Item 4: a sign-in link whose next names another site (a tab or newline
// that browsers strip, a scheme, a host) lands on the console's own
// overview, never elsewhere.
func TestAuditLoginNeverRedirectsOffSite(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	for _, next := range []string{"/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "/%09/evil.example",
		"//evil.example", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", "/\x00/evil.example",
		"\t//evil.example", "/ \t/evil.example", "http:/evil.example"} {
		c := a.browser(t)
		_, page, _ := a.page(t, c, "/login?next="+url.QueryEscape(next))
		require.NotContains(t, page, "evil.example", "the login form carries next %q", next)
		resp := a.signIn(t, c, "viewer", next)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "next %q", next)
		require.Equal(t, "/", resp.Header.Get("Location"), "next %q", next)
	}
	// A next on the site is kept.
	resp := a.signIn(t, a.browser(t), "viewer", "/inbox?status=exhausted")
	require.Equal(t, "/inbox?status=exhausted", resp.Header.Get("Location"))
}

// cookieHeader is the Cookie header c's jar sends to the console.
func (a *auditConsole) cookieHeader(t *testing.T, c *http.Client) string {
	t.Helper()
	u, err := url.Parse(a.url)
	require.NoError(t, err)
	var parts []string
	for _, ck := range c.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	require.NotEmpty(t, parts, "signed in")
	return strings.Join(parts, "; ")
}

// Item 7: a signed-in browser (or a page that makes it post) sends a form
// far larger than any the console takes. It is refused 413 once the bound
// is passed, before the CSRF check parses it: not read whole into memory
// and temporary files.
func TestAuditOversizedFormsAreRefusedBeforeTheyAreParsed(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	c := a.browser(t)
	require.Equal(t, http.StatusSeeOther, a.signIn(t, c, "operator", "/").StatusCode)
	cookie := a.cookieHeader(t, c)
	host := strings.TrimPrefix(a.url, "http://")
	const size = 40 << 20
	for _, tt := range []struct{ name, contentType string }{
		{"multipart", "multipart/form-data; boundary=XX"},
		{"urlencoded", "application/x-www-form-urlencoded"},
	} {
		conn, err := net.Dial("tcp", host)
		require.NoError(t, err)
		head := "POST /replay HTTP/1.1\r\nHost: " + host + "\r\nCookie: " + cookie + "\r\nContent-Type: " + tt.contentType +
			"\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n"
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		var sent atomic.Int64
		go func() {
			var chunk []byte
			if tt.name == "multipart" {
				chunk = []byte("--XX\r\nContent-Disposition: form-data; name=\"reason\"\r\n\r\n" + strings.Repeat("r", 64<<10) + "\r\n")
			} else {
				chunk = []byte("reason=" + strings.Repeat("r", 64<<10) + "&")
			}
			for sent.Load() < size {
				n, err := conn.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, tt.name)
		resp.Body.Close()
		conn.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s form of 40 MiB", tt.name)
		require.Less(t, sent.Load(), int64(size), "%s: the console read the whole body", tt.name)
	}
}

// Item 12: a secrets key file that other users of the machine (its group,
// or anyone) can read hands them every sealed secret. A process asked to
// use one refuses to start, saying what to do; 0600 and 0400 are fine.
func TestAuditKeyFileReadableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets.key")
	require.NoError(t, os.WriteFile(path, []byte(secretbox.GenerateKeyLine("k1")+"\n"), 0o600))
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.SecretsKeyFile = path
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o606} {
		require.NoError(t, os.Chmod(path, mode))
		st, err := app.OpenStore(context.Background(), cfg, app.OwnerDB(cfg))
		if st != nil {
			st.Close()
		}
		require.Error(t, err, "mode %04o", mode)
		require.Contains(t, err.Error(), "chmod 600", "mode %04o", mode)
		require.Contains(t, err.Error(), path)
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		require.NoError(t, os.Chmod(path, mode))
		st, err := app.OpenStore(context.Background(), cfg, app.OwnerDB(cfg))
		require.NoError(t, err, "mode %04o", mode)
		require.NotNil(t, st.Keys)
		st.Close()
	}
}

// strippingRelay is an SMTP relay as a network attacker in the middle
// presents it: its EHLO answer lacks STARTTLS, so an opportunistic client
// carries on in the clear. It records what it was told.
type strippingRelay struct {
	addr string
	mu   sync.Mutex
	data []string // the DATA sections received
	cmds []string
}

func startStrippingRelay(t *testing.T, host string) *strippingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	r := &strippingRelay{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(conn)
		}
	}()
	return r
}

func (r *strippingRelay) serve(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	tp := textproto.NewConn(conn)
	_ = tp.PrintfLine("220 relay ESMTP")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.cmds = append(r.cmds, line)
		r.mu.Unlock()
		switch verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0]); verb {
		case "EHLO":
			_ = tp.PrintfLine("250-relay\r\n250 8BITMIME") // STARTTLS stripped
		case "HELO", "MAIL", "RCPT", "RSET", "NOOP":
			_ = tp.PrintfLine("250 ok")
		case "DATA":
			_ = tp.PrintfLine("354 go on")
			lines, err := tp.ReadDotLines()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.data = append(r.data, strings.Join(lines, "\n"))
			r.mu.Unlock()
			_ = tp.PrintfLine("250 queued")
		case "QUIT":
			_ = tp.PrintfLine("221 bye")
			return
		default:
			_ = tp.PrintfLine("502 no")
		}
	}
}

func (r *strippingRelay) received() (data, cmds []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.data...), append([]string(nil), r.cmds...)
}

// nonLoopbackIP is an address of this machine other than loopback, where
// a relay "elsewhere" can listen.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no non-loopback IPv4 address to run a remote relay on (CI=true: a test that cannot run fails)")
	}
	t.Skip("no non-loopback IPv4 address to run a remote relay on")
	return ""
}

// Item 11: with the default configuration, a relay on another host whose
// STARTTLS an attacker strips gets nothing: not the confirmation email,
// not even its recipient. A loopback relay (Mailpit under make run) is
// still used as it is.
func TestAuditSMTPStartTLSCannotBeStrippedFromARemoteRelay(t *testing.T) {
	t.Parallel()
	msg := outbound.Message{Key: "op:confirmation", To: "billing@customer.example", Subject: "100 credits", Text: "CONFIDENTIAL-BODY"}

	remote := startStrippingRelay(t, nonLoopbackIP(t))
	cfg := config.Default()
	cfg.SMTPAddr = remote.addr
	_, err := app.Mailer(cfg).Send(context.Background(), msg)
	require.Error(t, err, "the message went out in the clear")
	require.True(t, outbound.IsPermanent(err), "a relay without STARTTLS stays refused: %v", err)
	data, cmds := remote.received()
	require.Empty(t, data)
	for _, c := range cmds {
		require.NotContains(t, c, "billing@customer.example", "the recipient crossed in the clear")
	}

	local := startStrippingRelay(t, "127.0.0.1")
	cfg.SMTPAddr = local.addr
	_, err = app.Mailer(cfg).Send(context.Background(), msg)
	require.NoError(t, err, "a loopback relay is the machine's own")
	data, _ = local.received()
	require.Len(t, data, 1)
	require.Contains(t, data[0], "CONFIDENTIAL-BODY")
}

// auditIntake is the intake as `hookinbox webhook` runs it: as its own
// database role, with a Temporal that never answers (hand-offs fail, which
// the intake tolerates by design), and the owner's store for fixtures.
type auditIntake struct {
	ctx   context.Context
	url   string // the public port, http://host:port
	owner *store.Store
	dbURL string
}

func startAuditIntake(t *testing.T, configure func(*config.Config)) *auditIntake {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.TemporalAddress = "127.0.0.1:1"
	cfg.HandoffTimeout = 200 * time.Millisecond
	cfg.RequestTimeout = secTimeout
	if configure != nil {
		configure(&cfg)
	}
	owner, err := store.Open(ctx, cfg.DatabaseURL, 4)
	require.NoError(t, err)
	owner.Keys = testenv.Keys(t)
	t.Cleanup(owner.Close)
	st, err := store.Open(ctx, testenv.RoleURL(t, cfg.DatabaseURL, store.RoleIntake), 0)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	t.Cleanup(st.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := starter.DialLazy(cfg, log)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in := app.NewIntake(cfg, st, c, metrics.New(), log, routestest.Builtin())
	in.InternalAddr = ""
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx, "", pub, log) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return &auditIntake{ctx: ctx, url: "http://" + pub.Addr().String(), owner: owner, dbURL: cfg.DatabaseURL}
}

// post delivers body to endpoint slug with headers and returns the status.
func (b *auditIntake) post(t *testing.T, slug string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/webhooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (b *auditIntake) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.owner.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

const auditGitHubSecret = "ghsecret-audit-k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSx"

// Item 10: GitHub signs neither a delivery id nor a time, so a captured
// body can be sent again under a fresh X-GitHub-Delivery. Its dedup used
// to end with the inbox row: once retention deleted it, the same body was
// accepted again, under a new id, as a new event.
func TestAuditBodyReplayAfterRetentionIsStillADuplicate(t *testing.T) {
	t.Parallel()
	// Every delivery reads the endpoint afresh: links change below.
	b := startAuditIntake(t, func(c *config.Config) { c.EndpointCacheTTL = time.Nanosecond })
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.owner, endpoints.NewEndpoint{Slug: "gh", Provider: "github",
		Environment: "live", Secrets: []string{auditGitHubSecret}}))
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.owner, "gh", "4242", "ws_gh"))
	body := []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/hello"},"issue":{"number":7}}`)
	require.Equal(t, http.StatusOK, b.post(t, "gh", body, providertest.GitHubHeaders(body, auditGitHubSecret, "d-original", "issues")))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_inbox`))

	// Retention, past the dedup window, on a settled row: deleted, its
	// lineage kept (the triggers), as the worker's role does it.
	_, err := b.owner.Pool.Exec(b.ctx, `UPDATE webhook_inbox SET status = 'done', received_at = now() - interval '40 days',
		processed_at = now() - interval '40 days'`)
	require.NoError(t, err)
	worker, err := store.Open(b.ctx, testenv.RoleURL(t, b.dbURL, store.RoleWorker), 2)
	require.NoError(t, err)
	defer worker.Close()
	n, err := inbox.DeleteExpiredInboxRows(b.ctx, worker.Pool, 30*24*time.Hour, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox`))

	for i, delivery := range []string{"d-replay-1", "d-replay-2", "d-original"} {
		code := b.post(t, "gh", body, providertest.GitHubHeaders(body, auditGitHubSecret, delivery, "issues"))
		require.Equal(t, http.StatusOK, code, "replay %d", i)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox`), "a replayed body was accepted again after retention")
	require.Zero(t, b.count(t, `SELECT count(*) FROM inbox_quarantine`))

	// An unlinked account's replay is not let into the quarantine either.
	require.NoError(t, endpoints.UnlinkAccount(b.ctx, b.owner, "gh", "4242"))
	require.Equal(t, http.StatusOK, b.post(t, "gh", body, providertest.GitHubHeaders(body, auditGitHubSecret, "d-replay-3", "issues")))
	require.Zero(t, b.count(t, `SELECT count(*) FROM inbox_quarantine`))

	// A new body is a new event.
	fresh := []byte(`{"action":"closed","installation":{"id":4242},"repository":{"full_name":"octo/hello"},"issue":{"number":7}}`)
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.owner, "gh", "4242", "ws_gh"))
	require.Equal(t, http.StatusOK, b.post(t, "gh", fresh, providertest.GitHubHeaders(fresh, auditGitHubSecret, "d-new", "issues")))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_inbox`))
}

// Item 6 (intake): a flood of random slugs that look valid, none of them
// registered, must not cost a database query each. With the endpoints
// table locked (a slow database, or one the flood has saturated), they are
// answered 404 at once from the preloaded slug set; at most one refresh of
// the set per second reaches the database.
func TestAuditRandomSlugFloodDoesNotReachTheDatabase(t *testing.T) {
	t.Parallel()
	b := startAuditIntake(t, nil)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.owner, endpoints.NewEndpoint{Slug: "gh", Provider: "github",
		Environment: "live", Secrets: []string{auditGitHubSecret}}))
	body := []byte(`{}`)
	require.Equal(t, http.StatusNotFound, b.post(t, randomSlug(), body, nil), "the intake has met its slugs")

	lock, err := b.owner.Pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(b.ctx) }()
	_, err = lock.Exec(b.ctx, `LOCK TABLE endpoints IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	const flood = 40
	codes := make([]int, flood)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range flood {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i] = b.post(t, randomSlug(), body, nil)
		}(i)
	}
	wg.Wait()
	notFound := 0
	for _, c := range codes {
		if c == http.StatusNotFound {
			notFound++
		}
	}
	// One of them may have been the one refresh of the second (it waits
	// for the lock: 503 at its deadline); the rest never asked.
	require.GreaterOrEqual(t, notFound, flood-2, "answers %v: the flood waited for the database", codes)
	require.NoError(t, lock.Rollback(b.ctx))
	t.Logf("%d random slugs: %d answered 404 without the database in %s", flood, notFound, time.Since(start).Round(time.Millisecond))

	// A newly registered endpoint works within a refresh.
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.owner, endpoints.NewEndpoint{Slug: "late", Provider: "github",
		Environment: "live", Secrets: []string{auditGitHubSecret}}))
	require.Eventually(t, func() bool {
		return b.post(t, "late", body, providertest.GitHubHeaders(body, auditGitHubSecret, "d-late", "ping")) != http.StatusNotFound
	}, 10*time.Second, 100*time.Millisecond)
}

// clientFrom is an HTTP client whose connections come from local address
// ip (any of 127.0.0.0/8 on Linux): another client, as the console sees it.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Item 6 (console): a client guessing tokens, at the API or at the login
// form, is slowed to a few attempts a minute after a short burst, and every
// attempt it is refused costs no database query; other clients are not
// affected, and a good token costs nothing.
func TestAuditTokenGuessingIsRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	attacker := clientFrom("127.0.0.2")
	guess := func(i int) int {
		req, err := http.NewRequest(http.MethodGet, a.url+"/api/whoami", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer hki_guess"+strconv.Itoa(i))
		resp, err := attacker.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	codes := map[int]int{}
	for i := range 30 {
		codes[guess(i)]++
	}
	require.Positive(t, codes[http.StatusUnauthorized], "the first guesses are answered")
	require.LessOrEqual(t, codes[http.StatusUnauthorized], 12, "answers %v: guessing is not limited", codes)
	require.Equal(t, 30-codes[http.StatusUnauthorized], codes[http.StatusTooManyRequests], "answers %v", codes)

	// The login form of the same client is limited too (it took the
	// form's pre-session token, as a browser does).
	_, page, _ := a.page(t, attacker, "/login")
	resp, err := attacker.PostForm(a.url+"/login", url.Values{"token": {"hki_guess"}, "login_csrf": {hiddenFields(page)["login_csrf"]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	// Another client, with a good token, many times: never limited.
	other := clientFrom("127.0.0.3")
	for range 30 {
		req, err := http.NewRequest(http.MethodGet, a.url+"/api/whoami", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.tokens["viewer"])
		resp, err := other.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
}

// unkeyedFingerprint is what the console used to show of a secret: the
// first 4 bytes of its SHA-256, which anyone who sees it can match against
// guesses offline.
func unkeyedFingerprint(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:4])
}

// Item 9: a viewer (or anyone with a listing, the audit log or a log
// line) tries guesses of a weak secret against its fingerprint, offline.
// The fingerprints are keyed: without the secrets key they confirm nothing,
// and the same secret shows differently under another key.
func TestAuditFingerprintsConfirmNoGuessOffline(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	const secret = "ghsecret-guessable-but-long-enough-0123456789"
	const apiKey = "ghp_guessableTOKEN0123456789"
	code, body := a.api(t, "admin", http.MethodPost, "/api/endpoints", `{"slug":"gh","provider":"github","environment":"live",
		"secrets":["`+secret+`"],"api_key":"`+apiKey+`","reason":"onboarding"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, added := a.api(t, "admin", http.MethodPost, "/api/endpoints/gh/secrets", `{"secret":"`+secret+`-2","reason":"rotation"}`)
	require.Equal(t, http.StatusCreated, code, added)
	_, list := a.api(t, "viewer", http.MethodGet, "/api/endpoints", "")
	_, audit := a.api(t, "viewer", http.MethodGet, "/api/audit", "")
	var views []struct {
		APIKeyFingerprint string `json:"api_key_fingerprint"`
		Secrets           []struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"secrets"`
	}
	require.NoError(t, json.Unmarshal([]byte(list), &views))
	require.Len(t, views, 1)
	require.Len(t, views[0].Secrets, 2)
	shown := []string{views[0].APIKeyFingerprint, views[0].Secrets[0].Fingerprint, views[0].Secrets[1].Fingerprint}
	for _, fp := range shown {
		require.Regexp(t, `^[0-9a-f]{8}$`, fp, "a fingerprint is shown")
	}
	for _, v := range []string{secret, secret + "-2", apiKey} {
		for _, out := range []string{body, added, list, audit} {
			require.NotContains(t, out, unkeyedFingerprint(v), "an unkeyed fingerprint confirms a guess offline")
		}
	}
	require.Contains(t, audit, shown[0], "the audit names the API key by the fingerprint the listing shows")

	// The same secret under another key: another fingerprint.
	other := testenv.Store(t)
	kr, err := secretbox.ParseKey(secretbox.GenerateKey())
	require.NoError(t, err)
	other.Keys = kr
	require.NoError(t, endpoints.InsertEndpoint(a.ctx, other, endpoints.NewEndpoint{Slug: "gh", Provider: "github",
		Environment: "live", Secrets: []string{secret}, APIKey: apiKey}))
	svc := app.Operations(a.cfg, other, nil, slog.New(slog.DiscardHandler), app.Business{Routes: routestest.Builtin()})
	v, err := svc.ShowEndpoint(a.ctx, "gh")
	require.NoError(t, err)
	require.NotEqual(t, shown[0], v.APIKeyFingerprint)
	require.NotEqual(t, shown[1], v.Secrets[0].Fingerprint)
}

// Item 1: a viewer reads an outbox row and gets its payload (the
// recipient, the email's text, a feedback message copied from a webhook),
// and a team destination's URL with the token in its path and query.
// Viewers never see a payload: an operator asks for it with
// ?payload=true, and that read is logged like an event payload's.
func TestAuditViewerReadsNoOutboxPayload(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	const marker = "FEEDBACK-TEXT-COPIED-FROM-A-WEBHOOK"
	const hookURL = "https://hooks.team.example/services/T000/B000/XXXXTOKENXXXX?token=QUERYTOKEN"
	require.NoError(t, records.SetWorkspaceEmail(a.ctx, a.owner.Pool, "ws_1", "billing@customer.example"))
	require.NoError(t, outbox.UpsertDestination(a.ctx, a.owner.Pool, a.owner.Keys, outbox.Destination{WorkspaceID: "ws_1",
		Name: "team", Kind: "webhook", Target: hookURL, Secret: "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k9"), 16)),
		Enabled: true}))
	var id int64
	require.NoError(t, a.owner.Tx(a.ctx, func(tx pgx.Tx) error {
		var err error
		id, err = outbox.InsertOutbox(a.ctx, tx, outbox.OutboxIntent{OperationKey: "fb:1:initial-alert:team", Class: "feedback_alert",
			Kind: "webhook", Destination: "team", WorkspaceID: "ws_1", ResourceKey: "standard/p1/test/feedback/fb_1",
			Payload: map[string]string{"message": marker, "to": "billing@customer.example"}})
		return err
	}))
	path := "/api/outbox/" + strconv.FormatInt(id, 10)

	code, body := a.api(t, "viewer", http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, marker, "a viewer reads the outbox payload")
	require.NotContains(t, body, `"payload"`)
	require.Contains(t, body, `"operation_key": "fb:1:initial-alert:team"`, "the rest of the row is there")
	code, body = a.api(t, "viewer", http.MethodGet, path+"?payload=true", "")
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, body, marker)
	require.NotContains(t, a.logs.String(), "outbox_id="+strconv.FormatInt(id, 10), "nothing was read")

	code, body = a.api(t, "operator", http.MethodGet, path+"?payload=true", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, marker)
	require.Regexp(t, `msg="payload read".*outbox_id=`+strconv.FormatInt(id, 10)+`.*token=operator-token`, a.logs.String())
	code, body = a.api(t, "operator", http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, marker, "without ?payload=true, not even an operator gets it")

	// The destination's URL: its origin to a viewer, all of it to an admin.
	for _, p := range []string{"/api/workspaces/ws_1", "/api/workspaces"} {
		code, body = a.api(t, "viewer", http.MethodGet, p, "")
		require.Equal(t, http.StatusOK, code, body)
		require.NotContains(t, body, "XXXXTOKENXXXX", p)
		require.NotContains(t, body, "QUERYTOKEN", p)
	}
	_, body = a.api(t, "viewer", http.MethodGet, "/api/workspaces/ws_1", "")
	require.Contains(t, body, `"target": "https://hooks.team.example"`)
	_, body = a.api(t, "admin", http.MethodGet, "/api/workspaces/ws_1", "")
	require.Contains(t, body, "XXXXTOKENXXXX", "an admin manages destinations")
}

// keyCatcher is "elsewhere": an API host that is not the provider's,
// recording every credential sent to it.
type keyCatcher struct {
	mu    sync.Mutex
	seen  []string
	calls atomic.Int64
}

func (k *keyCatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.calls.Add(1)
	k.mu.Lock()
	k.seen = append(k.seen, r.Header.Get("Authorization"))
	k.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"in_1","object":"invoice","status":"paid","amount_paid":100,"total":100,"currency":"usd"}`)
}

func (k *keyCatcher) sawKey(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, h := range k.seen {
		if strings.Contains(h, key) {
			return true
		}
	}
	return false
}

// Item 3: an admin (or whoever holds an admin token) points an endpoint's
// API base URL at another host. The worker used to keep the sealed key
// and send it there (sk_live_…, a GitHub token, an App's JWT), trusting
// the answers for money decisions. Now the key must be given again with a
// new base URL; a host other than the provider's official API needs
// allow_custom_api_host (audited); http:// is refused outside loopback.
func TestAuditAPIBaseURLCannotRedirectTheAPIKey(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	catcher := &keyCatcher{}
	elsewhere := httptest.NewServer(catcher)
	defer elsewhere.Close()
	const key = "sk_live_REDIRECTEDkey0123456789abcdef"
	code, body := a.api(t, "admin", http.MethodPost, "/api/endpoints", `{"slug":"billing","provider":"stripe","environment":"live",
		"secrets":["whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAb"],"api_key":"`+key+`","reason":"onboarding"}`)
	require.Equal(t, http.StatusCreated, code, body)
	require.NoError(t, endpoints.LinkAccount(a.ctx, a.owner, "billing", "acct_1", "ws_1"))

	// What the worker would then do: ask the provider, with the key.
	fetch := func() {
		t.Helper()
		p := &engine.EndpointProviders{Store: a.owner, TTL: time.Nanosecond}
		c, err := p.For(a.ctx, "billing")
		if err != nil {
			return // no key, no call
		}
		ctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
		defer cancel()
		_, _ = c.FetchInvoice(ctx, "acct_1", "in_1")
	}

	for _, tt := range []struct{ name, patch, want string }{
		{"base URL alone keeps the key", `{"api_base_url":"` + elsewhere.URL + `"}`, "API key"},
		{"custom host without the flag", `{"api_base_url":"` + elsewhere.URL + `","api_key":"` + key + `"}`, "allow_custom_api_host"},
		{"http outside loopback", `{"api_base_url":"http://api.stripe.com","api_key":"` + key + `","allow_custom_api_host":true}`, "https"},
		{"credentials in the URL", `{"api_base_url":"https://u:p@api.stripe.com","api_key":"` + key + `"}`, "credentials"},
	} {
		code, body := a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing", tt.patch)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", tt.name, body)
		require.Contains(t, body, tt.want, tt.name)
		fetch()
		require.False(t, catcher.sawKey(key), "%s: the API key went to another host", tt.name)
	}
	v, err := a.svc.ShowEndpoint(a.ctx, "billing")
	require.NoError(t, err)
	require.Empty(t, v.APIBaseURL, "nothing changed")
	require.True(t, v.APIKeySet)

	// Named explicitly, a custom host (a simulator, GitHub Enterprise) is
	// allowed, audited as such, and gets the key it was given.
	code, body = a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing",
		`{"api_base_url":"`+elsewhere.URL+`","api_key":"sk_test_forTheSimulator0123456789","allow_custom_api_host":true,"reason":"simulator"}`)
	require.Equal(t, http.StatusOK, code, body)
	_, audit := a.api(t, "viewer", http.MethodGet, "/api/audit?action=endpoint_update", "")
	require.Contains(t, audit, `"custom_api_host": true`)
	fetch()
	require.True(t, catcher.sawKey("sk_test_forTheSimulator0123456789"))
	require.False(t, catcher.sawKey(key))

	// The provider's official API needs no flag, but a key again.
	code, body = a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing", `{"api_base_url":"https://api.stripe.com"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = a.api(t, "admin", http.MethodPatch, "/api/endpoints/billing", `{"api_base_url":"https://api.stripe.com","api_key":"`+key+`"}`)
	require.Equal(t, http.StatusOK, code, body)
	// Registering names the host too.
	code, body = a.api(t, "admin", http.MethodPost, "/api/endpoints", `{"slug":"other","provider":"stripe","environment":"live",
		"secrets":["whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAc"],"api_key":"`+key+`","api_base_url":"`+elsewhere.URL+`"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "allow_custom_api_host")
}

// sessionCookie is the console's session cookie among a response's cookies.
func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "hookinbox_session") && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", resp.Header.Values("Set-Cookie"))
	return nil
}

// Item 5: the session cookie held the API token itself, for ever: whoever
// copied it (a proxy log, a shared machine) held the token. It is now a
// random session id, stored hashed, that expires and ends at sign-out;
// sign-in and sign-out take a pre-session CSRF token; a crafted ?flash=
// shows nothing.
func TestAuditConsoleSessionsAreRandomExpiringAndRevocable(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{configure: func(c *config.Config) { c.ConsoleSessionTTL = time.Hour }})
	c := a.browser(t)
	resp := a.signIn(t, c, "operator", "/")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ck := sessionCookie(t, resp)
	require.NotContains(t, ck.Value, a.tokens["operator"], "the cookie holds the API token")
	require.NotContains(t, ck.Value, strings.TrimPrefix(a.tokens["operator"], "hki_"))
	require.Equal(t, 3600, ck.MaxAge, "the cookie lives as long as the session (HOOKINBOX_CONSOLE_SESSION_TTL)")
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	h := sha256.Sum256([]byte(ck.Value))
	var stored int
	require.NoError(t, a.owner.Pool.QueryRow(a.ctx, `SELECT count(*) FROM console_sessions WHERE session_sha256 = $1
		AND expires_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes'`, h[:]).Scan(&stored))
	require.Equal(t, 1, stored, "the session is stored by its hash, expiring with its TTL")
	code, _, _ := a.page(t, c, "/inbox")
	require.Equal(t, http.StatusOK, code)

	// The pre-session CSRF token: a sign-in or sign-out posted from
	// another site (no token) is refused.
	resp, err := http.PostForm(a.url+"/login", url.Values{"token": {a.tokens["admin"]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "login CSRF")
	for _, ck := range resp.Cookies() {
		require.NotEqual(t, "hookinbox_session", ck.Name, "signed in by another site's form")
	}
	resp, err = c.PostForm(a.url+"/logout", url.Values{})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "logout CSRF")
	code, _, _ = a.page(t, c, "/inbox")
	require.Equal(t, http.StatusOK, code, "still signed in")

	// ?flash= takes message ids, never text.
	_, page, _ := a.page(t, c, "/?flash="+url.QueryEscape("Your session expired: sign in again at evil.example"))
	require.NotContains(t, page, "evil.example")
	_, page, _ = a.page(t, c, "/?flash=replayed")
	require.Contains(t, page, "Replayed: the event is pending again")

	// Sign-out ends the session: the copied cookie no longer works.
	_, page, _ = a.page(t, c, "/")
	form := url.Values{}
	for k, v := range hiddenFields(page) {
		form.Set(k, v)
	}
	resp, err = c.PostForm(a.url+"/logout", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NoError(t, a.owner.Pool.QueryRow(a.ctx, `SELECT count(*) FROM console_sessions WHERE session_sha256 = $1`, h[:]).Scan(&stored))
	require.Zero(t, stored)
	copied := a.browser(t)
	u, _ := url.Parse(a.url)
	copied.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/", HttpOnly: true, //nolint:gosec // a copy, sent to a plain-http test server
		SameSite: http.SameSiteStrictMode}})
	code, _, resp = a.page(t, copied, "/inbox")
	require.Equal(t, http.StatusSeeOther, code, "a session signed out of still works")
	require.Contains(t, resp.Header.Get("Location"), "/login")

	// An expired session, and one whose token was revoked, do not work.
	for _, end := range []string{"expire", "revoke"} {
		c := a.browser(t)
		resp := a.signIn(t, c, "viewer", "/")
		ck := sessionCookie(t, resp)
		h := sha256.Sum256([]byte(ck.Value))
		if end == "expire" {
			_, err := a.owner.Pool.Exec(a.ctx, `UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE session_sha256 = $1`, h[:])
			require.NoError(t, err)
		} else {
			_, err := a.svc.RevokeToken(a.ctx, ops.Actor{Name: "audit"}, "viewer-token")
			require.NoError(t, err)
		}
		code, _, _ := a.page(t, c, "/inbox")
		require.Equal(t, http.StatusSeeOther, code, end)
	}
}

// Item 5 (TLS): where the console is reached over https, the cookie is
// Secure and named with the __Host- prefix, so no sibling host can set or
// shadow it.
func TestAuditConsoleCookieIsHostPrefixedUnderTLS(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{configure: func(c *config.Config) { c.ConsoleURL = "https://console.example" }})
	// The server is plain http here; the cookies are read off the answers.
	c := a.browser(t)
	_, body, resp := a.page(t, c, "/login")
	form := url.Values{"token": {a.tokens["viewer"]}}
	for k, v := range hiddenFields(body) {
		form.Set(k, v)
	}
	req, err := http.NewRequest(http.MethodPost, a.url+"/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range resp.Cookies() {
		req.AddCookie(ck)
	}
	resp, err = c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ck := sessionCookie(t, resp)
	require.Equal(t, "__Host-hookinbox_session", ck.Name)
	require.True(t, ck.Secure)
	require.Equal(t, "/", ck.Path)
	require.Empty(t, ck.Domain)
}

// Item 2: the console ran as the schema owner, so a flaw in it (an
// injection, a leaked connection) read every secret, token hash and
// payload, and could rewrite anything. Opened as `hookinbox console` and
// `make run` open it, it connects as hookinbox_console, reads payloads
// on a pool of its own as hookinbox_payload_reader, reads no secret, and
// lists endpoints without opening one (here with a key that opens none).
func TestAuditConsoleRunsAsItsOwnRole(t *testing.T) {
	t.Parallel()
	a := startAuditConsole(t, consoleOptions{})
	require.NoError(t, endpoints.InsertEndpoint(a.ctx, a.owner, endpoints.NewEndpoint{Slug: "billing", Provider: "stripe",
		Environment: "live", Secrets: []string{"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxAb"}, APIKey: "sk_live_CONSOLEneverREADSthis0123"}))

	p, err := app.OpenConsole(a.ctx, a.cfg)
	require.NoError(t, err)
	defer p.Close()
	var user, payloadUser string
	require.NoError(t, p.Store.Pool.QueryRow(a.ctx, `SELECT current_user`).Scan(&user))
	require.NoError(t, p.Payloads.Pool.QueryRow(a.ctx, `SELECT current_user`).Scan(&payloadUser))
	require.Equal(t, store.RoleConsole, user)
	require.Equal(t, store.RolePayloadReader, payloadUser)
	for _, sql := range []string{`SELECT secret_sealed FROM endpoint_secrets`, `SELECT api_key_sealed FROM endpoints`,
		`SELECT token_sha256 FROM api_tokens`, `SELECT payload FROM webhook_inbox`, `UPDATE credit_grants SET credits = 0`} {
		_, err := p.Store.Pool.Exec(a.ctx, sql)
		require.True(t, store.IsPermissionDenied(err), "%s as the console: %v", sql, err)
	}

	// Listings open no secret: a console whose key opens none still lists
	// the endpoint, with its fingerprints.
	cfg := a.cfg
	cfg.SecretsKey = secretbox.GenerateKey()
	other, err := app.OpenConsole(a.ctx, cfg)
	require.NoError(t, err)
	defer other.Close()
	svc := app.Operations(cfg, other.Store, other.Temporal, slog.New(slog.DiscardHandler), app.Business{Routes: routestest.Builtin()})
	eps, err := svc.ListEndpoints(a.ctx)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	require.True(t, eps[0].APIKeySet)
	require.Regexp(t, `^[0-9a-f]{8}$`, eps[0].APIKeyFingerprint)
	require.Regexp(t, `^[0-9a-f]{8}$`, eps[0].Secrets[0].Fingerprint)

	// The API on top of it: an admin's acts work, none answers a secret.
	code, body := a.api(t, "admin", http.MethodGet, "/api/endpoints/billing", "")
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "CONSOLEneverREADSthis")
	code, body = a.api(t, "admin", http.MethodPost, "/api/endpoints/billing/secrets", `{"secret":"whsec_k2oBvwfyqY1Ad5ATpJwQLSYz1f5QSxZz","retire_others":true,"reason":"rotation"}`)
	require.Equal(t, http.StatusCreated, code, body)
}
