// Package provider holds the clients the activities use to ask a provider
// for the current state of a resource (fetch an invoice or a subscription)
// and to page through its lists for reconciliation. Stripe is implemented
// with stripe-go underneath, pointed at a configurable base URL.
//
// Errors are never states (SPEC R15): a failed call returns an error that
// says whether it is NotFound, Permanent or Retryable (with the server's
// Retry-After when it gave one), and no field of a result is ever filled from
// an error. A 403 is Permanent, not "cancelled"; a 404 is NotFound, not
// "deleted". The package does no retries of its own: the caller's retry
// policy (Temporal's) owns them.
package provider

import (
	"context"
	"encoding/json"
	"time"
)

// Invoice is what the credit handler needs to know about an invoice.
type Invoice struct {
	ID       string
	Account  string // the account it was fetched for
	Customer string
	Status   string // draft, open, paid, uncollectible, void
	// Paid is Status == "paid".
	Paid bool
	// AmountPaid in the currency's smallest unit.
	AmountPaid     int64
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
	// ListSubscriptions lists every subscription, canceled ones included.
	ListSubscriptions(ctx context.Context, account string, q ListQuery) (Page[Subscription], error)
	ListEvents(ctx context.Context, account string, q EventQuery) (Page[Event], error)
}
