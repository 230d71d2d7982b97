// Package routestest gives the machinery's own tests the route table of the
// shipped binary's built-in domains, for packages whose tests cannot import
// the domains (they sit below the public App the domains register on). A
// test in lab/builtin holds it equal to the table the domains really build,
// so it cannot drift. Tests only.
package routestest

import "github.com/hookinbox/hookinbox/internal/routes"

// Route names of the built-in domains.
const (
	Credits       = "credits"
	CreditNotes   = "credit_notes"
	Subscriptions = "subscriptions"
	Feedback      = "feedback_alerts"
)

// Builtin is a fresh route table of the built-in domains.
func Builtin() *routes.Table {
	var t routes.Table
	add := func(r routes.Route) {
		if err := t.Add(r); err != nil {
			panic(err)
		}
	}
	add(routes.Route{Name: Credits, Provider: "stripe", Type: "invoice.paid"})
	for _, typ := range []string{"credit_note.created", "credit_note.voided"} {
		add(routes.Route{Name: CreditNotes, Provider: "stripe", Type: typ,
			Resource: &routes.ResourceRule{Kind: "invoice", IDPath: "data.object.invoice"}})
	}
	for _, typ := range []string{"customer.subscription.created", "customer.subscription.updated",
		"customer.subscription.deleted", "customer.subscription.paused", "customer.subscription.resumed",
		"customer.subscription.pending_update_applied", "customer.subscription.pending_update_expired"} {
		add(routes.Route{Name: Subscriptions, Provider: "stripe", Type: typ})
	}
	add(routes.Route{Name: Feedback, Provider: "standard", Type: "feedback.created"})
	return &t
}
