// Package storeports implements the activities' plumbing ports
// (activities/ports) on PostgreSQL through internal/store: the outbox's
// bookkeeping and destinations, the sweeps, the checkpoints of the paged
// passes, retention and the facts backfill's admission. The business side
// (routing and handling events, reconciling a resource) is package
// handlers'. Each method is one short store call or transaction; nothing
// here knows Temporal.
package storeports
