// Package migrations holds the numbered SQL migrations of hookinbox's
// database, embedded in the binary, and applies them with jackc/tern. The same
// code runs in `hookinbox migrate`, `make run` and every test database.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable records the applied version.
const VersionTable = "public.schema_version"

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// Up applies every migration not yet applied. Concurrent callers are
// serialized by tern's advisory lock. onStart, when not nil, is told of each
// migration as it starts.
func Up(ctx context.Context, conn *pgx.Conn, onStart func(seq int32, name string)) (applied int32, err error) {
	m, err := migrate.NewMigratorEx(ctx, conn, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return 0, fmt.Errorf("migrator: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
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
