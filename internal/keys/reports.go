package keys

import (
	"encoding/json"
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// This file holds what the work reports: the divergences reconciliation
// finds and the backlog operators watch. Divergences travel in workflow
// histories (a ReconcileResource result), so their JSON must stay stable.

// Divergence is a difference reconciliation found between the local
// projection and the provider: the public hookintype.Divergence.
type Divergence = hookintype.Divergence

// Backlog is the state of the work: what operators watch. Its JSON (the
// operator API's and the CLI's status) is MarshalJSON's.
type Backlog struct {
	Pending int64 `json:"pending"`
	// OldestPendingAge is how long the oldest pending row has been
	// pending: oldest_pending_age_seconds in JSON.
	OldestPendingAge time.Duration    `json:"-"`
	Exhausted        int64            `json:"exhausted"`
	Failed           int64            `json:"failed"`
	QuarantineOpen   int64            `json:"quarantine_open"`
	Outbox           map[string]int64 `json:"outbox"`
	Divergences24h   int64            `json:"divergences_24h"`
	// SameVersionDivergences24h of them were at the same provider version.
	SameVersionDivergences24h int64 `json:"same_version_divergences_24h"`
}

// MarshalJSON writes the backlog with its oldest pending age in seconds
// (oldest_pending_age_seconds) and, for one more release, in nanoseconds
// under its old name (oldest_pending_age, deprecated: a time.Duration as
// Go marshals it, with no unit).
func (b Backlog) MarshalJSON() ([]byte, error) {
	type fields Backlog // the same fields, without this method
	return json.Marshal(struct {
		fields
		OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
		OldestPendingAgeNanos   int64   `json:"oldest_pending_age"`
	}{fields(b), b.OldestPendingAge.Seconds(), int64(b.OldestPendingAge)})
}
