package hookinbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// forwarder is the handler of every forward route (`hookinbox routes
// add`): a team's own HTTP service, in any language, behind hookinbox. It
// is one more Handler on this package's API: the resource workflow runs it
// one event at a time per resource, it claims the route's operation key
// in the event's Commit, and its errors keep their kinds (a 4xx is
// Permanent, a 5xx or a timeout is retried with the service's
// Retry-After). A send whose outcome is unknown is sent again with the
// same operation key as webhook-id and Idempotency-Key: the service's
// dedup on them is the contract.
type forwarder struct{ s *forward.Sender }

func newForwarder(s *forward.Sender) engine.Handler { return adapter{h: forwarder{s: s}} }

func (f forwarder) Handle(ctx context.Context, ev *Event) (Result, error) {
	r, err := f.s.Route(ctx, ev.call.Store, ev.call.Route.Name)
	if err != nil {
		return Result{}, err
	}
	if r.Coalesce {
		return f.coalesce(ctx, ev, r)
	}
	opKey, err := forward.OperationKey(r, ev.Key, ev.Payload)
	if err != nil {
		return Result{}, err
	}
	attempt := forwards.Attempt{Route: r.Name, Event: ev.Key, OperationKey: opKey, Attempt: ev.Attempts + 1}
	if r.OperationKeyPath != "" {
		// Another event of this operation was forwarded: nothing to send.
		prior, err := records.GetClaim(ctx, ev.call.Store.Pool, opKey)
		switch {
		case err == nil && prior.EventKey != ev.Key.String():
			attempt.Outcome = forwards.OutcomeSkipped
			return f.complete(ctx, ev, attempt, false, "already forwarded by "+prior.EventKey)
		case err != nil && !fault.IsNotFound(err):
			return Result{}, err
		}
	}
	doc := forward.Document{OperationKey: opKey, EventKey: ev.Key.String(), Route: r.Name, Provider: ev.Key.Provider,
		EventType: ev.Type, Resource: forward.DocResource{Kind: ev.Resource.Kind, ID: ev.Resource.ID}, Account: ev.Key.Account,
		Environment: ev.Key.Environment, Workspace: ev.Workspace, ReceivedAt: ev.ReceivedAt.UTC(), Payload: forward.Payload(ev.Payload)}
	if r.FetchCurrent {
		// The seed's recipe when there is no version: the provider's state
		// just before the send, whatever order the deliveries came in.
		if doc.Current, err = ev.Fetch(ctx); err != nil {
			return Result{}, err
		}
	}
	ans, err := f.s.Send(ctx, r, opKey, doc)
	attempt.StatusCode, attempt.Latency = ans.StatusCode, ans.Latency
	if err != nil {
		attempt.Outcome, attempt.Error = forwards.OutcomeFailed, err.Error()
		if ans.Retry {
			attempt.Outcome = forwards.OutcomeRetry
		}
		if rerr := forwards.InsertAttempt(ctx, ev.call.Store.Pool, attempt); rerr != nil {
			return Result{BusinessKey: opKey}, rerr
		}
		return Result{BusinessKey: opKey}, err
	}
	attempt.Outcome = forwards.OutcomeDone
	return f.complete(ctx, ev, attempt, true, fmt.Sprintf("forwarded to %s: HTTP %d in %s",
		outbound.Origin(r.URL), ans.StatusCode, ans.Latency.Round(time.Millisecond)))
}

// complete commits the row's completion with the attempt and, after a
// send, the operation's claim.
func (f forwarder) complete(ctx context.Context, ev *Event, a forwards.Attempt, sent bool, note string) (Result, error) {
	return ev.Commit(ctx, func(tx *Tx) (Result, error) {
		if sent && a.OperationKey != ev.Key.String() {
			c, err := tx.Claim(ctx, a.OperationKey)
			if err != nil {
				return Result{}, err
			}
			if !c.First && c.By != ev.Key {
				// Two events of one operation on two resources raced: both
				// were sent under one key, which the service dedups on.
				note += fmt.Sprintf(" (the operation was also forwarded by %s, under the same key)", c.By)
			}
		}
		if err := forwards.InsertAttempt(ctx, tx.Conn(), a); err != nil {
			return Result{}, err
		}
		return Result{Note: note, BusinessKey: a.OperationKey}, nil
	})
}

// coalesce sends, for a coalescing route, one document for ev and the run
// of the resource's pending events after it that the route takes (issue
// 34): the latest current, the events it covers in order, under a key
// naming the route, the resource and the last event. The send is recorded
// before it goes out, and a send of ev already recorded (its outcome
// unknown: a timeout, a worker killed between the 2xx and the commit) goes
// again as the same document under the same key. Its commit completes ev
// and every covered event still pending, each "coalesced into" the key,
// with an attempt naming the event whose send covered it.
func (f forwarder) coalesce(ctx context.Context, ev *Event, r *forwards.Route) (Result, error) {
	st := ev.call.Store
	plan, err := forwards.CoalescedFor(ctx, st.Pool, r.Name, ev.Key)
	if fault.IsNotFound(err) {
		plan, err = f.plan(ctx, ev, r)
	}
	if err != nil {
		return Result{}, err
	}
	attempt := forwards.Attempt{Route: r.Name, Event: ev.Key, OperationKey: plan.OperationKey, Attempt: ev.Attempts + 1}
	ans, err := f.s.SendBody(ctx, r, plan.OperationKey, plan.Document)
	attempt.StatusCode, attempt.Latency = ans.StatusCode, ans.Latency
	if err != nil {
		attempt.Outcome, attempt.Error = forwards.OutcomeFailed, err.Error()
		if ans.Retry {
			attempt.Outcome = forwards.OutcomeRetry
		}
		if rerr := forwards.InsertAttempt(ctx, st.Pool, attempt); rerr != nil {
			return Result{BusinessKey: plan.OperationKey}, rerr
		}
		return Result{BusinessKey: plan.OperationKey}, err
	}
	attempt.Outcome = forwards.OutcomeDone
	note := fmt.Sprintf("forwarded to %s: HTTP %d in %s", outbound.Origin(r.URL), ans.StatusCode, ans.Latency.Round(time.Millisecond))
	if len(plan.Covered) > 1 {
		note += fmt.Sprintf(", coalescing %d events into %s", len(plan.Covered), plan.OperationKey)
	}
	others := make([]keys.Event, 0, len(plan.Covered))
	for _, c := range plan.Covered {
		k, err := keys.ParseEvent(c.EventKey)
		if err != nil {
			return Result{BusinessKey: plan.OperationKey}, err
		}
		if k != ev.Key {
			others = append(others, k)
		}
	}
	covered := 0
	res, err := ev.Commit(ctx, func(tx *Tx) (Result, error) {
		if err := forwards.InsertAttempt(ctx, tx.Conn(), attempt); err != nil {
			return Result{}, err
		}
		// One statement for every covered event still pending; one no
		// longer pending (replayed and handled meanwhile) keeps its own
		// outcome.
		done, err := forwards.CompleteCovered(ctx, tx.Conn(), r.Name, plan.OperationKey, ev.Key, others, ans.StatusCode, ans.Latency)
		if err != nil {
			return Result{}, err
		}
		covered = len(done)
		tx.completed = append(tx.completed[:0], done...)
		return Result{Note: note, BusinessKey: plan.OperationKey}, nil
	})
	if err == nil && covered > 0 && f.s.Metrics != nil {
		f.s.Metrics.ForwardCoalesced.WithLabelValues(r.Name).Add(float64(covered))
	}
	return res, err
}

// plan decides and records ev's send on a coalescing route: ev and the
// resource's pending events after it, in order, while the route takes
// them (the first event another route or handler takes ends the run, so
// nothing passes it), at most the route's CoalesceMax; then the current
// object, fetched after the list was read, so the send covers no event
// accepted after the fetch. A run of one is the plain document under the
// event's key.
func (f forwarder) plan(ctx context.Context, ev *Event, r *forwards.Route) (*forwards.Coalesced, error) {
	st := ev.call.Store
	most := r.CoalesceMax
	if most <= 0 {
		most = forwards.DefaultCoalesceMax
	}
	covered := []forwards.Covered{{EventKey: ev.Key.String(), EventType: ev.Type, ReceivedAt: ev.ReceivedAt.UTC()}}
	if f.s.Routes != nil && most > 1 {
		after, err := forwards.PendingAfter(ctx, st.Pool, ev.Resource, ev.call.Event.ID, most-1)
		if err != nil {
			return nil, err
		}
		for _, c := range after {
			rt, ok := f.s.Routes.Route(ev.Key.Provider, c.EventType)
			if !ok || !rt.Forward || rt.Name != r.Name {
				break
			}
			c.ReceivedAt = c.ReceivedAt.UTC()
			covered = append(covered, c)
		}
	}
	doc := forward.Document{OperationKey: ev.Key.String(), EventKey: ev.Key.String(), Route: r.Name, Provider: ev.Key.Provider,
		EventType: ev.Type, Resource: forward.DocResource{Kind: ev.Resource.Kind, ID: ev.Resource.ID}, Account: ev.Key.Account,
		Environment: ev.Key.Environment, Workspace: ev.Workspace, ReceivedAt: ev.ReceivedAt.UTC(), Payload: forward.Payload(ev.Payload)}
	if len(covered) > 1 {
		lastKey, err := keys.ParseEvent(covered[len(covered)-1].EventKey)
		if err != nil {
			return nil, err
		}
		last, err := inbox.GetInboxEvent(ctx, st.Pool, lastKey)
		if err != nil {
			return nil, err
		}
		doc.OperationKey = forward.CoalescedKey(r.Name, ev.Resource, lastKey)
		doc.EventKey, doc.EventType, doc.ReceivedAt = lastKey.String(), last.EventType, last.ReceivedAt.UTC()
		doc.Payload, doc.Coalesced = forward.Payload(last.Payload), covered
	}
	var err error
	if doc.Current, err = ev.Fetch(ctx); err != nil {
		return nil, err
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fault.Permanent(err)
	}
	c := forwards.Coalesced{OperationKey: doc.OperationKey, Route: r.Name, Head: ev.Key, Covered: covered, Document: body}
	if err := forwards.InsertCoalesced(ctx, st.Pool, c); err != nil {
		return nil, err
	}
	// Read back: the send that goes is the one recorded (a key recorded
	// for another head, after that one's send gave up, is not this send).
	got, err := forwards.CoalescedFor(ctx, st.Pool, r.Name, ev.Key)
	if fault.IsNotFound(err) {
		c.OperationKey = keys.Join(c.OperationKey, "after", ev.Key.EventID)
		doc.OperationKey = c.OperationKey
		if c.Document, err = json.Marshal(doc); err != nil {
			return nil, fault.Permanent(err)
		}
		if err := forwards.InsertCoalesced(ctx, st.Pool, c); err != nil {
			return nil, err
		}
		got, err = forwards.CoalescedFor(ctx, st.Pool, r.Name, ev.Key)
	}
	return got, err
}
