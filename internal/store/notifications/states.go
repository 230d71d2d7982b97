package notifications

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/store"
)

// FiringSubjects lists the subjects of (rule, trigger) whose state is
// firing: those an evaluation must look at even when nothing of them is
// observed any more (that is how they recover).
func FiringSubjects(ctx context.Context, db store.DB, rule, trigger string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT subject FROM notification_states WHERE rule = $1 AND trigger = $2 AND firing ORDER BY subject`,
		rule, trigger)
	if err != nil {
		return nil, fmt.Errorf("firing subjects of %s/%s: %w", rule, trigger, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// LockState reads the state of (rule, trigger, subject) FOR UPDATE, creating
// it (not firing) first when there is none, so two evaluations of one key
// never decide at once: the second waits for the first's commit and decides
// on what it stored. A rule removed meanwhile is fault.ErrNotFound.
func LockState(ctx context.Context, tx pgx.Tx, rule, trigger, subject string) (notify.State, error) {
	_, err := tx.Exec(ctx, `
		INSERT INTO notification_states (rule, trigger, subject)
		SELECT name, $2, $3 FROM notification_rules WHERE name = $1
		ON CONFLICT DO NOTHING`, rule, trigger, subject)
	if err != nil {
		return notify.State{}, fmt.Errorf("state of %s/%s/%s: %w", rule, trigger, subject, err)
	}
	var s notify.State
	var window, since, observed *time.Time
	err = tx.QueryRow(ctx, `
		SELECT firing, announced, window_start, notified_count, notified_mark, firing_since, last_count, observed_at
		  FROM notification_states WHERE rule = $1 AND trigger = $2 AND subject = $3 FOR UPDATE`, rule, trigger, subject).
		Scan(&s.Firing, &s.Announced, &window, &s.NotifiedCount, &s.NotifiedMark, &since, &s.LastCount, &observed)
	if err != nil {
		return s, fmt.Errorf("state of %s/%s/%s: %w", rule, trigger, subject, store.Interpret(err))
	}
	s.WindowStart, s.Since, s.ObservedAt = deref(window), deref(since), deref(observed)
	return s, nil
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// SaveState stores the state Decide returned.
func SaveState(ctx context.Context, tx pgx.Tx, rule, trigger, subject string, s notify.State) error {
	_, err := tx.Exec(ctx, `
		UPDATE notification_states SET firing = $4, announced = $5, window_start = $6, notified_count = $7,
		       notified_mark = $8, firing_since = $9, last_count = $10, observed_at = $11
		 WHERE rule = $1 AND trigger = $2 AND subject = $3`,
		rule, trigger, subject, s.Firing, s.Announced, orNull(s.WindowStart), s.NotifiedCount, s.NotifiedMark,
		orNull(s.Since), s.LastCount, orNull(s.ObservedAt))
	if err != nil {
		return fmt.Errorf("save state of %s/%s/%s: %w", rule, trigger, subject, err)
	}
	return nil
}

// Notice is one notice decided (a row of notifications).
type Notice struct {
	ID           int64     `json:"id"`
	Rule         string    `json:"rule"`
	Trigger      string    `json:"trigger"`
	Subject      string    `json:"subject"`
	WindowStart  time.Time `json:"window_start"`
	Phase        string    `json:"phase"`
	Count        int64     `json:"count"`
	Channel      string    `json:"channel"`
	Workspace    string    `json:"workspace,omitempty"`
	OperationKey string    `json:"operation_key"`
	OutboxID     int64     `json:"outbox_id"`
	CreatedAt    time.Time `json:"created_at"`
	// OutboxStatus is its outbox row's status (sent, pending, …), when read
	// with it (RecentNotices).
	OutboxStatus string `json:"outbox_status,omitempty"`
}

// InsertNotice records a notice (in the transaction that inserted its
// outbox intent and saved its state). A notice of the same (rule, trigger,
// subject, window, phase) is not recorded again: inserted is false.
func InsertNotice(ctx context.Context, tx pgx.Tx, n Notice) (inserted bool, err error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO notifications (rule, trigger, subject, window_start, phase, count, channel, workspace_id, operation_key, outbox_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), $9, $10)
		ON CONFLICT DO NOTHING`,
		n.Rule, n.Trigger, n.Subject, n.WindowStart, n.Phase, n.Count, n.Channel, n.Workspace, n.OperationKey, n.OutboxID)
	if err != nil {
		return false, fmt.Errorf("record notice %s: %w", n.OperationKey, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RecentNotices lists a rule's newest notices ("" for every rule's) with
// their outbox rows' status.
func RecentNotices(ctx context.Context, db store.DB, rule string, limit int) ([]Notice, error) {
	rows, err := db.Query(ctx, `
		SELECT n.id, n.rule, n.trigger, n.subject, n.window_start, n.phase, n.count, n.channel, coalesce(n.workspace_id, ''),
		       n.operation_key, n.outbox_id, n.created_at, coalesce(o.status, '')
		  FROM notifications n LEFT JOIN outbox o ON o.id = n.outbox_id
		 WHERE $1 = '' OR n.rule = $1 ORDER BY n.id DESC LIMIT $2`, rule, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Notice, error) {
		var n Notice
		err := r.Scan(&n.ID, &n.Rule, &n.Trigger, &n.Subject, &n.WindowStart, &n.Phase, &n.Count, &n.Channel, &n.Workspace,
			&n.OperationKey, &n.OutboxID, &n.CreatedAt, &n.OutboxStatus)
		return n, err
	})
}

// Firing is a (rule, trigger, subject) that is firing, as listed.
type Firing struct {
	Rule      string    `json:"rule"`
	Trigger   string    `json:"trigger"`
	Subject   string    `json:"subject"`
	Count     int64     `json:"count"`
	Since     time.Time `json:"since"`
	Announced bool      `json:"announced"`
}

// ListFiring lists what is firing ("" for every rule).
func ListFiring(ctx context.Context, db store.DB, rule string) ([]Firing, error) {
	rows, err := db.Query(ctx, `
		SELECT rule, trigger, subject, last_count, coalesce(firing_since, observed_at, now()), announced
		  FROM notification_states WHERE firing AND ($1 = '' OR rule = $1) ORDER BY rule, trigger, subject`, rule)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Firing, error) {
		var f Firing
		err := r.Scan(&f.Rule, &f.Trigger, &f.Subject, &f.Count, &f.Since, &f.Announced)
		return f, err
	})
}

// UnsentResources lists the resources whose workflows have notices to send
// now (pending, or uncertain past their attempt's deadline): the
// evaluation rings them, so a notice waits neither for the sweeper nor for
// a doorbell lost after its commit.
func UnsentResources(ctx context.Context, db store.DB) ([]keys.Resource, error) {
	rows, err := db.Query(ctx, `
		SELECT DISTINCT resource_key FROM outbox
		 WHERE class = $1 AND status IN ('pending', 'uncertain') AND next_attempt_at <= clock_timestamp()`, notify.ClassNotification)
	if err != nil {
		return nil, fmt.Errorf("unsent notices: %w", err)
	}
	rks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("unsent notices: %w", err)
	}
	var out []keys.Resource
	var errs []error
	for _, rk := range rks {
		r, err := keys.ParseResource(rk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// Now is the database's clock: one evaluation decides on one time, the
// one the rows it reads were stamped by.
func Now(ctx context.Context, db store.DB) (time.Time, error) {
	var t time.Time
	err := db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}
