package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// browser is a headless Chromium driven by chromedp for one test. On
// failure it saves a screenshot of the page the test was on.
type browser struct {
	t   *testing.T
	ctx context.Context
	// shots, when set (HOOKINBOX_CONSOLE_SCREENSHOTS), is where named
	// screenshots of the console are written (the docs' docs/img).
	shots string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := testenv.Chromium(t)
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860)}
	for _, f := range testenv.ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("HOOKINBOX_CONSOLE_SCREENSHOTS")}
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	t.Cleanup(func() {
		if t.Failed() {
			b.failureShot()
		}
		cancel()
		cancelAlloc()
	})
	return b
}

// do runs steps with a deadline.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return get(b, "read "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	return get(b, "read "+sel+" "+name, chromedp.AttributeValue(chromedp.CSS(sel), name)).Value
}

// shot saves a screenshot named console-NAME.png when screenshots are asked for.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png := get(b, "screenshot", chromedp.CaptureScreenshot())
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, "console-"+name+".png"), png, 0o644))
}

func (b *browser) failureShot() {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		b.t.Logf("failure screenshot: %v", err)
		return
	}
	dir := os.Getenv("HOOKINBOX_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	p := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+"-failure.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("failure screenshot: %v", err)
		return
	}
	b.t.Logf("failure screenshot of %s saved to %s", loc, p)
}

// An operator signs in with a token, finds the exhausted event from the
// overview, opens its lineage, replays it and watches it reach done
// through the real worker on the Temporal dev server; then a bulk replay
// job (forced) runs to its end without a second grant. The workflow's
// static details link back to the console.
func TestConsoleReplaysAnExhaustedEventInARealBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	consoleURL := "http://" + ln.Addr().String()
	s := newStack(t, stackOptions{configure: func(c *config.Config) { c.ConsoleURL = consoleURL }})
	w := newSimWorld(t, s, simulator.Config{})

	// The console as it runs: its own role, payloads on a pool of their own.
	conSt, err := store.Open(w.ctx, testenv.RoleURL(t, w.cfg.DatabaseURL, store.RoleConsole), 8)
	require.NoError(t, err)
	conSt.Keys = w.store.Keys
	t.Cleanup(conSt.Close)
	paySt, err := store.Open(w.ctx, testenv.RoleURL(t, w.cfg.DatabaseURL, store.RolePayloadReader), 2)
	require.NoError(t, err)
	t.Cleanup(paySt.Close)
	con, err := app.NewConsole(w.cfg, conSt, paySt, w.client, testLogger(), w.business)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.RunConsole(ctx, con, "", ln, testLogger()) }()
	t.Cleanup(func() { cancel(); <-done })
	svc := app.Operations(w.cfg, w.store, w.client, testLogger(), w.business)
	tok, err := svc.CreateToken(w.ctx, ops.Actor{Name: "e2e"}, "oncall-alice", "operator")
	require.NoError(t, err)

	// An invoice.paid whose provider API is down for the whole budget.
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.sim.InjectAPIFault(simulator.Fault{Path: "/v1/invoices/" + inv.ID, Status: 503, Times: w.cfg.RetryBudget})
	w.send(t, paid)
	k := keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: paid.ID}
	eventually(t, 60*time.Second, "the event to be exhausted", func() bool { return w.statusOf(k) == keys.StatusExhausted })

	// Sign in.
	br.do("open the console", chromedp.Navigate(consoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	br.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), tok.Token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#exhausted-tile")))
	require.Equal(t, "1", br.text("#exhausted"))
	br.shot("overview")

	// Find the exhausted event and open it.
	br.do("open the exhausted events", chromedp.Click(chromedp.CSS("#exhausted-tile")), chromedp.WaitVisible(chromedp.CSS("a.event")))
	require.Contains(t, br.text("#events"), k.String())
	require.Contains(t, br.text("#events"), "503")
	br.shot("inbox")
	br.do("open the event", chromedp.Click(chromedp.CSS("a.event")), chromedp.WaitVisible(chromedp.CSS("#lineage")))
	require.Contains(t, br.text("#status"), "exhausted")
	lineage := br.text("#lineage")
	require.Contains(t, lineage, "invoice "+inv.ID)
	require.Contains(t, lineage, "replayable")
	href := br.attr("#workflow a", "href")
	require.Equal(t, keys.TemporalUIWorkflowURL(w.cfg.TemporalUIURL, "default", "resource/stripe/"+w.account+"/test/invoice/"+inv.ID), href)

	// Replay it, and watch it get done by the worker.
	br.do("replay", chromedp.SendKeys(chromedp.CSS("#reason"), "provider recovered (INC-1)"),
		chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	require.Contains(t, br.text("#flash"), "Replayed")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(br.text("#status"), "done") {
		require.True(t, time.Now().Before(deadline), "the replayed event to be shown done (it is %q)", br.text("#status"))
		time.Sleep(500 * time.Millisecond) // the page refreshes itself while the event is pending
	}
	br.do("see the grant in the lineage", chromedp.WaitVisible(chromedp.CSS("tr.grant")))
	lineage = br.text("#lineage")
	require.Contains(t, lineage, "created credit grant")
	require.Contains(t, lineage, "oncall-alice", "the replay is audited under the token's name")
	require.EqualValues(t, 100, w.balance(t))
	br.do("scroll to the lineage", chromedp.ScrollIntoView(chromedp.CSS("#lineage")))
	br.shot("event")

	// A bulk replay job from a search, forced over done events: progress
	// to the end, and the business key holds.
	br.do("search done events", chromedp.Navigate(consoleURL+"/inbox?status=done&workspace="+w.workspace),
		chromedp.WaitVisible(chromedp.CSS("#bulk-replay")))
	br.do("start a replay job", chromedp.SendKeys(chromedp.CSS("#bulk-replay input[name=reason]"), "re-check grants"),
		chromedp.Click(chromedp.CSS("#bulk-replay input[name=force]")), chromedp.Submit(chromedp.CSS("#bulk-replay")),
		chromedp.WaitVisible(chromedp.CSS("#job")))
	deadline = time.Now().Add(60 * time.Second)
	for {
		st := br.attr("#job", "data-status")
		if st == "done" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the replay job to finish (it is %q)", st)
		time.Sleep(500 * time.Millisecond)
	}
	require.Equal(t, "1/1", br.text("#progress"))
	br.shot("replay")
	eventually(t, 60*time.Second, "the forced replay to be done", func() bool { return w.statusOf(k) == keys.StatusDone })
	require.EqualValues(t, 100, w.balance(t), "no second grant")
	require.Equal(t, 1, w.count(t, `SELECT count(*) FROM credit_grants`))

	br.do("explain the grant", chromedp.Navigate(consoleURL+"/explain?kind=grant&ref="+inv.ID), chromedp.WaitVisible(chromedp.CSS("#lineage")))
	require.Contains(t, br.text("#lineage"), "credit-grant/stripe/"+w.account+"/test/"+inv.ID+"/initial-credit-grant")
	br.shot("lineage")

	// The resource workflow links back to the console.
	desc, err := w.client.DescribeWorkflowExecution(w.ctx, keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", //nolint:staticcheck // SA1019: still supported by the pinned SDK; the test reads the raw response's ExecutionConfig
		Account: w.account, Environment: "test", Kind: "invoice", ID: inv.ID}), "")
	require.NoError(t, err)
	var details string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetExecutionConfig().GetUserMetadata().GetDetails(), &details))
	require.Contains(t, details, consoleURL+"/resources/stripe%2F"+w.account)
}
