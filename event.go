package hookinbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Handler applies the business effect of one event. It runs in the
// worker, outside any transaction, one event at a time per resource: it may
// ask the provider first (Event.Fetch, Event.Client), then commits its
// effect with Event.Commit. A handler that returns without committing
// completes the row as done (or ignored) with nothing else written.
//
// Errors: Permanent fails the event at once; Wait keeps it pending for
// another fact; any other error is retried with jittered backoff until the
// retry budget is spent, and the event ends exhausted. Every ending stays
// visible and replayable.
type Handler interface {
	Handle(ctx context.Context, ev *Event) (Result, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *Event) (Result, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev *Event) (Result, error) { return f(ctx, ev) }

// Result is what a handler did, for the inbox row, the logs and the metrics.
type Result struct {
	// Note says what happened ("granted 100 credits for in_1").
	Note string
	// BusinessKey names the business operation the event mapped to.
	BusinessKey string
	// Ignored completes the row as ignored instead of done: the event was
	// read and deliberately has no effect.
	Ignored bool
	// Divergences the handler found (and recorded with Tx.Diverged).
	Divergences []hookintype.Divergence
}

// Event is one pending inbox event, as its handler sees it. Everything in
// it was verified at the intake: the payload's signature, the source
// account, and the workspace it is linked to (never an id from the
// payload).
type Event struct {
	// Key is the event key.
	Key hookintype.EventKey
	// Type is the provider's event type as delivered (GitHub:
	// "event.action").
	Type string
	// RouteType is the type the event was routed by: Type, unless the
	// provider routes it as another (a Stripe thin "v1.invoice.paid" as
	// "invoice.paid"). Branch on RouteType.
	RouteType string
	// Resource is the workflow the event runs in.
	Resource hookintype.Resource
	// ObjectID is the object the event is about when its resource is
	// another (SerializeOn; a Stripe credit note's invoice).
	ObjectID string
	// Workspace is the tenant the source account is linked to.
	Workspace string
	// Endpoint is the slug of the endpoint the event arrived on.
	Endpoint string
	// Payload is the verified JSON (nil once retention redacted it).
	Payload json.RawMessage
	// Version is the provider's monotonic version of the resource, when
	// the endpoint extracts one (--version-path).
	Version *int64
	// OccurredAt is when the provider says the event happened, if it says.
	OccurredAt *time.Time
	// ReceivedAt is when the intake committed it.
	ReceivedAt time.Time
	// Attempts are the failed attempts so far.
	Attempts int
	// Origin is how the row came in: webhook, backfill or quarantine.
	Origin string
	// Seq is the inbox row's sequence: the intake records an object's
	// events in increasing Seq, in the order it committed them. It is the
	// tie-breaker of a version with a coarse clock (Projection.TieColumn):
	// two changes within one second of GitHub's updated_at apply in Seq
	// order. A redelivery of one event keeps its Seq.
	Seq int64

	call      *engine.Call
	committed bool
	status    string
	outbox    []int64
	woken     []hookintype.Resource
	completed []hookintype.EventKey
}

func newEvent(c *engine.Call) *Event {
	st := c.Event
	p, _ := providers.Lookup(st.Key.Provider)
	return &Event{
		Key: st.Key, Type: st.EventType, RouteType: providers.RouteType(p, st.EventType), Resource: st.Resource(), ObjectID: st.ObjectID, Workspace: st.WorkspaceID,
		Endpoint: st.EndpointSlug, Payload: json.RawMessage(st.Payload), Version: st.ProviderVersion,
		OccurredAt: st.OccurredAt, ReceivedAt: st.ReceivedAt, Attempts: st.Attempts, Origin: st.Origin, Seq: st.ID, call: c,
	}
}

// DB is what reads outside the transaction use: the worker's pool.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB reads outside the transaction (the projection's sequence before a
// fetch, say). Writes belong in Commit.
func (e *Event) DB() DB { return e.call.Store.Pool }

// Client is the provider's API client for the event's endpoint (its own
// base URL and API key), for typed calls (FetchInvoice, …). An endpoint
// without an API key is a permanent error.
func (e *Event) Client(ctx context.Context) (providers.Client, error) {
	return e.call.Providers.For(ctx, e.Endpoint)
}

// Fetch returns the provider's current state of the event's resource as
// raw JSON (trust the source of truth, not the event). A provider
// error keeps its kind: a 4xx that will not change is permanent, a 404 or
// a 5xx is retried. A provider whose client cannot fetch this kind is a
// permanent error.
func (e *Event) Fetch(ctx context.Context) (json.RawMessage, error) {
	return e.FetchObject(ctx, e.Resource.Kind, e.Resource.ID)
}

// FetchObject returns the provider's current state of any object of the
// event's account by kind and id (the ObjectID of a serialized event).
func (e *Event) FetchObject(ctx context.Context, kind, id string) (json.RawMessage, error) {
	c, err := e.Client(ctx)
	if err != nil {
		return nil, err
	}
	f, ok := c.(providers.ObjectFetcher)
	if !ok {
		return nil, fault.Permanent(fmt.Errorf("the %s API client cannot fetch objects by kind: %w", e.Key.Provider, providers.ErrNoClient))
	}
	raw, err := f.FetchObject(ctx, e.Key.Account, kind, id)
	if err != nil {
		return nil, fmt.Errorf("fetch %s %s: %w", kind, id, err)
	}
	return raw, nil
}

// ErrCommitted is returned by a second Commit of one event.
var ErrCommitted = errors.New("the event's transaction was already committed")

// Commit runs fn in ONE transaction that holds the event's inbox row locked
// and completes it (done, or ignored when fn's Result says so) with fn's
// effect: the business write, its outbox intents and the row's completion
// commit or roll back together. If the row is no longer pending
// (another attempt won), fn is not called and the Result's Note says what
// it already is: a retry never overwrites a completion committed
// elsewhere. fn must not call the network: fetch before Commit. An error
// from fn rolls everything back and is the handler's error.
func (e *Event) Commit(ctx context.Context, fn func(tx *Tx) (Result, error)) (Result, error) {
	if e.committed {
		return Result{}, ErrCommitted
	}
	var res Result
	var outbox []int64
	var woken []hookintype.Resource
	var completed []hookintype.EventKey
	out, err := engine.InPendingTx(ctx, e.call.Store, e.Key, func(ptx pgx.Tx, row *inbox.StoredEvent) (engine.Outcome, error) {
		tx := &Tx{tx: ptx, ev: e}
		r, err := fn(tx)
		if err != nil {
			return engine.Outcome{}, err
		}
		res, outbox, woken, completed = r, tx.outbox, tx.woken, tx.completed
		status := hookintype.StatusDone
		if r.Ignored {
			status = hookintype.StatusIgnored
		}
		return engine.Outcome{Status: status, Note: r.Note}, nil
	})
	if err != nil {
		return res, err
	}
	e.committed, e.status = true, out.Status
	if out.Note != res.Note && res.Note == "" {
		res.Note = out.Note // already done: fn did not run
	}
	e.outbox = append(e.outbox, outbox...)
	e.woken = append(e.woken, woken...)
	e.completed = append(e.completed, completed...)
	return res, nil
}

// adapter runs a public Handler as the engine's.
type adapter struct{ h Handler }

func (a adapter) Handle(ctx context.Context, c *engine.Call) (engine.Outcome, error) {
	ev := newEvent(c)
	res, err := a.h.Handle(ctx, ev)
	out := engine.Outcome{Note: res.Note, BusinessKey: res.BusinessKey, Outbox: ev.outbox, Divergences: res.Divergences, Woken: ev.woken,
		Completed: ev.completed}
	if err != nil {
		return out, err
	}
	if !ev.committed {
		// Nothing to write: complete the row on its own.
		if _, err := ev.Commit(ctx, func(*Tx) (Result, error) { return res, nil }); err != nil {
			return out, err
		}
	}
	out.Status = ev.status
	return out, nil
}
