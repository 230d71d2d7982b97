package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// This file holds the activities of the long-running reconciliation passes
// (SPEC R19): listing the scopes and taking a pass's checkpoint (control
// queue), and one page of the subscriptions reconciliation (provider
// queue). Each page is listed, compared, signalled
// and checkpointed in one activity, so a run killed mid-way resumes at the
// page after the last one recorded.

// ProviderActivities are the activities of the provider task queue, which
// Temporal rate-limits as a whole: ReconcilePage, BackfillPage and
// RecoverDeliveriesPage, the scheduled pages that list a provider's API. Register them with
// worker.RegisterActivity on that queue only.
type ProviderActivities struct {
	Providers   ports.Providers
	Passes      ports.Passes
	Projections ports.Projections
	Facts       ports.Facts
	// Hooks and Recoveries serve the delivery recovery (RecoverDeliveriesPage).
	Hooks      ports.Hooks
	Recoveries ports.Recoveries
	Doorbell   keys.Doorbell
	Logger     *slog.Logger
	// RetryInitial and RetryMax bound the jittered backoff between attempts.
	RetryInitial time.Duration
	RetryMax     time.Duration
}

// Checkpoint kinds: the first part of a checkpoint's name.
const (
	PassSubscriptions = "subscriptions"
	PassFacts         = "facts"
)

// CheckpointName names the checkpoint of one scope's passes: kind, provider,
// endpoint, account and environment, then the pass ("" for the scheduled
// passes; operator passes keep their own progress, e.g. "operator").
func CheckpointName(kind string, s keys.Scope, pass string) string {
	parts := []string{kind, s.Provider, s.Endpoint, s.Account, s.Environment}
	if pass != "" {
		parts = append(parts, pass)
	}
	return keys.Join(parts...)
}

// ListScopesInput selects the scopes of a pass.
type ListScopesInput struct {
	// Endpoint limits the pass to one endpoint's accounts ("" for all).
	Endpoint string `json:"endpoint,omitempty"`
	// Kind is "" for the accounts of Stripe endpoints with an API key
	// (reconciliation, facts backfill), PassDeliveries for the GitHub
	// endpoints whose hook the delivery recovery reads.
	Kind string `json:"kind,omitempty"`
}

// ListScopes lists the scopes a pass covers: every account linked to a
// Stripe endpoint with an API key, once (store.ListScopes), or for the
// delivery recovery every GitHub endpoint with an API key and a hook.
func (a *ControlActivities) ListScopes(ctx context.Context, in ListScopesInput) ([]keys.Scope, error) {
	if in.Kind == PassDeliveries {
		scopes, err := a.Passes.ListHookScopes(ctx, keys.ProviderGitHub, in.Endpoint)
		if err == nil && in.Endpoint != "" && len(scopes) == 0 {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("endpoint %s is not a GitHub endpoint with an API key and a hook (--github-hook)", in.Endpoint), "InvalidScope", nil)
		}
		return scopes, err
	}
	scopes, err := a.Passes.ListScopes(ctx, keys.ProviderStripe, in.Endpoint)
	if err != nil {
		return nil, err
	}
	if in.Endpoint != "" && len(scopes) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("endpoint %s is not a Stripe endpoint with an API key and a linked account", in.Endpoint), "InvalidScope", nil)
	}
	return scopes, nil
}

// BeginPassInput takes the pass of one checkpoint.
type BeginPassInput struct {
	Checkpoint string `json:"checkpoint"`
	Owner      string `json:"owner"`
	// Restart starts the pass over even when an earlier run left it unfinished.
	Restart bool `json:"restart,omitempty"`
}

// BeginPassResult is the checkpoint the pass starts (or resumes) from.
type BeginPassResult struct {
	Checkpoint keys.Checkpoint `json:"checkpoint"`
	// Resumed: an earlier run's unfinished pass was taken over at its cursor.
	Resumed bool `json:"resumed"`
}

// BeginPass takes (or resumes) a pass.
func (a *ControlActivities) BeginPass(ctx context.Context, in BeginPassInput) (BeginPassResult, error) {
	cp, resumed, err := a.Passes.BeginPass(ctx, in.Checkpoint, in.Owner, in.Restart)
	if err != nil {
		return BeginPassResult{}, err
	}
	if resumed {
		logger(ctx, a.Logger).Info("pass resumed from its checkpoint", "checkpoint", cp.Name, "pages", cp.Pages, "cursor", cp.Cursor)
	}
	return BeginPassResult{Checkpoint: cp, Resumed: resumed}, nil
}

// PageInput is one page of a pass over a scope.
type PageInput struct {
	Scope      keys.Scope `json:"scope"`
	Checkpoint string     `json:"checkpoint"`
	Owner      string     `json:"owner"`
	// Pages done in this pass before this one (the checkpoint's fence).
	Pages  int64  `json:"pages"`
	Cursor string `json:"cursor"`
	Limit  int    `json:"limit"`
	// SignalRate paces the doorbells a page rings (per second; 0: unpaced):
	// each costs the resource workflow one provider fetch, which the
	// provider task queue's rate limit does not cover.
	SignalRate float64 `json:"signal_rate,omitempty"`
}

// ReconcilePageInput is one page of the subscriptions reconciliation.
type ReconcilePageInput struct {
	PageInput
	// SignalAll signals every listed subscription, not only those whose
	// listed state differs from the projection.
	SignalAll bool `json:"signal_all,omitempty"`
	// Reason is the reconcile signal's value (recorded with divergences).
	Reason string `json:"reason"`
}

// PageResult is what one page did and the checkpoint after it.
type PageResult struct {
	Listed int `json:"listed"`
	// Differing (subscriptions): listed state differs from the projection
	// or there is none. Inserted (facts): events the inbox did not have.
	Differing  int `json:"differing,omitempty"`
	Inserted   int `json:"inserted,omitempty"`
	Duplicates int `json:"duplicates,omitempty"`
	// Rejected (facts): events the intake's derivation refuses (e.g. an
	// unlinked account); counted and logged, never quarantined.
	Rejected int `json:"rejected,omitempty"`
	// Redelivered (deliveries): missing deliveries the sender was asked to
	// send again; Abandoned: given up after every allowed pass.
	Redelivered  int             `json:"redelivered,omitempty"`
	Abandoned    int             `json:"abandoned,omitempty"`
	Signalled    int             `json:"signalled"`
	SignalFailed int             `json:"signal_failed,omitempty"`
	Next         string          `json:"next,omitempty"`
	Done         bool            `json:"done"`
	Repeated     bool            `json:"repeated,omitempty"`
	Checkpoint   keys.Checkpoint `json:"checkpoint"`
}

// ReconcilePage lists one page of a scope's subscriptions, compares each
// with its projection and rings the reconcile doorbell of every resource
// that differs or has none (all of them with SignalAll): each is then
// fetched, corrected and its divergences recorded by its own
// ResourceWorkflow, so reconciliation never races the resource's webhooks.
// The checkpoint advances only after every signal went out: a page whose
// signals failed is retried whole (a second doorbell is harmless).
func (a *ProviderActivities) ReconcilePage(ctx context.Context, in ReconcilePageInput) (PageResult, error) {
	client, err := a.Providers.For(ctx, in.Scope.Endpoint)
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list subscriptions", err)
	}
	page, err := client.ListSubscriptions(ctx, in.Scope.Account, providers.ListQuery{Cursor: in.Cursor, Limit: in.Limit})
	if cursorGone(err, in.Cursor) {
		logger(ctx, a.Logger).Warn("the pass's cursor no longer exists at the provider; listing again from the start",
			"checkpoint", in.Checkpoint, "cursor", in.Cursor)
		page, err = client.ListSubscriptions(ctx, in.Scope.Account, providers.ListQuery{Limit: in.Limit})
	}
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list subscriptions", err)
	}
	differing, err := a.Projections.DifferingSubscriptions(ctx, in.Scope, page.Items)
	if err != nil {
		return PageResult{}, err
	}
	res := PageResult{Listed: len(page.Items)}
	for i, sub := range page.Items {
		r := keys.Resource{Provider: in.Scope.Provider, Account: in.Scope.Account, Environment: in.Scope.Environment,
			Kind: "subscription", ID: sub.ID}
		differs := differing[sub.ID]
		if differs {
			res.Differing++
		}
		if differs || in.SignalAll {
			if err := pace(ctx, in.SignalRate, res.Signalled+res.SignalFailed); err != nil {
				return res, err
			}
			if err := a.Doorbell.Ring(ctx, r, keys.SignalReconcile, in.Reason); err != nil {
				res.SignalFailed++
				logger(ctx, a.Logger).Warn("reconciliation could not signal", "resource", r.String(), "error", err.Error())
			} else {
				res.Signalled++
			}
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	if res.SignalFailed > 0 {
		// Not checkpointed: the retry lists and signals this page again.
		return res, fmt.Errorf("%d of %d reconcile signals failed", res.SignalFailed, res.Signalled+res.SignalFailed)
	}
	return a.advance(ctx, in.PageInput, page.NextCursor, !page.HasMore, res, int64(res.Differing))
}

// advance records a page in the checkpoint and fills res with it.
func (a *ProviderActivities) advance(ctx context.Context, in PageInput, next string, done bool, res PageResult, divergences int64) (PageResult, error) {
	if !done && next == "" {
		return res, temporal.NewNonRetryableApplicationError("the provider said there is more but gave no cursor", "InvalidPage", nil)
	}
	cp, repeated, err := a.Passes.AdvancePass(ctx, in.Checkpoint, ports.PageProgress{
		Owner: in.Owner, Pages: in.Pages, Next: next, Done: done, Seen: int64(res.Listed), Divergences: divergences,
	})
	if ports.IsCheckpointMoved(err) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "CheckpointMoved", err)
	}
	if err != nil {
		return res, err
	}
	res.Next, res.Done, res.Repeated, res.Checkpoint = next, done, repeated, cp
	return res, nil
}

// pace waits before the n-th doorbell (from 0) so that at most rate go out
// per second.
func pace(ctx context.Context, rate float64, n int) error {
	if rate <= 0 || n == 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		activity.RecordHeartbeat(ctx, n)
		return nil
	}
}

// cursorGone reports a list call refused because its cursor (the last item
// of the previous page) no longer exists: the pass cannot continue from
// there, so it lists again from the start (items seen twice are harmless).
func cursorGone(err error, cursor string) bool {
	var perr *providers.Error
	return cursor != "" && errors.As(err, &perr) && perr.StatusCode == http.StatusBadRequest && perr.Code == "resource_missing"
}

// providerFailure turns a failed provider call into the activity's error:
// permanent ones (bad key, 403, a malformed answer) fail at once; others
// are retried after a jittered backoff raised to the provider's
// Retry-After, so a rate-limited pass waits as long as it is told to.
func (a *ProviderActivities) providerFailure(ctx context.Context, op string, err error) error {
	if providers.IsPermanent(err) || fault.IsPermanent(err) {
		return temporal.NewNonRetryableApplicationError(op+": "+err.Error(), "ProviderPermanent", err)
	}
	delay := nextDelay(int(activity.GetInfo(ctx).Attempt), a.RetryInitial, a.RetryMax, err)
	logger(ctx, a.Logger).Warn("provider call failed; retrying", "op", op, "next_retry_in", delay.String(), "error", err.Error())
	return temporal.NewApplicationErrorWithOptions(op+": "+err.Error(), "ProviderError",
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
}
