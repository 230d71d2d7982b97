package hookintest

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/hookintype"
)

// The assertion helpers read what hookinbox recorded, so a team's tests
// never query hookinbox's tables (whose shape is ours to change).

// EventState is an event's inbox row.
type EventState struct {
	// Status is pending, done, ignored, failed or exhausted.
	Status string
	// Note is what the handler's Result said (done), or why the event was
	// ignored.
	Note string
	// LastError is the last failed attempt's error ("" if none).
	LastError string
	// Attempts is the number of failed attempts.
	Attempts  int
	EventType string
	// Resource is the resource whose workflow runs the event.
	Resource hookintype.Resource
}

// Event is the inbox row of key. It fails the test when there is none.
func (h *Harness) Event(ctx context.Context, key EventKey) EventState {
	h.t.Helper()
	var e EventState
	var note, lastErr *string
	err := h.DB.QueryRow(ctx, `SELECT status, note, last_error, attempts, event_type, resource_kind, resource_id
		FROM webhook_inbox WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		key.Provider, key.Account, key.Environment, key.EventID).Scan(&e.Status, &note, &lastErr, &e.Attempts, &e.EventType,
		&e.Resource.Kind, &e.Resource.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		h.t.Fatalf("hookintest: event %s is not in the inbox", key)
	}
	if err != nil {
		h.t.Fatalf("hookintest: event %s: %v", key, err)
	}
	e.Resource.Provider, e.Resource.Account, e.Resource.Environment = key.Provider, key.Account, key.Environment
	e.Note, e.LastError = deref(note), deref(lastErr)
	if e.Status == hookintype.StatusIgnored && e.Note == "" {
		e.Note = e.LastError // an ignored row says why in last_error
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// OutboxIntent is one outbound effect a handler recorded (Tx.Send).
type OutboxIntent struct {
	ID           int64
	OperationKey string
	Class        string
	// Kind is "email" or a team destination's kind.
	Kind        string
	Destination string
	Workspace   string
	// Status is pending, sent, failed, uncertain or held_for_review.
	Status   string
	Attempts int
	// Payload is the intent's message, as JSON.
	Payload []byte
}

// Outbox lists the intents recorded under operationKey, or, when it ends
// in "*", under every operation key that starts with what precedes it (the
// intents of one operation built with hookinbox.Key: Outbox(ctx,
// hookinbox.Key("welcome", acct)+"*")). Oldest first.
func (h *Harness) Outbox(ctx context.Context, operationKey string) []OutboxIntent {
	h.t.Helper()
	q := `SELECT id, operation_key, class, kind, destination, workspace_id, status, attempts, payload::text FROM outbox WHERE operation_key = $1 ORDER BY id`
	arg := operationKey
	if n := len(operationKey); n > 0 && operationKey[n-1] == '*' {
		q = `SELECT id, operation_key, class, kind, destination, workspace_id, status, attempts, payload::text FROM outbox
			WHERE left(operation_key, length($1)) = $1 ORDER BY id`
		arg = operationKey[:n-1]
	}
	rows, err := h.DB.Query(ctx, q, arg)
	if err != nil {
		h.t.Fatalf("hookintest: outbox %s: %v", operationKey, err)
	}
	var out []OutboxIntent
	for rows.Next() {
		var o OutboxIntent
		var payload string
		if err := rows.Scan(&o.ID, &o.OperationKey, &o.Class, &o.Kind, &o.Destination, &o.Workspace, &o.Status, &o.Attempts, &payload); err != nil {
			h.t.Fatalf("hookintest: outbox %s: %v", operationKey, err)
		}
		o.Payload = []byte(payload)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatalf("hookintest: outbox %s: %v", operationKey, err)
	}
	return out
}

// ClaimState is a business key's claim (Tx.Claim).
type ClaimState struct {
	// By is the event that claimed it (for a reconciliation's claim, its
	// EventID is "reconcile:" and the reason).
	By hookintype.EventKey
	// Resource is the resource whose workflow made the claim.
	Resource hookintype.Resource
	// Handler is the route name that claimed it ("reconcile" for a
	// reconciler).
	Handler   string
	ClaimedAt time.Time
}

// Claim is businessKey's claim, and whether it was claimed at all.
func (h *Harness) Claim(ctx context.Context, businessKey string) (ClaimState, bool) {
	h.t.Helper()
	var c ClaimState
	var ev, res string
	err := h.DB.QueryRow(ctx, `SELECT event_key, resource_key, handler, claimed_at FROM business_claims WHERE business_key = $1`,
		businessKey).Scan(&ev, &res, &c.Handler, &c.ClaimedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ClaimState{}, false
	}
	if err != nil {
		h.t.Fatalf("hookintest: claim %s: %v", businessKey, err)
	}
	if k, err := hookintype.ParseEventKey(ev); err == nil {
		c.By = k
	} else {
		c.By = hookintype.EventKey{EventID: ev}
	}
	if r, err := hookintype.ParseResource(res); err == nil {
		c.Resource = r
	}
	return c, true
}

// Quarantined is a delivery the intake refused and kept for review.
type Quarantined struct {
	ID       int64
	Endpoint string
	Provider string
	// Account, Environment and EventID are what the delivery said ("" if
	// it could not be read).
	Account, Environment, EventID string
	// Reason is conflicting_duplicate, unknown_account, malformed or
	// environment_mismatch; Detail says more.
	Reason, Detail string
	// Resolved: an operator resolved it (Resolution says how).
	Resolved   bool
	Resolution string
}

// Quarantine lists the quarantined deliveries of endpoint slug (every
// endpoint's when slug is ""), oldest first.
func (h *Harness) Quarantine(ctx context.Context, slug string) []Quarantined {
	h.t.Helper()
	rows, err := h.DB.Query(ctx, `SELECT id, endpoint_slug, provider, coalesce(source_account, ''), coalesce(environment, ''),
		coalesce(event_id, ''), reason, detail, resolved_at IS NOT NULL, coalesce(resolution, '')
		FROM inbox_quarantine WHERE $1 = '' OR endpoint_slug = $1 ORDER BY id`, slug)
	if err != nil {
		h.t.Fatalf("hookintest: quarantine: %v", err)
	}
	var out []Quarantined
	for rows.Next() {
		var q Quarantined
		if err := rows.Scan(&q.ID, &q.Endpoint, &q.Provider, &q.Account, &q.Environment, &q.EventID, &q.Reason, &q.Detail,
			&q.Resolved, &q.Resolution); err != nil {
			h.t.Fatalf("hookintest: quarantine: %v", err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatalf("hookintest: quarantine: %v", err)
	}
	return out
}
