// Package migrations holds the numbered SQL migrations of hookinbox's
// database, embedded in the binary, and applies them with jackc/tern. The same
// code runs in `hookinbox migrate`, `make run` and every test database.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable records the applied version.
const VersionTable = "public.schema_version"

// LockTimeout bounds how long a migration waits for a table lock. A
// migration's ALTER TABLE queues for an ACCESS EXCLUSIVE lock, and every
// intake INSERT queues behind that request: without a bound, one long
// transaction on the inbox turns a migration into an intake outage. With
// it, the migration fails fast (SQLSTATE 55P03) and is simply run again.
const LockTimeout = 5 * time.Second

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// Up applies every migration not yet applied. Concurrent callers are
// serialized by tern's advisory lock. onStart, when not nil, is told of each
// migration as it starts.
func Up(ctx context.Context, conn *pgx.Conn, onStart func(seq int32, name string)) (applied int32, err error) {
	return up(ctx, conn, files, LockTimeout, onStart)
}

// Set is a team's own migrations (the public App's WithMigrations): the
// same numbered files, applied after hookinbox's own, recorded in a version
// table of their own so the two sequences never mix.
type Set struct {
	// Name names the set: its version table is public.schema_version_<name>.
	Name string
	FS   fs.FS
}

// VersionTable is the set's version table.
func (s Set) VersionTable() string { return "public.schema_version_" + s.Name }

// UpSet applies every migration of set not yet applied, as Up does for
// hookinbox's own.
func UpSet(ctx context.Context, conn *pgx.Conn, set Set, onStart func(seq int32, name string)) (int32, error) {
	if !validSetName(set.Name) {
		return 0, fmt.Errorf("migration set name %q: lower-case letters, digits and _ only", set.Name)
	}
	return upTable(ctx, conn, set.FS, set.VersionTable(), LockTimeout, onStart)
}

func validSetName(n string) bool {
	if n == "" || len(n) > 40 {
		return false
	}
	for _, c := range n {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func up(ctx context.Context, conn *pgx.Conn, fsys fs.FS, lockTimeout time.Duration, onStart func(seq int32, name string)) (int32, error) {
	return upTable(ctx, conn, fsys, VersionTable, lockTimeout, onStart)
}

func upTable(ctx context.Context, conn *pgx.Conn, fsys fs.FS, versionTable string, lockTimeout time.Duration, onStart func(seq int32, name string)) (int32, error) {
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", lockTimeout.Milliseconds())); err != nil {
		return 0, fmt.Errorf("set lock_timeout: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout") }()
	m, err := migrate.NewMigratorEx(ctx, conn, versionTable, &migrate.MigratorOptions{})
	if err != nil {
		return 0, fmt.Errorf("migrator: %w", err)
	}
	if err := m.LoadMigrations(fsys); err != nil {
		return 0, fmt.Errorf("load migrations: %w", err)
	}
	before, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("current version: %w", err)
	}
	if onStart != nil {
		m.OnStart = func(seq int32, name, direction, _ string) {
			if direction == "up" {
				onStart(seq, name)
			}
		}
	}
	if err := m.Migrate(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	after, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("current version: %w", err)
	}
	return after - before, nil
}
