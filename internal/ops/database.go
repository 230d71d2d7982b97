package ops

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/migrations"
)

// Database administration: the processes' roles and their grants. These
// acts run on a connection of the schema owner (or a superuser), before
// any store is open (the first migration has not run yet, or the roles do
// not exist), so they are functions of that connection, not of a Service.
// The grant list itself is the store's (internal/store/roles.go).

// The database roles each process connects as.
const (
	// RoleIntake is the intake's role (HOOKINBOX_INTAKE_DATABASE_URL).
	RoleIntake = store.RoleIntake
	// RoleWorker is the worker's role (HOOKINBOX_WORKER_DATABASE_URL).
	RoleWorker = store.RoleWorker
	// RoleOperator is the read-only operator CLI's role
	// (HOOKINBOX_OPERATOR_DATABASE_URL).
	RoleOperator = store.RoleOperator
	// RoleConsole is the console's role (HOOKINBOX_CONSOLE_DATABASE_URL).
	RoleConsole = store.RoleConsole
	// RolePayloadReader holds the payload columns: the console's payload
	// pool logs in as it (HOOKINBOX_PAYLOAD_DATABASE_URL), and it is
	// granted to an operator who must read them.
	RolePayloadReader = store.RolePayloadReader
)

// RoleOptions say how ApplyRoles creates or updates the roles (passwords,
// NOLOGIN).
type RoleOptions = store.RoleOptions

// RoleChange is what ApplyRoles did to one role (never its password).
type RoleChange = store.RoleChange

// ApplyRoles creates the missing roles, updates their login and the given
// passwords, and applies their grants, revoking any other privilege they
// hold, in one transaction on db (a connection of the schema owner with
// CREATEROLE, or a superuser's). It returns what it did to each role and
// the number of grant statements.
func ApplyRoles(ctx context.Context, db store.TxBeginner, o RoleOptions) ([]RoleChange, int, error) {
	return store.ApplyRoles(ctx, db, o)
}

// ReapplyGrants applies the grants again for the roles that exist (none
// when no role does), as `hookinbox migrate` does after migrating, so a
// column or table a migration added is covered as the grant list says. It
// returns those roles and the number of statements.
// extra are the grants on a team's own tables (the App's WithMigrations).
func ReapplyGrants(ctx context.Context, db store.TxBeginner, extra ...store.Grant) ([]string, int, error) {
	return store.ReapplyGrants(ctx, db, extra...)
}

// UpSet applies a team's own migrations (the App's WithMigrations) after
// hookinbox's, as `hookinbox migrate` and the dev stack do.
func UpSet(ctx context.Context, conn *pgx.Conn, set migrations.Set, onStart func(seq int32, name string)) (int32, error) {
	return migrations.UpSet(ctx, conn, set, onStart)
}

// IsPermissionDenied reports that the database refused an act for want of
// a privilege of the connection's role (a read-only operator's, say).
func IsPermissionDenied(err error) bool { return store.IsPermissionDenied(err) }
