package ops

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// InboxStatuses are the inbox statuses an operator can filter on.
var InboxStatuses = []string{keys.StatusPending, keys.StatusDone, keys.StatusIgnored, keys.StatusFailed, keys.StatusExhausted}

// Providers are the providers hookinbox verifies: the registry's names.
func Providers() []string { return providers.Names() }

// MaxListLimit bounds one page of any listing.
const MaxListLimit = 1000

// ValidateInboxFilter rejects a filter that cannot mean anything.
func ValidateInboxFilter(f inbox.InboxFilter) error {
	for _, st := range f.Statuses {
		if !slices.Contains(InboxStatuses, st) {
			return Invalidf("status must be one of %s (got %q)", strings.Join(InboxStatuses, ", "), st)
		}
	}
	if _, ok := providers.Lookup(f.Provider); f.Provider != "" && !ok {
		return Invalidf("provider must be %s (got %q)", providers.OneOf(), f.Provider)
	}
	if f.Limit < 1 || f.Limit > MaxListLimit {
		return Invalidf("limit must be between 1 and %d (got %d)", MaxListLimit, f.Limit)
	}
	if f.Since < 0 || f.OlderThan < 0 {
		return Invalidf("ages must be positive")
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return Invalidf("from must be before to")
	}
	return nil
}

// FilterSelects reports whether f narrows the inbox at all (a bulk act
// needs a selection, never "everything" by accident).
func FilterSelects(f inbox.InboxFilter) bool {
	return len(f.Statuses) > 0 || f.Provider != "" || f.Account != "" || f.Workspace != "" || f.EventType != "" ||
		f.Resource != "" || f.Endpoint != "" || f.OlderThan > 0 || f.Since > 0 || !f.From.IsZero() || !f.To.IsZero()
}

// InboxRow is an inbox row as listed (never the payload).
type InboxRow struct {
	ID            int64      `json:"id"`
	Key           string     `json:"key"`
	Provider      string     `json:"provider"`
	Account       string     `json:"account"`
	Environment   string     `json:"environment"`
	EventID       string     `json:"event_id"`
	Endpoint      string     `json:"endpoint"`
	Workspace     string     `json:"workspace"`
	EventType     string     `json:"event_type"`
	ResourceKind  string     `json:"resource_kind"`
	ResourceID    string     `json:"resource_id"`
	Resource      string     `json:"resource"`
	Origin        string     `json:"origin"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"last_error,omitempty"`
	Note          string     `json:"note,omitempty"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	ReceivedAt    time.Time  `json:"received_at"`
	ProcessedAt   *time.Time `json:"processed_at,omitempty"`
}

// NewInboxRow is the view of an inbox summary.
func NewInboxRow(e *inbox.InboxSummary) InboxRow {
	return InboxRow{ID: e.ID, Key: e.Key.String(), Provider: e.Key.Provider, Account: e.Key.Account,
		Environment: e.Key.Environment, EventID: e.Key.EventID, Endpoint: e.EndpointSlug, Workspace: e.WorkspaceID,
		EventType: e.EventType, ResourceKind: e.ResourceKind, ResourceID: e.ResourceID, Resource: e.Resource().String(),
		Origin: e.Origin, Status: e.Status, Attempts: e.Attempts, LastError: e.LastError, Note: e.Note,
		NextAttemptAt: e.NextAttemptAt.UTC(), ReceivedAt: e.ReceivedAt.UTC(), ProcessedAt: utcPtr(e.ProcessedAt)}
}

// InboxPage is one page of an inbox listing, newest first; NextCursor
// continues it ("" on the last page).
type InboxPage struct {
	Events     []InboxRow `json:"events"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// EncodeCursor renders a listing position as an opaque cursor.
func EncodeCursor(c inbox.InboxCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.ReceivedAt.UnixNano(), 10) + "." + strconv.FormatInt(c.ID, 10)))
}

// DecodeCursor parses a cursor from EncodeCursor.
func DecodeCursor(s string) (*inbox.InboxCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		at, id, ok := strings.Cut(string(raw), ".")
		if ok {
			ns, err1 := strconv.ParseInt(at, 10, 64)
			n, err2 := strconv.ParseInt(id, 10, 64)
			if err1 == nil && err2 == nil && n > 0 {
				return &inbox.InboxCursor{ReceivedAt: time.Unix(0, ns), ID: n}, nil
			}
		}
	}
	return nil, Invalidf("cursor %q is not one this server gave out", s)
}

// ListInbox lists inbox rows matching f, newest first, one page; cursor
// ("" for the first page) continues a listing.
func (s *Service) ListInbox(ctx context.Context, f inbox.InboxFilter, cursor string) (InboxPage, error) {
	if err := ValidateInboxFilter(f); err != nil {
		return InboxPage{}, err
	}
	if cursor != "" {
		c, err := DecodeCursor(cursor)
		if err != nil {
			return InboxPage{}, err
		}
		f.Before = c
	}
	want := f.Limit
	f.Limit++
	evs, err := inbox.ListInboxEvents(ctx, s.Store.Pool, f)
	if err != nil {
		return InboxPage{}, err
	}
	page := InboxPage{Events: make([]InboxRow, 0, min(len(evs), want))}
	for i := range evs {
		if i == want {
			last := evs[want-1]
			page.NextCursor = EncodeCursor(inbox.InboxCursor{ReceivedAt: last.ReceivedAt, ID: last.ID})
			break
		}
		page.Events = append(page.Events, NewInboxRow(&evs[i]))
	}
	return page, nil
}

// EventDetail is one event for the operator: every column, its workflow,
// the operator acts on it, and its payload only when asked for.
type EventDetail struct {
	InboxRow
	ProviderVersion *int64     `json:"provider_version,omitempty"`
	OccurredAt      *time.Time `json:"occurred_at,omitempty"`
	BodySHA256      string     `json:"body_sha256"`
	SecretID        int64      `json:"secret_id,omitempty"`
	PayloadBytes    int        `json:"payload_bytes"`
	PayloadRedacted bool       `json:"payload_redacted"`
	// Deleted: retention deleted the row; this is its lineage record.
	Deleted  bool        `json:"deleted,omitempty"`
	Payload  any         `json:"payload,omitempty"`
	Workflow WorkflowRef `json:"workflow"`
	// Trace is the delivery's OpenTelemetry trace (empty when it was not
	// traced, or its row is gone).
	Trace   TraceRef     `json:"trace,omitzero"`
	Actions []AuditEntry `json:"operator_actions"`
	// RawPayload is the payload as stored (nil unless asked for).
	RawPayload []byte `json:"-"`
}

// ResourceKey is the key of the event's resource.
func (d *EventDetail) ResourceKey() keys.Resource {
	return keys.Resource{Provider: d.Provider, Account: d.Account, Environment: d.Environment, Kind: d.ResourceKind, ID: d.ResourceID}
}

// PayloadValue is a payload for JSON output: itself when it is JSON, else a string.
func PayloadValue(p []byte) any {
	if json.Valid(p) {
		return json.RawMessage(p)
	}
	return string(p)
}

// ShowEvent reads one event by key; withPayload also reads its payload
// (the caller checks the operator may see it). An event retention deleted
// is shown from its lineage record.
func (s *Service) ShowEvent(ctx context.Context, k keys.Event, withPayload bool) (*EventDetail, error) {
	d, err := inbox.InspectInboxEvent(ctx, s.Store.Pool, k, false)
	if err == nil && withPayload && !d.PayloadRedacted {
		// On the payload pool when there is one (the console's role reads
		// no payload).
		d.Payload, err = inbox.GetInboxPayload(ctx, s.payloads().Pool, d.ID)
	}
	var v *EventDetail
	switch {
	case errors.Is(err, fault.ErrNotFound):
		l, lerr := inbox.FindLineageEvent(ctx, s.Store.Pool, k)
		if lerr != nil {
			return nil, fmt.Errorf("event %s is not in the inbox (check the quarantine and the key's escaping): %w", k, fault.ErrNotFound)
		}
		v = &EventDetail{InboxRow: InboxRow{ID: l.SourceID, Key: k.String(), Provider: k.Provider, Account: k.Account,
			Environment: k.Environment, EventID: k.EventID, Endpoint: l.EndpointSlug, Workspace: l.WorkspaceID,
			EventType: l.EventType, ResourceKind: l.ResourceKind, ResourceID: l.ResourceID, Origin: l.Origin,
			Status: l.Status, Attempts: l.Attempts, LastError: l.LastError, Note: l.Note, ReceivedAt: l.ReceivedAt.UTC(),
			ProcessedAt: utcPtr(l.ProcessedAt)}, BodySHA256: hex.EncodeToString(l.BodySHA256), PayloadRedacted: true, Deleted: true}
		v.Resource = v.ResourceKey().String()
	case err != nil:
		return nil, err
	default:
		v = &EventDetail{InboxRow: NewInboxRow(&d.InboxSummary), ProviderVersion: d.ProviderVersion,
			OccurredAt: utcPtr(d.OccurredAt), BodySHA256: hex.EncodeToString(d.BodySHA256), SecretID: d.SecretID,
			PayloadBytes: d.PayloadBytes, PayloadRedacted: d.PayloadRedacted, Trace: s.traceRef(d.Traceparent)}
		if withPayload && d.Payload != nil {
			v.RawPayload = d.Payload
			v.Payload = PayloadValue(d.Payload)
		}
	}
	v.Workflow = s.workflowRef(v.ResourceKey())
	acts, err := store.ListOperatorActions(ctx, s.Store.Pool, k.String(), 200)
	if err != nil {
		return nil, err
	}
	v.Actions = AuditEntries(acts)
	return v, nil
}

// CountInbox counts the rows f matches, up to max (to stay cheap).
func (s *Service) CountInbox(ctx context.Context, f inbox.InboxFilter, max int) (int, error) {
	f.Limit = 1
	if err := ValidateInboxFilter(f); err != nil {
		return 0, err
	}
	return inbox.CountInbox(ctx, s.Store.Pool, f, max)
}

// ParseAge parses a Go duration or a whole number of days ("7d").
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, Invalidf("%q is not a duration (e.g. 30m, 2h, 7d)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, Invalidf("%q is not a duration (e.g. 30m, 2h, 7d)", s)
		}
	}
	if d <= 0 {
		return 0, Invalidf("%q must be positive", s)
	}
	return d, nil
}

// FormatAge renders a duration compactly: 45s, 12m, 3h12m, 2d4h.
func FormatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// ParseTime accepts RFC 3339 (2026-05-01T10:00:00Z) or a date (2026-05-01, UTC).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, Invalidf("%q is not a time (RFC 3339, e.g. 2026-05-01T10:00:00Z, or a date 2026-05-01)", s)
}
