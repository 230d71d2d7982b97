package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// OperatorAction is one audited operator act.
type OperatorAction struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	// Target is an event key or a quarantine entry (QuarantineTarget).
	Target string `json:"target"`
	// EventKey is the inbox event concerned, when there is one.
	EventKey string         `json:"event_key,omitempty"`
	Reason   string         `json:"reason"`
	Details  map[string]any `json:"details,omitempty"`
}

// urlInJSON is a URL inside a JSON string: its scheme, its credentials (if
// any), its host, and its path, query or fragment (JSON escapes included).
// Migration 0021 uses the same expression on the entries written before.
var urlInJSON = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)(?:[^/?#@"\\\s]*@)?([^/?#"\\\s]*)(?:[/?#](?:[^"\\\s]|\\.)*)?`)

// RedactURLs cuts every URL in the JSON document raw to its origin (scheme
// and host): an audit entry's details are read by viewers, and a URL's
// path, query and credentials may carry a token (a notification webhook's,
// a Slack URL's, a forward route's).
func RedactURLs(raw []byte) []byte {
	return urlInJSON.ReplaceAll(raw, []byte("${1}${2}"))
}

// InsertOperatorAction appends a to the audit trail and returns its id.
func InsertOperatorAction(ctx context.Context, db DB, a *OperatorAction) (int64, error) {
	if strings.TrimSpace(a.Actor) == "" || strings.TrimSpace(a.Reason) == "" {
		return 0, errors.New("record operator action: actor and reason are required")
	}
	details := a.Details
	if details == nil {
		details = map[string]any{}
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return 0, fmt.Errorf("record operator action: %w", err)
	}
	raw = RedactURLs(raw)
	var id int64
	err = db.QueryRow(ctx, `
		INSERT INTO operator_actions (actor, action, target, event_key, reason, details)
		VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6)
		RETURNING id, at`, a.Actor, a.Action, a.Target, a.EventKey, a.Reason, raw).Scan(&id, &a.At)
	if err != nil {
		return 0, fmt.Errorf("record operator action %s on %s: %w", a.Action, a.Target, err)
	}
	a.ID = id
	return id, nil
}

// ListOperatorActions returns the audit entries whose target or event key is
// ref (an event key or QuarantineTarget), oldest first, at most limit.
func ListOperatorActions(ctx context.Context, db DB, ref string, limit int) ([]OperatorAction, error) {
	rows, err := db.Query(ctx, `
		SELECT id, at, actor, action, target, coalesce(event_key, ''), reason, details
		  FROM operator_actions
		 WHERE target = $1 OR event_key = $1
		 ORDER BY at, id
		 LIMIT $2`, ref, limit)
	if err != nil {
		return nil, fmt.Errorf("operator actions on %s: %w", ref, err)
	}
	return AppendRows(nil, rows, scanAction)
}

// scanAction reads an operator_actions row selected as id, at, actor,
// action, target, coalesce(event_key, ”), reason, details.
func scanAction(row pgx.Row) (a OperatorAction, err error) {
	var details []byte
	if err := row.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.Target, &a.EventKey, &a.Reason, &details); err != nil {
		return a, err
	}
	if err := json.Unmarshal(details, &a.Details); err != nil {
		return a, fmt.Errorf("operator action %d details: %w", a.ID, err)
	}
	return a, nil
}

// This file holds the statements of the operator console and API (issue
// #15): API tokens, replay jobs, the lineage of an effect, endpoint updates
// and the listings only the console needs.

// ErrConflict is returned when a row with the same unique name exists.
var ErrConflict = errors.New("already exists")

// ListOperatorActionsFor returns the audit entries whose target or event
// key is any of refs, oldest first, at most limit.
func ListOperatorActionsFor(ctx context.Context, db DB, refs []string, limit int) ([]OperatorAction, error) {
	return queryActions(ctx, db, `
		SELECT id, at, actor, action, target, coalesce(event_key, ''), reason, details
		  FROM operator_actions
		 WHERE target = ANY($1::text[]) OR event_key = ANY($1::text[])
		 ORDER BY at, id LIMIT $2`, refs, limit)
}

// RecentOperatorActions returns the newest audit entries first, optionally
// only those by actor or of action.
func RecentOperatorActions(ctx context.Context, db DB, actor, action string, limit int) ([]OperatorAction, error) {
	return queryActions(ctx, db, `
		SELECT id, at, actor, action, target, coalesce(event_key, ''), reason, details
		  FROM operator_actions
		 WHERE ($1 = '' OR actor = $1) AND ($2 = '' OR action = $2)
		 ORDER BY at DESC, id DESC LIMIT $3`, actor, action, limit)
}

func queryActions(ctx context.Context, db DB, sql string, args ...any) ([]OperatorAction, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("operator actions: %w", err)
	}
	return AppendRows([]OperatorAction{}, rows, scanAction)
}
