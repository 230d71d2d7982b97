package keys

import "time"

// This file holds what the work reports: the divergences reconciliation
// finds and the backlog operators watch. Divergences travel in workflow
// histories (a ReconcileResource result), so their JSON must stay stable.

// Divergence is a difference reconciliation found between the local
// projection and the provider.
type Divergence struct {
	Field         string `json:"field"`
	LocalValue    string `json:"local_value"`
	ProviderValue string `json:"provider_value"`
	Corrected     bool   `json:"corrected"`
	// SameVersion: found between two states carrying the same provider
	// version (different content under one version), never corrected.
	SameVersion bool `json:"same_version,omitempty"`
}

// Backlog is the state of the work: what operators watch.
type Backlog struct {
	Pending          int64            `json:"pending"`
	OldestPendingAge time.Duration    `json:"oldest_pending_age"`
	Exhausted        int64            `json:"exhausted"`
	Failed           int64            `json:"failed"`
	QuarantineOpen   int64            `json:"quarantine_open"`
	Outbox           map[string]int64 `json:"outbox"`
	Divergences24h   int64            `json:"divergences_24h"`
	// SameVersionDivergences24h of them were at the same provider version.
	SameVersionDivergences24h int64 `json:"same_version_divergences_24h"`
}
