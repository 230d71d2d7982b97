package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// ErrCannotReadmit marks a quarantined delivery that still cannot enter the
// inbox (account still unlinked, body still malformed, key taken by another
// body). The entry stays open.
var ErrCannotReadmit = errors.New("cannot re-admit")

// ReadmitResult is what re-admitting a quarantined delivery did.
type ReadmitResult struct {
	Key      keys.Event    `json:"key"`
	Resource keys.Resource `json:"resource"`
	// Outcome is Inserted, or Duplicate when the same delivery already
	// reached the inbox (a sender retry after the account was linked).
	Outcome   inbox.InsertOutcome `json:"-"`
	InboxID   int64               `json:"inbox_id"`
	Workspace string              `json:"workspace"`
	// Status of the inbox row: pending (ring the resource's doorbell),
	// ignored, or a duplicate's current status.
	Status   string `json:"status"`
	ActionID int64  `json:"action_id"`
}

// Readmit re-admits quarantined delivery id into the inbox through the
// admission's own derivation and insert: the endpoint's current settings and
// links decide the account, workspace, resource and status, and the event
// key's UNIQUE constraint settles duplicates. The delivery was authenticated
// when it arrived, so its signature is not checked again. The entry is
// closed and the act audited (by, reason) in the same transaction as the
// insert; on any refusal nothing changes and the entry stays open. The
// caller rings the resource's doorbell when Status is pending.
func Readmit(ctx context.Context, st *store.Store, rt routes.Router, id int64, by, reason string) (ReadmitResult, error) {
	return ReadmitFrom(ctx, st, st, rt, id, by, reason)
}

// ReadmitFrom is Readmit reading the delivery's body from payloads (the
// console's pool as hookinbox_payload_reader: its own role reads no
// payload) and everything else, the insert included, on st. Neither needs
// to read a signing secret: the secret that verified the delivery is
// checked by its id and accounts.
func ReadmitFrom(ctx context.Context, st, payloads *store.Store, rt routes.Router, id int64, by, reason string) (ReadmitResult, error) {
	if strings.TrimSpace(by) == "" || strings.TrimSpace(reason) == "" {
		return ReadmitResult{}, fmt.Errorf("re-admit quarantine %d: who and why are required", id)
	}
	q, err := inbox.GetQuarantineEntry(ctx, st.Pool, id, false)
	if err != nil {
		return ReadmitResult{}, err
	}
	if err := q.CheckOpen(); err != nil {
		return ReadmitResult{}, err
	}
	if q.Reason == inbox.ReasonConflictingDuplicate {
		k, _ := q.EventKey()
		return ReadmitResult{}, fmt.Errorf("quarantine %d: %w: event key %s is already in the inbox with a different body "+
			"and keys are unique, so this body can never enter as the same event; discard this entry "+
			"(quarantine resolve %d --action discard) or, if the original needs another pass, replay it "+
			"(replay %s)", id, ErrCannotReadmit, k, id, k)
	}
	sep, err := endpoints.GetEndpointView(ctx, st, q.EndpointSlug)
	if errors.Is(err, fault.ErrNotFound) {
		return ReadmitResult{}, fmt.Errorf("quarantine %d: %w: endpoint %s no longer exists", id, ErrCannotReadmit, q.EndpointSlug)
	}
	if err != nil {
		return ReadmitResult{}, err
	}
	ep := NewEndpoint(sep)
	body, err := inbox.GetQuarantinePayload(ctx, payloads.Pool, id)
	if err != nil {
		return ReadmitResult{}, err
	}

	var res ReadmitResult
	err = st.Tx(ctx, func(tx pgx.Tx) error {
		q, err := inbox.LockQuarantineEntry(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := q.CheckOpen(); err != nil {
			return err
		}
		if q.PayloadBytes > 0 {
			q.Payload = body // read before the lock: an entry's body never changes, only its redaction
		}
		ev, err := readmission(rt, ep, q)
		if err != nil {
			return fmt.Errorf("quarantine %d: %w: %w", id, ErrCannotReadmit, err)
		}
		r, ins, err := insert(ctx, tx, ev)
		if err != nil {
			return err
		}
		res = ReadmitResult{Key: ev.Key, Resource: r.Resource, Outcome: ins.Outcome, InboxID: r.InboxID,
			Workspace: ev.WorkspaceID, Status: r.Status}
		switch ins.Outcome {
		case inbox.Inserted, inbox.Duplicate, inbox.BodyReplay:
		default:
			return fmt.Errorf("quarantine %d: %w: event key %s is already in the inbox with a different body; "+
				"discard this entry or replay the original (replay %s)", id, ErrCannotReadmit, ev.Key, ev.Key)
		}
		if _, err := inbox.ResolveQuarantine(ctx, tx, id, by, "readmitted as "+ev.Key.String()+": "+reason); err != nil {
			return err
		}
		res.ActionID, err = store.InsertOperatorAction(ctx, tx, &store.OperatorAction{
			Actor: by, Action: inbox.ActionQuarantineReadmit, Target: inbox.QuarantineTarget(id),
			EventKey: ev.Key.String(), Reason: reason,
			Details: map[string]any{
				"quarantine_reason": q.Reason, "detail": q.Detail, "endpoint": q.EndpointSlug,
				"outcome": ins.Outcome.String(), "status": res.Status, "workspace": ev.WorkspaceID,
				"resource": res.Resource.String(), "inbox_id": ins.ID,
			},
		})
		return err
	})
	if err != nil {
		return ReadmitResult{}, err
	}
	return res, nil
}

// readmission derives the inbox row of an already-authenticated delivery
// with the intake's own step and the endpoint's current settings and links.
// Its errors say what is still wrong and how to fix it.
func readmission(rt routes.Router, ep *Endpoint, q *inbox.QuarantineItem) (*inbox.InboxEvent, error) {
	raw := q.Payload
	if raw == nil {
		return nil, errors.New("the delivery's body is no longer stored")
	}
	h := http.Header{}
	for name, v := range q.Headers {
		h.Set(name, v)
	}
	payload := raw
	if ep.provider != nil {
		// The JSON the intake's verifier returned: the body, or what the
		// provider wraps in it (GitHub's form-encoded deliveries).
		p, err := providers.Payload(ep.provider, h, raw)
		if err != nil {
			return nil, fmt.Errorf("still malformed: %w", err)
		}
		payload = p
	}
	// The secret that verified it must still allow the account it claims
	// (derive checks its binding). One that was removed since can no longer
	// vouch for an entry quarantined for claiming an account it was not
	// bound to.
	if q.Reason == inbox.ReasonAccountMismatch && !slices.ContainsFunc(ep.Secrets, func(s keys.Secret) bool { return s.ID == q.SecretID }) {
		return nil, fmt.Errorf("secret #%d, which verified this delivery, was removed: its account binding "+
			"cannot be checked again; discard the entry", q.SecretID)
	}
	ev, err := derive(rt, ep.Endpoint, ep.provider, h, payload, raw, q.SecretID, "")
	var rej *Rejection
	if errors.As(err, &rej) {
		switch rej.Reason {
		case inbox.ReasonUnknownAccount:
			if ev.Key.Account == "" {
				return nil, fmt.Errorf("still no source account: the event names none and endpoint %s has no own "+
					"account (give the endpoint --account, or link exactly one account)", ep.Slug)
			}
			return nil, fmt.Errorf("source account %s is still not linked to a workspace: run "+
				"'hookinbox endpoints link --slug %s --account %s --workspace WORKSPACE' first", ev.Key.Account, ep.Slug, ev.Key.Account)
		case inbox.ReasonAccountMismatch:
			return nil, fmt.Errorf("still an account mismatch: %s; if the account is rightly this secret's, "+
				"bind it first (hookinbox endpoints secrets bind --slug %s --id N --accounts …)", rej.Detail, ep.Slug)
		case inbox.ReasonEnvironmentMismatch:
			return nil, fmt.Errorf("still an environment mismatch: %s %s; discard it (the sender should deliver "+
				"it to an endpoint of its environment)", rej.Detail, ep.Slug)
		default:
			return nil, fmt.Errorf("still %s: %s", rej.Reason, rej.Detail)
		}
	}
	if err != nil {
		return nil, err
	}
	if ev.Key.EventID == "" {
		return nil, errors.New("still malformed: the delivery carries no event id")
	}
	ev.Origin = keys.OriginQuarantine
	return ev, nil
}
