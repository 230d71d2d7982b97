package storeports

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// Notifications implements ports.Notifications: it observes each enabled
// rule's triggers and, for each (rule, trigger, subject) observed or
// firing, decides with notify.Decide in one short transaction that locks
// its state, saves the new one and, when a notice is due, inserts its
// outbox intent (keyed by notify.OperationKey) and records the notice.
// So a window's notice and its mark commit together or not at all: a
// crash before the commit decides again later (nothing was sent), after it
// the outbox sends the one intent (again at most under the same key).
type Notifications struct {
	Store *store.Store
	// ConsoleURL is the console's base URL the notices link to.
	ConsoleURL string
	// TemporalUIURL and Namespace: a failed schedule run's notice links to
	// its workflow there ("" for no link).
	TemporalUIURL, Namespace string
	// TaskQueue names the deployment in the workflows that send the
	// notices (notify.Resource; "" is the default queue, "hookinbox").
	TaskQueue string
}

func (n *Notifications) resource(rule string) keys.Resource {
	q := n.TaskQueue
	if q == "" {
		q = "hookinbox"
	}
	return notify.Resource(q, rule)
}

var _ ports.Notifications = (*Notifications)(nil)

// Evaluate runs one evaluation (ports.Notifications).
func (n *Notifications) Evaluate(ctx context.Context, in ports.NotifyInput) (ports.NotifyOutcome, error) {
	var out ports.NotifyOutcome
	now, err := notifications.Now(ctx, n.Store.Pool)
	if err != nil {
		return out, portErr(err)
	}
	rules, err := notifications.List(ctx, n.Store.Pool, true)
	if err != nil {
		return out, portErr(err)
	}
	out.Rules = len(rules)
	var errs []error
	for _, r := range rules {
		for _, t := range r.Triggers {
			if t == notify.TriggerScheduleFailed && (!in.SchedulesRead || r.Workspace != "" || r.Endpoint != "") {
				continue
			}
			decided, err := n.evaluate(ctx, r, t, now, in)
			out.Notices = append(out.Notices, decided...)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s, trigger %s: %w", r.Name, t, err))
			}
		}
	}
	res, err := notifications.UnsentResources(ctx, n.Store.Pool)
	out.Resources = res
	if err != nil {
		errs = append(errs, err)
	}
	return out, portErr(errors.Join(errs...))
}

// observation is what one trigger saw of one subject, with the message's
// detail and links.
type observation struct {
	notify.Observation
	links []notify.Link
}

func (n *Notifications) evaluate(ctx context.Context, r notifications.Rule, trigger string, now time.Time, in ports.NotifyInput) ([]ports.NoticeDecided, error) {
	obs, err := n.observe(ctx, r, trigger, now, in)
	if err != nil {
		return nil, err
	}
	firing, err := notifications.FiringSubjects(ctx, n.Store.Pool, r.Name, trigger)
	if err != nil {
		return nil, err
	}
	var subjects []string
	for s, o := range obs {
		if o.Active {
			subjects = append(subjects, s)
		}
	}
	for _, s := range firing {
		if !slices.Contains(subjects, s) {
			subjects = append(subjects, s)
		}
	}
	slices.Sort(subjects)
	var out []ports.NoticeDecided
	var errs []error
	for _, s := range subjects {
		o := obs[s] // absent: not observed any more, so inactive
		phase, err := n.apply(ctx, r, trigger, s, o, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("subject %s: %w", s, err))
			continue
		}
		if phase != "" {
			out = append(out, ports.NoticeDecided{Rule: r.Name, Trigger: trigger, Subject: s, Phase: phase, Channel: r.Channel})
		}
	}
	return out, errors.Join(errs...)
}

// apply decides for one (rule, trigger, subject) in one transaction and
// returns the phase of the notice it committed ("" for none).
func (n *Notifications) apply(ctx context.Context, r notifications.Rule, trigger, subject string, o observation, now time.Time) (string, error) {
	var phase string
	err := n.Store.Tx(ctx, func(tx pgx.Tx) error {
		phase = ""
		st, err := notifications.LockState(ctx, tx, r.Name, trigger, subject)
		if errors.Is(err, fault.ErrNotFound) {
			return nil // the rule was removed since it was listed
		}
		if err != nil {
			return err
		}
		notice, ok, next := notify.Decide(st, o.Observation, now, r.Window)
		if err := notifications.SaveState(ctx, tx, r.Name, trigger, subject, next); err != nil {
			return err
		}
		if !ok {
			return nil
		}
		rule := notify.Rule{Name: r.Name, Channel: r.Channel, Workspace: r.Workspace, Endpoint: r.Endpoint, Window: r.Window, PendingAge: r.PendingAge}
		detail := o.Detail
		if notice.Phase == notify.PhaseRecovered {
			detail = ""
		}
		doc := notify.Render(rule, trigger, subject, notice, detail, o.links)
		intent := outbox.OutboxIntent{OperationKey: doc.OperationKey, Class: notify.ClassNotification, Kind: "webhook",
			Destination: r.Name, WorkspaceID: r.Workspace, ResourceKey: n.resource(r.Name).String()}
		if r.Channel == notify.ChannelEmail {
			doc.To = r.Target
			intent.Kind, intent.Destination = "email", r.Target
		}
		intent.Payload = doc
		id, err := outbox.InsertOutbox(ctx, tx, intent)
		if err != nil {
			return err
		}
		if _, err := notifications.InsertNotice(ctx, tx, notifications.Notice{Rule: r.Name, Trigger: trigger, Subject: subject,
			WindowStart: notice.WindowStart, Phase: notice.Phase, Count: notice.Count, Channel: r.Channel, Workspace: r.Workspace,
			OperationKey: doc.OperationKey, OutboxID: id}); err != nil {
			return err
		}
		phase = notice.Phase
		return nil
	})
	return phase, err
}

// observe reads what trigger sees under r's scope, by subject.
func (n *Notifications) observe(ctx context.Context, r notifications.Rule, trigger string, now time.Time, in ports.NotifyInput) (map[string]observation, error) {
	rule := notify.Rule{Name: r.Name, Workspace: r.Workspace, Window: r.Window, PendingAge: r.PendingAge}
	scope := notifications.Scope{Workspace: r.Workspace, Endpoint: r.Endpoint}
	out := map[string]observation{}
	if trigger == notify.TriggerScheduleFailed {
		for _, h := range in.Schedules {
			o := observation{Observation: notify.Observation{Active: h.Failed > 0, Count: int64(h.Failed), Mark: h.LastFailedAt.UnixMicro()},
				links: notify.ConsoleLinks(n.ConsoleURL, rule, trigger, h.ID)}
			if h.Failed > 0 {
				o.Detail = fmt.Sprintf("Latest failed run: %s (%s at %s).", h.LastWorkflowID, h.LastStatus, h.LastFailedAt.UTC().Format(time.RFC3339))
				if n.TemporalUIURL != "" && h.LastWorkflowID != "" {
					o.links = append(o.links, notify.Link{Name: "The failed run in the Temporal UI",
						URL: keys.TemporalUIWorkflowURL(n.TemporalUIURL, n.Namespace, h.LastWorkflowID)})
				}
			}
			out[h.ID] = o
		}
		return out, nil
	}
	var counts []notifications.Count
	var err error
	switch trigger {
	case notify.TriggerEventFailed:
		counts, err = notifications.FailedEvents(ctx, n.Store.Pool, scope)
	case notify.TriggerQuarantine:
		counts, err = notifications.OpenQuarantine(ctx, n.Store.Pool, scope)
	case notify.TriggerDivergence:
		counts, err = notifications.RecentDivergences(ctx, n.Store.Pool, scope, now.Add(-r.Window))
	case notify.TriggerOutbox:
		if r.Endpoint != "" {
			return out, nil // outbox rows have no endpoint: a rule of one endpoint never sees them
		}
		counts, err = notifications.StuckOutbox(ctx, n.Store.Pool, scope, now)
	case notify.TriggerPendingAge:
		counts, err = notifications.PendingEvents(ctx, n.Store.Pool, scope)
	default:
		return nil, fault.Permanent(fmt.Errorf("unknown trigger %q", trigger))
	}
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		o := observation{Observation: notify.Observation{Active: c.Count > 0, Count: c.Count, Mark: c.Mark, Workspace: c.Workspace},
			links: notify.ConsoleLinks(n.ConsoleURL, rule, trigger, c.Subject)}
		switch trigger {
		case notify.TriggerPendingAge:
			age := now.Sub(c.Oldest)
			o.Active = age > r.PendingAge
			o.Detail = fmt.Sprintf("The oldest pending event has been pending for %s (threshold %s).", age.Round(time.Second), r.PendingAge)
		case notify.TriggerOutbox:
			o.Detail = fmt.Sprintf("%d held for review, %d uncertain.", c.Held, c.Count-c.Held)
		}
		out[c.Subject] = o
	}
	return out, nil
}
