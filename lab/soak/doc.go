// Package soak is hookinbox's chaos soak: it runs the real processes (the
// built `hookinbox webhook` and `hookinbox worker`, configured only by
// environment variables) against their own PostgreSQL cluster and Temporal
// dev server, drives them with two provider simulators (subscription
// snapshots with versions on one Stripe endpoint, without on another, plus
// feedback), and while the events flow it kills intake and worker processes
// with SIGKILL at random, restarts the Temporal dev server once, terminates
// the application's database connections (also right after the email API
// accepted a send, so marking it sent fails), stops PostgreSQL for 30-60 s
// (Options.Outages) and loses some of the intake's answers on the way back. When the work has drained it runs the facts
// backfill for the deliveries the simulators dropped, then checks the
// invariants of lab/verify against the simulators' ground truth.
//
// `hookinbox-lab soak` is the full run (20,000 events by default); soak_test.go
// is the short one `make test` runs. Both call Run. The package also exports
// the pieces `hookinbox-lab demo` shares: Relay (a lossy load balancer),
// TeamReceiver (a signed team alert endpoint), Converge, TriggerSchedule (the
// facts backfill, the GitHub delivery recovery) and the operator passes over
// one endpoint.
//
// It owns its processes, folders and servers; it changes hookinbox's tables
// only through the product (its processes) and the registration calls any
// operator would make (endpoints, links, workspace email, team destination).
package soak
