package storeports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
)

// Sweeps implements ports.Sweeps.
type Sweeps struct{ Store *store.Store }

var _ ports.Sweeps = Sweeps{}

// StalePending lists resources with inbox rows due for longer than olderThan.
func (s Sweeps) StalePending(ctx context.Context, olderThan time.Duration, limit int) ([]keys.Resource, error) {
	return inbox.StalePendingResources(ctx, s.Store.Pool, olderThan, limit)
}

// HeldPending lists the resources whose due rows the sweeper's backoff
// holds, for a probe (inbox.HeldPendingResources).
func (s Sweeps) HeldPending(ctx context.Context, olderThan, probeEvery time.Duration, limit int) ([]keys.Resource, error) {
	return inbox.HeldPendingResources(ctx, s.Store.Pool, olderThan, probeEvery, limit)
}

// StaleOutbox lists resources with outbox rows unsent for longer than olderThan.
func (s Sweeps) StaleOutbox(ctx context.Context, olderThan time.Duration, limit int) ([]string, error) {
	return outbox.StaleOutboxResources(ctx, s.Store.Pool, olderThan, limit)
}

// SampleTrends records this minute's sample for the console's trends
// (inbox.RecordTrendSample).
func (s Sweeps) SampleTrends(ctx context.Context) error {
	return inbox.RecordTrendSample(ctx, s.Store.Pool)
}

// Passes implements ports.Passes on reconcile_checkpoints.
type Passes struct{ Store *store.Store }

var _ ports.Passes = Passes{}

// ListScopes lists the accounts a pass covers (store.ListScopes).
func (p Passes) ListScopes(ctx context.Context, provider, endpoint string) ([]keys.Scope, error) {
	return passes.ListScopes(ctx, p.Store.Pool, provider, endpoint)
}

// ListHookScopes lists the endpoints whose hook the delivery recovery reads
// (store.ListHookScopes).
func (p Passes) ListHookScopes(ctx context.Context, provider, endpoint string) ([]keys.Scope, error) {
	return passes.ListHookScopes(ctx, p.Store.Pool, provider, endpoint)
}

// BeginPass takes (or resumes) a pass (store.Store.BeginPass).
func (p Passes) BeginPass(ctx context.Context, name, owner string, restart bool) (keys.Checkpoint, bool, error) {
	return passes.BeginPass(ctx, p.Store, name, owner, restart)
}

// AdvancePass records one page (store.AdvancePass); a lost fence is
// ports.CheckpointMoved.
func (p Passes) AdvancePass(ctx context.Context, name string, pp ports.PageProgress) (keys.Checkpoint, bool, error) {
	cp, repeated, err := passes.AdvancePass(ctx, p.Store.Pool, name, passes.PageProgress(pp))
	var moved *passes.CheckpointMovedError
	if errors.As(err, &moved) {
		return keys.Checkpoint{}, false, ports.CheckpointMoved(err)
	}
	if err != nil {
		return keys.Checkpoint{}, false, err
	}
	return *cp, repeated, nil
}

// Retention implements ports.Retention (SPEC R21).
type Retention struct{ Store *store.Store }

var _ ports.Retention = Retention{}

// RedactPayloads is retention's "redact_payloads" step: one batch of each
// kind of payload past the payload window, each its own short statement:
// settled inbox rows (done, ignored, failed, exhausted), resolved quarantine
// entries and sent outbox rows (security issue #14). It returns the sum. A
// kind whose batch was full makes the sum reach limit, so the step runs
// again until every kind has run dry; the workflow's control flow (and so
// its recorded histories) is the same as when only inbox rows were redacted.
func (r Retention) RedactPayloads(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	var total int64
	for _, redact := range []func(context.Context, store.DB, time.Duration, int) (int64, error){
		inbox.RedactInboxPayloads,
		inbox.RedactResolvedQuarantinePayloads,
		outbox.RedactSentOutboxPayloads,
	} {
		n, err := redact(ctx, r.Store.Pool, olderThan, limit)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// DeleteInboxRows deletes finished inbox rows past the dedup window; it
// refuses a window shorter than keys.MinDedupRetention.
func (r Retention) DeleteInboxRows(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	if olderThan < keys.MinDedupRetention {
		return 0, fault.Permanent(fmt.Errorf("refusing to delete inbox rows younger than %s (the dedup window is at least %s)", olderThan, keys.MinDedupRetention))
	}
	return inbox.DeleteExpiredInboxRows(ctx, r.Store.Pool, olderThan, limit)
}

// DeleteResolvedQuarantine deletes quarantine entries resolved long ago.
func (r Retention) DeleteResolvedQuarantine(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	return inbox.DeleteResolvedQuarantine(ctx, r.Store.Pool, olderThan, limit)
}
