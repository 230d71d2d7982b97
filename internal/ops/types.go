package ops

import (
	"github.com/hookinbox/hookinbox/internal/store/access"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// The store's types that the acts take and return, named here so that
// their front ends (the CLI, the console) name them through ops and never
// import the store.

// InboxFilter selects inbox events (ListInbox, CountInbox, a replay).
type InboxFilter = inbox.InboxFilter

// QuarantineFilter selects quarantine entries (ListQuarantine).
type QuarantineFilter = inbox.QuarantineFilter

// ReplayJob is a persisted bulk replay and its progress.
type ReplayJob = access.ReplayJob

// Replay job statuses.
const (
	JobQueued    = access.JobQueued
	JobRunning   = access.JobRunning
	JobDone      = access.JobDone
	JobCancelled = access.JobCancelled
	JobFailed    = access.JobFailed
)

// NewEndpoint is an endpoint to register (AddEndpoint).
type NewEndpoint = endpoints.NewEndpoint

// LinkResult is what linking an account did to the endpoint's routing of
// events that name no account (LinkAccount).
type LinkResult = endpoints.LinkResult
