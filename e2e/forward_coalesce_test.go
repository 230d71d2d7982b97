package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Coalescing routes (issue 34): a resource's queued events of one route go
// as one signed document with the latest current and the list it covers.

// holdFirst makes rcv hold its first request until release is closed, so
// that what is sent meanwhile queues behind it.
func holdFirst(rcv *receiver) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	first := true
	var mu sync.Mutex
	rcv.answer = func(int, forward.Document) (int, http.Header, string) {
		mu.Lock()
		hold := first
		first = false
		mu.Unlock()
		if hold {
			<-ch
		}
		return http.StatusOK, nil, "ok"
	}
	return func() { once.Do(func() { close(ch) }) }
}

// queueTenUpdates creates a subscription, delivers its created event (held
// at the receiver) and then ten updates, which queue behind it.
func queueTenUpdates(t *testing.T, w *simWorld, rcv *receiver) (sub simulator.Subscription, updates []simulator.Event) {
	t.Helper()
	sub, created := w.sim.CreateSubscription(w.account, "", simulator.SubscriptionOptions{})
	w.send(t, created)
	eventually(t, 60*time.Second, "the created event at the receiver", func() bool { return len(rcv.requests()) == 1 })
	for i := range 10 {
		ev, err := w.sim.UpdateSubscription(sub.ID, func(s *simulator.SubscriptionState) { s.CancelAtPeriodEnd = i%2 == 0 })
		require.NoError(t, err)
		updates = append(updates, ev)
	}
	w.send(t, updates...)
	return sub, updates
}

func coalescingRoute(rcv *receiver) ops.RouteSpec {
	return ops.RouteSpec{Name: "subs", Provider: "stripe", EventType: "customer.subscription.*", URL: rcv.srv.URL,
		FetchCurrent: true, Coalesce: true, ReplaceHandler: true, AllowPrivate: true,
		Timeout: 2 * time.Minute} // the first send is held while the updates queue: no timeout meanwhile
}

func TestForwardCoalescingRouteSendsTenQueuedUpdatesAsOneDocument(t *testing.T) {
	t.Parallel()
	w := forwardStack(t, simulator.Config{Versions: true})
	rcv := newReceiver(t)
	release := holdFirst(rcv)
	defer release()
	w.addRoute(t, coalescingRoute(rcv))
	sub, updates := queueTenUpdates(t, w, rcv)
	release()
	w.allDone(t, 11)

	got := rcv.requests()
	require.Len(t, got, 2, "the created event, then one document for the ten queued updates")
	require.Zero(t, rcv.unverified, "both signed Standard Webhooks documents")
	require.Empty(t, got[0].doc.Coalesced, "an event alone goes as the plain document")
	require.Equal(t, got[0].doc.EventKey, got[0].idem)

	d := got[1].doc
	res := keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "subscription", ID: sub.ID}
	last := w.key(updates[9].ID)
	opKey := forward.CoalescedKey("subs", res, last)
	require.Equal(t, opKey, d.OperationKey, "the key names the route, the resource and the last event")
	require.Equal(t, opKey, got[1].idem)
	require.Equal(t, opKey, got[1].wid)
	require.Equal(t, last.String(), d.EventKey, "the document is the last event's")
	require.Equal(t, updates[9].ID, gjson.GetBytes(d.Payload, "id").String())
	require.Len(t, d.Coalesced, 10)
	for i, c := range d.Coalesced {
		require.Equal(t, w.key(updates[i].ID).String(), c.EventKey, "covered in order")
		require.Equal(t, "customer.subscription.updated", c.EventType)
		require.False(t, c.ReceivedAt.IsZero())
	}
	require.EqualValues(t, 11, gjson.GetBytes(d.Current, "version").Int(), "the latest state")

	head := w.key(updates[0].ID)
	as := w.attempts(t, head)
	require.Len(t, as, 1)
	require.Equal(t, forwards.OutcomeDone, as[0].Outcome)
	require.Equal(t, opKey, as[0].OperationKey)
	for _, u := range updates[1:] {
		k := w.key(u.ID)
		e, err := inbox.GetInboxEvent(w.ctx, w.store.Pool, k)
		require.NoError(t, err)
		require.Equal(t, keys.StatusDone, e.Status)
		var note string
		require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT coalesce(note, '') FROM webhook_inbox WHERE event_id = $1`, u.ID).Scan(&note))
		require.Equal(t, "coalesced into "+opKey, note)
		as := w.attempts(t, k)
		require.Len(t, as, 1)
		require.Equal(t, forwards.OutcomeCoalesced, as[0].Outcome)
		require.Equal(t, head.String(), as[0].CoveredBy, "the lineage names the send that covered it")
		require.Equal(t, opKey, as[0].OperationKey)
	}
	require.Equal(t, float64(9), counterValue(t, w.stack, "hookinbox_forward_coalesced_total", "subs"),
		"nine events completed under another's send")
	l, err := w.ops().Explain(w.ctx, ops.LineageResource, res.String())
	require.NoError(t, err)
	require.Len(t, l.Forwards, 11, "explain shows every event's attempt, the covered ones with their covering send")
	require.Zero(t, w.count(t, `SELECT count(*) FROM subscription_projection`), "the replaced handler never ran")
	require.Equal(t, 2, handleEventCalls(t, w, `SourceAccount = "`+w.account+`"`),
		"the created event and the covering update: the workflow attempts none of the nine rows the send completed")
}

// handleEventCalls counts the HandleEvent attempts (activities or local
// activities' markers) in the histories of the workflows query lists.
func handleEventCalls(t *testing.T, w *simWorld, query string) int {
	t.Helper()
	resp, err := w.client.ListWorkflow(w.ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err)
	require.NotEmpty(t, resp.Executions)
	n := 0
	for _, e := range resp.Executions {
		for _, ev := range history(t, w.client, e.Execution.WorkflowId, e.Execution.RunId).Events {
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "HandleEvent" {
				n++
			}
			if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
				// The marker's "data" payload is the SDK's record of the
				// local activity, its type among it.
				for _, p := range m.GetDetails()["data"].GetPayloads() {
					if strings.Contains(string(p.GetData()), `"HandleEvent"`) {
						n++
					}
				}
			}
		}
	}
	return n
}

func TestForwardCoalescedDocumentResentWithTheSameKeysAfterAWorkerKilledMidSend(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorker: true, configure: func(c *config.Config) {
		c.OutboundAllowPrivate, c.EndpointCacheTTL = false, 200*time.Millisecond
	}})
	w := newSimWorld(t, s, simulator.Config{Versions: true})
	var mu sync.Mutex
	var current *workerProcess
	killed := make(chan struct{})
	rcv := newReceiver(t)
	release := holdFirst(rcv)
	defer release()
	rcv.beforeAnswer = func(d forward.Document) {
		if len(d.Coalesced) == 0 {
			return
		}
		// The service applied the coalesced document; its 2xx is about to
		// leave. The worker dies first: no covered row can be complete.
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-killed:
		default:
			current.kill()
			close(killed)
		}
	}
	w.addRoute(t, coalescingRoute(rcv))
	mu.Lock()
	current = startWorkerProcess(t, s)
	mu.Unlock()
	_, updates := queueTenUpdates(t, w, rcv)
	release()
	select {
	case <-killed:
	case <-time.After(90 * time.Second):
		t.Fatal("the worker never sent the coalesced document")
	}
	for _, u := range updates {
		require.Equal(t, keys.StatusPending, w.statusOf(w.key(u.ID)), "killed between the 2xx and the completion")
	}
	mu.Lock()
	current = startWorkerProcess(t, s)
	mu.Unlock()
	w.allDone(t, 11)

	var sends []received
	for _, r := range rcv.requests() {
		if len(r.doc.Coalesced) > 0 {
			sends = append(sends, r)
		}
	}
	require.Len(t, sends, 2, "the coalesced document was sent again: its outcome was unknown")
	for _, r := range sends {
		require.Equal(t, sends[0].idem, r.idem, "the same Idempotency-Key")
		require.Equal(t, sends[0].idem, r.wid, "and webhook-id")
		require.Equal(t, sends[0].doc.Coalesced, r.doc.Coalesced, "covering the same events")
		require.JSONEq(t, string(sends[0].doc.Current), string(r.doc.Current), "the same document")
	}
	require.Len(t, sends[0].doc.Coalesced, 10)
	require.Zero(t, rcv.unverified)
	rcv.mu.Lock()
	require.Equal(t, 1, rcv.applied[sends[0].idem], "the service, deduping on the key, applied it once")
	rcv.mu.Unlock()
	for _, u := range updates[1:] {
		as := w.attempts(t, w.key(u.ID))
		require.Len(t, as, 1)
		require.Equal(t, forwards.OutcomeCoalesced, as[0].Outcome)
		require.Equal(t, sends[0].idem, as[0].OperationKey)
	}
}
