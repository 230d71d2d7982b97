// Package schema is the subscriptions domain's migration set: the
// subscription projection (subscription_projection) and the access view
// over it (workspace_access), with what each process role may do with them.
// subscriptions.Register adds it to an App (hookinbox.WithMigrations); it
// imports hookintype alone, so the test harness can build a database with
// it too.
package schema

import (
	"embed"
	"io/fs"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Name is the set's name: its version table is
// public.schema_version_subscriptions.
const Name = "subscriptions"

//go:embed *.sql
var files embed.FS

// FS returns the set's numbered migration files.
func FS() fs.FS { return files }

// Tables are the set's tables (and view) and their grants.
func Tables() []hookintype.Table {
	return []hookintype.Table{
		// Versioned and fenced writes: insert, compare, update.
		{Name: "subscription_projection", Worker: []string{"SELECT", "INSERT", "UPDATE"}},
		{Name: "workspace_access", Worker: []string{"SELECT"}},
	}
}
