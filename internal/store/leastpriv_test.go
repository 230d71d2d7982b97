package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/migrations"
)

// L6 (issue #32): a team's migrations run as the owner, and used to be
// able to widen every process role past the grant reset: a GRANT … TO
// PUBLIC (on a team table or one of hookinbox's), a role membership, a
// SECURITY DEFINER function anyone may call. After the team's migration
// and the reset `hookinbox migrate` runs, none of it is left: nothing in
// schema public grants to PUBLIC (tables, sequences, functions), no process
// role is a member of another role, and no SECURITY DEFINER function is
// executable by PUBLIC or by a process role unless it is one of
// store.FunctionGrants.
func TestLeastPrivilegeTeamMigrationCannotWidenTheProcessRoles(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	// A group role of this test only (roles are server-wide: granting a
	// process role a real one would widen it in every parallel test).
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	group := "team_group_" + hex.EncodeToString(suffix)
	_, err := b.owner.Pool.Exec(ctx, `CREATE ROLE `+group+` NOLOGIN`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.owner.Pool.Exec(context.Background(), `DROP OWNED BY `+group)
		_, _ = b.owner.Pool.Exec(context.Background(), `DROP ROLE `+group)
	})
	team := migrations.Set{Name: "widen", FS: fstest.MapFS{"0001_widen.sql": {Data: []byte(`
CREATE TABLE team_things (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, secret text);
GRANT ALL ON team_things TO PUBLIC;
GRANT ALL ON SEQUENCE team_things_id_seq TO PUBLIC;
GRANT SELECT ON endpoints TO PUBLIC;
GRANT SELECT ON api_tokens TO ` + group + `;
GRANT ` + group + ` TO ` + store.RoleIntake + `;
CREATE FUNCTION team_read_keys() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER AS $$ SELECT api_key FROM public.endpoints $$;
GRANT EXECUTE ON FUNCTION team_read_keys() TO PUBLIC;
GRANT EXECUTE ON FUNCTION team_read_keys() TO ` + store.RoleConsole + `;
CREATE SCHEMA team_shadow;
CREATE TABLE team_shadow.endpoints (slug text);
GRANT USAGE ON SCHEMA team_shadow TO ` + store.RoleWorker + `;
GRANT SELECT ON team_shadow.endpoints TO ` + store.RoleWorker + `;
ALTER ROLE ` + store.RoleWorker + ` CREATEDB;
DO $$ BEGIN
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET search_path = team_shadow, public', '` + store.RoleWorker + `', current_database());
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET work_mem = %L', '` + store.RoleWorker + `', current_database(), '5MB');
END $$;
---- create above / drop below ----
DROP SCHEMA team_shadow CASCADE;
DROP FUNCTION team_read_keys();
DROP TABLE team_things;`)}}}
	conn, err := b.owner.Pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = migrations.UpSet(ctx, conn.Conn(), team, nil)
	conn.Release()
	require.NoError(t, err)

	in := b.as(t, store.RoleIntake)
	_, err = in.Pool.Exec(ctx, `SELECT token_sha256 FROM api_tokens`)
	require.NoError(t, err, "the widening works before the reset")
	wk := b.as(t, store.RoleWorker)
	var path string
	require.NoError(t, wk.Pool.QueryRow(ctx, `SHOW search_path`).Scan(&path))
	require.Contains(t, path, "team_shadow", "the worker's unqualified names resolve in the team's schema first, before the reset")
	wk.Pool.Close()

	_, _, err = store.ReapplyGrants(ctx, b.owner.Pool)
	require.NoError(t, err)

	var public []string
	rows, err := b.owner.Pool.Query(ctx, `
		SELECT table_name || ' ' || privilege_type FROM information_schema.role_table_grants
		 WHERE grantee = 'PUBLIC' AND table_schema = 'public'
		UNION ALL
		SELECT table_name || '.' || column_name || ' ' || privilege_type FROM information_schema.column_privileges
		 WHERE grantee = 'PUBLIC' AND table_schema = 'public'
		UNION ALL
		SELECT object_name || ' ' || privilege_type FROM information_schema.usage_privileges
		 WHERE grantee = 'PUBLIC' AND object_schema = 'public'
		UNION ALL
		SELECT routine_name || ' ' || privilege_type FROM information_schema.routine_privileges
		 WHERE grantee = 'PUBLIC' AND routine_schema = 'public'`)
	require.NoError(t, err)
	public, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, public, "schema public grants to PUBLIC")

	rows, err = b.owner.Pool.Query(ctx, `
		SELECT m.rolname || ' in ' || g.rolname FROM pg_auth_members a
		  JOIN pg_roles m ON m.oid = a.member JOIN pg_roles g ON g.oid = a.roleid
		 WHERE m.rolname = ANY($1)`, store.Roles)
	require.NoError(t, err)
	members, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, members, "a process role is a member of another role")

	var allowed []string
	for _, f := range store.FunctionGrants {
		// The catalog's own spelling of the signature (timestamptz is
		// "timestamp with time zone"), as the query below prints it.
		var sig string
		require.NoError(t, b.owner.Pool.QueryRow(ctx, `SELECT ('public.' || $1)::regprocedure::text`, f.Function).Scan(&sig))
		allowed = append(allowed, f.Role+" "+sig)
	}
	rows, err = b.owner.Pool.Query(ctx, `
		SELECT r.rolname || ' ' || p.oid::regprocedure::text
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace, unnest($1::text[]) AS r(rolname)
		 WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')
		   AND has_function_privilege(r.rolname, p.oid, 'EXECUTE')`, append([]string{"public"}, store.Roles...))
	require.NoError(t, err)
	callable, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, c := range callable {
		require.Contains(t, allowed, c, "a SECURITY DEFINER function is callable beyond store.FunctionGrants")
	}

	wk = b.as(t, store.RoleWorker)
	var timeout string
	require.NoError(t, wk.Pool.QueryRow(ctx, `SELECT current_setting('search_path'), current_setting('work_mem')`).Scan(&path, &timeout))
	require.NotContains(t, path, "team_shadow", "a role setting that moves the worker's names is reset")
	require.Equal(t, "5MB", timeout, "an operator's tuning of the role stays")
	var createdb bool
	require.NoError(t, b.owner.Pool.QueryRow(ctx, `SELECT rolcreatedb FROM pg_roles WHERE rolname = $1`, store.RoleWorker).Scan(&createdb))
	require.False(t, createdb, "an attribute a team's migration gave the worker is taken back")

	_, err = in.Pool.Exec(ctx, `SELECT token_sha256 FROM api_tokens`)
	requireDenied(t, err, "the intake reads token hashes through a team's group role")
	_, err = in.Pool.Exec(ctx, `SELECT api_key FROM endpoints`)
	requireDenied(t, err, "the intake reads API keys through PUBLIC")
	con := b.as(t, store.RoleConsole)
	_, err = con.Pool.Exec(ctx, `SELECT team_read_keys()`)
	requireDenied(t, err, "the console reads API keys through a team's SECURITY DEFINER function")
}

// M1 (issue #32): audit entries written before URLs were cut to their
// origin are redacted by migration 0021. Its UPDATE, run again on an entry
// written as an older release wrote it, leaves the origins and nothing of
// the paths, queries or credentials, and agrees with store.RedactURLs.
func TestLeastPrivilegeMigrationRedactsURLsInOlderAuditEntries(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	raw, err := fs.ReadFile(migrations.FS(), "0021_least_privilege.sql")
	require.NoError(t, err)
	up, _, _ := strings.Cut(string(raw), "---- create above / drop below ----")
	i := strings.Index(up, "UPDATE operator_actions")
	require.Positive(t, i, "migration 0021 redacts the audit")
	update := up[i:]
	details := `{"target": "https://hooks.team.example/in/PATHtok?token=QUERYtok&x=1", "url": "http://u:PASSWD@10.0.0.1:8080/a\"b",
		"previous_api_base_url": "https://api.stripe.com", "nested": {"list": ["https://slack.example/services/T0KEN"]}, "note": "no url here"}`
	var id int64
	require.NoError(t, b.owner.Pool.QueryRow(ctx, `INSERT INTO operator_actions (actor, action, target, reason, details)
		VALUES ('old', 'notification_add', 'notification:x', 'r', $1::jsonb) RETURNING id`, details).Scan(&id))
	_, err = b.owner.Pool.Exec(ctx, update)
	require.NoError(t, err)
	var got string
	require.NoError(t, b.owner.Pool.QueryRow(ctx, `SELECT details::text FROM operator_actions WHERE id = $1`, id).Scan(&got))
	for _, gone := range []string{"PATHtok", "QUERYtok", "PASSWD", "T0KEN", "example/in", `8080/a`} {
		require.NotContains(t, got, gone)
	}
	for _, kept := range []string{`"https://hooks.team.example"`, `"http://10.0.0.1:8080"`, `"https://api.stripe.com"`,
		`"https://slack.example"`, `"no url here"`} {
		require.Contains(t, got, kept)
	}
	var viaGo, viaSQL map[string]any
	require.NoError(t, json.Unmarshal(store.RedactURLs([]byte(details)), &viaGo))
	require.NoError(t, json.Unmarshal([]byte(got), &viaSQL))
	require.Equal(t, viaGo, viaSQL, "the migration and store.RedactURLs cut the same")
}
