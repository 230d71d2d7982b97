package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// Traces (issue 35 items 3 and 4): the intake and the worker export to an
// OTLP/HTTP receiver inside the test, which decodes the real protobufs
// (go.opentelemetry.io/proto/otlp) the exporter sends.

// span is one exported span as the receiver decoded it.
type span struct {
	service, name             string
	traceID, spanID, parentID string
	start, end                time.Time
	attrs                     map[string]string
}

func (s span) took() time.Duration { return s.end.Sub(s.start) }

// otlpReceiver is an OTLP/HTTP traces endpoint (POST /v1/traces,
// application/x-protobuf).
type otlpReceiver struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	spans []span
	posts int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.t.Errorf("OTLP export with Content-Type %q", ct)
		http.Error(w, "want protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		r.t.Errorf("OTLP export does not decode: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []span
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, decodeSpan(service, sp))
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.posts++
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func decodeSpan(service string, sp *tracepb.Span) span {
	s := span{service: service, name: sp.GetName(), traceID: hex.EncodeToString(sp.GetTraceId()),
		spanID: hex.EncodeToString(sp.GetSpanId()), start: time.Unix(0, int64(sp.GetStartTimeUnixNano())),
		end: time.Unix(0, int64(sp.GetEndTimeUnixNano())), attrs: map[string]string{}}
	if p := sp.GetParentSpanId(); len(p) > 0 {
		s.parentID = hex.EncodeToString(p)
	}
	for _, kv := range sp.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			s.attrs[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			s.attrs[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		}
	}
	return s
}

// trace is every span of trace id, oldest first.
func (r *otlpReceiver) trace(id string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.traceID == id {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

func (r *otlpReceiver) count() (spans, posts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.spans), r.posts
}

// traceTree is one trace: its spans by id, and the one named name.
type traceTree struct {
	t     *testing.T
	spans []span
	byID  map[string]span
}

func newTraceTree(t *testing.T, spans []span) traceTree {
	tt := traceTree{t: t, spans: spans, byID: map[string]span{}}
	for _, s := range spans {
		tt.byID[s.spanID] = s
	}
	return tt
}

// one is the trace's only span named name.
func (tt traceTree) one(name string) span {
	tt.t.Helper()
	var found []span
	for _, s := range tt.spans {
		if s.name == name {
			found = append(found, s)
		}
	}
	require.Len(tt.t, found, 1, "one %q span in the trace:\n%s", name, tt.String())
	return found[0]
}

// childOf asserts that the span named child has the span named parent as
// its parent, and returns the child.
func (tt traceTree) childOf(child, parent string) span {
	tt.t.Helper()
	c, p := tt.one(child), tt.one(parent)
	require.Equal(tt.t, p.spanID, c.parentID, "%q is a child of %q:\n%s", child, parent, tt.String())
	return c
}

// String draws the trace as the receiver decoded it: each span under its
// parent, with its service, duration and start offset.
func (tt traceTree) String() string {
	kids := map[string][]span{}
	var roots []span
	for _, s := range tt.spans {
		if _, ok := tt.byID[s.parentID]; s.parentID == "" || !ok {
			roots = append(roots, s)
			continue
		}
		kids[s.parentID] = append(kids[s.parentID], s)
	}
	var b strings.Builder
	var t0 time.Time
	if len(tt.spans) > 0 {
		t0 = tt.spans[0].start
	}
	var walk func(s span, depth int)
	walk = func(s span, depth int) {
		parent := s.parentID
		if parent == "" {
			parent = "-"
		}
		fmt.Fprintf(&b, "%-52s %-17s span %s parent %-16s +%8.2fms %8.2fms\n", strings.Repeat("  ", depth)+s.name, s.service,
			s.spanID, parent, float64(s.start.Sub(t0).Microseconds())/1000, float64(s.took().Microseconds())/1000)
		for _, k := range kids[s.spanID] {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// forwardService records the traceparent of every forward it gets.
type forwardService struct {
	srv *httptest.Server
	mu  sync.Mutex
	tps []string
}

func newForwardService(t *testing.T) *forwardService {
	f := &forwardService{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		f.mu.Lock()
		f.tps = append(f.tps, req.Header.Get("traceparent"))
		f.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *forwardService) traceparents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tps...)
}

// flush stops the worker and the intake, which flush their spans.
func (s *stack) flush() {
	s.stopWorker()
	s.stopWorker = func() {}
	s.stopIntake()
	s.stopIntake = func() {}
}

func (w *simWorld) traceparentOf(t *testing.T, eventID string) string {
	t.Helper()
	var tp *string
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT traceparent FROM webhook_inbox WHERE event_id = $1`, eventID).Scan(&tp))
	if tp == nil {
		return ""
	}
	return *tp
}

func tracedWorld(t *testing.T, configure func(*config.Config)) (*simWorld, *forwardService) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: func(c *config.Config) {
		withMailpit(mp)(c)
		c.OutboundAllowPrivate = false
		c.EndpointCacheTTL = 200 * time.Millisecond
		configure(c)
	}}), simulator.Config{})
	fwd := newForwardService(t)
	w.addRoute(t, ops.RouteSpec{Name: "subs", Provider: "stripe", EventType: "customer.subscription.created", URL: fwd.srv.URL + "/hooks",
		ReplaceHandler: true, AllowPrivate: true})
	time.Sleep(time.Second) // both route tables reload (HOOKINBOX_ENDPOINT_CACHE_TTL)
	return w, fwd
}

// deliverBoth delivers a subscription's creation (forwarded by the route)
// and a paid invoice (the credits grant and its confirmation email, an
// outbox row), waits for both effects, then flushes the spans.
func deliverBoth(t *testing.T, w *simWorld, fwd *forwardService) (created, paid simulator.Event) {
	_, created = w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, created)
	w.send(t, paid)
	w.allDone(t, 2)
	eventually(t, 60*time.Second, "the forward and the confirmation email", func() bool {
		return len(fwd.traceparents()) == 1 && w.outboxStatus(t) == keys.OutboxSent
	})
	w.flush()
	return created, paid
}

func TestOneDeliveryIsOneTraceFromTheIntakeToItsEffects(t *testing.T) {
	t.Parallel()
	otlp := newOTLPReceiver(t)
	w, fwd := tracedWorld(t, func(c *config.Config) { c.TracesEndpoint = otlp.srv.URL + "/v1/traces" })
	created, paid := deliverBoth(t, w, fwd)

	for _, tc := range []struct {
		event    simulator.Event
		effect   string // the activity span under the handling, and its Temporal activity
		activity string
	}{
		{created, "forward POST", "HandleEvent"},
		{paid, "send outbox", "SendOutbox"},
	} {
		tp := w.traceparentOf(t, tc.event.ID)
		traceID := keys.TraceID(tp)
		require.NotEmpty(t, traceID, "%s: the inbox row keeps its traceparent (%q)", tc.event.Type, tp)
		spans := otlp.trace(traceID)
		tree := newTraceTree(t, spans)
		t.Logf("%s %s: trace %s as the OTLP receiver decoded it (%d spans):\n%s", tc.event.Type, tc.event.ID, traceID, len(spans), tree)

		// The intake's request is the root; verification and the commit
		// its children; the row keeps the root's span.
		root := tree.one("POST /webhooks/{endpoint}")
		require.Empty(t, root.parentID, "the intake's request span is the trace's root")
		require.Equal(t, "hookinbox-intake", root.service)
		require.Equal(t, strings.Split(tp, "-")[2], root.spanID, "the stored traceparent is the request span's")
		require.Equal(t, "accepted", root.attrs["hookinbox.outcome"])
		tree.childOf("verify", "POST /webhooks/{endpoint}")
		tree.childOf("inbox commit", "POST /webhooks/{endpoint}")

		// The workflow's span (the SDK's interceptor) has the delivery as
		// its parent, not the doorbell; the worker's under it.
		start := tree.childOf("StartActivity:HandleEvent", "POST /webhooks/{endpoint}")
		require.Equal(t, "hookinbox-worker", start.service)
		tree.childOf("RunActivity:HandleEvent", "StartActivity:HandleEvent")
		handle := tree.childOf("handle event", "RunActivity:HandleEvent")
		key := keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: tc.event.ID}
		require.Equal(t, key.String(), handle.attrs["hookinbox.event_key"])
		require.Equal(t, keys.StatusDone, handle.attrs["hookinbox.status"])

		if tc.activity == "HandleEvent" {
			post := tree.childOf("forward POST", "handle event")
			require.Equal(t, "200", post.attrs["http.response.status_code"])
			got := fwd.traceparents()
			require.Len(t, got, 1)
			require.Equal(t, traceID, keys.TraceID(got[0]), "the team's service gets the delivery's trace id")
			require.Equal(t, post.spanID, strings.Split(got[0], "-")[2], "its parent is the forward POST span")
		} else {
			tree.childOf("StartActivity:SendOutbox", "POST /webhooks/{endpoint}")
			tree.childOf("RunActivity:SendOutbox", "StartActivity:SendOutbox")
			send := tree.childOf("send outbox", "RunActivity:SendOutbox")
			require.Equal(t, keys.OutboxSent, send.attrs["hookinbox.status"])
		}
		// One trace: every span's parent is in it, and nothing of the
		// delivery is in another trace.
		for _, s := range spans {
			if s.parentID != "" {
				require.Contains(t, tree.byID, s.parentID, "%q's parent is in the trace", s.name)
			}
		}
		otlp.mu.Lock()
		for _, s := range otlp.spans {
			if s.attrs["hookinbox.event_key"] == key.String() {
				require.Equal(t, traceID, s.traceID, "%q of the delivery is in its trace", s.name)
			}
		}
		otlp.mu.Unlock()
	}

	// The lineage names the trace, linked when a trace UI is configured.
	svc := w.ops()
	svc.Config.TraceURL = "http://jaeger.example:16686/trace/{trace_id}"
	k := keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: created.ID}
	l, err := svc.Explain(w.ctx, ops.LineageEvent, k.String())
	require.NoError(t, err)
	traceID := keys.TraceID(w.traceparentOf(t, created.ID))
	var found bool
	for _, e := range l.Events {
		if e.KeyString == k.String() {
			found = true
			require.Equal(t, traceID, e.Trace.ID)
			require.Equal(t, "http://jaeger.example:16686/trace/"+traceID, e.Trace.URL)
		}
	}
	require.True(t, found, "the event is in its lineage")
	d, err := svc.ShowEvent(w.ctx, k, false)
	require.NoError(t, err)
	require.Equal(t, traceID, d.Trace.ID, "inbox show / the console's event page name the trace")
}

func TestTracingOffExportsNothingAndStoresNoTraceparent(t *testing.T) {
	t.Parallel()
	otlp := newOTLPReceiver(t)
	// The standard variables name the receiver, and the SDK's own switch
	// turns tracing off: the configuration the stack is built from says so.
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.srv.URL, "OTEL_SDK_DISABLED": "true"}
	fromEnv, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	require.Empty(t, fromEnv.TracesEndpoint)
	w, fwd := tracedWorld(t, func(c *config.Config) { c.TracesEndpoint = fromEnv.TracesEndpoint })
	created, paid := deliverBoth(t, w, fwd)

	spans, posts := otlp.count()
	require.Zero(t, posts, "nothing exported")
	require.Zero(t, spans)
	require.Empty(t, w.traceparentOf(t, created.ID), "no traceparent stored")
	require.Empty(t, w.traceparentOf(t, paid.ID))
	require.Equal(t, []string{""}, fwd.traceparents(), "the forward carries no traceparent")
	d, err := w.ops().ShowEvent(w.ctx, keys.Event{Provider: "stripe", Account: w.account, Environment: "test", EventID: created.ID}, false)
	require.NoError(t, err)
	require.Empty(t, d.Trace.ID)
}
