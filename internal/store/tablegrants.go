package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookinbox/hookinbox/hookintype"
)

// DomainColumns are the columns of hookinbox's own tables that belong to a
// domain's migration set, not to the core: a set may declare grants on
// these (a hookintype.Table naming the table and these Columns), on no
// other column of a core table. workspaces.credits_balance predates the
// domains' own sets (migration 0001 creates it, and the column is part of
// the contract): the credits domain owns it, its set declares it (ADD
// COLUMN IF NOT EXISTS) and its grants (the worker's and the console's
// UPDATE); the core only reads it, as part of a workspace.
var DomainColumns = map[string][]string{
	"workspaces": {"credits_balance"},
}

// TableGrants are the grants a migration set's table declaration asks for:
// the worker's and the console's privileges, the operator's and the
// console's SELECT (unless hidden; never the Private columns) and the payload reader's
// SELECT of the Private columns.
func TableGrants(t hookintype.Table) ([]Grant, error) {
	if t.Name == "" {
		return nil, errors.New("a table needs a name")
	}
	var out []Grant
	privileges := func(role string, ps []string) error {
		for _, p := range ps {
			p = strings.ToUpper(strings.TrimSpace(p))
			if !slices.Contains([]string{"SELECT", "INSERT", "UPDATE", "DELETE"}, p) {
				return fmt.Errorf("table %s: %s privilege %q is not SELECT, INSERT, UPDATE or DELETE", t.Name, role, p)
			}
			out = append(out, Grant{Role: role, Privilege: p, Table: t.Name, Columns: slices.Clone(t.Columns)})
		}
		return nil
	}
	if err := privileges(RoleWorker, t.Worker); err != nil {
		return nil, err
	}
	if err := privileges(RoleConsole, t.Console); err != nil {
		return nil, err
	}
	// The console reads what the operator reads (it shows what the CLI
	// shows: explain, lineage).
	for _, role := range []string{RoleOperator, RoleConsole} {
		switch {
		case t.OperatorHidden:
		case len(t.Columns) > 0:
			shown := slices.DeleteFunc(slices.Clone(t.Columns), func(c string) bool { return slices.Contains(t.Private, c) })
			if len(shown) > 0 {
				out = append(out, Grant{Role: role, Privilege: "SELECT", Table: t.Name, Columns: shown})
			}
		default:
			out = append(out, Grant{Role: role, Privilege: "SELECT", Table: t.Name, Except: slices.Clone(t.Private)})
		}
	}
	if len(t.Private) > 0 {
		out = append(out, Grant{Role: RolePayloadReader, Privilege: "SELECT", Table: t.Name, Columns: slices.Clone(t.Private)})
	}
	return out, nil
}
