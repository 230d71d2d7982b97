package command

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// `hookinbox migrate` on a database whose roles exist re-applies their
// grants: a privilege granted by hand since is gone afterwards.
func TestMigrateReappliesTheRolesGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	owner, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	_, err = owner.Exec(ctx, `GRANT SELECT ON endpoints TO `+store.RoleIntake)
	require.NoError(t, err)

	var out bytes.Buffer
	cfg := config.Default()
	cfg.DatabaseURL, cfg.SecretsKey = url, testenv.SecretsKey()
	require.NoError(t, migrate(ctx, cfg, &out))
	require.Contains(t, out.String(), "grants: re-applied for hookinbox_intake, hookinbox_worker, hookinbox_operator, hookinbox_console, hookinbox_payload_reader")

	intake, err := pgx.Connect(ctx, testenv.RoleURL(t, url, store.RoleIntake))
	require.NoError(t, err)
	t.Cleanup(func() { _ = intake.Close(context.Background()) })
	_, err = intake.Exec(ctx, `SELECT api_key FROM endpoints`)
	require.True(t, store.IsPermissionDenied(err), "the hand-made grant was revoked: %v", err)
}

// `hookinbox db roles` reports what it did to each role and never the
// password it set.
func TestDBRolesNeverPrintsPasswords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	// The password the test roles already have (none on the throw-away
	// cluster, which trusts loopback and ignores one), so other tests'
	// connections keep working.
	cfg, err := pgx.ParseConfig(testenv.RoleURL(t, url, store.RoleOperator))
	require.NoError(t, err)
	pw := cfg.Password
	if pw == "" {
		pw = "never-printed-0xC0FFEE"
	}
	var out bytes.Buffer
	admin := testenv.AdminURL(t, cfg.Database)
	require.NoError(t, applyRoles(ctx, admin, store.RoleOptions{Passwords: map[string]string{store.RoleOperator: pw}}, &out))
	require.Contains(t, out.String(), "role hookinbox_operator: updated (LOGIN, password set)")
	require.Contains(t, out.String(), "role hookinbox_intake: unchanged (LOGIN)")
	require.Contains(t, out.String(), "role hookinbox_payload_reader: unchanged (LOGIN)", "the console's payload pool logs in as it")
	require.Contains(t, out.String(), "role hookinbox_console: unchanged (LOGIN)")
	require.Contains(t, out.String(), "grants: applied")
	require.NotContains(t, out.String(), pw)
}
