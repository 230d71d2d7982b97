package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/outbound"
)

// Rule is what the message of a notice needs of its rule.
type Rule struct {
	Name      string
	Channel   string
	Workspace string
	Endpoint  string
	Window    time.Duration
	// PendingAge is the pending_age trigger's threshold.
	PendingAge time.Duration
}

// Link is a page where the operator sees more.
type Link struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Document types.
const (
	TypeFiring    = "hookinbox.notification.firing"
	TypeRecovered = "hookinbox.notification.recovered"
	TypeTest      = "hookinbox.notification.test"
)

// Document is a notice as it is sent: the webhook channel's JSON body (the
// outbox row's payload), whose subject and text are the email's and
// Slack's. Its fields are a contract for receivers: add, never rename.
type Document struct {
	Type string `json:"type"`
	// Ref names the notice in every channel (a Slack message repeated after
	// a crash carries the same one): "ntf_" and the stable id of its
	// operation key, the webhook-id's suffix.
	Ref         string `json:"ref"`
	Rule        string `json:"rule"`
	Trigger     string `json:"trigger"`
	Phase       string `json:"phase"`
	SubjectKind string `json:"subject_kind"`
	Subject     string `json:"subject"`
	Workspace   string `json:"workspace,omitempty"`
	Channel     string `json:"channel"`
	// Count is the observed count (firing) or the count at the last firing
	// notice (recovered); Previous the count at the notice this one follows.
	Count       int64      `json:"count"`
	Previous    int64      `json:"previous,omitempty"`
	WindowStart time.Time  `json:"window_start"`
	WindowEnd   time.Time  `json:"window_end"`
	FiringSince *time.Time `json:"firing_since,omitempty"`
	Detail      string     `json:"detail,omitempty"`
	Links       []Link     `json:"links,omitempty"`
	// To is the email channel's recipient (the outbox's mailer reads it).
	To           string `json:"to,omitempty"`
	Title        string `json:"subject_line"`
	Text         string `json:"text"`
	OperationKey string `json:"operation_key"`
}

// Ref is the short reference of an operation key.
func Ref(operationKey string) string { return "ntf_" + outbound.StableID(operationKey) }

// Render builds the document of a notice of (rule, trigger, subject), with
// detail from its observation and links under the console's base URL.
func Render(r Rule, trigger, subject string, n Notice, detail string, links []Link) Document {
	op := OperationKey(r.Name, trigger, subject, n.WindowStart, n.Phase)
	d := Document{Type: TypeFiring, Ref: Ref(op), Rule: r.Name, Trigger: trigger, Phase: n.Phase, SubjectKind: SubjectKind(trigger),
		Subject: subject, Workspace: r.Workspace, Channel: r.Channel, Count: n.Count, Previous: n.Previous,
		WindowStart: n.WindowStart.UTC(), WindowEnd: n.WindowStart.Add(r.Window).UTC(), Detail: detail, Links: links, OperationKey: op}
	if !n.Since.IsZero() {
		s := n.Since.UTC()
		d.FiringSince = &s
	}
	where := SubjectKind(trigger) + " " + subject
	var head string
	if n.Phase == PhaseRecovered {
		d.Type = TypeRecovered
		head = fmt.Sprintf("RECOVERED: %s (%s)", cleared(trigger, r), where)
	} else {
		head = fmt.Sprintf("FIRING: %s (%s)", holds(trigger, n.Count, r), where)
	}
	d.Title = "[hookinbox] " + head
	var b strings.Builder
	b.WriteString(d.Title + "\n\n")
	if n.Phase == PhaseRecovered {
		fmt.Fprintf(&b, "It was %d at the last notice", n.Count)
		if d.FiringSince != nil {
			fmt.Fprintf(&b, "; firing since %s", d.FiringSince.Format(time.RFC3339))
		}
		b.WriteString(".\n")
	} else {
		if n.Previous > 0 {
			fmt.Fprintf(&b, "Still firing: %d now, %d at the last notice.\n", n.Count, n.Previous)
		}
		if detail != "" {
			b.WriteString(detail + "\n")
		}
	}
	fmt.Fprintf(&b, "Rule %s, trigger %s; one notice per window of %s (this one from %s).\n", r.Name, trigger, r.Window,
		d.WindowStart.Format(time.RFC3339))
	if r.Workspace != "" {
		fmt.Fprintf(&b, "Workspace %s only.\n", r.Workspace)
	}
	for _, l := range links {
		fmt.Fprintf(&b, "%s: %s\n", l.Name, l.URL)
	}
	fmt.Fprintf(&b, "ref %s\n", d.Ref)
	d.Text = b.String()
	return d
}

// TestDocument is the document `notifications test` sends through a
// rule's channel under operation key op.
func TestDocument(r Rule, op string, now time.Time, links []Link) Document {
	d := Document{Type: TypeTest, Ref: Ref(op), Rule: r.Name, Phase: "test", Workspace: r.Workspace, Channel: r.Channel,
		WindowStart: now.UTC(), WindowEnd: now.UTC(), Links: links, OperationKey: op,
		Title: "[hookinbox] TEST: notifications of rule " + r.Name + " reach this channel"}
	var b strings.Builder
	b.WriteString(d.Title + "\n\nSent by 'hookinbox notifications test' (or the console); nothing is wrong.\n")
	for _, l := range links {
		fmt.Fprintf(&b, "%s: %s\n", l.Name, l.URL)
	}
	fmt.Fprintf(&b, "ref %s\n", d.Ref)
	d.Text = b.String()
	return d
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func holds(trigger string, n int64, r Rule) string {
	switch trigger {
	case TriggerEventFailed:
		return plural(n, "event", "events") + " ended failed or exhausted"
	case TriggerQuarantine:
		return plural(n, "quarantine entry", "quarantine entries") + " open"
	case TriggerDivergence:
		return plural(n, "reconciliation divergence", "reconciliation divergences") + " in the last " + r.Window.String()
	case TriggerOutbox:
		return plural(n, "outbox row", "outbox rows") + " held for review or uncertain"
	case TriggerPendingAge:
		return "oldest pending event older than " + r.PendingAge.String() + " (" + plural(n, "event", "events") + " pending)"
	case TriggerScheduleFailed:
		return plural(n, "run", "runs") + " failed since the last completed one"
	}
	return trigger
}

func cleared(trigger string, r Rule) string {
	switch trigger {
	case TriggerEventFailed:
		return "no failed or exhausted event left"
	case TriggerQuarantine:
		return "no quarantine entry open"
	case TriggerDivergence:
		return "no reconciliation divergence for " + r.Window.String()
	case TriggerOutbox:
		return "no outbox row held for review or uncertain"
	case TriggerPendingAge:
		return "oldest pending event younger than " + r.PendingAge.String()
	case TriggerScheduleFailed:
		return "the latest run completed"
	}
	return trigger
}

// ConsoleLinks are the console pages of a notice's subject under base
// (the console's base URL): the events, entries or rows it counts.
func ConsoleLinks(base string, r Rule, trigger, subject string) []Link {
	if base == "" {
		return nil
	}
	base = strings.TrimRight(base, "/")
	q := url.Values{}
	page, name := "/", "Console overview"
	switch trigger {
	case TriggerEventFailed:
		page, name = "/inbox", "Failed and exhausted events"
		q.Set("status", "exhausted,failed")
		q.Set("endpoint", subject)
	case TriggerPendingAge:
		page, name = "/inbox", "Pending events"
		q.Set("status", "pending")
		q.Set("endpoint", subject)
	case TriggerQuarantine:
		page, name = "/quarantine", "Open quarantine entries"
		q.Set("endpoint", subject)
	case TriggerOutbox:
		page, name = "/outbox", "Outbox rows held for review"
		q.Set("status", "held_for_review")
	}
	if r.Workspace != "" && (trigger == TriggerEventFailed || trigger == TriggerPendingAge) {
		q.Set("workspace", r.Workspace)
	}
	u := base + page
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	links := []Link{{Name: name, URL: u}}
	if trigger == TriggerOutbox {
		links = append(links, Link{Name: "Outbox rows uncertain", URL: base + "/outbox?status=uncertain"})
	}
	return links
}
