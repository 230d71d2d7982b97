package domains_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/domains"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/migrations"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

// The shipped App's database holds every built-in domain's table, created
// by the domains' own sets (each at version 1), not by the core.
func TestBuiltinAppHasEveryDomainTable(t *testing.T) {
	t.Parallel()
	a, err := domains.New()
	require.NoError(t, err)
	h := hookintest.New(t, a)
	ctx := context.Background()
	for _, rel := range testenv.BuiltinDomainTables() {
		var ok bool
		require.NoError(t, h.DB.QueryRow(ctx, `SELECT to_regclass('public.' || $1) IS NOT NULL`, rel).Scan(&ok))
		require.True(t, ok, rel)
	}
	for _, set := range []string{"credits", "subscriptions", "feedback"} {
		var v int32
		require.NoError(t, h.DB.QueryRow(ctx, `SELECT version FROM public.schema_version_`+set).Scan(&v))
		require.Equal(t, int32(1), v, set)
	}
}

// An existing deployment, migrated by the core migrations as they were
// before the domains had sets (0001..0019 as main had them, creating the
// domains' tables: coreBefore), upgrades in place: the core applies only
// its later migrations, each domain's set adopts its tables at version 1
// with their rows, and the schema is then exactly a fresh database's.
func TestExistingDatabaseAdoptsTheDomainTables(t *testing.T) {
	t.Parallel()
	fresh := testenv.DatabaseURL(t) // also makes sure the roles exist
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	name := fmt.Sprintf("hookinbox_adopt_%d", os.Getpid())
	admin, err := pgx.Connect(ctx, testenv.AdminURL(t, "postgres"))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	admin.Close(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testenv.AdminURL(t, "postgres"))
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	conn, err := pgx.Connect(ctx, testenv.AdminURL(t, name))
	require.NoError(t, err)
	defer conn.Close(ctx)

	old, err := migrate.NewMigratorEx(ctx, conn, migrations.VersionTable, &migrate.MigratorOptions{})
	require.NoError(t, err)
	require.NoError(t, old.LoadMigrations(coreBefore(t)))
	require.NoError(t, old.Migrate(ctx))
	_, err = conn.Exec(ctx, `
		INSERT INTO workspaces (id, credits_balance) VALUES ('ws', 100);
		INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation, workspace_id, credits,
		                           amount_paid, currency, event_key)
		     VALUES ('stripe', 'acct', 'test', 'in_1', 'grant', 'ws', 100, 1000, 'usd', 'k');
		INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key)
		     VALUES ('standard', 'p', 'test', 'f1', 'initial-alert', 'ws', 'k2')`)
	require.NoError(t, err)

	n, err := migrations.Up(ctx, conn, nil)
	require.NoError(t, err)
	// The core applies only what came after 0019 (none of it domain DDL).
	files, err := os.ReadDir("../migrations")
	require.NoError(t, err)
	var after int32
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".sql") && f.Name() > "0019_~" {
			after++
		}
	}
	require.Equal(t, after, n, "the core applies to a database at 0019 only its migrations after 0019")
	a, err := domains.New()
	require.NoError(t, err)
	biz := app.BusinessOf(a)
	for _, set := range biz.Migrations {
		n, err := migrations.UpSet(ctx, conn, set, nil)
		require.NoError(t, err, set.Name)
		require.Equal(t, int32(1), n, set.Name)
	}
	_, _, err = store.ReapplyGrants(ctx, conn, biz.Grants...)
	require.NoError(t, err)

	var balance, grants, alerts int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT credits_balance FROM workspaces WHERE id = 'ws'),
		(SELECT count(*) FROM credit_grants), (SELECT count(*) FROM feedback_alerts)`).Scan(&balance, &grants, &alerts))
	require.Equal(t, []int64{100, 1, 1}, []int64{balance, grants, alerts}, "the adopted tables keep their rows")

	freshConn, err := pgx.Connect(ctx, fresh)
	require.NoError(t, err)
	defer freshConn.Close(ctx)
	require.Equal(t, schemaOf(t, freshConn), schemaOf(t, conn), "an adopted database's schema is a fresh one's")
}

// schemaOf describes schema public: every column (by name, not position),
// constraint, index and view definition, and each role's privileges.
func schemaOf(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable
		       || ' default=' || coalesce(column_default, '')
		  FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL
		SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		  FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		UNION ALL
		SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL
		SELECT 'view ' || viewname || ' ' || definition FROM pg_views WHERE schemaname = 'public'
		UNION ALL
		SELECT 'grant ' || grantee || ' ' || privilege_type || ' ' || table_name
		  FROM information_schema.role_table_grants WHERE table_schema = 'public' AND grantee LIKE 'hookinbox_%'
		UNION ALL
		SELECT 'column grant ' || grantee || ' ' || privilege_type || ' ' || table_name || '.' || column_name
		  FROM information_schema.column_privileges WHERE table_schema = 'public' AND grantee LIKE 'hookinbox_%'
		ORDER BY 1`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// coreBefore is the core set 0001..0019 as a release before the domains'
// sets had it: today's files, but for the two whose domain DDL moved into
// the sets (0002, 0010), kept as they were in testdata/core-0019.
func coreBefore(t *testing.T) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	entries, err := fs.ReadDir(migrations.FS(), ".")
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") || e.Name() > "0019_~" {
			continue
		}
		b, err := fs.ReadFile(migrations.FS(), e.Name())
		require.NoError(t, err)
		if old, err := os.ReadFile(filepath.Join("testdata/core-0019", e.Name())); err == nil {
			b = old
		}
		out[e.Name()] = &fstest.MapFile{Data: b}
	}
	require.Len(t, out, 19)
	return out
}
