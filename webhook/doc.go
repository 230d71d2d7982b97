// Package webhook is the HTTP intake (SPEC R1–R9): a gin router that
// authenticates each delivery on its exact raw bytes with the provider's own
// scheme, identifies the source account and environment, maps the account to
// its workspace through a registered link, and commits one inbox row before
// answering 2xx. After the commit it rings the resource's doorbell through
// the Handoff interface, without waiting for it.
//
// It knows nothing of Temporal beyond Handoff, never logs payloads, and never
// answers 2xx for work that exists only in memory.
package webhook
