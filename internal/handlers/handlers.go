package handlers

import (
	"context"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// Route names: a handler's key in a Set and its metrics label.
const (
	// RouteCredits grants a workspace its credits for a paid invoice.
	RouteCredits = "credits"
	// RouteSubscriptions keeps the subscription projection and access current.
	RouteSubscriptions = "subscriptions"
	// RouteCreditNotes takes credits back for a credit note of a granted
	// invoice, and gives them back when it is voided.
	RouteCreditNotes = "credit_notes"
	// RouteFeedbackAlerts creates the initial alert of a new feedback item.
	RouteFeedbackAlerts = "feedback_alerts"
)

// Route says which business handler takes an event type.
type Route struct {
	Name string
}

// routes is the registry: every (provider, event type) hookinbox handles.
var routes = map[string]map[string]Route{
	keys.ProviderStripe: {
		"invoice.paid":                                 {RouteCredits},
		EventCreditNoteCreated:                         {RouteCreditNotes},
		EventCreditNoteVoided:                          {RouteCreditNotes},
		"customer.subscription.created":                {RouteSubscriptions},
		"customer.subscription.updated":                {RouteSubscriptions},
		"customer.subscription.deleted":                {RouteSubscriptions},
		"customer.subscription.paused":                 {RouteSubscriptions},
		"customer.subscription.resumed":                {RouteSubscriptions},
		"customer.subscription.pending_update_applied": {RouteSubscriptions},
		"customer.subscription.pending_update_expired": {RouteSubscriptions},
	},
	keys.ProviderStandard: {
		"feedback.created": {RouteFeedbackAlerts},
	},
}

// For returns the route of a provider's event type; false when hookinbox
// does not handle it (the intake records it ignored at once, SPEC R3).
func For(provider, eventType string) (Route, bool) {
	r, ok := routes[provider][eventType]
	return r, ok
}

// EventTypes returns, sorted, every event type of provider that For routes
// to a handler (none for a provider hookinbox does not handle).
func EventTypes(provider string) []string {
	return slices.Sorted(maps.Keys(routes[provider]))
}

// Handler applies the business effect of one inbox event. It runs outside
// any transaction, may call the provider's API first, and then commits its
// effect together with the inbox row's completion in ONE transaction,
// normally through InPendingTx. Return fault.Permanent(err) for an event
// that can never succeed; any other error is retried.
type Handler interface {
	Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error) {
	return f(ctx, ev)
}

// Set holds the handler instances by route name.
type Set map[string]Handler

// Outcome is what a handler did.
type Outcome struct {
	// Status the row ended in: done or ignored, or the status it already
	// had when another attempt completed it first.
	Status string
	// Note says what happened, for the row and the logs.
	Note string
	// BusinessKey names the business operation the event mapped to (a
	// grant, a projection, an alert), for the logs.
	BusinessKey string
	// Outbox lists the outbox rows the effect produced, to be sent after
	// the commit.
	Outbox []int64
	// Divergences the handler recorded (a snapshot whose content differs
	// from the stored one at the same provider version), for the metrics.
	Divergences []keys.Divergence
}

// InPendingTx runs fn in one transaction holding the event's inbox row
// locked, only if the row is still pending, and completes the row with the
// status fn returns in the same transaction. If the row is already final
// (another attempt won), fn is not called and that status is returned: a
// retry never overwrites a completion committed elsewhere.
func InPendingTx(ctx context.Context, st *store.Store, k keys.Event, fn func(tx pgx.Tx, ev *inbox.StoredEvent) (Outcome, error)) (Outcome, error) {
	var out Outcome
	err := st.Tx(ctx, func(tx pgx.Tx) error {
		ev, err := inbox.LockInboxEvent(ctx, tx, k)
		if err != nil {
			return err
		}
		if ev.Status != keys.StatusPending {
			out = Outcome{Status: ev.Status, Note: "already " + ev.Status}
			return nil
		}
		out, err = fn(tx, ev)
		if err != nil {
			return err
		}
		if out.Status == "" {
			out.Status = keys.StatusDone
		}
		_, err = inbox.CompleteInboxEvent(ctx, tx, k, out.Status, out.Note)
		return err
	})
	return out, err
}
