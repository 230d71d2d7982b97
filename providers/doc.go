// Package providers is the registry of the providers hookinbox receives
// webhooks from. A provider is one package (providers/stripe, …) with one
// value implementing Provider: how its deliveries are authenticated on the
// raw bytes (Verifier), what they mean (Normalize: event id, type, source
// account, resource, all from signed data), which of their headers are worth
// keeping, what a usable signing secret looks like and, optionally, an API
// client (Clients) for fetching current state and listing events.
// providers/all registers the built-in ones, one line each; nothing else
// branches on a provider's name.
//
// This package and the providers under it do no I/O of their own except
// through an API Client, know nothing of the inbox, workspaces or Temporal,
// and never log payloads. Admission (package admission) is their caller.
//
// API clients' errors are never states: a failed call returns an
// *Error that says whether it is NotFound, Permanent or Retryable (with the
// server's Retry-After when it gave one), and no field of a result is ever
// filled from an error. A 403 is Permanent, not "cancelled"; a 404 is
// NotFound, not "deleted". Clients do no retries of their own: the caller's
// retry policy (Temporal's) owns them.
package providers
