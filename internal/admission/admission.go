package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/tracing"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all" // admission admits deliveries of every built-in provider
)

// Handoff rings a resource workflow's doorbell after an event is committed.
// It must not block: the answer to the sender never waits on Temporal (the
// intake's hand-off queues and coalesces; a lost ring is rung again by the
// sweeper).
type Handoff interface {
	Notify(r keys.Resource, e keys.Event)
}

// Options configure an Admitter.
type Options struct {
	Store *store.Store
	// Routes decides which authenticated events are handled (recorded
	// pending, on the route's resource) and which are ignored. Nil: none
	// is handled.
	Routes routes.Router
	// Handoff is notified of each pending event a webhook delivery commits
	// (and of a duplicate of a still-pending one). Nil: nobody is notified.
	Handoff Handoff
	// Tolerance for timestamped signature schemes.
	Tolerance time.Duration
	// CacheTTL of endpoints, secrets and links.
	CacheTTL time.Duration
	// NegativeTTL is the least time between two refreshes of the
	// preloaded slug set that deliveries to unknown slugs cause, for the
	// whole intake: a slug registered meanwhile answers 404 for at most
	// that long (0: DefaultNegativeTTL, or CacheTTL when shorter; negative:
	// every unknown slug refreshes the set).
	NegativeTTL time.Duration
	// Writers is the number of inbox commits in flight at once when
	// deliveries arrive together: their rows share batches (group commit,
	// store.InboxWriter), one round trip and one commit per batch. 0: each
	// delivery commits on its own.
	Writers int
	// WriterTimeout bounds one shared commit (0: 5 s); each delivery's
	// own deadline still ends its wait.
	WriterTimeout time.Duration
	// Tracer, when set, traces webhook deliveries: verification and the
	// inbox commit as children of the request's span (the root of the
	// delivery's trace, in Admit's context), whose traceparent the row
	// keeps. Nil (tracing off): no span is started.
	Tracer trace.Tracer
	// Now is the clock of the signature tolerance and of the endpoint
	// cache's TTLs (default time.Now; tests set a fake one).
	Now func() time.Time
}

// Admitter admits deliveries.
type Admitter struct {
	o      Options
	cache  *endpointCache
	writer *inbox.InboxWriter
}

// New builds an Admitter.
func New(o Options) *Admitter {
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Admitter{o: o, cache: newEndpointCache(o.Store, o.CacheTTL, o.NegativeTTL, o.Now)}
	if o.Writers > 0 {
		a.writer = inbox.NewInboxWriter(o.Store.Pool, inbox.InboxWriterOptions{Writers: o.Writers, Timeout: o.WriterTimeout})
	}
	return a
}

// Endpoint returns the endpoint slug from the cache (loading it on a miss),
// or fault.ErrNotFound.
func (a *Admitter) Endpoint(ctx context.Context, slug string) (*Endpoint, error) {
	return a.cache.get(ctx, slug, false)
}

// Delivery is what arrived.
type Delivery struct {
	// Header of the request (nil for a backfilled event).
	Header http.Header
	// Body is the exact raw bytes: verified, kept and hashed.
	Body []byte
	// Account, when set, is the source account the delivery was listed
	// under (the backfill lists one account's events, a Connect account's
	// with Stripe-Account): an event naming no account is that account's,
	// and one naming another is refused.
	Account string
}

// Outcome is what admitting a delivery did.
type Outcome int

// Outcomes.
const (
	// Accepted: a new pending inbox row.
	Accepted Outcome = iota + 1
	// Ignored: a new inbox row of a type no handler takes (status ignored).
	Ignored
	// Duplicate: the event key was already in the inbox with the same body,
	// or with the same event in another serialization (a backfilled row and
	// its webhook; Detail says so), and the row was left alone; or, for a
	// provider that signs no event id (GitHub, Shopify), the endpoint
	// already holds the same body under another id (a replay; Detail says
	// so). Nothing is stored.
	Duplicate
	// Quarantined: stored in the quarantine with Reason and Detail.
	Quarantined
	// Replied: a verified handshake (providers.Normalized.Reply), not an
	// event: nothing is stored, and the sender is answered with Reply.
	Replied
)

// Result is what Admit did.
type Result struct {
	Outcome Outcome
	// Key is the event key, as far as it could be derived.
	Key keys.Event
	// Resource is set once the delivery is derived.
	Resource keys.Resource
	// Event is the derived inbox row (Accepted, Ignored, Duplicate).
	Event *inbox.InboxEvent
	// InboxID of the new or existing row.
	InboxID int64
	// Status of the row: the new row's, or the existing one's for a
	// Duplicate.
	Status string
	// Reason and Detail of a quarantine; Detail also says why an event is
	// Ignored.
	Reason, Detail string
	// Reply is the answer to a handshake (Replied).
	Reply *providers.Reply
}

// ErrNotStored marks a failed or uncertain commit (inbox or quarantine):
// nothing may be acknowledged, the sender (or the activity's retry) must
// try again.
var ErrNotStored = errors.New("not stored")

// storeError keeps the store's message and matches ErrNotStored.
type storeError struct{ err error }

func (e storeError) Error() string        { return e.err.Error() }
func (e storeError) Unwrap() error        { return e.err }
func (e storeError) Is(target error) bool { return target == ErrNotStored }

// Admit admits one delivery to ep; origin is keys.OriginWebhook or
// keys.OriginBackfill (a quarantined delivery goes back in with Readmit,
// which runs the same steps in the transaction that closes its entry).
//
// Its errors: a *providers.Unauthenticated (webhook: a failed signature,
// nothing stored), an error matching ErrNotStored (the commit failed or its
// outcome is unknown), a *Rejection or other derivation error (backfill:
// the event is not admitted and nothing is stored), or an internal error.
func (a *Admitter) Admit(ctx context.Context, ep *Endpoint, d Delivery, origin string) (Result, error) {
	switch origin {
	case keys.OriginWebhook:
		return a.webhook(ctx, ep, d)
	case keys.OriginBackfill:
		return a.backfill(ctx, ep, d)
	case keys.OriginQuarantine:
		return Result{}, errors.New("admission: a quarantined delivery is re-admitted with Readmit")
	}
	return Result{}, fmt.Errorf("admission: unknown origin %q", origin)
}

// webhook: verify (a failure reloads the endpoint once: a secret may have
// just been added), derive (an unknown account reloads once: the link may
// have just been added), then commit or quarantine, then notify.
func (a *Admitter) webhook(ctx context.Context, ep *Endpoint, d Delivery) (Result, error) {
	var vspan trace.Span
	if a.o.Tracer != nil {
		_, vspan = a.o.Tracer.Start(ctx, "verify", trace.WithAttributes(attribute.String("hookinbox.provider", ep.Provider)))
	}
	v, err := ep.verify(d, a.o.Tolerance, a.o.Now())
	if err != nil {
		if fresh, ferr := a.cache.get(ctx, ep.Slug, true); ferr == nil && fresh != ep {
			ep = fresh
			v, err = ep.verify(d, a.o.Tolerance, a.o.Now())
		}
	}
	if vspan != nil {
		if err != nil {
			// The verifier's message names no secret (it is the answer's
			// detail and the log's already).
			vspan.SetStatus(codes.Error, "signature not verified")
		}
		vspan.End()
	}
	if err != nil {
		return Result{}, err
	}

	ev, err := derive(a.o.Routes, ep.Endpoint, ep.provider, d.Header, v.Payload, d.Body, v.SecretID, "")
	var hs *handshake
	if errors.As(err, &hs) {
		// Verified, and no event: answered, nothing stored.
		return Result{Outcome: Replied, Reply: hs.reply}, nil
	}
	var rej *Rejection
	if errors.As(err, &rej) && (rej.Reason == inbox.ReasonUnknownAccount || rej.Reason == inbox.ReasonAccountMismatch) {
		if fresh, ferr := a.cache.get(ctx, ep.Slug, true); ferr == nil && fresh != ep {
			ep = fresh
			ev, err = derive(a.o.Routes, ep.Endpoint, ep.provider, d.Header, v.Payload, d.Body, v.SecretID, "")
		}
	}
	res := Result{Key: ev.Key}
	if err != nil {
		if !errors.As(err, &rej) {
			return res, err
		}
		return a.quarantine(ctx, ep, d, ev, v.SecretID, rej, res)
	}
	ev.SecretID, ev.Origin = v.SecretID, keys.OriginWebhook
	var cspan trace.Span
	if a.o.Tracer != nil {
		// The row keeps the request's span (the delivery's root): the
		// worker's spans are its children, whichever doorbell rang.
		ev.Traceparent = tracing.Traceparent(trace.SpanContextFromContext(ctx))
		_, cspan = a.o.Tracer.Start(ctx, "inbox commit", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "postgresql"), attribute.String("hookinbox.event_key", ev.Key.String()),
				attribute.Bool("hookinbox.group_commit", a.writer != nil)))
	}
	res, ins, err := a.insert(ctx, ev)
	if cspan != nil {
		tracing.Fail(cspan, err)
		if err == nil {
			cspan.SetAttributes(attribute.String("hookinbox.insert", ins.Outcome.String()))
		}
		cspan.End()
	}
	if err != nil {
		return res, err
	}
	switch ins.Outcome {
	case inbox.Inserted, inbox.Duplicate:
		if res.Status == keys.StatusPending && a.o.Handoff != nil {
			// For a duplicate, another doorbell in case the first hand-off
			// was lost (it is coalesced if still queued).
			a.o.Handoff.Notify(res.Resource, res.Key)
		}
		return res, nil
	case inbox.BodyReplay:
		// A body the endpoint already has, under a new (unsigned) event id:
		// a replay. Nothing stored, no doorbell: its key names no row.
		return res, nil
	default: // Conflict: same event key, different body.
		return a.quarantine(ctx, ep, d, ev, v.SecretID, &Rejection{Reason: inbox.ReasonConflictingDuplicate,
			Detail: "event key already accepted with a different body; the original is kept"}, res)
	}
}

// quarantine stores the delivery for investigation, unless its event id is
// unsigned and the endpoint already holds its body under another id (in the
// inbox or an open quarantine entry): that is a captured body replayed, a
// duplicate, and storing it again would let a replayer fill the quarantine.
func (a *Admitter) quarantine(ctx context.Context, ep *Endpoint, d Delivery, ev *inbox.InboxEvent, secretID int64, rej *Rejection, res Result) (Result, error) {
	if ev.DedupBody {
		status, seen, err := inbox.BodySeen(ctx, a.o.Store.Pool, ev.EndpointSlug, ev.BodySHA256, ev.Key.EventID)
		if err != nil {
			return res, storeError{err}
		}
		if seen {
			res.Outcome, res.Status, res.Detail = Duplicate, status, "replay of a body this endpoint already holds"
			return res, nil
		}
	}
	q := &inbox.QuarantineEntry{EndpointSlug: ev.EndpointSlug, Provider: ev.Key.Provider, Account: ev.Key.Account,
		Environment: ev.Key.Environment, EventID: ev.Key.EventID, Reason: rej.Reason, Detail: rej.Detail,
		Payload: ev.Payload, BodySHA256: ev.BodySHA256, Headers: providers.KeptHeaders(ep.provider, d.Header),
		SecretID: secretID}
	if _, err := inbox.InsertQuarantine(ctx, a.o.Store.Pool, q); err != nil {
		return res, storeError{err}
	}
	res.Outcome, res.Reason, res.Detail = Quarantined, rej.Reason, rej.Detail
	return res, nil
}

// backfill: the bytes come from the provider's authenticated API, so
// nothing is verified; a refusal stores nothing, and an existing key with
// the same event (the same bytes, or the list API's own serialization of
// the event its webhook delivered: the store compares type, created time and
// object) is simply "already have it". Another event under that key is
// refused as a conflicting duplicate, and nothing is stored.
func (a *Admitter) backfill(ctx context.Context, ep *Endpoint, d Delivery) (Result, error) {
	// The account is the scope's the pass listed under (Stripe-Account),
	// whether or not the listed JSON names one; naming another is refused.
	ev, err := derive(a.o.Routes, ep.Endpoint, ep.provider, d.Header, d.Body, d.Body, 0, d.Account)
	if err == nil && d.Account != "" && ev.Key.Account != d.Account {
		err = fmt.Errorf("the event names account %s, the pass lists %s", ev.Key.Account, d.Account)
	}
	if err != nil {
		return Result{Key: ev.Key}, err
	}
	ev.Origin = keys.OriginBackfill
	res, ins, err := a.insert(ctx, ev)
	if err == nil && ins.Outcome == inbox.Conflict {
		return res, &Rejection{Reason: inbox.ReasonConflictingDuplicate,
			Detail: "the inbox holds another event under this key (type, created time or object differ); the original is kept"}
	}
	return res, err
}

// insert commits ev on the pool, through the group-commit writer when
// there is one.
func (a *Admitter) insert(ctx context.Context, ev *inbox.InboxEvent) (Result, inbox.InsertResult, error) {
	if a.writer == nil {
		return insert(ctx, a.o.Store.Pool, ev)
	}
	ins, err := a.writer.Insert(ctx, ev)
	return inserted(ev, ins, err)
}

// insert commits ev: the one call of store.InsertInboxEvent.
func insert(ctx context.Context, db store.DB, ev *inbox.InboxEvent) (Result, inbox.InsertResult, error) {
	ins, err := inbox.InsertInboxEvent(ctx, db, ev)
	return inserted(ev, ins, err)
}

// inserted is Admit's Result for ev's commit.
func inserted(ev *inbox.InboxEvent, ins inbox.InsertResult, err error) (Result, inbox.InsertResult, error) {
	res := Result{Key: ev.Key, Resource: ev.Resource(), Event: ev}
	if err != nil {
		return res, ins, storeError{err}
	}
	res.InboxID, res.Status = ins.ID, ev.Status
	switch ins.Outcome {
	case inbox.Inserted:
		res.Outcome = Accepted
		if ev.Status != keys.StatusPending {
			res.Outcome, res.Detail = Ignored, ev.LastError
		}
	case inbox.Duplicate:
		res.Outcome, res.Status = Duplicate, ins.ExistingStatus
		if ins.Equivalent {
			res.Detail = "the same event as the " + ins.ExistingOrigin + " row, serialized differently"
		}
	case inbox.BodyReplay:
		res.Outcome, res.Status = Duplicate, ins.ExistingStatus
		res.Detail = fmt.Sprintf("replay of inbox row %d's body under a new event id", ins.ID)
	}
	return res, ins, nil
}
