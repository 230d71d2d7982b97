// Package hookinbox is the public API of hookinbox: a webhook receiver that
// turns each delivery from Stripe, GitHub, Standard Webhooks senders or
// Shopify into its business effect exactly once per business operation,
// although delivery is at-least-once, out of order and sometimes never.
//
// A team builds its own program on it, in its own module, the way a River
// or Temporal user registers workers:
//
//	func main() {
//		app := hookinbox.New(hookinbox.WithMigrations("provisioning", migrations, tables...))
//		app.Handle("stripe", "checkout.session.completed", provision, hookinbox.Name("provisioning"))
//		app.Main() // intake, worker, console, migrate, dev, and the whole operator CLI
//	}
//
// What hookinbox does around a handler, the handler need not do:
//
//   - the intake verifies each delivery with the provider's own scheme,
//     maps its source account to a workspace, and commits it to the inbox
//     before answering 2xx (a duplicate is answered and stored once);
//   - one Temporal workflow per resource runs that resource's events one at
//     a time, so a handler's fetch-then-write never races itself;
//   - failed attempts are retried with jittered backoff within a budget,
//     then stay visible and replayable; a sweeper finds work whose doorbell
//     was lost.
//
// A handler (Handler, HandlerFunc) receives an Event: its keys, type,
// account, workspace and verified payload, and Fetch for the provider's
// current object (trust the source of truth before a money decision). It
// commits its effect through Event.Commit, in ONE transaction with the
// inbox row's completion. The transaction (Tx) offers what keeps an effect
// single: Claim a business key once, record an outbox intent keyed by its
// operation (Tx.Send), write a projection that never goes backwards
// (Tx.WriteNewer, Tx.WriteFenced), and the raw pgx transaction for the
// team's own tables. Permanent fails an event at once; Wait keeps it
// pending until another fact arrives.
//
// The values a handler, a provider or a test names (the event key, the
// resource, a divergence, a reconciliation's scope, the inbox statuses,
// the environments) are package hookintype's, which imports nothing but
// the standard library. A provider of the team's own (package providers)
// is registered with WithProvider.
//
// hookinbox's own domains (credits, credit notes, subscriptions, feedback
// alerts, in package domains) are written on this API alone.
//
// The API is v0: it may change between releases, each change noted in
// CHANGELOG.md.
package hookinbox
