// Package schema is the credits domain's migration set: the tables of the
// credits ledger (credit_grants, credit_adjustments) and the balance
// (workspaces.credits_balance), with what each process role may do with
// them. credits.Register adds it to an App (hookinbox.WithMigrations); it
// imports hookintype alone, so the test harness can build a database with
// it too.
package schema

import (
	"embed"
	"io/fs"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Name is the set's name: its version table is public.schema_version_credits.
const Name = "credits"

//go:embed *.sql
var files embed.FS

// FS returns the set's numbered migration files.
func FS() fs.FS { return files }

// Tables are the set's tables and their grants.
func Tables() []hookintype.Table {
	return []hookintype.Table{
		// Grants are inserted once per business key and read back.
		{Name: "credit_grants", Worker: []string{"SELECT", "INSERT"}},
		// Credit notes and their voids (the worker), and the operator's
		// corrections (`workspaces adjust`, the console's adjustment):
		// inserted once per business key, the existing one read back.
		{Name: "credit_adjustments", Worker: []string{"SELECT", "INSERT"}, Console: []string{"INSERT"}},
		// The balance, which both change in the ledger's transaction
		// (the row locked FOR UPDATE); everyone reads workspaces.
		{Name: "workspaces", Columns: []string{"credits_balance"}, Worker: []string{"UPDATE"}, Console: []string{"UPDATE"},
			OperatorHidden: true},
	}
}
