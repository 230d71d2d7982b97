package hookintype

// Table declares one table (or view) a migration set creates, and what
// hookinbox's process roles may do with it, so least privilege covers it
// too: the worker (where handlers run) gets Worker, the console gets
// Console (the operator acts that write it), the read-only operator role
// and the console may SELECT it unless OperatorHidden, and never its
// Private columns (personal data: only the payload reader role reads
// those). hookinbox.Table is this type.
type Table struct {
	// Name is the table's name in schema public.
	Name string
	// Worker lists the worker's privileges: SELECT, INSERT, UPDATE, DELETE.
	Worker []string
	// Console lists the console role's privileges (SELECT, INSERT, UPDATE,
	// DELETE), for an operator act of hookinbox's that writes the table.
	Console []string
	// OperatorHidden keeps the table from the operator role altogether.
	OperatorHidden bool
	// Private columns are hidden from the operator role.
	Private []string
	// Columns, when set, narrows every grant of this declaration to these
	// columns. A set may own a column of a hookinbox table only where
	// hookinbox leaves it to a domain (workspaces.credits_balance, the
	// credits domain's); its declaration then names the table and Columns.
	Columns []string
}
