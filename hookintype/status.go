package hookintype

// Inbox statuses: where an event's inbox row stands (the contract of
// webhook_inbox.status). A row is pending until its handler completes it;
// every ending stays visible and replayable.
const (
	// StatusPending: received and not yet handled, or to be tried again.
	StatusPending = "pending"
	// StatusDone: its handler committed its effect.
	StatusDone = "done"
	// StatusIgnored: no handler takes its type, or its handler read it and
	// deliberately did nothing.
	StatusIgnored = "ignored"
	// StatusFailed: its handler failed permanently (hookinbox.Permanent).
	StatusFailed = "failed"
	// StatusExhausted: its retry budget was spent.
	StatusExhausted = "exhausted"
)

// Environments. The environment is part of every event, resource and
// business key: a test-mode event never satisfies or blocks a live effect.
const (
	// Live is production's environment.
	Live = "live"
	// Test is a provider's test mode (Stripe's livemode false).
	Test = "test"
)
