package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
)

// NotifyInput configures EvaluateNotifications (nothing yet: the rules are
// in the database).
type NotifyInput struct{}

// NotifyResult counts what one evaluation did.
type NotifyResult struct {
	Rules     int `json:"rules"`
	Firing    int `json:"firing"`
	Recovered int `json:"recovered"`
	// Rung counts the notification workflows signalled to send; RingFailed
	// those that could not be (the outbox sweeper rings them later).
	Rung       int `json:"rung"`
	RingFailed int `json:"ring_failed"`
	// Schedules is why the schedule_failed trigger was not evaluated ("":
	// it was).
	Schedules string `json:"schedules,omitempty"`
}

// EvaluateNotifications runs one evaluation of the notification rules
// (issue 26): it reads how the schedules' latest runs ended, lets the port
// decide and commit each notice with its outbox intent, then rings the
// workflows of the rules with notices to send, whose SendOutbox sends them
// with the outbox's retries and uncertain-outcome policy. Every step is
// idempotent: a retry (or a crash anywhere) decides nothing twice.
func (a *ControlActivities) EvaluateNotifications(ctx context.Context, _ NotifyInput) (NotifyResult, error) {
	log := logger(ctx, a.Logger)
	in := ports.NotifyInput{}
	var res NotifyResult
	if a.Schedules == nil {
		res.Schedules = "no Temporal client to read the schedules with"
	} else if hs, err := a.Schedules.Health(ctx); err != nil {
		res.Schedules = "schedules unread: " + err.Error()
		log.Warn("notifications: could not read the schedules; schedule_failed is not evaluated this time", "error", err.Error())
	} else {
		in.Schedules, in.SchedulesRead = hs, true
	}
	if a.Notifications == nil {
		return res, temporal.NewNonRetryableApplicationError("notifications are not configured on this worker", "InvalidNotify", nil)
	}
	out, err := a.Notifications.Evaluate(ctx, in)
	res.Rules = out.Rules
	for _, n := range out.Notices {
		if n.Phase == notify.PhaseRecovered {
			res.Recovered++
		} else {
			res.Firing++
		}
		if a.Metrics != nil {
			a.Metrics.NotificationsDecided.WithLabelValues(n.Trigger, n.Phase).Inc()
		}
		log.Info("notice decided", "rule", n.Rule, "trigger", n.Trigger, "subject", n.Subject, "phase", n.Phase, "channel", n.Channel)
	}
	for i, r := range out.Resources {
		if rerr := a.Doorbell.Ring(ctx, r, keys.SignalEvent, "notification"); rerr != nil {
			res.RingFailed++
			log.Warn("notifications: could not ring a rule's workflow; the outbox sweeper will", "resource", r.String(), "error", rerr.Error())
		} else {
			res.Rung++
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	if err != nil {
		// Retried by the workflow's policy; what was decided is committed.
		return res, fmt.Errorf("evaluate notifications: %w", err)
	}
	return res, nil
}
