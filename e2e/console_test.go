package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	"github.com/hookinbox/hookinbox/starter"
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

// shotOf saves a screenshot of the element sel as console-NAME.png when
// screenshots are asked for.
func (b *browser) shotOf(name, sel string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	png := get(b, "screenshot of "+sel, chromedp.Screenshot(chromedp.CSS(sel)))
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
	// The sweeper (every 2 s here) samples the trends: wait for a sample
	// that has the exhausted event and has counted its completion.
	processed := w.count(t, `SELECT count(*) FROM webhook_inbox WHERE processed_at IS NOT NULL`)
	require.Equal(t, 1, processed, "the test's one event")
	sampled := func() bool {
		return w.count(t, `SELECT count(*) FROM console_trends WHERE exhausted = 1`) > 0 &&
			w.count(t, `SELECT coalesce(sum(handled), 0)::int FROM console_trends WHERE minute > now() - interval '1 hour'`) == processed
	}
	for deadline := time.Now().Add(60 * time.Second); !sampled(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.logTrendsDiagnosis(t, k)
			t.Fatal("timed out after 1m0s waiting for a trend sample with the exhausted event")
		}
	}

	// Sign in.
	br.do("open the console", chromedp.Navigate(consoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	br.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), tok.Token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#exhausted-tile")))
	require.Equal(t, "1", br.text("#exhausted"))
	br.shot("overview")

	// The overview's trends: SVG drawn by the server, laid out and coloured
	// by console.css under the CSP, with the test's event in them.
	br.do("see the trends", chromedp.WaitVisible(chromedp.CSS("#chart-exhausted svg")))
	require.Equal(t, "1h", br.attr("#trends", "data-window"))
	require.Equal(t, "1", br.attr(`#chart-exhausted g[data-series="exhausted"] circle:last-of-type`, "data-value"),
		"the exhausted event, in the latest sample")
	require.EqualValues(t, processed, get(br, "sum the handled chart", chromedp.Evaluate[float64](
		`Array.from(document.querySelectorAll('#chart-handled circle')).reduce((n, c) => n + Number(c.dataset.value), 0)`)),
		"every completion in the hour, once")
	require.Positive(t, get(br, "lay out a chart", chromedp.Evaluate[float64](`document.querySelector('#chart-pending svg').getBoundingClientRect().width`)))
	require.Equal(t, "rgb(179, 38, 30)", get(br, "colour a point", chromedp.Evaluate[string](
		`getComputedStyle(document.querySelector('#chart-exhausted g[data-series="exhausted"] circle')).fill`)),
		"console.css's --bad, applied to the SVG")

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

	// After the replays: a sample has seen the event done, and the charts
	// of both windows draw what GET /api/trends serves.
	eventually(t, 60*time.Second, "a trend sample after the replays", func() bool {
		return w.count(t, `SELECT count(*) FROM console_trends WHERE sampled_at > (SELECT max(processed_at) FROM webhook_inbox)`) > 0
	})
	for _, window := range []string{"24h", "1h"} {
		br.do("open the trends of "+window, chromedp.Navigate(consoleURL+"/?trends="+window), chromedp.WaitVisible(chromedp.CSS("#chart-handled svg")))
		require.Equal(t, window, br.attr("#trends", "data-window"))
		drawn := get(br, "read the handled chart", chromedp.Evaluate[map[string]string](
			`Object.fromEntries(Array.from(document.querySelectorAll('#chart-handled circle')).map(c => [c.dataset.at, c.dataset.value]))`))
		// The API as the page's own origin reads it (the session's cookie).
		body := get(br, "read the API", chromedp.Evaluate[string](`fetch('/api/trends?window=`+window+`').then(r => r.text())`, chromedp.EvalAwaitPromise))
		var api ops.TrendsView
		require.NoError(t, json.Unmarshal([]byte(body), &api), body)
		require.Equal(t, window, api.Window)
		served := map[string]string{}
		for _, p := range api.Points {
			if p.HandledPerMinute != nil {
				served[p.At.Format(time.RFC3339)] = strconv.FormatFloat(*p.HandledPerMinute, 'f', -1, 64)
			}
		}
		require.NotEmpty(t, served)
		require.Len(t, drawn, len(served), "a point for each bucket with a count")
		for at, v := range served {
			f, err := strconv.ParseFloat(drawn[at], 64)
			require.NoError(t, err, "a point at %s", at)
			want, _ := strconv.ParseFloat(v, 64)
			require.InDelta(t, want, f, 0.005, "the point at %s", at)
		}
	}
	br.do("show the trends", chromedp.Navigate(consoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#chart-outbox svg")))
	br.shotOf("trends", "#trends-section")

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

// logTrendsDiagnosis logs what a trends wait that timed out saw: the
// samples, the event's row and the sweeper schedule's last runs.
func (w *simWorld) logTrendsDiagnosis(t *testing.T, k keys.Event) {
	t.Helper()
	rows, err := w.store.Pool.Query(w.ctx, `SELECT minute, handled, sampled_at, exhausted, pending FROM console_trends ORDER BY minute`)
	if err == nil {
		for rows.Next() {
			var minute time.Time
			var handled int64
			var sampledAt *time.Time
			var exhausted, pending *int64
			if err := rows.Scan(&minute, &handled, &sampledAt, &exhausted, &pending); err == nil {
				t.Logf("console_trends: minute %s handled %d sampled_at %v exhausted %v pending %v", minute.Format(time.RFC3339), handled, sampledAt, deref(exhausted), deref(pending))
			}
		}
		rows.Close()
	}
	var status string
	var processedAt *time.Time
	var now time.Time
	if err := w.store.Pool.QueryRow(w.ctx, `SELECT status, processed_at, now() FROM webhook_inbox WHERE event_id = $1`, k.EventID).Scan(&status, &processedAt, &now); err == nil {
		t.Logf("event %s: status %s processed_at %v (now %s)", k, status, processedAt, now.Format(time.RFC3339Nano))
	}
	id := starter.ScheduleID(starter.ScheduleSweeper, w.cfg.TaskQueue)
	d, err := w.client.ScheduleClient().GetHandle(w.ctx, id).Describe(w.ctx)
	if err != nil {
		t.Logf("sweeper schedule %s: %v", id, err)
		return
	}
	t.Logf("sweeper schedule %s: %d actions, %d skipped, %d missed catch-up, running %d", id, d.Info.NumActions, d.Info.NumActionsSkippedOverlap, d.Info.NumActionsMissedCatchupWindow, len(d.Info.RunningWorkflows))
	for _, a := range d.Info.RecentActions {
		res := ""
		if a.StartWorkflowResult != nil {
			desc, err := w.client.DescribeWorkflow(w.ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
			if err == nil {
				res = desc.Status.String()
				if desc.WorkflowCloseTime != nil {
					res += fmt.Sprintf(" in %s", desc.WorkflowCloseTime.Sub(desc.WorkflowStartTime).Round(time.Millisecond))
				}
			}
		}
		t.Logf("  sweep scheduled %s started %s: %s", a.ScheduleTime.Format(time.RFC3339Nano), a.ActualTime.Format(time.RFC3339Nano), res)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
