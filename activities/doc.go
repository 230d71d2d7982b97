// Package activities does all I/O on behalf of the workflows, as thin
// Temporal adapters over ports (activities/ports): one struct per task
// queue, each registered only on its own queue, with one method per
// activity and typed inputs and results whose JSON travels in workflow
// histories. ResourceActivities run on the resource queue (loading,
// handling, stopping and reconciling events, sending the outbox),
// ControlActivities on the control queue (sweeps, pass scopes and
// checkpoints, retention), ProviderActivities on the rate-limited provider
// queue (the pages that list a provider's API). Activities own retries:
// backoff with full jitter, Retry-After, non-retryable errors, metrics and
// logs. They hold ports, never the store: this package must not import
// internal/store or pgx, so the workflows that import it stay free of them.
package activities
