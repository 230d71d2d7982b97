// Package passes holds the statements of the long-running passes:
// reconciliation and backfill checkpoints and scopes, the delivery recovery
// of senders that never redeliver, and the divergences they record.
package passes
