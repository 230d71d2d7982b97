// Package forwards holds the statements of forward routes (a team's own
// HTTP service behind hookinbox): the routes, their sealed signing
// secrets, what the intake's route table reads of them, and every forward
// attempt for the lineage.
package forwards

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Route is a forward route as stored. Secret is set only by Open.
type Route struct {
	Name             string        `json:"name"`
	Provider         string        `json:"provider"`
	EventType        string        `json:"event_type"`
	URL              string        `json:"url"`
	Secret           string        `json:"-"`
	OperationKeyPath string        `json:"operation_key_path,omitempty"`
	FetchCurrent     bool          `json:"fetch_current"`
	Timeout          time.Duration `json:"timeout"`
	RetryBudget      int           `json:"retry_budget,omitempty"`
	ReplacesHandler  bool          `json:"replaces_handler"`
	AllowPrivate     bool          `json:"allow_private"`
	Enabled          bool          `json:"enabled"`
	// Coalesce: one document for the run of a resource's pending events
	// the route takes, at most CoalesceMax of them (issue 34).
	Coalesce    bool `json:"coalesce"`
	CoalesceMax int  `json:"coalesce_max,omitempty"`
	// AppliesAt is when the route began to take its types: added, its
	// provider or type changed, or enabled again.
	AppliesAt   time.Time `json:"applies_at"`
	SecretKeyID string    `json:"secret_key_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`

	sealed []byte // read by Open only
}

// columns never include the sealed secret: the operator's role cannot read
// it, and only Open needs it.
const columns = `name, provider, event_type, url, secret_key_id, coalesce(operation_key_path, ''),
	fetch_current, timeout_ms, coalesce(retry_budget, 0), replaces_handler, allow_private, enabled, coalescing, coalesce_max,
	applies_at, created_at, updated_at`

func scan(row pgx.Row) (*Route, error) {
	var r Route
	var ms int
	if err := row.Scan(&r.Name, &r.Provider, &r.EventType, &r.URL, &r.SecretKeyID, &r.OperationKeyPath,
		&r.FetchCurrent, &ms, &r.RetryBudget, &r.ReplacesHandler, &r.AllowPrivate, &r.Enabled, &r.Coalesce, &r.CoalesceMax,
		&r.AppliesAt, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return nil, store.Interpret(err)
	}
	r.Timeout = time.Duration(ms) * time.Millisecond
	return &r, nil
}

// Insert adds r, its secret sealed with kr. A route of the same name, or
// for the same provider and type, is store.ErrConflict.
func Insert(ctx context.Context, db store.DB, kr *secretbox.Keyring, r Route) error {
	sealed, keyID, err := kr.Seal([]byte(r.Secret), store.ForwardContext(r.Name))
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `
		INSERT INTO forward_routes (name, provider, event_type, url, secret_sealed, secret_key_id, operation_key_path,
			fetch_current, timeout_ms, retry_budget, replaces_handler, allow_private, enabled, coalescing, coalesce_max)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, NULLIF($10, 0), $11, $12, $13, $14, $15)`,
		r.Name, r.Provider, r.EventType, r.URL, sealed, keyID, r.OperationKeyPath, r.FetchCurrent,
		int(r.Timeout/time.Millisecond), r.RetryBudget, r.ReplacesHandler, r.AllowPrivate, r.Enabled, r.Coalesce, coalesceMax(r))
	if store.IsUniqueViolation(err) {
		return fmt.Errorf("forward route %s (%s %s): %w", r.Name, r.Provider, r.EventType, store.ErrConflict)
	}
	return err
}

// Update replaces every setting of the route named r.Name; a non-empty
// r.Secret replaces its secret too (sealed with kr). It never reads the
// sealed secret (the console's role may not). A change of provider or type,
// or enabling a disabled route, moves its applies_at to now. A missing
// route is fault.ErrNotFound.
func Update(ctx context.Context, db store.DB, kr *secretbox.Keyring, r Route) error {
	args := []any{r.Name, r.Provider, r.EventType, r.URL, r.OperationKeyPath, r.FetchCurrent, int(r.Timeout / time.Millisecond),
		r.RetryBudget, r.ReplacesHandler, r.AllowPrivate, r.Enabled, r.Coalesce, coalesceMax(r)}
	secret := ""
	if r.Secret != "" {
		sealed, keyID, err := kr.Seal([]byte(r.Secret), store.ForwardContext(r.Name))
		if err != nil {
			return err
		}
		args = append(args, sealed, keyID)
		secret = ", secret_sealed = $14, secret_key_id = $15"
	}
	tag, err := db.Exec(ctx, `
		UPDATE forward_routes SET provider = $2, event_type = $3, url = $4, operation_key_path = NULLIF($5, ''),
		       fetch_current = $6, timeout_ms = $7, retry_budget = NULLIF($8, 0), replaces_handler = $9,
		       allow_private = $10, enabled = $11, coalescing = $12, coalesce_max = $13,
		       applies_at = CASE WHEN provider <> $2 OR event_type <> $3 OR (NOT enabled AND $11) THEN now() ELSE applies_at END,
		       updated_at = now()`+secret+`
		 WHERE name = $1`, args...)
	if store.IsUniqueViolation(err) {
		return fmt.Errorf("forward route %s (%s %s): %w", r.Name, r.Provider, r.EventType, store.ErrConflict)
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("forward route %s: %w", r.Name, fault.ErrNotFound)
	}
	return nil
}

// DefaultCoalesceMax is the most events one coalesced document covers when
// a route does not say (--coalesce-max).
const DefaultCoalesceMax = 100

func coalesceMax(r Route) int {
	if r.CoalesceMax <= 0 {
		return DefaultCoalesceMax
	}
	return r.CoalesceMax
}

// Delete removes a route (its attempts stay, for the lineage).
func Delete(ctx context.Context, db store.DB, name string) error {
	tag, err := db.Exec(ctx, `DELETE FROM forward_routes WHERE name = $1`, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("forward route %s: %w", name, fault.ErrNotFound)
	}
	return nil
}

// Get reads a route without its secret.
func Get(ctx context.Context, db store.DB, name string) (*Route, error) {
	r, err := scan(db.QueryRow(ctx, `SELECT `+columns+` FROM forward_routes WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("forward route %s: %w", name, err)
	}
	return r, nil
}

// Open reads a route with its secret opened (the worker signs with it).
func Open(ctx context.Context, s *store.Store, name string) (*Route, error) {
	r, err := Get(ctx, s.Pool, name)
	if err != nil {
		return nil, err
	}
	if err := s.Pool.QueryRow(ctx, `SELECT secret_sealed FROM forward_routes WHERE name = $1`, name).Scan(&r.sealed); err != nil {
		return nil, fmt.Errorf("forward route %s: %w", name, store.Interpret(err))
	}
	kr, err := s.Keyring()
	if err != nil {
		return nil, err
	}
	b, err := kr.Open(r.sealed, r.SecretKeyID, store.ForwardContext(r.Name))
	if err != nil {
		return nil, fmt.Errorf("forward route %s secret: %w", r.Name, err)
	}
	r.Secret = string(b)
	return r, nil
}

// List reads every route without its secret, by name.
func List(ctx context.Context, db store.DB) ([]Route, error) {
	rows, err := db.Query(ctx, `SELECT `+columns+` FROM forward_routes ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return store.AppendRows([]Route{}, rows, store.ByValue(scan))
}

// TableRow is what the intake's route table reads of a route: which types
// it takes, never where they go.
type TableRow struct {
	Name            string
	Provider        string
	EventType       string
	RetryBudget     int
	ReplacesHandler bool
	Enabled         bool
	// AppliesAt is when the route began to take its types; Now is the
	// database's clock when the table was read (both on one clock).
	AppliesAt, Now time.Time
}

// Table lists the routes as the intake's route table reads them.
func Table(ctx context.Context, db store.DB) ([]TableRow, error) {
	rows, err := db.Query(ctx, `SELECT name, provider, event_type, coalesce(retry_budget, 0), replaces_handler, enabled,
		applies_at, now() FROM forward_routes ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (TableRow, error) {
		var t TableRow
		err := r.Scan(&t.Name, &t.Provider, &t.EventType, &t.RetryBudget, &t.ReplacesHandler, &t.Enabled, &t.AppliesAt, &t.Now)
		return t, err
	})
}

// Requeued is an inbox row RequeueIgnored put back to pending.
type Requeued struct {
	Key      keys.Event
	Resource keys.Resource
}

// RequeueIgnored puts back to pending, due now, the rows of provider's
// eventType (exact, or a prefix ending in '*') that an intake recorded
// ignored for want of a route ("no handler for …", never attempted) and
// received at or after since: the events a route missed while an intake
// still routed by its table of before. Only such rows: an event a handler
// took (or read and ignored) is never put back, so a route that replaces a
// handler is no second effect. A row without a resource of its own (the
// fallback "event" resource of an ignored event) is left ignored: the
// intake would have refused it as malformed had the route been loaded.
// The rows come back in id order, the order their resource runs them in.
func RequeueIgnored(ctx context.Context, db store.DB, provider, eventType string, since time.Time) ([]Requeued, error) {
	rows, err := db.Query(ctx, `
		SELECT provider, source_account, environment, event_id, resource_kind, resource_id
		  FROM hookinbox_requeue_ignored($1, $2, $3) ORDER BY id`,
		provider, eventType, since)
	if err != nil {
		return nil, fmt.Errorf("re-queue ignored %s %s: %w", provider, eventType, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Requeued, error) {
		var q Requeued
		err := r.Scan(&q.Key.Provider, &q.Key.Account, &q.Key.Environment, &q.Key.EventID, &q.Resource.Kind, &q.Resource.ID)
		q.Resource.Provider, q.Resource.Account, q.Resource.Environment = q.Key.Provider, q.Key.Account, q.Key.Environment
		return q, err
	})
}

// Attempt outcomes (forward_attempts.outcome).
const (
	OutcomeDone    = "done"
	OutcomeRetry   = "retry"
	OutcomeFailed  = "failed"
	OutcomeSkipped = "skipped"
	// OutcomeCoalesced: a coalesced send covered the event (CoveredBy
	// names the event whose send it was, OperationKey its key).
	OutcomeCoalesced = "coalesced"
)

// Attempt is one forward attempt. Its JSON (the lineage's) is MarshalJSON's.
type Attempt struct {
	ID           int64      `json:"id"`
	Route        string     `json:"route"`
	Event        keys.Event `json:"event"`
	OperationKey string     `json:"operation_key"`
	Attempt      int        `json:"attempt"`
	Outcome      string     `json:"outcome"`
	StatusCode   int        `json:"status_code,omitempty"`
	// Latency is how long the POST took (stored in milliseconds):
	// latency_seconds in JSON.
	Latency time.Duration `json:"-"`
	Error   string        `json:"error,omitempty"`
	// CoveredBy, for a coalesced event, is the event whose send covered
	// it, under OperationKey.
	CoveredBy string    `json:"covered_by,omitempty"`
	At        time.Time `json:"at"`
}

// MarshalJSON writes the attempt with its latency in seconds
// (latency_seconds). Forward routes are not in a release yet, so the
// nanoseconds they first had under "latency" are not kept.
func (a Attempt) MarshalJSON() ([]byte, error) {
	type fields Attempt // the same fields, without this method
	return json.Marshal(struct {
		fields
		LatencySeconds float64 `json:"latency_seconds"`
	}{fields(a), a.Latency.Seconds()})
}

// InsertAttempt records a.
func InsertAttempt(ctx context.Context, db store.DB, a Attempt) error {
	var status, ms *int
	if a.StatusCode != 0 {
		status = &a.StatusCode
	}
	if a.Latency > 0 || a.Outcome != OutcomeSkipped {
		m := int(a.Latency / time.Millisecond)
		ms = &m
	}
	_, err := db.Exec(ctx, `
		INSERT INTO forward_attempts (route, provider, source_account, environment, event_id, operation_key, attempt,
			outcome, status_code, latency_ms, error, covered_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''), NULLIF($12, ''))`,
		a.Route, a.Event.Provider, a.Event.Account, a.Event.Environment, a.Event.EventID, a.OperationKey, a.Attempt,
		a.Outcome, status, ms, clip(a.Error, 2000), a.CoveredBy)
	return err
}

// CompleteCovered completes, in one statement, every event of covered still
// pending as done with the note "coalesced into OPKEY", each with its one
// attempt (outcome coalesced, the covering send's status and latency,
// covered_by naming the event whose send covered it), and returns the
// events it completed; one no longer pending (replayed and handled
// meanwhile) keeps its own outcome and is not returned. A coalesced send's
// commit calls it once instead of two statements per covered event.
func CompleteCovered(ctx context.Context, db store.DB, route, opKey string, by keys.Event, covered []keys.Event,
	statusCode int, latency time.Duration) ([]keys.Event, error) {
	if len(covered) == 0 {
		return nil, nil
	}
	var ps, as, es, ids []string
	for _, k := range covered {
		ps, as, es, ids = append(ps, k.Provider), append(as, k.Account), append(es, k.Environment), append(ids, k.EventID)
	}
	var status *int
	if statusCode != 0 {
		status = &statusCode
	}
	rows, err := db.Query(ctx, `
		WITH done AS (
			UPDATE webhook_inbox w
			   SET status = 'done', note = $5, attempts = w.attempts + 1, processed_at = now()
			  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(provider, account, environment, event_id)
			 WHERE w.provider = k.provider AND w.source_account = k.account AND w.environment = k.environment
			   AND w.event_id = k.event_id AND w.status = 'pending'
			RETURNING w.provider, w.source_account, w.environment, w.event_id)
		INSERT INTO forward_attempts (route, provider, source_account, environment, event_id, operation_key, attempt,
			outcome, status_code, latency_ms, covered_by)
		SELECT $6, provider, source_account, environment, event_id, $7, 1, $8, $9, $10, $11 FROM done
		RETURNING provider, source_account, environment, event_id`,
		ps, as, es, ids, "coalesced into "+opKey, route, opKey, OutcomeCoalesced, status, int(latency/time.Millisecond), by.String())
	if err != nil {
		return nil, fmt.Errorf("complete the events %s covered: %w", opKey, err)
	}
	done, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (keys.Event, error) {
		var k keys.Event
		err := r.Scan(&k.Provider, &k.Account, &k.Environment, &k.EventID)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("complete the events %s covered: %w", opKey, err)
	}
	return done, nil
}

// AttemptsFor lists the attempts of events, oldest first.
func AttemptsFor(ctx context.Context, db store.DB, events []keys.Event) ([]Attempt, error) {
	if len(events) == 0 {
		return []Attempt{}, nil
	}
	var ps, as, es, ids []string
	for _, e := range events {
		ps, as, es, ids = append(ps, e.Provider), append(as, e.Account), append(es, e.Environment), append(ids, e.EventID)
	}
	rows, err := db.Query(ctx, `
		SELECT id, route, provider, source_account, environment, event_id, operation_key, attempt, outcome,
		       coalesce(status_code, 0), coalesce(latency_ms, 0), coalesce(error, ''), coalesce(covered_by, ''), at
		  FROM forward_attempts
		 WHERE (provider, source_account, environment, event_id) IN (
		       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))
		 ORDER BY at, id`, ps, as, es, ids)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		var a Attempt
		var ms int
		err := r.Scan(&a.ID, &a.Route, &a.Event.Provider, &a.Event.Account, &a.Event.Environment, &a.Event.EventID,
			&a.OperationKey, &a.Attempt, &a.Outcome, &a.StatusCode, &ms, &a.Error, &a.CoveredBy, &a.At)
		a.Latency = time.Duration(ms) * time.Millisecond
		return a, err
	})
	if out == nil {
		out = []Attempt{}
	}
	return out, err
}

// Covered is one event a coalesced document covers, as the document lists
// it.
type Covered struct {
	EventKey   string    `json:"event_key"`
	EventType  string    `json:"event_type"`
	ReceivedAt time.Time `json:"received_at"`
}

// PendingAfter lists up to limit pending rows of resource r committed after
// inbox row id, in id order: the events a coalesced send may cover after
// the one it is for.
func PendingAfter(ctx context.Context, db store.DB, r keys.Resource, id int64, limit int) ([]Covered, error) {
	rows, err := db.Query(ctx, `
		SELECT event_id, event_type, received_at FROM webhook_inbox
		 WHERE provider = $1 AND source_account = $2 AND environment = $3
		   AND resource_kind = $4 AND resource_id = $5
		   AND status = 'pending' AND id > $6
		 ORDER BY id
		 LIMIT $7`, r.Provider, r.Account, r.Environment, r.Kind, r.ID, id, limit)
	if err != nil {
		return nil, fmt.Errorf("pending after %d of %s: %w", id, r, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Covered, error) {
		var c Covered
		k := keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment}
		err := row.Scan(&k.EventID, &c.EventType, &c.ReceivedAt)
		c.EventKey = k.String()
		return c, err
	})
}

// Coalesced is one coalesced send as recorded before it is sent: the
// event it is for (Head, the first covered), every event it covers and
// the exact document, so that a send whose outcome is unknown goes again
// as the same document under the same key.
type Coalesced struct {
	OperationKey string
	Route        string
	Head         keys.Event
	Covered      []Covered
	Document     []byte
}

// InsertCoalesced records c. A send already recorded under its key (it
// names the last event covered, so only a retry of the same send has it)
// is kept as it was.
func InsertCoalesced(ctx context.Context, db store.DB, c Coalesced) error {
	covered, err := json.Marshal(c.Covered)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `
		INSERT INTO forward_coalesced (operation_key, route, provider, source_account, environment, event_id, covered, document)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (operation_key) DO NOTHING`,
		c.OperationKey, c.Route, c.Head.Provider, c.Head.Account, c.Head.Environment, c.Head.EventID, covered, c.Document)
	return err
}

// CoalescedFor reads the coalesced send recorded for head on route, the
// latest if several; fault.ErrNotFound when there is none.
func CoalescedFor(ctx context.Context, db store.DB, route string, head keys.Event) (*Coalesced, error) {
	c := Coalesced{Route: route, Head: head}
	var covered []byte
	err := db.QueryRow(ctx, `
		SELECT operation_key, covered, document FROM forward_coalesced
		 WHERE route = $1 AND provider = $2 AND source_account = $3 AND environment = $4 AND event_id = $5
		 ORDER BY created_at DESC LIMIT 1`,
		route, head.Provider, head.Account, head.Environment, head.EventID).Scan(&c.OperationKey, &covered, &c.Document)
	if err != nil {
		return nil, fmt.Errorf("coalesced send of %s: %w", head, store.Interpret(err))
	}
	if err := json.Unmarshal(covered, &c.Covered); err != nil {
		return nil, err
	}
	return &c, nil
}

// Backlog is one route's pending rows.
type Backlog struct {
	Route   string `json:"route"`
	Pending int64  `json:"pending"`
	// OldestPendingSeconds is the age of its oldest pending row (0: none).
	OldestPendingSeconds float64 `json:"oldest_pending_age_seconds"`
}

// Backlogs counts each route's pending inbox rows (by its provider and
// type, a trailing '*' matching a prefix).
func Backlogs(ctx context.Context, db store.DB) ([]Backlog, error) {
	rows, err := db.Query(ctx, `
		SELECT r.name, count(i.id), coalesce(extract(epoch FROM now() - min(i.received_at)), 0)::float8
		  FROM forward_routes r
		  LEFT JOIN webhook_inbox i ON i.status = 'pending' AND i.provider = r.provider
		   AND (i.event_type = r.event_type
		        OR (right(r.event_type, 1) = '*' AND starts_with(i.event_type, rtrim(r.event_type, '*'))))
		 GROUP BY r.name ORDER BY r.name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Backlog, error) {
		var b Backlog
		err := r.Scan(&b.Route, &b.Pending, &b.OldestPendingSeconds)
		return b, err
	})
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
