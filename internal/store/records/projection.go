package records

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
)

// ProjectionTable describes a table holding one row per resource that must
// never go backwards (SPEC R15): a provider version column, compared inside
// the write, and a write sequence, the fencing token of fetch-then-write
// without a version. The statements below are built from it; identifiers
// are quoted, values always bound.
type ProjectionTable struct {
	// Name of the table (schema public).
	Name string
	// Key columns: the table's primary key or a UNIQUE constraint on them.
	Key []string
	// Version column (bigint, NULL until a versioned write; any type
	// PostgreSQL orders, a timestamptz say).
	Version string
	// Tie, when set, is a bigint column compared after Version: a write
	// wins when (version, tie) is greater than the stored pair, so two
	// writes of the same version apply in their tie's order.
	Tie string
	// Seq column (bigint NOT NULL, DEFAULT 1): incremented by every update.
	Seq string
	// Touched, when set, is a timestamptz column set to now() by updates.
	Touched string
	// Sticky boolean columns stay true once true (a tombstone survives
	// any later write).
	Sticky []string
	// TerminalColumn and TerminalValue, when set, name a state no write
	// leaves by a versioned write (a canceled subscription stays canceled).
	TerminalColumn string
	TerminalValue  any
}

// Check says what is missing from t.
func (t ProjectionTable) Check() error {
	switch {
	case t.Name == "":
		return fmt.Errorf("projection table: a name is required")
	case len(t.Key) == 0:
		return fmt.Errorf("projection table %s: key columns are required", t.Name)
	case t.Version == "" || t.Seq == "":
		return fmt.Errorf("projection table %s: the version and sequence columns are required", t.Name)
	case (t.TerminalColumn == "") != (t.TerminalValue == nil):
		return fmt.Errorf("projection table %s: a terminal state needs both its column and its value", t.Name)
	}
	return nil
}

// isNil reports a nil value, typed (a nil *int64) or not.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func (t ProjectionTable) isKey(c string) bool {
	for _, k := range t.Key {
		if k == c {
			return true
		}
	}
	return false
}

func (t ProjectionTable) isSticky(c string) bool {
	for _, k := range t.Sticky {
		if k == c {
			return true
		}
	}
	return false
}

// columns are row's columns, sorted, and their values.
func columns(row map[string]any) ([]string, []any) {
	cols := make([]string, 0, len(row))
	for c := range row {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	vals := make([]any, len(cols))
	for i, c := range cols {
		vals[i] = row[c]
	}
	return cols, vals
}

// checkRow says what is wrong with t or row. Its errors are permanent: no
// retry fixes a misdescribed projection.
func (t ProjectionTable) checkRow(row map[string]any) error {
	return fault.Permanent(t.rowError(row))
}

func (t ProjectionTable) rowError(row map[string]any) error {
	if err := t.Check(); err != nil {
		return err
	}
	for _, k := range t.Key {
		if _, ok := row[k]; !ok {
			return fmt.Errorf("projection %s: the row has no value for key column %s", t.Name, k)
		}
	}
	if t.Tie != "" && (t.Tie == t.Version || t.Tie == t.Seq || t.isKey(t.Tie)) {
		return fmt.Errorf("projection %s: the tie-breaker %s must be a column of its own", t.Name, t.Tie)
	}
	if _, ok := row[t.Seq]; ok {
		return fmt.Errorf("projection %s: %s is the fencing token, written by hookinbox only", t.Name, t.Seq)
	}
	return nil
}

// WriteIfNewer inserts row, or updates the existing row of its key, only
// when row's version is greater than the stored one (or none is stored):
// the comparison is part of the statement, so two writers cannot both pass
// it. A terminal state is never left; sticky columns stay true. It reports
// whether the row was written.
func WriteIfNewer(ctx context.Context, tx pgx.Tx, t ProjectionTable, row map[string]any) (bool, error) {
	if err := t.checkRow(row); err != nil {
		return false, err
	}
	if v, ok := row[t.Version]; !ok || isNil(v) {
		return false, fault.Permanent(fmt.Errorf("projection %s: a versioned write needs %s", t.Name, t.Version))
	}
	if v, ok := row[t.Tie]; t.Tie != "" && (!ok || isNil(v)) {
		return false, fault.Permanent(fmt.Errorf("projection %s: a versioned write needs its tie-breaker %s", t.Name, t.Tie))
	}
	cols, vals := columns(row)
	tbl := ident(t.Name)
	var b strings.Builder
	b.WriteString("INSERT INTO " + tbl + " (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ident(c))
	}
	b.WriteString(") VALUES (")
	for i := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", i+1)
	}
	b.WriteString(") ON CONFLICT (")
	for i, k := range t.Key {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ident(k))
	}
	b.WriteString(") DO UPDATE SET ")
	for _, c := range cols {
		if t.isKey(c) {
			continue
		}
		if t.isSticky(c) {
			fmt.Fprintf(&b, "%s = %s.%s OR EXCLUDED.%s, ", ident(c), tbl, ident(c), ident(c))
		} else {
			fmt.Fprintf(&b, "%s = EXCLUDED.%s, ", ident(c), ident(c))
		}
	}
	fmt.Fprintf(&b, "%s = %s.%s + 1", ident(t.Seq), tbl, ident(t.Seq))
	if t.Touched != "" {
		fmt.Fprintf(&b, ", %s = now()", ident(t.Touched))
	}
	v := ident(t.Version)
	if t.Tie == "" {
		fmt.Fprintf(&b, " WHERE (%s.%s IS NULL OR EXCLUDED.%s > %s.%s)", tbl, v, v, tbl, v)
	} else {
		// A stored row without a tie (written before it had one) loses to
		// any tie of its version.
		tc := ident(t.Tie)
		fmt.Fprintf(&b, " WHERE (%s.%s IS NULL OR (EXCLUDED.%s, EXCLUDED.%s) > (%s.%s, coalesce(%s.%s, -9223372036854775808)))",
			tbl, v, v, tc, tbl, v, tbl, tc)
	}
	args := vals
	if t.TerminalColumn != "" {
		tc := ident(t.TerminalColumn)
		args = append(args, t.TerminalValue)
		fmt.Fprintf(&b, " AND NOT (%s.%s = $%d AND EXCLUDED.%s IS DISTINCT FROM $%d)", tbl, tc, len(args), tc, len(args))
	}
	tag, err := tx.Exec(ctx, b.String(), args...)
	if err != nil {
		return false, fmt.Errorf("write projection %s: %w", t.Name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// WriteFenced writes a fetched state only if the row's sequence is still
// readSeq, the value read before the fetch (0: the row must not exist yet):
// an attempt whose fetch began before another write (a timed-out attempt
// still running, a reset workflow) loses. A nil version in row keeps the
// stored one; sticky columns stay true. It reports whether it wrote.
func WriteFenced(ctx context.Context, tx pgx.Tx, t ProjectionTable, row map[string]any, readSeq int64) (bool, error) {
	if err := t.checkRow(row); err != nil {
		return false, err
	}
	cols, vals := columns(row)
	tbl := ident(t.Name)
	var b strings.Builder
	if readSeq == 0 {
		b.WriteString("INSERT INTO " + tbl + " (")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(ident(c))
		}
		b.WriteString(") VALUES (")
		for i := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d", i+1)
		}
		b.WriteString(") ON CONFLICT (")
		for i, k := range t.Key {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(ident(k))
		}
		b.WriteString(") DO NOTHING")
	} else {
		b.WriteString("UPDATE " + tbl + " SET ")
		for i, c := range cols {
			if t.isKey(c) {
				continue
			}
			switch {
			case c == t.Version || (t.Tie != "" && c == t.Tie):
				fmt.Fprintf(&b, "%s = coalesce($%d, %s), ", ident(c), i+1, ident(c))
			case t.isSticky(c):
				fmt.Fprintf(&b, "%s = %s OR $%d, ", ident(c), ident(c), i+1)
			default:
				fmt.Fprintf(&b, "%s = $%d, ", ident(c), i+1)
			}
		}
		fmt.Fprintf(&b, "%s = %s + 1", ident(t.Seq), ident(t.Seq))
		if t.Touched != "" {
			fmt.Fprintf(&b, ", %s = now()", ident(t.Touched))
		}
		b.WriteString(" WHERE ")
		for i, c := range cols {
			if t.isKey(c) {
				fmt.Fprintf(&b, "%s = $%d AND ", ident(c), i+1)
			}
		}
		vals = append(vals, readSeq)
		fmt.Fprintf(&b, "%s = $%d", ident(t.Seq), len(vals))
	}
	tag, err := tx.Exec(ctx, b.String(), vals...)
	if err != nil {
		return false, fmt.Errorf("write projection %s: %w", t.Name, err)
	}
	return tag.RowsAffected() == 1, nil
}
