package app_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// Sender-chosen values that the Temporal UI would render as Markdown or
// HTML: a javascript: link, an image whose error handler runs script, and
// emphasis that would make a resource look like another.
const (
	uiLink  = "[x](javascript:alert(1))"
	uiImage = `<img src=x onerror=alert(1)>`
	uiBold  = "**acct_trusted**"
)

// Item 13: a resource's kind, id and account, and an event's id, are
// chosen by the sender (a Standard Webhooks type, a payload field, a
// delivery header), and the workflow's summary and details, and its
// activities' summaries, are Markdown in the Temporal UI. Opened in a real
// Chromium, the UI shows them as the text they are: no link, no image, no
// script, no dialog.
func TestAuditTemporalUIShowsSenderChosenValuesAsText(t *testing.T) {
	t.Parallel()
	exe := testenv.Chromium(t)
	ui := testenv.NewTemporalUI(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	cfg.SecretsKey = testenv.SecretsKey()
	cfg.TemporalAddress = ui.Address
	cfg.TemporalUIURL = ui.UIURL
	cfg.ConsoleURL = "http://console.example"
	cfg.TaskQueue = fmt.Sprintf("audit-ui-%d", os.Getpid())
	cfg.ReconcileInterval, cfg.BackfillInterval, cfg.RetentionInterval, cfg.GitHubRecoveryInterval = 0, 0, 0, 0
	cfg.RetryBudget, cfg.RetryInitial, cfg.RetryMax = 1, 50*time.Millisecond, 100*time.Millisecond
	owner, err := store.Open(ctx, cfg.DatabaseURL, 4)
	require.NoError(t, err)
	owner.Keys = testenv.Keys(t)
	t.Cleanup(owner.Close)
	worker, err := store.Open(ctx, testenv.RoleURL(t, cfg.DatabaseURL, store.RoleWorker), 8)
	require.NoError(t, err)
	worker.Keys = owner.Keys
	t.Cleanup(worker.Close)

	r := keys.Resource{Provider: "standard", Account: uiBold, Environment: "test", Kind: uiLink, ID: uiImage}
	require.NoError(t, endpoints.InsertEndpoint(ctx, owner, endpoints.NewEndpoint{Slug: "fb", Provider: "standard", Environment: "test",
		Secrets: []string{"whsec_" + strings.Repeat("QUJD", 8)}}))
	require.NoError(t, endpoints.LinkAccount(ctx, owner, "fb", uiBold, "ws_ui"))
	body := []byte(`{"type":"feedback.created","data":{"id":"x"}}`)
	sum := sha256.Sum256(body)
	ev := keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: uiLink + " " + uiImage}
	_, err = inbox.InsertInboxEvent(ctx, owner.Pool, &inbox.InboxEvent{Key: ev, EndpointSlug: "fb", WorkspaceID: "ws_ui",
		EventType: "feedback.created", ResourceKind: r.Kind, ResourceID: r.ID, Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)

	log := testLogger(t)
	c, err := starter.Dial(ctx, cfg, log)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	acts, err := app.NewActivities(cfg, worker, c, metrics.New(), log, builtin.MustBusiness())
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.RunWorker(wctx, cfg, c, acts, metrics.New(), "", log) }()
	t.Cleanup(func() { stop(); <-done })
	require.NoError(t, app.Resources(cfg, c).Ring(ctx, r, keys.SignalEvent, "audit"))
	// The event was handled (or refused) and the details say so.
	require.Eventually(t, func() bool {
		e, err := inbox.GetInboxEvent(ctx, owner.Pool, ev)
		return err == nil && e.Status != keys.StatusPending
	}, time.Minute, 100*time.Millisecond)

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000)}
	for _, f := range testenv.ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	var dialogs atomic.Int64
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
		}
	}))
	wfURL := ui.UIURL + "/namespaces/default/workflows/" + url.PathEscape(keys.ResourceWorkflowID(r))
	tctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(tctx, chromedp.Navigate(wfURL), chromedp.WaitVisible(chromedp.CSS("#user-metadata-tab")),
		chromedp.Click(chromedp.CSS("#user-metadata-tab"))))
	// The UI renders each Markdown text in an iframe of its own (the
	// summary, the static details, the current details): what is in them.
	type rendered struct {
		Text, HTML string
		Links      []string
		Images     int
		Scripts    int
		Strong     []string
	}
	var frames []rendered
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(tctx, chromedp.Evaluate[[]rendered](`Array.from(document.querySelectorAll('iframe')).map(f => {
			const b = f.contentDocument && f.contentDocument.body
			if (!b) return {Text: '', HTML: '', Links: [], Images: 0, Scripts: 0, Strong: []}
			return {Text: b.innerText, HTML: b.innerHTML, Links: Array.from(b.querySelectorAll('a')).map(a => a.getAttribute('href')),
				Images: b.querySelectorAll('img').length, Scripts: b.querySelectorAll('script').length,
				Strong: Array.from(b.querySelectorAll('strong,em,b,i')).map(e => e.innerText)}
		})`))
		if err != nil {
			return false
		}
		frames = got
		joined := ""
		for _, f := range got {
			joined += f.Text
		}
		return strings.Contains(joined, "handled:") && strings.Contains(joined, "(account")
	}, 30*time.Second, 250*time.Millisecond, "the UI shows the workflow's summary and details")

	seen := map[string]bool{}
	for i, f := range frames {
		for _, l := range f.Links {
			// Our own link (the console's page of the resource) is the only one.
			require.True(t, strings.HasPrefix(l, "http://console.example/resources/"), "frame %d links to %q: %s", i, l, f.HTML)
		}
		require.Zero(t, f.Images, "frame %d shows an image a sender chose: %s", i, f.HTML)
		require.Zero(t, f.Scripts, "frame %d", i)
		for _, e := range f.Strong {
			require.NotEqual(t, "acct_trusted", strings.TrimSpace(e), "frame %d: a sender's emphasis: %s", i, f.HTML)
		}
		for _, v := range []string{uiLink, uiImage, uiBold} {
			if strings.Contains(f.Text, v) {
				seen[v] = true
			}
		}
	}
	for _, v := range []string{uiLink, uiImage, uiBold} {
		require.True(t, seen[v], "%q is not shown as the text it is: %+v", v, frames)
	}
	require.Zero(t, dialogs.Load(), "a script ran in the Temporal UI")

	// The activity that handled the event, in the history: its summary
	// (the event key) is text too.
	require.NoError(t, chromedp.Do(tctx, chromedp.Click(chromedp.CSS("#history-tab"))))
	hist, err := chromedp.Run(tctx, chromedp.OuterHTML("main"))
	require.NoError(t, err)
	require.NotContains(t, hist, `href="javascript:`)
	require.Zero(t, dialogs.Load(), "a script ran in the Temporal UI")
}

// testLogger logs to t, errors only.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
