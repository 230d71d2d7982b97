package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/tracing"
)

// Uncertain-outcome policies (SPEC R18): what a send does when a previous
// attempt's outcome is unknown (its answer was lost, or the worker died
// between the destination accepting and the row being marked sent).
const (
	// PolicyRetrySameKey repeats with the same idempotency key: only where
	// the destination dedupes on it, so it is chosen automatically there.
	PolicyRetrySameKey = "retry_same_key"
	// PolicyAcceptDuplicate repeats anyway: a possible duplicate is accepted
	// (low-risk messages such as the credits confirmation).
	PolicyAcceptDuplicate = "accept_duplicate"
	// PolicyHoldForReview stops and waits for an operator (high-impact
	// actions): `hookinbox outbox release ID` sends it again.
	PolicyHoldForReview = "hold_for_review"
)

// ParsePolicies reads "class=policy,class=policy" (HOOKINBOX_UNCERTAIN_POLICY)
// over defaults: the policies the App's handlers declared for their classes
// (hookinbox.App.OutboxClass). A class none names is held for review.
func ParsePolicies(s string, defaults map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range defaults {
		out[k] = v
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		class, policy, ok := strings.Cut(part, "=")
		class, policy = strings.TrimSpace(class), strings.TrimSpace(policy)
		if !ok || class == "" {
			return nil, fmt.Errorf("uncertain policy %q: want class=policy", part)
		}
		switch policy {
		case PolicyAcceptDuplicate, PolicyHoldForReview, PolicyRetrySameKey:
		default:
			return nil, fmt.Errorf("uncertain policy for %s: %q is not retry_same_key, accept_duplicate or hold_for_review", class, policy)
		}
		out[class] = policy
	}
	return out, nil
}

// SendInput names the outbox row to send.
type SendInput struct {
	ID int64 `json:"id"`
	// Traceparent is the W3C traceparent of the delivery whose effect made
	// the row (the workflow passes its event's, right after the commit):
	// the send span's parent. Empty for a row sent by a later run, in older
	// histories and when tracing is off.
	Traceparent string `json:"traceparent,omitempty"`
}

// SendResult is the row's status after the attempt.
type SendResult struct {
	Status string `json:"status"`
	Policy string `json:"policy,omitempty"`
	Note   string `json:"note,omitempty"`
}

// SendOutbox sends one outbox row, keyed by its operation key (SPEC R18).
// The attempt is recorded (row uncertain) before anything leaves, so a crash
// after the destination accepted is seen by the next attempt, which then
// follows the policy: query the destination when it can be asked, repeat
// with the same key where it dedupes, accept a duplicate for low-risk
// classes, or hold for review. A definite failure puts the row back to
// pending; an unknown outcome leaves it uncertain; both are retried with
// full-jitter backoff by the activity's retry policy. An attempt that finds
// the database away records nothing and returns ErrDatabaseUnavailable:
// the workflow waits for the database without spending the row's budget.
func (a *ResourceActivities) SendOutbox(ctx context.Context, in SendInput) (SendResult, error) {
	if a.Tracing == nil {
		return a.sendOutbox(ctx, in)
	}
	ctx, span := tracing.StartUnder(ctx, a.Tracing.Tracer(tracing.Scope), in.Traceparent, "send outbox",
		trace.WithAttributes(attribute.Int64("hookinbox.outbox_id", in.ID)))
	res, err := a.sendOutbox(ctx, in)
	if res.Status != "" {
		span.SetAttributes(attribute.String("hookinbox.status", res.Status), attribute.String("hookinbox.policy", res.Policy))
	}
	tracing.Fail(span, err)
	span.End()
	return res, err
}

func (a *ResourceActivities) sendOutbox(ctx context.Context, in SendInput) (SendResult, error) {
	row, err := a.Outbox.Get(ctx, in.ID)
	if errors.Is(err, fault.ErrNotFound) {
		return SendResult{}, temporal.NewNonRetryableApplicationError("outbox row not found", "InvalidOutbox", err)
	}
	if fault.IsUnavailable(err) {
		return SendResult{}, a.databaseAway(ctx, err, "outbox_id", in.ID)
	}
	if err != nil {
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	switch row.Status {
	case keys.OutboxSent, keys.OutboxFailed, keys.OutboxHeld:
		return SendResult{Status: row.Status, Policy: row.Policy}, nil
	}
	sender, msg, err := a.Outbox.Sender(ctx, row)
	if err != nil {
		if fault.IsPermanent(err) {
			return SendResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidOutbox", err)
		}
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	policy := a.policyFor(row.Class, sender.Idempotent())
	log := logger(ctx, a.Logger).With("operation_key", row.OperationKey, "outbox_id", row.ID, "class", row.Class, "policy", policy)

	if row.Status == keys.OutboxUncertain {
		// A previous attempt may have been delivered.
		if f, ok := sender.(outbound.Finder); ok {
			found, ferr := f.Find(ctx, row.OperationKey)
			if ferr == nil && found {
				if err := a.Outbox.MarkSent(ctx, row.ID, "", "found at the destination after an uncertain attempt"); err != nil {
					return SendResult{}, a.sendRetry(ctx, row, err)
				}
				a.countSend(row, "found")
				log.Info("outbox row found at the destination; not sent again")
				return SendResult{Status: keys.OutboxSent, Policy: policy, Note: "found at destination"}, nil
			}
			if ferr != nil {
				log.Warn("could not query the destination", "error", ferr.Error())
			}
		}
		if policy == PolicyHoldForReview {
			note := "held for review: a previous attempt's outcome is unknown (" + row.LastError + ")"
			if _, err := a.Outbox.Stop(ctx, row.ID, keys.OutboxHeld, note); err != nil {
				return SendResult{}, a.sendRetry(ctx, row, err)
			}
			a.countSend(row, "held")
			log.Warn("outbox row held for review")
			return SendResult{Status: keys.OutboxHeld, Policy: policy, Note: note}, nil
		}
		log.Info("repeating an uncertain send under its policy")
	}

	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	ok, err := a.Outbox.BeginAttempt(ctx, row.ID, policy, time.Now().Add(timeout))
	if err != nil {
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	if !ok {
		return SendResult{Status: "skipped", Note: "no longer sendable"}, nil
	}
	// The row is uncertain in the database from here on: a failure
	// recorded below must not write back the pending status read above.
	row.Status = keys.OutboxUncertain
	remoteID, err := sender.Send(ctx, msg)
	if err == nil {
		if err := a.Outbox.MarkSent(ctx, row.ID, remoteID, ""); err != nil {
			// Sent, not recorded: the row stays uncertain, so the next
			// attempt takes the policy's uncertain path (ask, hold, or
			// repeat) instead of sending blindly.
			return SendResult{}, a.sendRetryAs(ctx, row, keys.OutboxUncertain, err)
		}
		a.countSend(row, "sent")
		log.Info("outbox row sent", "remote_id", remoteID)
		return SendResult{Status: keys.OutboxSent, Policy: policy}, nil
	}
	if outbound.IsPermanent(err) {
		a.countSend(row, "rejected")
		log.Warn("outbox send rejected", "error", err.Error())
		_ = a.Outbox.AttemptFailed(ctx, row.ID, keys.OutboxPending, err.Error(), time.Now())
		return SendResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "OutboundRejected", err)
	}
	status := keys.OutboxUncertain
	if outbound.IsDefinite(err) {
		status = keys.OutboxPending
	}
	a.countSend(row, status)
	log.Warn("outbox send failed", "outcome", status, "error", err.Error())
	return SendResult{}, a.sendRetryAs(ctx, row, status, err)
}

func (a *ResourceActivities) sendRetry(ctx context.Context, row *ports.OutboxRow, err error) error {
	status := keys.OutboxPending
	if row != nil && row.Status == keys.OutboxUncertain {
		status = keys.OutboxUncertain
	}
	return a.sendRetryAs(ctx, row, status, err)
}

func (a *ResourceActivities) sendRetryAs(ctx context.Context, row *ports.OutboxRow, status string, err error) error {
	if fault.IsUnavailable(err) {
		// The row keeps the status the database has (pending, or uncertain
		// once an attempt began); the workflow waits for the database.
		var id int64
		if row != nil {
			id = row.ID
		}
		return a.databaseAway(ctx, err, "outbox_id", id)
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	delay := fullJitter(attempt, a.RetryInitial, a.RetryMax)
	if row != nil {
		if rerr := a.Outbox.AttemptFailed(ctx, row.ID, status, err.Error(), time.Now().Add(delay)); rerr != nil {
			logger(ctx, a.Logger).Error("could not record an outbox failure", "outbox_id", row.ID, "error", rerr.Error())
		}
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), "OutboundError",
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
}

func (a *ResourceActivities) policyFor(class string, idempotent bool) string {
	if idempotent {
		return PolicyRetrySameKey
	}
	if p, ok := a.Policies[class]; ok {
		return p
	}
	return PolicyHoldForReview
}

func (a *ResourceActivities) countSend(row *ports.OutboxRow, result string) {
	if a.Metrics == nil {
		return
	}
	a.Metrics.OutboxSends.WithLabelValues(row.Class, result).Inc()
	if row.Class != notify.ClassNotification {
		return
	}
	// A notice's channel and trigger are in its document (bounded values:
	// notify.Channels and notify.Triggers).
	var d struct {
		Channel string `json:"channel"`
		Trigger string `json:"trigger"`
	}
	_ = json.Unmarshal(row.Payload, &d)
	if !notify.ValidTrigger(d.Trigger) || !slices.Contains(notify.Channels, d.Channel) {
		return
	}
	switch result {
	case "sent", "found":
		a.Metrics.NotificationsSent.WithLabelValues(d.Channel, d.Trigger).Inc()
	default:
		a.Metrics.NotificationsFailed.WithLabelValues(d.Channel, d.Trigger).Inc()
	}
}

// FailOutboxInput ends sending of an outbox row whose budget is spent.
type FailOutboxInput struct {
	ID        int64  `json:"id"`
	LastError string `json:"last_error"`
}

// FailOutbox records an outbox row as failed (budget spent or rejected),
// leaving sent or held rows alone.
func (a *ResourceActivities) FailOutbox(ctx context.Context, in FailOutboxInput) error {
	changed, err := a.Outbox.Stop(ctx, in.ID, keys.OutboxFailed, in.LastError)
	if err == nil && changed {
		logger(ctx, a.Logger).Warn("outbox row failed", "outbox_id", in.ID, "last_error", in.LastError)
	}
	return err
}
