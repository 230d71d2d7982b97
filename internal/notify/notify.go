package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// Triggers: what a rule may watch (notification_rules.triggers).
const (
	// TriggerEventFailed: events ended failed or exhausted (until replayed).
	TriggerEventFailed = "event_failed"
	// TriggerQuarantine: quarantine entries open (until resolved).
	TriggerQuarantine = "quarantine_opened"
	// TriggerDivergence: reconciliation divergences recorded within the
	// rule's window (clears after a window without one).
	TriggerDivergence = "divergence"
	// TriggerOutbox: outbox rows held for review, or uncertain (an attempt
	// whose outcome is unknown). Notifications' own rows are not counted.
	TriggerOutbox = "outbox_stuck"
	// TriggerPendingAge: the oldest pending event older than the rule's
	// threshold.
	TriggerPendingAge = "pending_age"
	// TriggerScheduleFailed: a schedule's latest finished run failed or
	// timed out (until a later run completes).
	TriggerScheduleFailed = "schedule_failed"
)

// Triggers lists every trigger, in the order they are evaluated and shown.
var Triggers = []string{TriggerEventFailed, TriggerQuarantine, TriggerDivergence, TriggerOutbox, TriggerPendingAge, TriggerScheduleFailed}

// What a trigger's notices are about: one notice per (rule, trigger,
// subject) per window.
const (
	SubjectEndpoint  = "endpoint"
	SubjectWorkspace = "workspace"
	SubjectSchedule  = "schedule"
)

// SubjectKind is what trigger's subjects are: the endpoint of the events,
// quarantine entries and divergences (an account's first linked endpoint of
// its provider and environment); the workspace of outbox rows; the
// schedule of a run.
func SubjectKind(trigger string) string {
	switch trigger {
	case TriggerOutbox:
		return SubjectWorkspace
	case TriggerScheduleFailed:
		return SubjectSchedule
	}
	return SubjectEndpoint
}

// ValidTrigger reports whether t is a trigger.
func ValidTrigger(t string) bool { return slices.Contains(Triggers, t) }

// ParseTriggers reads a list of triggers ("all" is every one), each once,
// in Triggers order; an unknown one is an error naming the known ones.
func ParseTriggers(in []string) ([]string, error) {
	seen := map[string]bool{}
	for _, raw := range in {
		for _, t := range strings.Split(raw, ",") {
			t = strings.TrimSpace(t)
			switch {
			case t == "":
				continue
			case t == "all":
				for _, a := range Triggers {
					seen[a] = true
				}
			case ValidTrigger(t):
				seen[t] = true
			default:
				return nil, fmt.Errorf("unknown trigger %q: want %s or all", t, strings.Join(Triggers, ", "))
			}
		}
	}
	var out []string
	for _, t := range Triggers {
		if seen[t] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one trigger is needed: %s or all", strings.Join(Triggers, ", "))
	}
	return out, nil
}

// Channels (notification_rules.channel).
const (
	// ChannelEmail goes through the outbox to the configured mailer.
	ChannelEmail = "email"
	// ChannelSlack posts {"text": …} to a Slack-compatible incoming webhook.
	ChannelSlack = "slack"
	// ChannelWebhook posts the JSON document signed with Standard Webhooks.
	ChannelWebhook = "webhook"
)

// Channels lists every channel.
var Channels = []string{ChannelEmail, ChannelSlack, ChannelWebhook}

// Phases of a notice.
const (
	// PhaseFiring: the condition holds (the first notice of an episode, or
	// the next window's when it grew).
	PhaseFiring = "firing"
	// PhaseRecovered: the condition cleared after a firing notice.
	PhaseRecovered = "recovered"
)

// Bounds and defaults of a rule's settings.
const (
	DefaultWindow     = 15 * time.Minute
	DefaultPendingAge = 15 * time.Minute
	MinWindow         = time.Second
	MaxWindow         = 7 * 24 * time.Hour
)

// ClassNotification is the outbox class of every notice: its
// uncertain-outcome policy (HOOKINBOX_UNCERTAIN_POLICY), and what the
// outbox_stuck trigger leaves out (a held notice never notifies of itself).
const ClassNotification = "notification"

// State is where one (rule, trigger, subject) stands (notification_states).
type State struct {
	// Firing: the condition held at the last observation.
	Firing bool
	// Announced: the current episode has had its firing notice, so a
	// recovery notice follows when it clears.
	Announced bool
	// WindowStart is the start of the window of the last firing notice
	// (zero before the first).
	WindowStart time.Time
	// NotifiedCount and NotifiedMark are the count and the newest item at
	// that notice.
	NotifiedCount int64
	NotifiedMark  int64
	// Since is when the current episode began (zero when not firing).
	Since time.Time
	// LastCount and ObservedAt are the last observation's.
	LastCount  int64
	ObservedAt time.Time
}

// Observation is what one evaluation found for a (rule, trigger, subject).
type Observation struct {
	// Active: the condition holds.
	Active bool
	// Count of the items (events, entries, rows, failed runs).
	Count int64
	// Mark is the newest item (its id, or a time in microseconds): a
	// firing episode notifies again in a later window only when it grew.
	Mark int64
	// Detail says more, for the message (the oldest pending age, a run's
	// workflow id); never a payload.
	Detail string
	// Workspace the items belong to, when they all belong to one.
	Workspace string
}

// Notice is what Decide decided to send.
type Notice struct {
	Phase string
	// WindowStart is the window the notice belongs to: a firing notice
	// opens one at its time; a recovery belongs to the last firing one's.
	WindowStart time.Time
	// Count is the observed count (firing) or the count at the last
	// firing notice (recovered); Previous, for a firing notice that
	// follows another in the same episode, the count at that one.
	Count    int64
	Previous int64
	// Since is when the episode began.
	Since time.Time
}

// Decide is the grouping, a pure function of the stored state, the
// observation, the time and the rule's window. It returns the notice to
// send, if any, and the state to store with it (in one transaction).
//
//   - A window opens with each firing notice and lasts window: within it no
//     other firing notice is sent for the same (rule, trigger, subject).
//   - The condition starting to hold sends a firing notice, unless it
//     re-fires within the window of the last one (it flapped): then the
//     notice waits for that window's end, and goes only if the condition
//     still holds.
//   - Still holding past the window sends another firing notice only when
//     the condition grew (a newer item than at the last notice); otherwise
//     it stays quiet until it clears.
//   - Clearing after a firing notice sends one recovery notice, of that
//     notice's window; clearing before any was sent sends nothing.
//
// So each window holds at most one firing and one recovery notice.
func Decide(s State, o Observation, now time.Time, window time.Duration) (Notice, bool, State) {
	next := s
	next.ObservedAt = now
	next.LastCount = o.Count
	inWindow := !s.WindowStart.IsZero() && now.Before(s.WindowStart.Add(window))
	fire := func(previous int64) (Notice, bool, State) {
		next.Announced = true
		next.WindowStart = now
		next.NotifiedCount, next.NotifiedMark = o.Count, o.Mark
		return Notice{Phase: PhaseFiring, WindowStart: now, Count: o.Count, Previous: previous, Since: next.Since}, true, next
	}
	switch {
	case o.Active && !s.Firing:
		next.Firing, next.Since, next.Announced = true, now, false
		if inWindow {
			return Notice{}, false, next
		}
		return fire(0)
	case o.Active:
		if inWindow {
			return Notice{}, false, next
		}
		if !s.Announced {
			return fire(0)
		}
		if o.Mark > s.NotifiedMark {
			return fire(s.NotifiedCount)
		}
		return Notice{}, false, next
	case s.Firing:
		next.Firing, next.Since = false, time.Time{}
		if !s.Announced {
			return Notice{}, false, next
		}
		next.Announced = false
		return Notice{Phase: PhaseRecovered, WindowStart: s.WindowStart, Count: s.NotifiedCount, Since: s.Since}, true, next
	}
	return Notice{}, false, next
}

// OperationKey is a notice's outbox operation key: derived from (rule,
// trigger, subject, window start, phase) alone, so the one notice of a
// window is one outbox intent however often it is decided, and a send
// repeated after a crash carries the same key (webhook-id, Message-ID,
// Idempotency-Key).
func OperationKey(rule, trigger, subject string, windowStart time.Time, phase string) string {
	return keys.Join("notification", rule, trigger, subject, windowStart.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), phase)
}

// Resource is the resource whose workflow sends a rule's notices: one per
// rule, so its notices leave one at a time, through the outbox machinery
// (SendOutbox with its retries and uncertain-outcome policy). It names the
// deployment's task queue, as the schedule ids do: two deployments sharing
// a namespace, each with a rule of the same name, never share a workflow.
func Resource(taskQueue, rule string) keys.Resource {
	return keys.Resource{Provider: "hookinbox", Account: taskQueue, Environment: "ops", Kind: "notification-rule", ID: rule}
}

// ScheduleHealth is how the latest finished runs of one schedule ended, as
// Temporal reports them (the schedule_failed trigger's observation).
type ScheduleHealth struct {
	ID string `json:"id"`
	// Failed counts the failed or timed-out runs since the last completed
	// one (0: the latest finished run completed).
	Failed int `json:"failed"`
	// LastFailedAt, LastWorkflowID and LastStatus are the newest failed
	// run's.
	LastFailedAt   time.Time `json:"last_failed_at,omitzero"`
	LastWorkflowID string    `json:"last_workflow_id,omitempty"`
	LastStatus     string    `json:"last_status,omitempty"`
}
