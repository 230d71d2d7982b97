// Package schema is the feedback domain's migration set: the alerts table
// (feedback_alerts), with what each process role may do with it.
// feedback.Register adds it to an App (hookinbox.WithMigrations); it
// imports hookintype alone, so the test harness can build a database with
// it too.
package schema

import (
	"embed"
	"io/fs"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Name is the set's name: its version table is
// public.schema_version_feedback.
const Name = "feedback"

//go:embed *.sql
var files embed.FS

// FS returns the set's numbered migration files.
func FS() fs.FS { return files }

// Tables are the set's table and its grants.
func Tables() []hookintype.Table {
	return []hookintype.Table{
		// The worker inserts an alert once per business key; the operator
		// and the console read every column.
		{Name: "feedback_alerts", Worker: []string{"INSERT"}},
		// ON CONFLICT ON CONSTRAINT feedback_alerts_business_key reads the
		// key's columns, and the worker reads no more.
		{Name: "feedback_alerts", Worker: []string{"SELECT"}, OperatorHidden: true,
			Columns: []string{"provider", "project", "environment", "feedback_id", "operation"}},
	}
}
