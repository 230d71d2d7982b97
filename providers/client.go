package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ClientConfig points a provider's API client at one endpoint's account.
type ClientConfig struct {
	// APIKey is the endpoint's API key.
	APIKey string
	// BaseURL of the API; "" means the provider's own.
	BaseURL string
	// OwnAccount is the endpoint's own source account ("" when it has none).
	OwnAccount string
}

// ErrNoClient: the provider has no API client, so hookinbox cannot ask it
// anything (fetch, list, reconcile).
var ErrNoClient = errors.New("no API client")

// Clients ask a provider's API on an endpoint's behalf (SPEC R14, R15, R19).
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
