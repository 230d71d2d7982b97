package migrations_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// freshDatabase creates an empty database and connects to it.
func freshDatabase(t *testing.T, name string) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testenv.AdminURL(t, "postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	db := fmt.Sprintf("%s_%d", name, os.Getpid())
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, testenv.AdminURL(t, db))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn, testenv.AdminURL(t, db)
}

// The production migrations apply to an empty database.
func TestEveryMigrationAppliesToAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	conn, _ := freshDatabase(t, "mig_all")
	n, err := migrations.Up(context.Background(), conn, nil)
	require.NoError(t, err)
	require.Positive(t, n)
	n, err = migrations.Up(context.Background(), conn, nil)
	require.NoError(t, err)
	require.Zero(t, n, "applied twice is a no-op")
}

// A migration whose ALTER TABLE cannot get its lock gives up after the lock
// timeout instead of queueing (and every intake INSERT behind it), and
// applies once the lock is free.
func TestAMigrationGivesUpOnABusyTableInsteadOfStallingTheIntake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, url := freshDatabase(t, "mig_lock")
	_, err := conn.Exec(ctx, `CREATE TABLE inboxlike (id bigint PRIMARY KEY)`)
	require.NoError(t, err)

	holder, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO inboxlike VALUES (1)`) // a long intake transaction: ROW EXCLUSIVE
	require.NoError(t, err)

	fsys := fstest.MapFS{"001_add.sql": {Data: []byte(`ALTER TABLE inboxlike ADD COLUMN note text;`)}}
	_, err = migrations.UpFS(ctx, conn, fsys, 300*time.Millisecond, nil)
	require.Error(t, err)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "55P03", pgErr.Code, "lock_not_available")

	require.NoError(t, tx.Commit(ctx))
	n, err := migrations.UpFS(ctx, conn, fsys, 300*time.Millisecond, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var lt string
	require.NoError(t, conn.QueryRow(ctx, `SHOW lock_timeout`).Scan(&lt))
	require.Equal(t, "0", lt, "the session's lock_timeout is restored")
}
