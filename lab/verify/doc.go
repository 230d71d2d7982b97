// Package verify compares what the provider simulator knows happened (its
// ground truth, simulator.Truth, plus what its sender saw acknowledged) with
// what hookinbox's database converged to, and reports named invariants, each
// with the expected and actual counts, OK or VIOLATION, and the first few
// offenders. The chaos soak (package soak) and `hookinbox-lab demo` print its
// table; its JSON is for machines.
//
// The truth comes from Simulator.Truth or, for a simulator in another
// process (`hookinbox-lab simulate`), from FetchTruth (GET /_sim/truth). With
// the sender's reports (SentFrom) a few checks see more: every event sent,
// the bodies, the conflicting copies.
//
// It only reads. Its queries are its own rather than internal/store's on
// purpose: an auditor that reused the product's queries would share their
// bugs. It never changes a row and never calls Temporal or the provider.
//
// # What is checked
//
//   - every delivery acknowledged: each event the sender tried was answered
//     2xx in the end (the intake stayed available within the sender's retries);
//   - acknowledged events settled: every event the sender saw acknowledged has
//     an inbox row (none lost) whose status is done or ignored;
//   - inbox settled: no row of the run's accounts is left pending, failed or
//     exhausted (backfilled rows included);
//   - dropped events recovered: with the facts backfill run, every event no
//     delivery carried has an inbox row too;
//   - same id, other body: each conflicting redelivery that was acknowledged is
//     in the quarantine, and the inbox row keeps the original body's hash;
//   - one grant per paid invoice (right workspace, credits and amount), none
//     for anything else, and each workspace's balance equals credits per
//     invoice × its grants plus what its adjustments applied;
//   - one reversal per credit note that reached the receiver on a granted
//     invoice, asking its share floor(credits × total / invoice total); one
//     void per voided credit note whose void reached it, giving back exactly
//     what the reversal applied; no void of an issued one, no reversal of a
//     credit note the provider never had;
//   - projections: never behind the newest version sent (with versions), equal
//     to the provider's latest state for every subscription whose latest
//     state reached the receiver, no canceled subscription with access, and
//     access as the product rule of the truth gives it;
//   - one initial alert per feedback item;
//   - outbox: one intent per effect (a confirmation per grant and a notice
//     per reversal or void when the workspace has an email, an alert per
//     enabled team destination), every
//     row sent or visibly held for review (pending, uncertain or failed is a
//     violation) and, when the email API's record is given, exactly one email
//     per sent confirmation;
//   - with a forward route's receiver log (Input.Forwards): each comment
//     operation that reached the receiver applied exactly once, under one
//     operation key, nothing else applied; each resource's forwards applied
//     in the order of their inbox rows;
//   - with the soak team's handler (Input.TeamVotes): its table
//     (lab/soakteam) holds each feedback item's votes that reached the
//     receiver, and no other row.
//
// # Failed and exhausted rows
//
// A failed or exhausted inbox row is visible and replayable, but in a run
// without permanent faults it means an event was not turned into its effect:
// it counts as a violation. A run that injects permanent faults on purpose
// (for example the provider API's 403) sets Input.AllowFailed, and such rows
// then count as settled (their number is still reported).
package verify
