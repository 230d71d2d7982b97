package keys

import (
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// This file holds the pending-work shapes a resource workflow loads from
// the inbox and the progress of reconciliation passes. They travel in
// workflow histories, so their JSON must stay stable.

// PendingEvent is what a resource workflow needs to handle one row.
type PendingEvent struct {
	ID        int64  `json:"id"`
	Key       Event  `json:"key"`
	EventType string `json:"event_type"`
	Attempts  int    `json:"attempts"`
	// Budget is the attempts its handler's route allows (0: the workflow's
	// Settings.RetryBudget; rows loaded by workers before per-route budgets
	// carry none).
	Budget int `json:"budget,omitempty"`
	// Traceparent is the W3C traceparent the intake stored with the row
	// (the root of the delivery's trace; "" when tracing was off, and in
	// rows loaded by workers before traces).
	Traceparent string `json:"traceparent,omitempty"`
}

// PendingBatch is a resource's due pending rows, oldest first, and when the
// next not-yet-due row becomes due.
type PendingBatch struct {
	Events  []PendingEvent `json:"events"`
	More    bool           `json:"more"`
	NextDue *time.Time     `json:"next_due,omitempty"`
	// Outbox holds the resource's outbox rows due to be sent.
	Outbox []int64 `json:"outbox,omitempty"`
}

// Checkpoint is one row of reconcile_checkpoints: the progress of the
// current (or last) pass over one scope, e.g. one account's subscriptions.
type Checkpoint struct {
	Name string `json:"name"`
	// Cursor to resume the current pass from ("" at its start and once it
	// completed).
	Cursor string `json:"cursor"`
	// Watermark is when the last complete pass started: everything the
	// provider listed before then has been seen.
	Watermark *time.Time `json:"watermark,omitempty"`
	// Owner of the current pass (workflow ID and first run ID); a run that
	// takes an unfinished pass over becomes its owner.
	Owner string `json:"owner"`
	// Pages, Seen and Divergences count the current pass: pages done,
	// items listed, items that differed (subscriptions) or were missing
	// (facts).
	Pages       int64      `json:"pages"`
	Seen        int64      `json:"seen"`
	Divergences int64      `json:"divergences"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Unfinished reports whether a pass started and has not completed.
func (c *Checkpoint) Unfinished() bool { return c.StartedAt != nil && c.CompletedAt == nil }

// Scope is one account whose resources a pass lists, and the endpoint whose
// API key it lists them with: the public hookintype.Scope.
type Scope = hookintype.Scope
