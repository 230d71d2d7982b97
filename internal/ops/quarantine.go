package ops

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// QuarantineReasons are the reasons the intake quarantines a delivery.
var QuarantineReasons = []string{inbox.ReasonUnknownAccount, inbox.ReasonMalformed, inbox.ReasonEnvironmentMismatch,
	inbox.ReasonConflictingDuplicate, inbox.ReasonAccountMismatch}

// Quarantine resolutions.
const (
	ResolveReadmit = "readmit"
	ResolveDiscard = "discard"
)

// QuarantineView is a quarantine entry as shown (never its body unless asked).
type QuarantineView struct {
	ID           int64             `json:"id"`
	Endpoint     string            `json:"endpoint"`
	Provider     string            `json:"provider"`
	Account      string            `json:"account,omitempty"`
	Environment  string            `json:"environment,omitempty"`
	EventID      string            `json:"event_id,omitempty"`
	EventKey     string            `json:"event_key,omitempty"`
	Reason       string            `json:"reason"`
	Detail       string            `json:"detail"`
	BodySHA256   string            `json:"body_sha256"`
	PayloadBytes int               `json:"payload_bytes"`
	Headers      map[string]string `json:"headers,omitempty"`
	ReceivedAt   time.Time         `json:"received_at"`
	ResolvedAt   *time.Time        `json:"resolved_at,omitempty"`
	ResolvedBy   string            `json:"resolved_by,omitempty"`
	Resolution   string            `json:"resolution,omitempty"`
}

// NewQuarantineView is the view of an entry; headers only when asked.
func NewQuarantineView(q *inbox.QuarantineItem, headers bool) QuarantineView {
	v := QuarantineView{ID: q.ID, Endpoint: q.EndpointSlug, Provider: q.Provider, Account: q.Account,
		Environment: q.Environment, EventID: q.EventID, Reason: q.Reason, Detail: q.Detail,
		BodySHA256: hex.EncodeToString(q.BodySHA256), PayloadBytes: q.PayloadBytes, ReceivedAt: q.ReceivedAt.UTC(),
		ResolvedAt: utcPtr(q.ResolvedAt), ResolvedBy: q.ResolvedBy, Resolution: q.Resolution}
	if k, ok := q.EventKey(); ok {
		v.EventKey = k.String()
	}
	if headers {
		v.Headers = q.Headers
	}
	return v
}

// QuarantineDetail is one entry with its audit trail and, when asked, body.
type QuarantineDetail struct {
	QuarantineView
	Payload any          `json:"payload,omitempty"`
	Actions []AuditEntry `json:"operator_actions"`
	// Hint says how an open entry is usually resolved.
	Hint       string `json:"hint,omitempty"`
	RawPayload []byte `json:"-"`
}

// ValidateQuarantineFilter rejects a filter that cannot mean anything.
func ValidateQuarantineFilter(f inbox.QuarantineFilter) error {
	if f.Reason != "" && !slices.Contains(QuarantineReasons, f.Reason) {
		return Invalidf("reason must be one of %s (got %q)", strings.Join(QuarantineReasons, ", "), f.Reason)
	}
	if f.Limit < 1 || f.Limit > MaxListLimit {
		return Invalidf("limit must be between 1 and %d (got %d)", MaxListLimit, f.Limit)
	}
	return nil
}

// ListQuarantine lists entries, newest first, without bodies.
func (s *Service) ListQuarantine(ctx context.Context, f inbox.QuarantineFilter) ([]QuarantineView, error) {
	if err := ValidateQuarantineFilter(f); err != nil {
		return nil, err
	}
	qs, err := inbox.ListQuarantine(ctx, s.Store.Pool, f)
	if err != nil {
		return nil, err
	}
	out := make([]QuarantineView, 0, len(qs))
	for i := range qs {
		out = append(out, NewQuarantineView(&qs[i], false))
	}
	return out, nil
}

// ShowQuarantine reads one entry, its body only when withPayload.
func (s *Service) ShowQuarantine(ctx context.Context, id int64, withPayload bool) (*QuarantineDetail, error) {
	q, err := inbox.GetQuarantineEntry(ctx, s.Store.Pool, id, false)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("quarantine entry %d does not exist: %w", id, fault.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if withPayload {
		if q.Payload, err = inbox.GetQuarantinePayload(ctx, s.payloads().Pool, id); err != nil {
			return nil, err
		}
	}
	acts, err := store.ListOperatorActions(ctx, s.Store.Pool, inbox.QuarantineTarget(id), 200)
	if err != nil {
		return nil, err
	}
	d := &QuarantineDetail{QuarantineView: NewQuarantineView(q, true), Actions: AuditEntries(acts)}
	if q.ResolvedAt == nil {
		d.Hint = QuarantineHint(q)
	}
	if withPayload && q.Payload != nil {
		d.RawPayload, d.Payload = q.Payload, PayloadValue(q.Payload)
	}
	return d, nil
}

// QuarantineHint says how an open entry is usually resolved.
func QuarantineHint(q *inbox.QuarantineItem) string {
	id := fmt.Sprint(q.ID)
	switch q.Reason {
	case inbox.ReasonUnknownAccount:
		acct := q.Account
		if acct == "" {
			acct = "ACCOUNT"
		}
		return fmt.Sprintf("link the account ('hookinbox endpoints link --slug %s --account %s --workspace W'), then "+
			"'hookinbox quarantine resolve %s --action readmit --reason …'; or discard it", q.EndpointSlug, acct, id)
	case inbox.ReasonConflictingDuplicate:
		k, _ := q.EventKey()
		return fmt.Sprintf("compare with the original ('hookinbox inbox show %s'); it cannot be re-admitted under the same key: "+
			"'hookinbox quarantine resolve %s --action discard --reason …' (replay the original if it needs another pass)", k, id)
	case inbox.ReasonAccountMismatch:
		return "a secret or an unsigned shop header claimed an account it is not bound to: possibly a forgery by another " +
			"tenant; if the account is rightly the secret's, bind it ('hookinbox endpoints secrets bind --slug " + q.EndpointSlug +
			" --id N --accounts …') and readmit, else 'hookinbox quarantine resolve " + id + " --action discard --reason …'"
	case inbox.ReasonEnvironmentMismatch:
		return "the sender delivered to the wrong environment's endpoint; fix its configuration, then " +
			"'hookinbox quarantine resolve " + id + " --action discard --reason …'"
	default:
		return "fix the cause (endpoint settings, or the sender), then 'hookinbox quarantine resolve " + id +
			" --action readmit --reason …'; or discard it"
	}
}

// ResolveResult is what resolving one entry did.
type ResolveResult struct {
	ID        int64  `json:"id"`
	Action    string `json:"action"`
	AuditID   int64  `json:"audit_id"`
	EventKey  string `json:"event_key,omitempty"`
	Outcome   string `json:"outcome,omitempty"`
	Status    string `json:"status,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Signaled  bool   `json:"signaled"`
	SignalErr string `json:"signal_error,omitempty"`
	// Duplicate: the same delivery already reached the inbox.
	Duplicate bool `json:"duplicate,omitempty"`
	// Error says why this entry was not resolved (it stays open).
	Error string `json:"error,omitempty"`
}

// ResolveQuarantine re-admits or discards each entry in ids, each on its
// own (one that fails stays open and does not stop the others), audited
// under who. With one id its failure is also returned as the error.
func (s *Service) ResolveQuarantine(ctx context.Context, who Actor, ids []int64, action, reason string) ([]ResolveResult, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	if action != ResolveReadmit && action != ResolveDiscard {
		return nil, Invalidf("action must be readmit or discard (got %q)", action)
	}
	if strings.TrimSpace(reason) == "" {
		return nil, Invalidf("a reason must say why (it is recorded in the audit)")
	}
	if len(ids) == 0 || len(ids) > MaxListLimit {
		return nil, Invalidf("give between 1 and %d quarantine ids", MaxListLimit)
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if id < 1 {
			return nil, Invalidf("quarantine ids are positive (got %d)", id)
		}
		if seen[id] {
			return nil, Invalidf("quarantine id %d is given twice", id)
		}
		seen[id] = true
	}
	bells := s.NewDoorbells()
	out := make([]ResolveResult, 0, len(ids))
	var firstErr error
	for _, id := range ids {
		r, err := s.resolveOne(ctx, who, id, action, reason, bells)
		if err != nil {
			r.Error = err.Error()
			if firstErr == nil {
				firstErr = err
			}
		}
		out = append(out, r)
	}
	if len(ids) == 1 && firstErr != nil {
		return out, firstErr
	}
	return out, nil
}

func (s *Service) resolveOne(ctx context.Context, who Actor, id int64, action, reason string, bells *Doorbells) (ResolveResult, error) {
	v := ResolveResult{ID: id, Action: action}
	if action == ResolveDiscard {
		act, err := inbox.DiscardQuarantine(ctx, s.Store, id, who.Name, reason)
		if errors.Is(err, fault.ErrNotFound) {
			return v, fmt.Errorf("quarantine entry %d does not exist: %w", id, fault.ErrNotFound)
		}
		if err != nil {
			return v, err
		}
		v.AuditID, v.EventKey = act.ID, act.EventKey
		s.log().Info("quarantine discarded", "quarantine", id, "actor", who.Name)
		return v, nil
	}
	res, err := readmit(ctx, s.Store, s.payloads(), s.Routes, id, who.Name, reason)
	if errors.Is(err, fault.ErrNotFound) {
		return v, fmt.Errorf("quarantine entry %d does not exist: %w", id, fault.ErrNotFound)
	}
	if err != nil {
		if isCannotReadmit(err) {
			return v, &ConflictError{Err: fmt.Errorf("%w\nthe entry stays open", err)}
		}
		return v, err
	}
	v.AuditID, v.EventKey, v.Outcome, v.Status = res.ActionID, res.Key.String(), res.Outcome.String(), res.Status
	v.Workspace, v.Resource, v.Duplicate = res.Workspace, res.Resource.String(), res.Outcome == inbox.Duplicate
	if res.Status == keys.StatusPending {
		v.Signaled = bells.Ring(ctx, res.Resource, res.Key.String())
		if bells.Failed != nil {
			v.SignalErr = bells.Failed.Error()
		}
	}
	s.log().Info("quarantine readmitted", "quarantine", id, "event_key", res.Key.String(), "actor", who.Name)
	return v, nil
}
