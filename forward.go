package hookinbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
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
