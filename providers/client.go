package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// ClientConfig points a provider's API client at one endpoint's account.
type ClientConfig struct {
	// APIKey is the endpoint's API key.
	APIKey string
	// BaseURL of the API; "" means the provider's own.
	BaseURL string
	// OwnAccount is the endpoint's own source account ("" when it has none).
	OwnAccount string
	// Settings are the endpoint's settings (a GitHub endpoint names its
	// hook there).
	Settings hookintype.EndpointSettings
}

// ErrNoClient means the provider has no API client, so hookinbox cannot ask it
// anything (fetch, list, reconcile).
var ErrNoClient = errors.New("no API client")

// Clients ask a provider's API on an endpoint's behalf.
// A Provider that has one implements it; NewClient is how callers ask.
type Clients interface {
	NewClient(cfg ClientConfig) (Client, error)
}

// NewClient returns p's API client for cfg, or an error wrapping
// ErrNoClient when p has none.
func NewClient(p Provider, cfg ClientConfig) (Client, error) {
	c, ok := p.(Clients)
	if !ok {
		return nil, fmt.Errorf("%w for provider %s", ErrNoClient, p.Name())
	}
	return c.NewClient(cfg)
}

// Invoice is what the credit handler needs to know about an invoice.
type Invoice struct {
	ID       string
	Account  string // the account it was fetched for
	Customer string
	Status   string // draft, open, paid, uncollectible, void
	// Paid is Status == "paid".
	Paid bool
	// AmountPaid in the currency's smallest unit.
	AmountPaid int64
	// Total of the invoice, what a credit note's total is a part of.
	Total          int64
	Currency       string
	SubscriptionID string // "" when the invoice has no subscription parent
	Livemode       bool
	Raw            json.RawMessage
}

// Subscription is what the subscription projection needs. Times are zero
// when the provider sent null.
type Subscription struct {
	ID                string
	Account           string
	Customer          string
	Status            string
	CancelAtPeriodEnd bool
	CurrentPeriodEnd  time.Time
	CanceledAt        time.Time
	EndedAt           time.Time
	// Version is the object's monotonic "version" when the provider sends one.
	Version    int64
	HasVersion bool
	Livemode   bool
	Raw        json.RawMessage
}

// CreditNote is what the credit-note handler needs to know about a credit
// note: which invoice it credits, how much of it, and whether it still
// stands.
type CreditNote struct {
	ID      string
	Account string // the account it was fetched for
	Invoice string // the invoice it credits
	Status  string // issued or void
	// Total credited, in the invoice currency's smallest unit.
	Total    int64
	Currency string
	Livemode bool
	Raw      json.RawMessage
}

// Credit note statuses.
const (
	CreditNoteIssued = "issued"
	CreditNoteVoid   = "void"
)

// Event is one entry of the provider's events list.
type Event struct {
	ID      string
	Type    string
	Account string // the event's account field, else the account listed
	Created time.Time
	Raw     json.RawMessage
	// Header of the delivery the event came in, when the event's identity
	// lives in headers (a GitHub delivery fetched from its hook's log).
	Header http.Header
}

// Page is one page of a list. NextCursor is set when HasMore; pass it back
// as the next call's Cursor.
type Page[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string
}

// ListQuery pages through a list.
type ListQuery struct {
	Cursor string // starting_after: the last id of the previous page
	Limit  int    // 1..100; 0 means 100
}

// EventQuery pages through events created at or after Since (zero: all),
// newest first, optionally of some types only (a trailing * is a wildcard).
type EventQuery struct {
	Since  time.Time
	Types  []string
	Cursor string
	Limit  int
}

// Client asks a provider about resources of one source account.
type Client interface {
	// OwnAccount is the account the client's API key belongs to.
	OwnAccount(ctx context.Context) (string, error)
	FetchInvoice(ctx context.Context, account, id string) (Invoice, error)
	FetchSubscription(ctx context.Context, account, id string) (Subscription, error)
	FetchCreditNote(ctx context.Context, account, id string) (CreditNote, error)
	// ListSubscriptions lists every subscription, canceled ones included.
	ListSubscriptions(ctx context.Context, account string, q ListQuery) (Page[Subscription], error)
	ListEvents(ctx context.Context, account string, q EventQuery) (Page[Event], error)
}

// RelatedObject is the API object a thin event is about (Stripe's
// related_object).
type RelatedObject struct {
	ID string
	// Type is the object's type: invoice, subscription, v2.core.account…
	Type string
	// URL is its API path, e.g. /v1/invoices/in_1.
	URL string
}

// ThinEvent is an event fetched by its id (Stripe's GET
// /v2/core/events/{id}): what happened, to which object, in which account.
// It carries no snapshot of the object: ask for its current state.
type ThinEvent struct {
	ID   string
	Type string
	// Context is the account the event happened in (a Connect or
	// organization account; "" for the API key's own). Every call made for
	// the event sends it back (Stripe-Context).
	Context  string
	Livemode bool
	Created  time.Time
	// Related is the object the event is about (nil when it names none).
	Related *RelatedObject
	// SnapshotEvent is the id of the snapshot event the same change raised,
	// when Stripe raised both.
	SnapshotEvent string
	// Data is the event's own data: v2 events have some, the thin versions
	// of API v1 events none.
	Data json.RawMessage
	Raw  json.RawMessage
}

// ThinEvents is implemented by a Client that fetches thin events and the
// objects they name (Stripe's event destinations). It is not part of
// Client: a handler of thin events asks its client for it with a type
// assertion.
type ThinEvents interface {
	// FetchEvent retrieves event id of account (its context).
	FetchEvent(ctx context.Context, account, id string) (ThinEvent, error)
	// FetchRelatedObject retrieves the current state of ev's object, in
	// ev's context. It must be the object ev names (id and type).
	FetchRelatedObject(ctx context.Context, ev ThinEvent) (json.RawMessage, error)
}

// HookDelivery is one attempt in a webhook's delivery log (GitHub's hook
// deliveries). A redelivery is another attempt with the same GUID.
type HookDelivery struct {
	// ID names this attempt (GetDelivery, Redeliver).
	ID int64
	// GUID is the delivery's id, the same in every attempt: the event id of
	// its inbox row (X-GitHub-Delivery).
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	// StatusCode is the receiver's answer (0: no answer, e.g. a timeout).
	StatusCode int
	Status     string
	Event      string
	Action     string
}

// OK reports whether the receiver answered 2xx.
func (d HookDelivery) OK() bool { return d.StatusCode >= 200 && d.StatusCode <= 299 }

// HookRequest is a delivery's request as the provider's log recorded it.
type HookRequest struct {
	Header  http.Header
	Payload json.RawMessage
}

// HookDeliveries read and replay one webhook's delivery log, for senders
// that never redeliver on their own (GitHub).
type HookDeliveries interface {
	// ListDeliveries lists attempts, newest first; pass the previous page's
	// NextCursor as q.Cursor.
	ListDeliveries(ctx context.Context, q ListQuery) (Page[HookDelivery], error)
	// GetDelivery reads one attempt's request: headers and payload.
	GetDelivery(ctx context.Context, id int64) (HookRequest, error)
	// Redeliver asks the provider to send an attempt's delivery again,
	// with its id and a fresh signature.
	Redeliver(ctx context.Context, id int64) error
}

// HookClients are providers whose webhooks have a delivery log.
type HookClients interface {
	NewHookClient(cfg ClientConfig) (HookDeliveries, error)
}

// NewHookClient returns p's delivery log client for cfg, or an error
// wrapping ErrNoClient when p has none.
func NewHookClient(p Provider, cfg ClientConfig) (HookDeliveries, error) {
	c, ok := p.(HookClients)
	if !ok {
		return nil, fmt.Errorf("%w for the webhook deliveries of provider %s", ErrNoClient, p.Name())
	}
	return c.NewHookClient(cfg)
}

// ObjectFetcher is implemented by API clients that can fetch any object of
// the provider by its resource kind and id, as raw JSON: what a handler's
// Event.Fetch returns (fetch the current state before writing).
// Kinds the provider has no route for are permanent errors.
type ObjectFetcher interface {
	FetchObject(ctx context.Context, account, kind, id string) (json.RawMessage, error)
}
