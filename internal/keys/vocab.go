package keys

import (
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Providers hookinbox verifies (the registry in package providers holds
// what each one means).
const (
	ProviderStripe   = "stripe"
	ProviderGitHub   = "github"
	ProviderStandard = "standard"
	ProviderShopify  = "shopify"
)

// Environments. The environment is part of every event, resource and
// business key: a test-mode event never satisfies or blocks a live effect.
const (
	EnvLive = hookintype.Live
	EnvTest = hookintype.Test
)

// Inbox statuses (contract: webhook_inbox.status), the public
// hookintype's.
const (
	StatusPending   = hookintype.StatusPending
	StatusDone      = hookintype.StatusDone
	StatusIgnored   = hookintype.StatusIgnored
	StatusFailed    = hookintype.StatusFailed
	StatusExhausted = hookintype.StatusExhausted
)

// Inbox row origins: how a row came in.
const (
	OriginWebhook    = "webhook"
	OriginBackfill   = "backfill"
	OriginQuarantine = "quarantine"
)

// How the delivery recovery brings back a delivery a sender that never
// redelivers (GitHub) failed to make (keys.EndpointSettings.GitHubRecovery).
const (
	// RecoverRedeliver asks the sender to deliver it again, signed, to the
	// intake (the default).
	RecoverRedeliver = "redeliver"
	// RecoverFetch reads it from the sender's delivery log and admits it as
	// a backfill (authenticated by the API call, not by a signature).
	RecoverFetch = "fetch"
)

// Outbox statuses (the outbox table's CHECK constraint).
const (
	OutboxPending   = "pending"
	OutboxSent      = "sent"
	OutboxFailed    = "failed"
	OutboxUncertain = "uncertain"
	OutboxHeld      = "held_for_review"
)

// Outbox operation classes: what a business handler's outbound effect is;
// each selects its uncertain-outcome policy.
const (
	ClassCreditsConfirmation = "credits_confirmation"
	ClassFeedbackAlert       = "feedback_alert"
	// ClassCreditsReversal is the notice of credits taken back (a credit
	// note) or given back (its void).
	ClassCreditsReversal = "credits_reversal"
)

// Negative-balance policies: what a change that would take a workspace's
// balance below zero does (HOOKINBOX_NEGATIVE_BALANCE_POLICY).
const (
	// BalanceAllow applies the change; the balance goes negative (default).
	BalanceAllow = "allow"
	// BalanceClamp takes back only down to zero and records the shortfall.
	BalanceClamp = "clamp"
	// BalanceHold changes nothing and records the change held for review.
	BalanceHold = "hold"
)

// MinDedupRetention is the shortest time an inbox row (its event key, what
// deduplicates a sender's retries) is ever kept: the longest retry window of
// the supported senders (Stripe retries for up to three days).
const MinDedupRetention = 72 * time.Hour
