package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// This file holds the operator's queries (SPEC R20, R23): inbox and
// quarantine listings that never read payloads unless asked, replay through
// the same pending path the workflows use, quarantine resolution, and the
// operator_actions audit trail.

// Operator actions recorded in operator_actions.
const (
	ActionReplay            = "replay"
	ActionQuarantineReadmit = "quarantine_readmit"
	ActionQuarantineDiscard = "quarantine_discard"
)

// QuarantineTarget is the audit target naming quarantine entry id.
func QuarantineTarget(id int64) string { return "quarantine:" + strconv.FormatInt(id, 10) }

// InboxFilter selects inbox rows for the operator. Zero values do not filter.
type InboxFilter struct {
	// Statuses: any of these.
	Statuses  []string `json:"statuses,omitempty"`
	Provider  string   `json:"provider,omitempty"`
	Account   string   `json:"account,omitempty"`
	Workspace string   `json:"workspace,omitempty"`
	EventType string   `json:"event_type,omitempty"`
	// Resource is "kind/id" or just an id: it matches the kind and id, or
	// the whole string as an id (GitHub ids such as "octo/repo" contain '/').
	Resource string `json:"resource,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// OlderThan: received more than this long ago. Relative ages never
	// reach JSON: a stored selection (a replay job's) is Absolute.
	OlderThan time.Duration `json:"-"`
	// Since: received within this long (not in JSON either).
	Since time.Duration `json:"-"`
	// From and To bound received_at absolutely: From <= received_at < To.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Before continues a listing after its last row (newest-first order).
	Before *InboxCursor `json:"-"`
	// Limit is required (at least 1).
	Limit int `json:"limit,omitempty"`
}

// InboxCursor is the position of a row in the newest-first listing.
type InboxCursor struct {
	ReceivedAt time.Time
	ID         int64
}

// Absolute returns f with its relative ages (Since, OlderThan) turned into
// From and To at now, so a stored selection means the same rows later.
func (f InboxFilter) Absolute(now time.Time) InboxFilter {
	if f.Since > 0 {
		if from := now.Add(-f.Since); from.After(f.From) {
			f.From = from
		}
		f.Since = 0
	}
	if f.OlderThan > 0 {
		if to := now.Add(-f.OlderThan); f.To.IsZero() || to.Before(f.To) {
			f.To = to
		}
		f.OlderThan = 0
	}
	return f
}

// InboxSummary is an inbox row as listed: everything but the payload.
type InboxSummary struct {
	ID            int64      `json:"id"`
	Key           keys.Event `json:"key"`
	EndpointSlug  string     `json:"endpoint"`
	WorkspaceID   string     `json:"workspace"`
	EventType     string     `json:"event_type"`
	ResourceKind  string     `json:"resource_kind"`
	ResourceID    string     `json:"resource_id"`
	Origin        string     `json:"origin"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"last_error,omitempty"`
	Note          string     `json:"note,omitempty"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	ReceivedAt    time.Time  `json:"received_at"`
	ProcessedAt   *time.Time `json:"processed_at,omitempty"`
}

// Resource is the key of the row's resource.
func (s *InboxSummary) Resource() keys.Resource {
	return keys.Resource{Provider: s.Key.Provider, Account: s.Key.Account, Environment: s.Key.Environment,
		Kind: s.ResourceKind, ID: s.ResourceID}
}

// where builds the filter's conditions with bound parameters; each extra
// condition is built with the same argument numbering.
func (f InboxFilter) where(extra ...func(arg func(any) string) string) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.Statuses) > 0 {
		conds = append(conds, "status = ANY("+arg(f.Statuses)+"::text[])")
	}
	if f.Provider != "" {
		conds = append(conds, "provider = "+arg(f.Provider))
	}
	if f.Account != "" {
		conds = append(conds, "source_account = "+arg(f.Account))
	}
	if f.Endpoint != "" {
		conds = append(conds, "endpoint_slug = "+arg(f.Endpoint))
	}
	if f.Resource != "" {
		whole := arg(f.Resource)
		if kind, id, ok := strings.Cut(f.Resource, "/"); ok {
			conds = append(conds, "((resource_kind = "+arg(kind)+" AND resource_id = "+arg(id)+") OR resource_id = "+whole+")")
		} else {
			conds = append(conds, "resource_id = "+whole)
		}
	}
	if f.OlderThan > 0 {
		conds = append(conds, "received_at < now() - make_interval(secs => "+arg(f.OlderThan.Seconds())+")")
	}
	if f.Since > 0 {
		conds = append(conds, "received_at >= now() - make_interval(secs => "+arg(f.Since.Seconds())+")")
	}
	if f.Workspace != "" {
		conds = append(conds, "workspace_id = "+arg(f.Workspace))
	}
	if f.EventType != "" {
		conds = append(conds, "event_type = "+arg(f.EventType))
	}
	if !f.From.IsZero() {
		conds = append(conds, "received_at >= "+arg(f.From))
	}
	if !f.To.IsZero() {
		conds = append(conds, "received_at < "+arg(f.To))
	}
	if f.Before != nil {
		conds = append(conds, "(received_at, id) < ("+arg(f.Before.ReceivedAt)+"::timestamptz, "+arg(f.Before.ID)+"::bigint)")
	}
	for _, c := range extra {
		conds = append(conds, c(arg))
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

const inboxSummaryColumns = `id, provider, source_account, environment, event_id, endpoint_slug, workspace_id,
	event_type, resource_kind, resource_id, origin, status, attempts, coalesce(last_error, ''),
	coalesce(note, ''), next_attempt_at, received_at, processed_at`

func scanSummary(row pgx.Row) (s InboxSummary, err error) {
	err = row.Scan(&s.ID, &s.Key.Provider, &s.Key.Account, &s.Key.Environment, &s.Key.EventID,
		&s.EndpointSlug, &s.WorkspaceID, &s.EventType, &s.ResourceKind, &s.ResourceID, &s.Origin,
		&s.Status, &s.Attempts, &s.LastError, &s.Note, &s.NextAttemptAt, &s.ReceivedAt, &s.ProcessedAt)
	return s, err
}

// ListInboxEvents lists inbox rows matching f, newest first. It never reads
// payloads.
func ListInboxEvents(ctx context.Context, db store.DB, f InboxFilter) ([]InboxSummary, error) {
	if f.Limit < 1 {
		return nil, errors.New("list inbox events: limit must be at least 1")
	}
	where, args := f.where()
	args = append(args, f.Limit)
	rows, err := db.Query(ctx, `SELECT `+inboxSummaryColumns+` FROM webhook_inbox`+where+
		` ORDER BY received_at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list inbox events: %w", err)
	}
	return store.AppendRows(nil, rows, scanSummary)
}

// InboxDetail is one inbox row for the operator. Payload is only read when
// asked for.
type InboxDetail struct {
	InboxSummary
	ProviderVersion *int64     `json:"provider_version,omitempty"`
	OccurredAt      *time.Time `json:"occurred_at,omitempty"`
	BodySHA256      []byte     `json:"body_sha256"`
	SecretID        int64      `json:"secret_id,omitempty"`
	// PayloadBytes is the stored payload's size; PayloadRedacted says
	// retention removed it.
	PayloadBytes    int    `json:"payload_bytes"`
	PayloadRedacted bool   `json:"payload_redacted"`
	Payload         []byte `json:"-"`
	// Traceparent is the W3C traceparent the intake stored ("" when
	// tracing was off): the delivery's trace.
	Traceparent string `json:"traceparent,omitempty"`
}

// InspectInboxEvent reads one row for the operator: every column, the
// payload only when withPayload is set.
func InspectInboxEvent(ctx context.Context, db store.DB, k keys.Event, withPayload bool) (*InboxDetail, error) {
	var d InboxDetail
	var size *int
	// The size comes from a view, and the payload column is named only when
	// asked for: the operator's role may read it only as a member of
	// RolePayloadReader.
	payload := "NULL::bytea"
	if withPayload {
		payload = "payload"
	}
	err := db.QueryRow(ctx, `
		SELECT `+inboxSummaryColumns+`, provider_version, occurred_at, body_sha256, coalesce(secret_id, 0),
		       (SELECT s.payload_bytes FROM webhook_inbox_payload_size s WHERE s.id = webhook_inbox.id), `+payload+`,
		       coalesce(traceparent, '')
		  FROM webhook_inbox
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(
		&d.ID, &d.Key.Provider, &d.Key.Account, &d.Key.Environment, &d.Key.EventID,
		&d.EndpointSlug, &d.WorkspaceID, &d.EventType, &d.ResourceKind, &d.ResourceID, &d.Origin,
		&d.Status, &d.Attempts, &d.LastError, &d.Note, &d.NextAttemptAt, &d.ReceivedAt, &d.ProcessedAt,
		&d.ProviderVersion, &d.OccurredAt, &d.BodySHA256, &d.SecretID, &size, &d.Payload, &d.Traceparent)
	if err != nil {
		return nil, fmt.Errorf("inbox event %s: %w", k, store.Interpret(err))
	}
	if size == nil {
		d.PayloadRedacted = true
	} else {
		d.PayloadBytes = *size
	}
	return &d, nil
}

// Replay outcomes.
const (
	// Replayed: the row was put back to pending.
	Replayed = "replayed"
	// AlreadyPending: the row is pending already; nothing changed.
	AlreadyPending = "already_pending"
)

// ReplayRefusedError says why an event was not replayed.
type ReplayRefusedError struct {
	Key    keys.Event
	Status string
	Reason string
}

func (e *ReplayRefusedError) Error() string {
	return fmt.Sprintf("replay %s refused: %s", e.Key, e.Reason)
}

// ReplayRequest asks to put one event back through its workflow.
type ReplayRequest struct {
	Key    keys.Event
	Actor  string
	Reason string
	// Force allows replaying a done or ignored event: deliberate
	// reprocessing, still guarded by the handlers' business keys.
	Force bool
	// Selection says how the event was chosen (recorded in the audit).
	Selection string
}

// ReplayResult is what ReplayInboxEvent did and what the row was before.
type ReplayResult struct {
	Key               keys.Event    `json:"key"`
	Resource          keys.Resource `json:"resource"`
	Outcome           string        `json:"outcome"`
	PreviousStatus    string        `json:"previous_status"`
	PreviousAttempts  int           `json:"previous_attempts"`
	PreviousLastError string        `json:"previous_last_error,omitempty"`
	// PayloadRedacted warns that retention removed the payload: handlers
	// that read it (subscriptions, feedback) will fail the replay.
	PayloadRedacted bool  `json:"payload_redacted,omitempty"`
	ActionID        int64 `json:"action_id,omitempty"`
}

// replayState is what a replay reads under the row lock.
type replayState struct {
	status, lastError string
	note              string
	attempts          int
	kind, id          string
	redacted          bool
	processedAt       *time.Time
}

func lockReplayState(ctx context.Context, tx pgx.Tx, k keys.Event) (replayState, error) {
	var s replayState
	err := tx.QueryRow(ctx, `
		SELECT status, attempts, coalesce(last_error, ''), coalesce(note, ''), resource_kind, resource_id,
		       (SELECT s.payload_bytes IS NULL FROM webhook_inbox_payload_size s WHERE s.id = webhook_inbox.id), processed_at
		  FROM webhook_inbox
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		 FOR UPDATE`, k.Provider, k.Account, k.Environment, k.EventID).Scan(
		&s.status, &s.attempts, &s.lastError, &s.note, &s.kind, &s.id, &s.redacted, &s.processedAt)
	if err != nil {
		return s, fmt.Errorf("inbox event %s: %w", k, store.Interpret(err))
	}
	return s, nil
}

// ResetInboxEvent puts a row that is still in status from back to pending,
// due now, with attempts reset and no last error: the same state the intake
// commits, so the resource workflow handles it through its normal path. It
// reports whether the row changed.
func ResetInboxEvent(ctx context.Context, db store.DB, k keys.Event, from string) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE webhook_inbox
		   SET status = 'pending', attempts = 0, next_attempt_at = now(), pending_since = now(), last_error = NULL, note = NULL, processed_at = NULL,
		       sweeps = 0, swept_at = NULL
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4
		   AND status = $5`,
		k.Provider, k.Account, k.Environment, k.EventID, from)
	if err != nil {
		return false, fmt.Errorf("reset inbox event %s: %w", k, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReplayInboxEvent puts one event back to pending and audits it, in one
// transaction holding the row lock. Failed and exhausted rows are replayed;
// done and ignored rows only with Force (their replay is a no-op for effects
// the business keys already hold); a pending row is left alone. The caller
// rings the resource's doorbell after this returns.
func ReplayInboxEvent(ctx context.Context, s *store.Store, req ReplayRequest) (ReplayResult, error) {
	if strings.TrimSpace(req.Actor) == "" || strings.TrimSpace(req.Reason) == "" {
		return ReplayResult{}, fmt.Errorf("replay %s: who and why are required", req.Key)
	}
	res := ReplayResult{Key: req.Key}
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		st, err := lockReplayState(ctx, tx, req.Key)
		if err != nil {
			return err
		}
		res.Resource = keys.Resource{Provider: req.Key.Provider, Account: req.Key.Account,
			Environment: req.Key.Environment, Kind: st.kind, ID: st.id}
		res.PreviousStatus, res.PreviousAttempts, res.PreviousLastError = st.status, st.attempts, st.lastError
		res.PayloadRedacted = st.redacted
		switch st.status {
		case keys.StatusPending:
			res.Outcome = AlreadyPending
			return nil
		case keys.StatusDone, keys.StatusIgnored:
			if !req.Force {
				return &ReplayRefusedError{Key: req.Key, Status: st.status, Reason: fmt.Sprintf(
					"the event is %s: replaying it would be a no-op for its effects (the business keys hold them); "+
						"use --force to reprocess it deliberately", st.status)}
			}
		case keys.StatusFailed, keys.StatusExhausted:
		default:
			return &ReplayRefusedError{Key: req.Key, Status: st.status, Reason: "unknown status " + st.status}
		}
		if _, err := ResetInboxEvent(ctx, tx, req.Key, st.status); err != nil {
			return err
		}
		details := map[string]any{
			"previous_status": st.status, "previous_attempts": st.attempts,
			"previous_last_error": st.lastError, "resource": res.Resource.String(), "force": req.Force,
		}
		if st.note != "" {
			details["previous_note"] = st.note
		}
		if st.processedAt != nil {
			details["previous_processed_at"] = st.processedAt.UTC().Format(time.RFC3339Nano)
		}
		if req.Selection != "" {
			details["selection"] = req.Selection
		}
		if st.redacted {
			details["payload_redacted"] = true
		}
		res.ActionID, err = store.InsertOperatorAction(ctx, tx, &store.OperatorAction{
			Actor: req.Actor, Action: ActionReplay, Target: req.Key.String(), EventKey: req.Key.String(),
			Reason: req.Reason, Details: details,
		})
		res.Outcome = Replayed
		return err
	})
	if err != nil {
		return ReplayResult{}, err
	}
	return res, nil
}

// QuarantineFilter selects quarantine entries. Zero values do not filter.
type QuarantineFilter struct {
	Reason   string
	Endpoint string
	// OpenOnly leaves resolved entries out.
	OpenOnly bool
	// Limit is required (at least 1).
	Limit int
}

// QuarantineItem is a quarantine entry for the operator: Payload is only
// read when asked for; PayloadBytes is its size.
type QuarantineItem struct {
	QuarantineEntry
	PayloadBytes int
}

const quarantineColumns = `id, endpoint_slug, provider, coalesce(source_account, ''), coalesce(environment, ''),
	coalesce(event_id, ''), reason, detail, body_sha256, headers, received_at, resolved_at,
	coalesce(resolved_by, ''), coalesce(resolution, ''),
	coalesce((SELECT s.payload_bytes FROM inbox_quarantine_payload_size s WHERE s.id = inbox_quarantine.id), 0),
	coalesce(secret_id, 0)`

func scanQuarantine(row pgx.Row, withPayload bool) (*QuarantineItem, error) {
	var q QuarantineItem
	var headers []byte
	dest := []any{&q.ID, &q.EndpointSlug, &q.Provider, &q.Account, &q.Environment, &q.EventID, &q.Reason,
		&q.Detail, &q.BodySHA256, &headers, &q.ReceivedAt, &q.ResolvedAt, &q.ResolvedBy, &q.Resolution, &q.PayloadBytes, &q.SecretID}
	if withPayload {
		dest = append(dest, &q.Payload)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, store.Interpret(err)
	}
	if err := json.Unmarshal(headers, &q.Headers); err != nil {
		return nil, fmt.Errorf("quarantine %d headers: %w", q.ID, err)
	}
	return &q, nil
}

// ListQuarantine lists quarantine entries matching f, newest first, without
// their payloads.
func ListQuarantine(ctx context.Context, db store.DB, f QuarantineFilter) ([]QuarantineItem, error) {
	if f.Limit < 1 {
		return nil, errors.New("list quarantine: limit must be at least 1")
	}
	rows, err := db.Query(ctx, `
		SELECT `+quarantineColumns+` FROM inbox_quarantine
		 WHERE ($1 = '' OR reason = $1) AND ($2 = '' OR endpoint_slug = $2) AND (NOT $3 OR resolved_at IS NULL)
		 ORDER BY received_at DESC, id DESC
		 LIMIT $4`, f.Reason, f.Endpoint, f.OpenOnly, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	return store.AppendRows(nil, rows, store.ByValue(func(row pgx.Row) (*QuarantineItem, error) { return scanQuarantine(row, false) }))
}

// GetQuarantineEntry reads one entry; its payload only when withPayload.
func GetQuarantineEntry(ctx context.Context, db store.DB, id int64, withPayload bool) (*QuarantineItem, error) {
	cols := quarantineColumns
	if withPayload {
		cols += ", payload"
	}
	q, err := scanQuarantine(db.QueryRow(ctx, `SELECT `+cols+` FROM inbox_quarantine WHERE id = $1`, id), withPayload)
	if err != nil {
		return nil, fmt.Errorf("quarantine %d: %w", id, err)
	}
	return q, nil
}

// LockQuarantineEntry reads one entry, without its payload, FOR UPDATE
// inside tx, so two operators resolving it serialize.
func LockQuarantineEntry(ctx context.Context, tx pgx.Tx, id int64) (*QuarantineItem, error) {
	q, err := scanQuarantine(tx.QueryRow(ctx, `SELECT `+quarantineColumns+` FROM inbox_quarantine
		WHERE id = $1 FOR UPDATE`, id), false)
	if err != nil {
		return nil, fmt.Errorf("quarantine %d: %w", id, err)
	}
	return q, nil
}

// GetQuarantinePayload reads one entry's payload (nil once redacted), by
// id: a role that may read payloads (the console's payload pool, a member
// of RolePayloadReader) needs nothing else.
func GetQuarantinePayload(ctx context.Context, db store.DB, id int64) ([]byte, error) {
	var p []byte
	if err := db.QueryRow(ctx, `SELECT payload FROM inbox_quarantine WHERE id = $1`, id).Scan(&p); err != nil {
		return nil, fmt.Errorf("quarantine %d payload: %w", id, store.Interpret(err))
	}
	return p, nil
}

// GetInboxPayload reads one inbox row's payload (nil once redacted) by id.
func GetInboxPayload(ctx context.Context, db store.DB, id int64) ([]byte, error) {
	var p []byte
	if err := db.QueryRow(ctx, `SELECT payload FROM webhook_inbox WHERE id = $1`, id).Scan(&p); err != nil {
		return nil, fmt.Errorf("inbox row %d payload: %w", id, store.Interpret(err))
	}
	return p, nil
}

// ResolveQuarantine closes an open entry: who, now, and the resolution. It
// reports whether the entry was open.
func ResolveQuarantine(ctx context.Context, db store.DB, id int64, by, resolution string) (bool, error) {
	tag, err := db.Exec(ctx, `
		UPDATE inbox_quarantine SET resolved_at = now(), resolved_by = $2, resolution = $3
		 WHERE id = $1 AND resolved_at IS NULL`, id, by, resolution)
	if err != nil {
		return false, fmt.Errorf("resolve quarantine %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AlreadyResolvedError says a quarantine entry was resolved before.
type AlreadyResolvedError struct {
	ID         int64
	At         time.Time
	By         string
	Resolution string
}

func (e *AlreadyResolvedError) Error() string {
	return fmt.Sprintf("quarantine %d was already resolved by %s at %s (%s)", e.ID, e.By,
		e.At.UTC().Format(time.RFC3339), e.Resolution)
}

// CheckOpen returns an *AlreadyResolvedError when q is resolved.
func (q *QuarantineItem) CheckOpen() error {
	if q.ResolvedAt == nil {
		return nil
	}
	return &AlreadyResolvedError{ID: q.ID, At: *q.ResolvedAt, By: q.ResolvedBy, Resolution: q.Resolution}
}

// EventKey is the entry's event key when all its parts are known.
func (q *QuarantineItem) EventKey() (keys.Event, bool) {
	k := keys.Event{Provider: q.Provider, Account: q.Account, Environment: q.Environment, EventID: q.EventID}
	return k, k.Provider != "" && k.Account != "" && k.Environment != "" && k.EventID != ""
}

// DiscardQuarantine closes an open entry without admitting it and audits
// who, when and why, in one transaction.
func DiscardQuarantine(ctx context.Context, s *store.Store, id int64, by, reason string) (store.OperatorAction, error) {
	if strings.TrimSpace(by) == "" || strings.TrimSpace(reason) == "" {
		return store.OperatorAction{}, fmt.Errorf("discard quarantine %d: who and why are required", id)
	}
	var act store.OperatorAction
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		q, err := LockQuarantineEntry(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := q.CheckOpen(); err != nil {
			return err
		}
		if _, err := ResolveQuarantine(ctx, tx, id, by, "discarded: "+reason); err != nil {
			return err
		}
		act = store.OperatorAction{Actor: by, Action: ActionQuarantineDiscard, Target: QuarantineTarget(id), Reason: reason,
			Details: map[string]any{"quarantine_reason": q.Reason, "detail": q.Detail, "endpoint": q.EndpointSlug}}
		if k, ok := q.EventKey(); ok {
			act.EventKey = k.String()
		}
		_, err = store.InsertOperatorAction(ctx, tx, &act)
		return err
	})
	if err != nil {
		return store.OperatorAction{}, err
	}
	return act, nil
}
