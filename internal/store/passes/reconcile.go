package passes

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// This file holds the statements of the long-running reconciliation passes
// (SPEC R19): where each pass resumes (reconcile_checkpoints), which scopes
// it covers, and the local state a listed page is compared with.

const checkpointColumns = `name, cursor, watermark, coalesce(run_id, ''), pages, seen, divergences, started_at, completed_at, updated_at`

func scanCheckpoint(row pgx.Row) (*keys.Checkpoint, error) {
	var c keys.Checkpoint
	err := row.Scan(&c.Name, &c.Cursor, &c.Watermark, &c.Owner, &c.Pages, &c.Seen, &c.Divergences,
		&c.StartedAt, &c.CompletedAt, &c.UpdatedAt)
	if err != nil {
		return nil, store.Interpret(err)
	}
	return &c, nil
}

// GetCheckpoint reads one checkpoint.
func GetCheckpoint(ctx context.Context, db store.DB, name string) (*keys.Checkpoint, error) {
	c, err := scanCheckpoint(db.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM reconcile_checkpoints WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	return c, nil
}

// BeginPass gives owner the pass of checkpoint name and returns it. An
// unfinished pass is resumed where it stopped (its cursor, counters and start
// kept; a pass killed mid-way is taken over by the next run) unless restart
// is set and another owner holds it; otherwise a new pass starts at the
// beginning. Calling it again as the same owner returns the same pass, so an
// activity retry is harmless. resumed says an earlier run's pass was taken over.
func BeginPass(ctx context.Context, s *store.Store, name, owner string, restart bool) (cp keys.Checkpoint, resumed bool, err error) {
	if name == "" || owner == "" {
		return cp, false, errors.New("begin pass: name and owner are required")
	}
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO reconcile_checkpoints (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, name); err != nil {
			return err
		}
		cur, err := scanCheckpoint(tx.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM reconcile_checkpoints WHERE name = $1 FOR UPDATE`, name))
		if err != nil {
			return err
		}
		switch {
		case cur.Unfinished() && cur.Owner == owner:
			cp = *cur
			return nil
		case cur.Unfinished() && !restart:
			resumed = true
			cur, err = scanCheckpoint(tx.QueryRow(ctx, `
				UPDATE reconcile_checkpoints SET run_id = $2, updated_at = now()
				 WHERE name = $1 RETURNING `+checkpointColumns, name, owner))
		default:
			cur, err = scanCheckpoint(tx.QueryRow(ctx, `
				UPDATE reconcile_checkpoints
				   SET run_id = $2, cursor = '', pages = 0, seen = 0, divergences = 0,
				       started_at = now(), completed_at = NULL, updated_at = now()
				 WHERE name = $1 RETURNING `+checkpointColumns, name, owner))
		}
		if err != nil {
			return err
		}
		cp = *cur
		return nil
	})
	if err != nil {
		return keys.Checkpoint{}, false, fmt.Errorf("begin pass %s: %w", name, err)
	}
	return cp, resumed, nil
}

// CheckpointMovedError says a page's checkpoint update lost: another run took
// the pass over, or the pass is not where this page began.
type CheckpointMovedError struct {
	Name          string
	Owner         string
	ExpectedPages int64
	Current       *keys.Checkpoint
}

func (e *CheckpointMovedError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("checkpoint %s is gone", e.Name)
	}
	if e.Current.Owner != e.Owner {
		return fmt.Sprintf("checkpoint %s was taken over by %s", e.Name, e.Current.Owner)
	}
	return fmt.Sprintf("checkpoint %s is at page %d, this page began at %d", e.Name, e.Current.Pages, e.ExpectedPages)
}

// PageProgress is what one page of a pass adds to its checkpoint.
type PageProgress struct {
	// Owner and Pages fence the update: it applies only if owner still
	// holds the pass and Pages pages were done before this one.
	Owner string
	Pages int64
	// Next is the cursor after this page; Done ends the pass.
	Next        string
	Done        bool
	Seen        int64
	Divergences int64
}

// AdvancePass records one page of a pass: the cursor to resume from and the
// counters, fenced by the owner and the page count. The last page (Done)
// completes the pass and moves the watermark to the pass's start. If the
// same page was already recorded (an activity retry whose first answer was
// lost) the checkpoint is returned unchanged with repeated set; any other
// mismatch is a *CheckpointMovedError.
func AdvancePass(ctx context.Context, db store.DB, name string, p PageProgress) (cp *keys.Checkpoint, repeated bool, err error) {
	cp, err = scanCheckpoint(db.QueryRow(ctx, `
		UPDATE reconcile_checkpoints
		   SET cursor = CASE WHEN $4 THEN '' ELSE $5 END,
		       pages = pages + 1, seen = seen + $6, divergences = divergences + $7,
		       completed_at = CASE WHEN $4 THEN now() END,
		       watermark = CASE WHEN $4 THEN started_at ELSE watermark END,
		       updated_at = now()
		 WHERE name = $1 AND run_id = $2 AND pages = $3 AND completed_at IS NULL
		RETURNING `+checkpointColumns, name, p.Owner, p.Pages, p.Done, p.Next, p.Seen, p.Divergences))
	if err == nil {
		return cp, false, nil
	}
	if !errors.Is(err, fault.ErrNotFound) {
		return nil, false, fmt.Errorf("advance checkpoint %s: %w", name, err)
	}
	cur, err := GetCheckpoint(ctx, db, name)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, false, &CheckpointMovedError{Name: name, Owner: p.Owner, ExpectedPages: p.Pages}
	}
	if err != nil {
		return nil, false, err
	}
	if cur.Owner == p.Owner && cur.Pages == p.Pages+1 && (cur.CompletedAt != nil) == p.Done && (p.Done || cur.Cursor == p.Next) {
		return cur, true, nil
	}
	return nil, false, &CheckpointMovedError{Name: name, Owner: p.Owner, ExpectedPages: p.Pages, Current: cur}
}

// ListScopes lists, for provider, every linked account of an endpoint with
// an API key, once per (account, environment): through the first endpoint
// by slug, the one reconciliation of a single resource asks too
// (FindAPIEndpoint). With endpoint set, only that endpoint's accounts.
func ListScopes(ctx context.Context, db store.DB, provider, endpoint string) ([]keys.Scope, error) {
	rows, err := db.Query(ctx, `
		SELECT DISTINCT ON (l.account, e.environment) e.provider, e.slug, l.account, e.environment, l.workspace_id
		  FROM endpoints e JOIN account_links l ON l.endpoint_slug = e.slug
		 WHERE e.provider = $1 AND (e.api_key IS NOT NULL OR e.api_key_sealed IS NOT NULL) AND ($2 = '' OR e.slug = $2)
		 ORDER BY l.account, e.environment, e.slug`, provider, endpoint)
	if err != nil {
		return nil, fmt.Errorf("list scopes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (keys.Scope, error) {
		var s keys.Scope
		err := r.Scan(&s.Provider, &s.Endpoint, &s.Account, &s.Environment, &s.WorkspaceID)
		return s, err
	})
}
