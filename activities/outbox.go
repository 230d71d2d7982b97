package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
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

// DefaultPolicies are the policies of the built-in operation classes when
// the destination does not dedupe. Unknown classes are held for review.
var DefaultPolicies = map[string]string{
	ClassCreditsConfirmation: PolicyAcceptDuplicate,
	ClassFeedbackAlert:       PolicyAcceptDuplicate,
}

// ParsePolicies reads "class=policy,class=policy" over the defaults.
func ParsePolicies(s string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range DefaultPolicies {
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

// Destinations resolves an outbox row's sender.
type Destinations interface {
	Sender(ctx context.Context, row *store.OutboxRow) (outbound.Sender, outbound.Message, error)
}

// Outbound holds the configured mailer and builds team webhook senders.
type Outbound struct {
	Store  *store.Store
	Mailer outbound.Sender
	// Guard bounds where team webhook destinations may point (SSRF).
	Guard outbound.Guard
}

// Sender returns the sender and message of a row: the configured mailer for
// email (a workspace's confirmation or a team's email destination), or a
// Standard Webhooks sender for a team's webhook destination.
func (o *Outbound) Sender(ctx context.Context, row *store.OutboxRow) (outbound.Sender, outbound.Message, error) {
	var p struct {
		To      string `json:"to"`
		Subject string `json:"subject"`
		Text    string `json:"text"`
		Project string `json:"project"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(row.Payload, &p); err != nil {
		return nil, outbound.Message{}, Permanent(fmt.Errorf("outbox %d payload: %w", row.ID, err))
	}
	msg := outbound.Message{Key: row.OperationKey, To: p.To, Subject: p.Subject, Text: p.Text, Body: row.Payload}
	if row.Class == ClassCreditsConfirmation {
		return o.mailer(row, msg)
	}
	dests, err := store.ListDestinations(ctx, o.Store.Pool, row.WorkspaceID, false)
	if err != nil {
		return nil, msg, err
	}
	for _, d := range dests {
		if d.Name != row.Destination {
			continue
		}
		switch d.Kind {
		case "webhook":
			return &outbound.WebhookSender{URL: d.Target, Secret: d.Secret, Guard: o.Guard}, msg, nil
		case "email":
			msg.To = d.Target
			if msg.Subject == "" {
				msg.Subject = "New feedback in " + p.Project
				msg.Text = p.Message
			}
			return o.mailer(row, msg)
		}
	}
	return nil, msg, Permanent(fmt.Errorf("destination %q of workspace %s no longer exists", row.Destination, row.WorkspaceID))
}

func (o *Outbound) mailer(row *store.OutboxRow, msg outbound.Message) (outbound.Sender, outbound.Message, error) {
	if o.Mailer == nil {
		return nil, msg, Permanent(fmt.Errorf("outbox %d: no mailer configured", row.ID))
	}
	if msg.To == "" {
		return nil, msg, Permanent(fmt.Errorf("outbox %d: no recipient", row.ID))
	}
	return o.Mailer, msg, nil
}

// SendInput names the outbox row to send.
type SendInput struct {
	ID int64 `json:"id"`
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
// full-jitter backoff by the activity's retry policy.
func (a *Activities) SendOutbox(ctx context.Context, in SendInput) (SendResult, error) {
	row, err := store.GetOutbox(ctx, a.Store.Pool, in.ID)
	if errors.Is(err, store.ErrNotFound) {
		return SendResult{}, temporal.NewNonRetryableApplicationError("outbox row not found", "InvalidOutbox", err)
	}
	if err != nil {
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	switch row.Status {
	case store.OutboxSent, store.OutboxFailed, store.OutboxHeld:
		return SendResult{Status: row.Status, Policy: row.Policy}, nil
	}
	sender, msg, err := a.Outbound.Sender(ctx, row)
	if err != nil {
		if IsPermanent(err) {
			return SendResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidOutbox", err)
		}
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	policy := a.policyFor(row.Class, sender.Idempotent())
	log := a.log(ctx).With("operation_key", row.OperationKey, "outbox_id", row.ID, "class", row.Class, "policy", policy)

	if row.Status == store.OutboxUncertain {
		// A previous attempt may have been delivered.
		if f, ok := sender.(outbound.Finder); ok {
			found, ferr := f.Find(ctx, row.OperationKey)
			if ferr == nil && found {
				if err := store.MarkOutboxSent(ctx, a.Store.Pool, row.ID, "", "found at the destination after an uncertain attempt"); err != nil {
					return SendResult{}, a.sendRetry(ctx, row, err)
				}
				a.countSend(row.Class, "found")
				log.Info("outbox row found at the destination; not sent again")
				return SendResult{Status: store.OutboxSent, Policy: policy, Note: "found at destination"}, nil
			}
			if ferr != nil {
				log.Warn("could not query the destination", "error", ferr.Error())
			}
		}
		if policy == PolicyHoldForReview {
			note := "held for review: a previous attempt's outcome is unknown (" + row.LastError + ")"
			if _, err := store.StopOutbox(ctx, a.Store.Pool, row.ID, store.OutboxHeld, note); err != nil {
				return SendResult{}, a.sendRetry(ctx, row, err)
			}
			a.countSend(row.Class, "held")
			log.Warn("outbox row held for review")
			return SendResult{Status: store.OutboxHeld, Policy: policy, Note: note}, nil
		}
		log.Info("repeating an uncertain send under its policy")
	}

	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	ok, err := store.BeginOutboxAttempt(ctx, a.Store.Pool, row.ID, policy, time.Now().Add(timeout))
	if err != nil {
		return SendResult{}, a.sendRetry(ctx, row, err)
	}
	if !ok {
		return SendResult{Status: "skipped", Note: "no longer sendable"}, nil
	}
	remoteID, err := sender.Send(ctx, msg)
	if err == nil {
		if err := store.MarkOutboxSent(ctx, a.Store.Pool, row.ID, remoteID, ""); err != nil {
			// Sent, not recorded: the row stays uncertain and the policy
			// decides on the retry.
			return SendResult{}, a.sendRetry(ctx, row, err)
		}
		a.countSend(row.Class, "sent")
		log.Info("outbox row sent", "remote_id", remoteID)
		return SendResult{Status: store.OutboxSent, Policy: policy}, nil
	}
	if outbound.IsPermanent(err) {
		a.countSend(row.Class, "rejected")
		log.Warn("outbox send rejected", "error", err.Error())
		_ = store.OutboxAttemptFailed(ctx, a.Store.Pool, row.ID, store.OutboxPending, err.Error(), time.Now())
		return SendResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "OutboundRejected", err)
	}
	status := store.OutboxUncertain
	if outbound.IsDefinite(err) {
		status = store.OutboxPending
	}
	a.countSend(row.Class, status)
	log.Warn("outbox send failed", "outcome", status, "error", err.Error())
	return SendResult{}, a.sendRetryAs(ctx, row, status, err)
}

func (a *Activities) sendRetry(ctx context.Context, row *store.OutboxRow, err error) error {
	status := store.OutboxPending
	if row != nil && row.Status == store.OutboxUncertain {
		status = store.OutboxUncertain
	}
	return a.sendRetryAs(ctx, row, status, err)
}

func (a *Activities) sendRetryAs(ctx context.Context, row *store.OutboxRow, status string, err error) error {
	attempt := int(activity.GetInfo(ctx).Attempt)
	delay := fullJitter(attempt, a.RetryInitial, a.RetryMax)
	if row != nil {
		if rerr := store.OutboxAttemptFailed(ctx, a.Store.Pool, row.ID, status, err.Error(), time.Now().Add(delay)); rerr != nil {
			a.log(ctx).Error("could not record an outbox failure", "outbox_id", row.ID, "error", rerr.Error())
		}
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), "OutboundError",
		temporal.ApplicationErrorOptions{NextRetryDelay: max(delay, time.Millisecond), Cause: err})
}

func (a *Activities) policyFor(class string, idempotent bool) string {
	if idempotent {
		return PolicyRetrySameKey
	}
	if p, ok := a.Policies[class]; ok {
		return p
	}
	if p, ok := DefaultPolicies[class]; ok {
		return p
	}
	return PolicyHoldForReview
}

func (a *Activities) countSend(class, result string) {
	if a.Metrics != nil {
		a.Metrics.OutboxSends.WithLabelValues(class, result).Inc()
	}
}

// FailOutboxInput ends sending of an outbox row whose budget is spent.
type FailOutboxInput struct {
	ID        int64  `json:"id"`
	LastError string `json:"last_error"`
}

// FailOutbox records an outbox row as failed (budget spent or rejected),
// leaving sent or held rows alone.
func (a *Activities) FailOutbox(ctx context.Context, in FailOutboxInput) error {
	changed, err := store.StopOutbox(ctx, a.Store.Pool, in.ID, store.OutboxFailed, in.LastError)
	if err == nil && changed {
		a.log(ctx).Warn("outbox row failed", "outbox_id", in.ID, "last_error", in.LastError)
	}
	return err
}

// SweepOutbox rings the workflows of resources whose outbox rows have been
// unsent for longer than OlderThan (a terminated or reset workflow left
// them): their next pass sends them through SendOutbox.
func (a *Activities) SweepOutbox(ctx context.Context, in SweepInput) (SweepResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 1000
	}
	stale, err := store.StaleOutboxResources(ctx, a.Store.Pool, in.OlderThan, limit)
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Stale: len(stale)}
	for i, rk := range stale {
		r, err := keys.ParseResource(rk)
		if err == nil {
			err = a.Doorbell.Ring(ctx, r, keys.SignalEvent, "outbox sweeper")
		}
		if err != nil {
			res.Failed++
			a.log(ctx).Warn("outbox sweeper could not signal", "resource", rk, "error", err.Error())
			continue
		}
		res.Signalled++
		if a.Metrics != nil {
			a.Metrics.SweepResignals.Inc()
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	return res, nil
}
