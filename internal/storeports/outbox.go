package storeports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// Outbox implements ports.Outbox: the outbox rows, the configured mailer
// and the team webhook senders.
type Outbox struct {
	Store  *store.Store
	Mailer outbound.Sender
	// Guard bounds where team webhook destinations may point (SSRF).
	Guard outbound.Guard
}

var _ ports.Outbox = (*Outbox)(nil)

// Get reads one outbox row.
func (o *Outbox) Get(ctx context.Context, id int64) (*ports.OutboxRow, error) {
	r, err := outbox.GetOutbox(ctx, o.Store.Pool, id)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", fault.ErrNotFound, err)
	}
	if err != nil {
		return nil, portErr(err)
	}
	return &ports.OutboxRow{ID: r.ID, OperationKey: r.OperationKey, Class: r.Class, Kind: r.Kind, Destination: r.Destination,
		WorkspaceID: r.WorkspaceID, Payload: r.Payload, Status: r.Status, Policy: r.Policy, LastError: r.LastError}, nil
}

// Sender returns the sender and message of a row: the configured mailer for
// an email to the address in its payload (a workspace's confirmation or
// credits notice, a team handler's email) or to a team's email
// destination, or a Standard Webhooks sender for a team's webhook
// destination.
func (o *Outbox) Sender(ctx context.Context, row *ports.OutboxRow) (outbound.Sender, outbound.Message, error) {
	var p struct {
		To      string `json:"to"`
		Subject string `json:"subject"`
		Text    string `json:"text"`
		Project string `json:"project"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(row.Payload, &p); err != nil {
		return nil, outbound.Message{}, fault.Permanent(fmt.Errorf("outbox %d payload: %w", row.ID, err))
	}
	if row.Class == notify.ClassNotification {
		return o.notificationSender(ctx, row)
	}
	msg := outbound.Message{Key: row.OperationKey, To: p.To, Subject: p.Subject, Text: p.Text, Body: row.Payload}
	if row.Kind == "email" && p.To != "" {
		// An email to the address written with the intent (hookinbox.Email:
		// a workspace's confirmation, a team's welcome email); an intent to
		// a team destination names the destination instead.
		return o.mailer(row, msg)
	}
	dests, err := outbox.ListDestinations(ctx, o.Store.Pool, row.WorkspaceID, false)
	if err != nil {
		return nil, msg, portErr(err)
	}
	for _, d := range dests {
		if d.Name != row.Destination {
			continue
		}
		switch d.Kind {
		case "webhook":
			secret, err := outbox.DestinationSecret(o.Store, d)
			if err != nil {
				return nil, msg, err
			}
			return &outbound.WebhookSender{URL: d.Target, Secret: secret, Guard: o.Guard}, msg, nil
		case "email":
			msg.To = d.Target
			if msg.Subject == "" {
				msg.Subject = "New feedback in " + p.Project
				msg.Text = p.Message
			}
			return o.mailer(row, msg)
		}
	}
	return nil, msg, fault.Permanent(fmt.Errorf("destination %q of workspace %s no longer exists", row.Destination, row.WorkspaceID))
}

// notificationSender is the sender of a notice (internal/notify): the
// mailer for an email rule, to the address its payload names; for a Slack
// or webhook rule, a sender to the rule's URL (its sealed secret opened),
// through the guard, which the rule may open to private addresses on
// purpose. A rule removed since the notice was decided is Permanent.
func (o *Outbox) notificationSender(ctx context.Context, row *ports.OutboxRow) (outbound.Sender, outbound.Message, error) {
	var d notify.Document
	if err := json.Unmarshal(row.Payload, &d); err != nil {
		return nil, outbound.Message{}, fault.Permanent(fmt.Errorf("outbox %d notice: %w", row.ID, err))
	}
	msg := outbound.Message{Key: row.OperationKey, To: d.To, Subject: d.Title, Text: d.Text, Body: row.Payload}
	if row.Kind == "email" {
		return o.mailer(row, msg)
	}
	r, err := notifications.Open(ctx, o.Store, row.Destination)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, msg, fault.Permanent(fmt.Errorf("notification rule %s no longer exists", row.Destination))
	}
	if err != nil {
		return nil, msg, portErr(err)
	}
	g := o.Guard
	if r.AllowPrivate {
		g.AllowPrivate = true
	}
	switch r.Channel {
	case notify.ChannelSlack:
		return &outbound.SlackSender{URL: r.Secret, Guard: g}, msg, nil
	case notify.ChannelWebhook:
		return &outbound.WebhookSender{URL: r.Target, Secret: r.Secret, Guard: g}, msg, nil
	}
	return nil, msg, fault.Permanent(fmt.Errorf("notification rule %s: channel %s does not send webhooks", r.Name, r.Channel))
}

func (o *Outbox) mailer(row *ports.OutboxRow, msg outbound.Message) (outbound.Sender, outbound.Message, error) {
	if o.Mailer == nil {
		return nil, msg, fault.Permanent(fmt.Errorf("outbox %d: no mailer configured", row.ID))
	}
	if msg.To == "" {
		return nil, msg, fault.Permanent(fmt.Errorf("outbox %d: no recipient", row.ID))
	}
	return o.Mailer, msg, nil
}

// BeginAttempt records an attempt before anything leaves.
func (o *Outbox) BeginAttempt(ctx context.Context, id int64, policy string, until time.Time) (bool, error) {
	ok, err := outbox.BeginOutboxAttempt(ctx, o.Store.Pool, id, policy, until)
	return ok, portErr(err)
}

// MarkSent records a delivered row.
func (o *Outbox) MarkSent(ctx context.Context, id int64, remoteID, note string) error {
	return portErr(outbox.MarkOutboxSent(ctx, o.Store.Pool, id, remoteID, note))
}

// AttemptFailed records a failed attempt.
func (o *Outbox) AttemptFailed(ctx context.Context, id int64, status, lastErr string, next time.Time) error {
	return portErr(outbox.OutboxAttemptFailed(ctx, o.Store.Pool, id, status, lastErr, next))
}

// Stop ends sending of a row.
func (o *Outbox) Stop(ctx context.Context, id int64, status, note string) (bool, error) {
	changed, err := outbox.StopOutbox(ctx, o.Store.Pool, id, status, note)
	return changed, portErr(err)
}

// portErr says so when err means the database is away (fault.Unavailable),
// so a send waits for it instead of spending the row's budget.
func portErr(err error) error {
	if store.IsUnavailable(err) {
		return fault.Unavailable(err)
	}
	return err
}
