// Package catalog says which provider event types hookinbox has a business
// handler for. The intake records every other authenticated type as
// `ignored` at once (SPEC R3) so it never costs a workflow; the worker looks
// the same names up in its handler registry. It holds names only: no I/O.
package catalog

// Handler names.
const (
	// Credits grants a workspace its credits for a paid invoice.
	Credits = "credits"
	// Subscriptions keeps the subscription projection and access current.
	Subscriptions = "subscriptions"
	// FeedbackAlerts creates the initial alert of a new feedback item.
	FeedbackAlerts = "feedback_alerts"
)

var handled = map[string]map[string]string{
	"stripe": {
		"invoice.paid":                                 Credits,
		"customer.subscription.created":                Subscriptions,
		"customer.subscription.updated":                Subscriptions,
		"customer.subscription.deleted":                Subscriptions,
		"customer.subscription.paused":                 Subscriptions,
		"customer.subscription.resumed":                Subscriptions,
		"customer.subscription.pending_update_applied": Subscriptions,
		"customer.subscription.pending_update_expired": Subscriptions,
	},
	"standard": {
		"feedback.created": FeedbackAlerts,
	},
}

// HandlerFor returns the handler name for an event type of a provider.
func HandlerFor(provider, eventType string) (string, bool) {
	h, ok := handled[provider][eventType]
	return h, ok
}
