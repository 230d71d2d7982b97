package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// OutboxStatuses are the statuses of an outbox row.
var OutboxStatuses = []string{keys.OutboxPending, keys.OutboxSent, keys.OutboxUncertain, keys.OutboxHeld, keys.OutboxFailed}

// ValidateOutboxStatus accepts "" (any) or one of OutboxStatuses.
func ValidateOutboxStatus(status string) error {
	if status != "" && !slices.Contains(OutboxStatuses, status) {
		return Invalidf("status must be one of %s (got %q)", strings.Join(OutboxStatuses, ", "), status)
	}
	return nil
}

// ListOutbox lists outbox rows, newest first, optionally of one status.
// It returns an empty list, never nil.
func (s *Service) ListOutbox(ctx context.Context, status string, limit int) ([]*outbox.OutboxRow, error) {
	if err := ValidateOutboxStatus(status); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, Invalidf("limit must be between 1 and %d (got %d)", MaxListLimit, limit)
	}
	rows, err := outbox.ListOutbox(ctx, s.Store.Pool, status, limit)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []*outbox.OutboxRow{}
	}
	return rows, nil
}

// OutboxDetail is one outbox row with its audit trail and workflow.
type OutboxDetail struct {
	*outbox.OutboxRow
	Workflow WorkflowRef  `json:"workflow"`
	Actions  []AuditEntry `json:"operator_actions"`
}

// OutboxTarget is the audit target naming outbox row id.
func OutboxTarget(id int64) string { return fmt.Sprintf("outbox:%d", id) }

// ShowOutbox reads one outbox row; withPayload also reads its payload (the
// recipient, the message: the caller checks the operator may see it), on
// the payload reader's pool when the service has one.
func (s *Service) ShowOutbox(ctx context.Context, id int64, withPayload bool) (*OutboxDetail, error) {
	o, err := outbox.GetOutboxRow(ctx, s.Store.Pool, id)
	if err != nil {
		return nil, err
	}
	if withPayload {
		if o.Payload, err = outbox.GetOutboxPayload(ctx, s.payloads().Pool, id); err != nil {
			return nil, err
		}
	}
	d := &OutboxDetail{OutboxRow: o}
	if r, err := keys.ParseResource(o.ResourceKey); err == nil {
		d.Workflow = s.workflowRef(r)
	}
	acts, err := store.ListOperatorActions(ctx, s.Store.Pool, OutboxTarget(id), 200)
	if err != nil {
		return nil, err
	}
	d.Actions = AuditEntries(acts)
	return d, nil
}

// ReleaseResult is what releasing an outbox row did.
type ReleaseResult struct {
	ID           int64  `json:"id"`
	OperationKey string `json:"operation_key"`
	AuditID      int64  `json:"audit_id"`
	Signaled     bool   `json:"signaled"`
	SignalErr    string `json:"signal_error,omitempty"`
}

// ReleaseOutbox puts a held_for_review or failed row back to be sent (the
// operator checked the destination) and rings its resource's workflow.
// Audited.
func (s *Service) ReleaseOutbox(ctx context.Context, who Actor, id int64, reason string) (ReleaseResult, error) {
	if err := who.check(); err != nil {
		return ReleaseResult{}, err
	}
	if strings.TrimSpace(reason) == "" {
		return ReleaseResult{}, Invalidf("a reason must say why it is safe to send again")
	}
	var o *outbox.OutboxRow
	var res ReleaseResult
	err := s.Store.Tx(ctx, func(tx pgx.Tx) error {
		prev, err := outbox.GetOutboxRow(ctx, tx, id)
		if err != nil {
			return err
		}
		if o, err = outbox.ReleaseOutbox(ctx, tx, id); err != nil {
			if errors.Is(err, fault.ErrNotFound) {
				return &ConflictError{Err: fmt.Errorf("outbox %d is %s: only held_for_review or failed rows are released", id, prev.Status)}
			}
			return err
		}
		res.AuditID, err = s.audit(ctx, tx, who, "outbox_release", OutboxTarget(id), reason, map[string]any{
			"operation_key": o.OperationKey, "previous_status": prev.Status, "previous_attempts": prev.Attempts,
			"previous_last_error": prev.LastError})
		return err
	})
	if err != nil {
		return res, err
	}
	res.ID, res.OperationKey = o.ID, o.OperationKey
	if r, err := keys.ParseResource(o.ResourceKey); err == nil {
		bells := s.NewDoorbells()
		res.Signaled = bells.Ring(ctx, r, "outbox release: "+reason)
		if bells.Failed != nil {
			res.SignalErr = bells.Failed.Error()
		}
	}
	s.log().Info("outbox released", "outbox", id, "operation_key", o.OperationKey, "actor", who.Name)
	return res, nil
}
