package command

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fakeSignaler records doorbells; with err set every signal fails (Temporal down).
type fakeSignaler struct {
	mu    sync.Mutex
	err   error
	calls []signalCall
}

type signalCall struct {
	r      keys.Resource
	signal string
	value  string
}

func (f *fakeSignaler) Ring(_ context.Context, r keys.Resource, signal, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, signalCall{r, signal, value})
	return f.err
}

func (f *fakeSignaler) resources() []keys.Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []keys.Resource
	for _, c := range f.calls {
		out = append(out, c.r)
	}
	return out
}

type opsBundle struct {
	ctx    context.Context
	st     *store.Store
	sig    *fakeSignaler
	out    *bytes.Buffer
	errOut *bytes.Buffer
	in     *bytes.Buffer
}

func (b *opsBundle) env() opsEnv {
	b.out.Reset()
	b.errOut.Reset()
	cfg := config.Default()
	cfg.TemporalUIURL = "http://temporal.example:8233"
	svc := &ops.Service{Store: b.st, Routes: routestest.Builtin(), Doorbell: b.sig, Config: cfg, SignalTimeout: time.Second}
	return opsEnv{svc: svc, out: b.out, errOut: b.errOut, in: b.in}
}

func setupOps(t *testing.T) *opsBundle {
	t.Helper()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "test",
		Account: "acct_1", Secrets: []string{"whsec_a"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "stripe", "acct_1", "ws_1"))
	return &opsBundle{ctx: ctx, st: st, sig: &fakeSignaler{}, out: &bytes.Buffer{}, errOut: &bytes.Buffer{}, in: &bytes.Buffer{}}
}

const secretMarker = "4242-SECRET-CARD"

// stripeBody is a real Stripe event naming an invoice or a subscription.
func stripeBody(id, typ, kind, objID, account string) []byte {
	acct := ""
	if account != "" {
		acct = `"account":"` + account + `",`
	}
	return []byte(`{"id":"` + id + `","object":"event","type":"` + typ + `","livemode":false,"created":1760000000,` + acct +
		`"data":{"object":{"id":"` + objID + `","object":"` + kind + `","note":"` + secretMarker + `"}}}`)
}

// addEvent inserts an event and moves it to status with attempts and a last error.
func (b *opsBundle) addEvent(t *testing.T, id, kind, objID, status string) keys.Event {
	t.Helper()
	body := stripeBody(id, "invoice.paid", kind, objID, "")
	sum := sha256.Sum256(body)
	ev := &inbox.InboxEvent{Key: keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id},
		EndpointSlug: "stripe", WorkspaceID: "ws_1", EventType: "invoice.paid", ResourceKind: kind, ResourceID: objID,
		Payload: body, BodySHA256: sum[:]}
	_, err := inbox.InsertInboxEvent(b.ctx, b.st.Pool, ev)
	require.NoError(t, err)
	switch status {
	case keys.StatusPending:
	case keys.StatusDone, keys.StatusIgnored:
		_, err = inbox.CompleteInboxEvent(b.ctx, b.st.Pool, ev.Key, status, "")
		require.NoError(t, err)
	default:
		require.NoError(t, inbox.RecordInboxFailure(b.ctx, b.st.Pool, ev.Key, "stripe API 503: service unavailable", time.Now()))
		_, err = inbox.StopInboxEvent(b.ctx, b.st.Pool, ev.Key, status, "stripe API 503: service unavailable")
		require.NoError(t, err)
	}
	return ev.Key
}

func (b *opsBundle) status(t *testing.T, k keys.Event) *inbox.StoredEvent {
	t.Helper()
	e, err := inbox.GetInboxEvent(b.ctx, b.st.Pool, k)
	require.NoError(t, err)
	return e
}

func TestInboxListAndShowPrintPayloadsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	k := b.addEvent(t, "evt_show", "invoice", "in_1", keys.StatusExhausted)
	b.addEvent(t, "evt_other", "invoice", "in_2", keys.StatusDone)

	for _, format := range []cli.OutputFormat{"table", "json"} {
		require.NoError(t, runInboxList(b.ctx, b.env(), inboxListOptions{
			filter: inbox.InboxFilter{Statuses: []string{keys.StatusExhausted}, Limit: 50}, format: format}))
		require.Contains(t, b.out.String(), k.String())
		require.NotContains(t, b.out.String(), "evt_other", "the status filter applies")
		require.NotContains(t, b.out.String(), secretMarker, "listings never print payloads")
	}

	env := b.env()
	require.NoError(t, runInboxShow(b.ctx, env, inboxShowOptions{key: k, format: "table"}))
	out := b.out.String()
	require.Contains(t, out, "stripe API 503: service unavailable", "the last error is shown")
	require.Contains(t, out, "exhausted")
	require.Contains(t, out, "resource/stripe/acct_1/test/invoice/in_1", "the workflow id to look up in the UI")
	require.Contains(t, out, "http://temporal.example:8233/namespaces/default/workflows/resource%2Fstripe%2Facct_1%2Ftest%2Finvoice%2Fin_1",
		"the Temporal UI link of the event's resource")
	require.Contains(t, out, "access-restricted")
	require.NotContains(t, out, secretMarker)
	require.Empty(t, b.errOut.String())

	env = b.env()
	require.NoError(t, runInboxShow(b.ctx, env, inboxShowOptions{key: k, format: "json"}))
	require.NotContains(t, b.out.String(), secretMarker)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b.out.Bytes(), &v))
	require.Equal(t, "exhausted", v["status"])
	require.NotContains(t, v, "payload")

	for _, format := range []cli.OutputFormat{"table", "json"} {
		env = b.env()
		require.NoError(t, runInboxShow(b.ctx, env, inboxShowOptions{key: k, payload: true, format: format}))
		require.Contains(t, b.out.String(), secretMarker, "--payload prints it")
		require.Contains(t, b.errOut.String(), "access-restricted", "with a note")
	}

	env = b.env()
	err := runInboxShow(b.ctx, env, inboxShowOptions{key: keys.Event{Provider: "stripe", Account: "acct_1",
		Environment: "test", EventID: "evt_nope"}, format: "table"})
	require.ErrorContains(t, err, "is not in the inbox")
}

func TestReplayByStatusResetsAuditsAndSignalsEachResourceOnce(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	e1 := b.addEvent(t, "evt_1", "invoice", "in_1", keys.StatusExhausted)
	e2 := b.addEvent(t, "evt_2", "invoice", "in_1", keys.StatusExhausted)
	e3 := b.addEvent(t, "evt_3", "subscription", "sub_1", keys.StatusExhausted)
	failed := b.addEvent(t, "evt_4", "invoice", "in_4", keys.StatusFailed)
	done := b.addEvent(t, "evt_5", "invoice", "in_5", keys.StatusDone)

	newOpts := func(dry bool) replayOptions {
		return replayOptions{req: ops.ReplayRequest{Filter: &inbox.InboxFilter{Statuses: []string{keys.StatusExhausted}, Limit: 100},
			Reason: "Stripe outage over", DryRun: dry, Selection: "--status exhausted"}, by: "alice", format: "table"}
	}
	opts := newOpts(false)

	// Dry run: listed, nothing changed, nobody signalled.
	dry := newOpts(true)
	require.NoError(t, runReplay(b.ctx, b.env(), dry))
	require.Contains(t, b.out.String(), "would_replay")
	require.Contains(t, b.out.String(), "nothing changed")
	require.Equal(t, keys.StatusExhausted, b.status(t, e1).Status)
	require.Empty(t, b.sig.calls)

	require.NoError(t, runReplay(b.ctx, b.env(), opts))
	require.Contains(t, b.out.String(), "replayed 3 event(s)")
	require.Contains(t, b.out.String(), "(replay job 1)", "a bulk replay is a recorded job")
	require.NotContains(t, b.out.String(), secretMarker)
	for _, k := range []keys.Event{e1, e2, e3} {
		got := b.status(t, k)
		require.Equal(t, keys.StatusPending, got.Status)
		require.Zero(t, got.Attempts)
		acts, err := store.ListOperatorActions(b.ctx, b.st.Pool, k.String(), 10)
		require.NoError(t, err)
		require.Len(t, acts, 1)
		require.Equal(t, "alice", acts[0].Actor)
		require.Equal(t, "Stripe outage over", acts[0].Reason)
		require.Equal(t, "stripe API 503: service unavailable", acts[0].Details["previous_last_error"])
	}
	require.Equal(t, keys.StatusFailed, b.status(t, failed).Status, "only the selected status")
	require.Equal(t, keys.StatusDone, b.status(t, done).Status)

	// One doorbell per resource, the event signal.
	require.ElementsMatch(t, []keys.Resource{
		{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"},
		{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "subscription", ID: "sub_1"},
	}, b.sig.resources())
	for _, c := range b.sig.calls {
		require.Equal(t, keys.SignalEvent, c.signal)
	}

	// Nothing left to replay.
	require.NoError(t, runReplay(b.ctx, b.env(), newOpts(false)))
	require.Contains(t, b.out.String(), "nothing to replay")
}

func TestReplayOfADoneEventNeedsForce(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	k := b.addEvent(t, "evt_done", "invoice", "in_1", keys.StatusDone)
	newOpts := func(dry, force bool) replayOptions {
		return replayOptions{req: ops.ReplayRequest{Keys: []keys.Event{k}, Reason: "double-check grant", DryRun: dry, Force: force,
			Selection: "key"}, by: "bob", format: "table"}
	}
	opts := newOpts(false, false)

	err := runReplay(b.ctx, b.env(), opts)
	require.ErrorContains(t, err, "no-op")
	require.ErrorContains(t, err, "--force")
	require.Equal(t, keys.StatusDone, b.status(t, k).Status)
	require.Empty(t, b.sig.calls)

	require.NoError(t, runReplay(b.ctx, b.env(), newOpts(true, false)))
	require.Contains(t, b.out.String(), "refused")

	opts = newOpts(false, true)
	require.NoError(t, runReplay(b.ctx, b.env(), opts))
	require.Contains(t, b.out.String(), "replayed 1 event(s)")
	require.Equal(t, keys.StatusPending, b.status(t, k).Status)
	require.Len(t, b.sig.calls, 1)
	acts, err := store.ListOperatorActions(b.ctx, b.st.Pool, k.String(), 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, true, acts[0].Details["force"])

	// The audit shows on `inbox show`.
	env := b.env()
	require.NoError(t, runInboxShow(b.ctx, env, inboxShowOptions{key: k, format: "table"}))
	require.Contains(t, b.out.String(), "double-check grant")
	require.Contains(t, b.out.String(), "previous_status=done")
}

func TestReplayWithTemporalDownWarnsAndKeepsTheRowsPending(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	b.sig.err = errors.New("connection refused")
	e1 := b.addEvent(t, "evt_1", "invoice", "in_1", keys.StatusExhausted)
	e2 := b.addEvent(t, "evt_2", "invoice", "in_2", keys.StatusFailed)

	require.NoError(t, runReplay(b.ctx, b.env(), replayOptions{req: ops.ReplayRequest{Filter: &inbox.InboxFilter{
		Statuses: []string{keys.StatusExhausted, keys.StatusFailed}, Limit: 100}, Reason: "retry"}, by: "alice", format: "json"}))
	var sum ops.ReplaySummary
	require.NoError(t, json.Unmarshal(b.out.Bytes(), &sum))
	require.Equal(t, 2, sum.Replayed)
	require.Contains(t, sum.SignalErr, "connection refused")
	require.Contains(t, b.errOut.String(), "warning")
	require.Contains(t, b.errOut.String(), "sweeper")
	require.Len(t, b.sig.calls, 1, "after the first failure Temporal is not tried again for each resource")
	for _, k := range []keys.Event{e1, e2} {
		require.Equal(t, keys.StatusPending, b.status(t, k).Status)
	}
}

func TestQuarantineResolveReadmitsAndSignalsOrDiscards(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.st, endpoints.NewEndpoint{Slug: "connect", Provider: "stripe", Environment: "test",
		Account: "acct_platform", Secrets: []string{"whsec_b"}}))
	add := func(id, typ, account string) int64 {
		body := stripeBody(id, typ, "invoice", "in_"+id, account)
		sum := sha256.Sum256(body)
		_, err := inbox.InsertQuarantine(b.ctx, b.st.Pool, &inbox.QuarantineEntry{EndpointSlug: "connect", Provider: "stripe",
			Account: account, Environment: "test", EventID: id, Reason: inbox.ReasonUnknownAccount,
			Detail: "source account " + account + " is not linked to a workspace", Payload: body, BodySHA256: sum[:],
			Headers: map[string]string{"Content-Type": "application/json"}})
		require.NoError(t, err)
		var qid int64
		require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT id FROM inbox_quarantine WHERE event_id = $1`, id).Scan(&qid))
		return qid
	}
	paid := add("evt_paid", "invoice.paid", "acct_new")
	other := add("evt_upd", "invoice.updated", "acct_new")
	junk := add("evt_junk", "invoice.paid", "acct_junk")

	// Listing and showing never print the body.
	require.NoError(t, runQuarantineList(b.ctx, b.env(), quarantineListOptions{filter: inbox.QuarantineFilter{OpenOnly: true, Limit: 50}, format: "table"}))
	require.Contains(t, b.out.String(), "unknown_account")
	require.NotContains(t, b.out.String(), secretMarker)
	env := b.env()
	require.NoError(t, runQuarantineShow(b.ctx, env, quarantineShowOptions{id: paid, format: "table"}))
	require.Contains(t, b.out.String(), "Content-Type: application/json")
	require.Contains(t, b.out.String(), "endpoints link --slug connect --account acct_new")
	require.NotContains(t, b.out.String(), secretMarker)
	env = b.env()
	require.NoError(t, runQuarantineShow(b.ctx, env, quarantineShowOptions{id: paid, payload: true, format: "table"}))
	require.Contains(t, b.out.String(), secretMarker)
	require.Contains(t, b.errOut.String(), "access-restricted")

	resolve := func(id int64, action string) error {
		return runQuarantineResolve(b.ctx, b.env(), quarantineResolveOptions{ids: []int64{id}, action: action, reason: "account onboarded", by: "carol", format: "table"})
	}
	// Still unlinked: a clear error, nothing signalled, entry open.
	err := resolve(paid, ops.ResolveReadmit)
	require.ErrorContains(t, err, "still not linked")
	require.ErrorContains(t, err, "stays open")
	require.Empty(t, b.sig.calls)

	require.NoError(t, endpoints.LinkAccount(b.ctx, b.st, "connect", "acct_new", "ws_new"))
	require.NoError(t, resolve(paid, ops.ResolveReadmit))
	require.Contains(t, b.out.String(), "readmitted by carol as stripe/acct_new/test/evt_paid")
	require.Equal(t, []keys.Resource{{Provider: "stripe", Account: "acct_new", Environment: "test", Kind: "invoice", ID: "in_evt_paid"}},
		b.sig.resources(), "a pending event rings its resource")
	got := b.status(t, keys.Event{Provider: "stripe", Account: "acct_new", Environment: "test", EventID: "evt_paid"})
	require.Equal(t, "ws_new", got.WorkspaceID)
	require.Equal(t, keys.StatusPending, got.Status)

	// An unhandled type is admitted as ignored: no doorbell.
	require.NoError(t, resolve(other, ops.ResolveReadmit))
	require.Contains(t, b.out.String(), "status ignored")
	require.Len(t, b.sig.calls, 1)

	require.NoError(t, resolve(junk, ops.ResolveDiscard))
	require.Contains(t, b.out.String(), "discarded by carol")
	require.Len(t, b.sig.calls, 1)
	q, err := inbox.GetQuarantineEntry(b.ctx, b.st.Pool, junk, false)
	require.NoError(t, err)
	require.Equal(t, "carol", q.ResolvedBy)

	require.NoError(t, runQuarantineList(b.ctx, b.env(), quarantineListOptions{filter: inbox.QuarantineFilter{OpenOnly: true, Limit: 50}, format: "json"}))
	var open []ops.QuarantineView
	require.NoError(t, json.Unmarshal(b.out.Bytes(), &open))
	require.Empty(t, open, "all three are resolved")

	require.Error(t, resolve(junk, ops.ResolveDiscard), "resolved once")
}

// runCLI runs the binary's command tree as main does and returns the exit
// status and what was printed on stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	root := NewRootCmd()
	root.SetArgs(args)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	code := cli.Run(context.Background(), root, &errOut)
	return code, errOut.String()
}

// Every usage error exits 2, before anything connects: ours, and cobra's
// own (unknown command or flag, missing argument, missing required flag).
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	tests := []struct {
		name string
		args []string
	}{
		{"replay without a selection", []string{"replay", "--reason", "x"}},
		{"replay with key and status", []string{"replay", "stripe/a/test/evt_1", "--status", "exhausted", "--reason", "x"}},
		{"replay without a reason", []string{"replay", "stripe/a/test/evt_1"}},
		{"replay with a blank reason", []string{"replay", "stripe/a/test/evt_1", "--reason", "  "}},
		{"replay of done by status", []string{"replay", "--status", "done", "--reason", "x"}},
		{"replay with a bad status", []string{"replay", "--status", "lost", "--reason", "x"}},
		{"replay with a bad key", []string{"replay", "evt_1", "--reason", "x"}},
		{"replay key with --since", []string{"replay", "stripe/a/test/evt_1", "--since", "1h", "--reason", "x"}},
		{"replay with an empty --by", []string{"replay", "stripe/a/test/evt_1", "--reason", "x", "--by", ""}},
		{"replay with a bad --from", []string{"replay", "--from", "yesterday", "--reason", "x"}},
		{"inbox show with a bad key", []string{"inbox", "show", "stripe/evt_1"}},
		{"inbox list with a bad status", []string{"inbox", "list", "--status", "lost"}},
		{"inbox list with a bad provider", []string{"inbox", "list", "--provider", "paypal"}},
		{"quarantine resolve with a bad action", []string{"quarantine", "resolve", "1", "--action", "delete", "--reason", "x"}},
		{"quarantine resolve without a reason", []string{"quarantine", "resolve", "1", "2", "--action", "discard"}},
		{"quarantine resolve with a bad id", []string{"quarantine", "resolve", "1", "abc", "--action", "discard", "--reason", "x"}},
		{"quarantine list with a bad reason", []string{"quarantine", "list", "--reason", "weird"}},
		{"outbox list with a bad status", []string{"outbox", "list", "--status", "lost"}},
		{"tokens create with a bad role", []string{"tokens", "create", "--role", "root", "--name", "x"}},
		{"endpoints update with nothing to change", []string{"endpoints", "update", "--slug", "s"}},
		{"endpoints add with a bad slug", []string{"endpoints", "add", "--slug", "Bad Slug", "--provider", "stripe", "--environment", "test", "--secret", "whsec_x"}},
		{"explain of an unknown kind", []string{"explain", "invoice", "in_1"}},
		// cobra's own errors
		{"unknown command", []string{"frobnicate"}},
		{"unknown subcommand flag", []string{"inbox", "list", "--colour", "red"}},
		{"missing argument", []string{"inbox", "show"}},
		{"extra argument", []string{"status", "now"}},
		{"missing required flag", []string{"endpoints", "link", "--slug", "s", "--account", "a"}},
		{"missing required flag of workspaces set", []string{"workspaces", "set", "--email", "a@example.com"}},
		{"bad flag value", []string{"inbox", "list", "--limit", "many"}},
		{"bad age", []string{"inbox", "list", "--since", "yesterday"}},
	}
	for _, tt := range tests {
		code, errOut := runCLI(t, "", tt.args...)
		require.Equal(t, 2, code, "%s: %s", tt.name, errOut)
		require.Contains(t, errOut, "error:", tt.name)
	}
}

func TestVersionAndDashDashVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := NewRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		require.Equal(t, 0, cli.Run(context.Background(), root, io.Discard))
		require.True(t, strings.HasPrefix(out.String(), "hookinbox "), out.String())
	}
}

func TestParseAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "2h": 2 * time.Hour, "7d": 7 * 24 * time.Hour} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "x", "-1h", "0s", "1.5d"} {
		_, err := parseAge(in)
		require.Error(t, err, in)
	}
}

// The commands run end to end on a database: outbox list prints [] when
// empty, replay reads keys from stdin as one recorded job, quarantine
// resolve takes several ids, tokens create prints the token once.
func TestCommandsOnADatabase(t *testing.T) {
	b := setupOps(t)
	var url string
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT current_database()`).Scan(&url))
	t.Setenv("DATABASE_URL", strings.Replace(testenv.AdminURL(t, "postgres"), "/postgres?", "/"+url+"?", 1))
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		root := NewRootCmd()
		root.SetArgs(args)
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetIn(strings.NewReader(stdin))
		code := cli.Run(context.Background(), root, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run("", "outbox", "list", "--output", "json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[]\n", out)

	e1 := b.addEvent(t, "evt_a", "invoice", "in_a", keys.StatusExhausted)
	e2 := b.addEvent(t, "evt_b", "invoice", "in_b", keys.StatusFailed)
	code, out, errOut = run(e1.String()+"\n# a comment\n\n"+e2.String()+"\n", "replay", "-", "--reason", "INC-9", "--by", "dave")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "replayed 2 event(s)")
	require.Contains(t, out, "(replay job 1)")
	require.Contains(t, errOut, "Temporal unreachable", "the rows stay pending for the sweeper")
	for _, k := range []keys.Event{e1, e2} {
		require.Equal(t, keys.StatusPending, b.status(t, k).Status)
	}
	code, _, errOut = run("stripe/acct_1/test/evt_a\nnot-a-key\n", "replay", "-", "--reason", "x")
	require.Equal(t, 2, code, "a bad line on stdin is a usage error and nothing is replayed")
	require.Contains(t, errOut, "line 2")

	var ids []string
	for _, id := range []string{"evt_q1", "evt_q2"} {
		body := stripeBody(id, "invoice.paid", "invoice", "in_"+id, "acct_x")
		sum := sha256.Sum256(body)
		_, err := inbox.InsertQuarantine(b.ctx, b.st.Pool, &inbox.QuarantineEntry{EndpointSlug: "stripe", Provider: "stripe",
			Account: "acct_x", Environment: "test", EventID: id, Reason: inbox.ReasonUnknownAccount, Payload: body, BodySHA256: sum[:],
			Headers: map[string]string{}})
		require.NoError(t, err)
		var qid int64
		require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT id FROM inbox_quarantine WHERE event_id = $1`, id).Scan(&qid))
		ids = append(ids, strconv.FormatInt(qid, 10))
	}
	code, out, errOut = run("", append(append([]string{"quarantine", "resolve"}, ids...), "--action", "discard", "--reason", "junk", "--by", "erin")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 2, strings.Count(out, "discarded by erin"))

	code, out, errOut = run("", "tokens", "create", "--role", "viewer", "--name", "grafana")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, ops.TokenPrefix))
	require.Contains(t, errOut, "shown only now")
	code, out, _ = run("", "tokens", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "grafana")
	require.NotContains(t, out, ops.TokenPrefix, "a listing never shows a token")
}
