package docscheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The per-role privileges of docs/security.md and the README's roles table
// are generated from PostgreSQL's catalog on a migrated database whose
// grants were applied (store.ApplyRoles), never written by hand: RoleTables
// reads them, RolesBlock renders them, and the docscheck test compares the
// marked blocks of both files with what it renders (HOOKINBOX_UPDATE_DOCS=1
// writes them instead).

// RolePrivileges are what one role may do on schema public: by table,
// each privilege with its columns ("" for the whole table, else the
// columns granted, or "all but …" when fewer are left out), and the
// functions it may execute.
type RolePrivileges struct {
	Role      string
	Tables    map[string]map[string]string // table → privilege → columns
	Functions []string
}

// RoleTables reads the privileges of roles from the catalog of db.
func RoleTables(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, roles []string) ([]RolePrivileges, error) {
	out := make([]RolePrivileges, 0, len(roles))
	for _, role := range roles {
		rp := RolePrivileges{Role: role, Tables: map[string]map[string]string{}}
		rows, err := db.Query(ctx, `
			SELECT table_name, privilege_type FROM information_schema.role_table_grants
			 WHERE grantee = $1 AND table_schema = 'public' ORDER BY 1, 2`, role)
		if err != nil {
			return nil, err
		}
		type tp struct{ Table, Priv string }
		whole, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tp])
		if err != nil {
			return nil, err
		}
		for _, w := range whole {
			if rp.Tables[w.Table] == nil {
				rp.Tables[w.Table] = map[string]string{}
			}
			rp.Tables[w.Table][w.Priv] = ""
		}
		rows, err = db.Query(ctx, `
			SELECT g.table_name, g.privilege_type, array_agg(g.column_name::text ORDER BY c.ordinal_position),
			       (SELECT array_agg(a.column_name::text ORDER BY a.ordinal_position) FROM information_schema.columns a
			         WHERE a.table_schema = 'public' AND a.table_name = g.table_name)
			  FROM information_schema.role_column_grants g
			  JOIN information_schema.columns c ON c.table_schema = g.table_schema AND c.table_name = g.table_name
			                                   AND c.column_name = g.column_name
			 WHERE g.grantee = $1 AND g.table_schema = 'public'
			 GROUP BY 1, 2 ORDER BY 1, 2`, role)
		if err != nil {
			return nil, err
		}
		type cp struct {
			Table, Priv string
			Cols, All   []string
		}
		colGrants, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cp])
		if err != nil {
			return nil, err
		}
		for _, c := range colGrants {
			if rp.Tables[c.Table] == nil {
				rp.Tables[c.Table] = map[string]string{}
			}
			if _, whole := rp.Tables[c.Table][c.Priv]; whole {
				continue // the table grant covers every column
			}
			rp.Tables[c.Table][c.Priv] = columnsText(c.Cols, c.All)
		}
		rows, err = db.Query(ctx, `
			SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			 WHERE n.nspname = 'public' AND has_function_privilege($1, p.oid, 'EXECUTE')
			   AND NOT has_function_privilege('public', p.oid, 'EXECUTE') ORDER BY 1`, role)
		if err != nil {
			return nil, err
		}
		if rp.Functions, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, err
		}
		out = append(out, rp)
	}
	return out, nil
}

// columnsText is cols, or "all but …" when that is shorter.
func columnsText(cols, all []string) string {
	if len(cols) == len(all) {
		return ""
	}
	var missing []string
	for _, a := range all {
		if !slices.Contains(cols, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) < len(cols) {
		return "all but " + strings.Join(missing, ", ")
	}
	return strings.Join(cols, ", ")
}

// RolesDetail renders one section per role: a table of what it reads and
// writes, by table and privilege, and the functions it may call.
func RolesDetail(rps []RolePrivileges) string {
	var b strings.Builder
	for _, rp := range rps {
		fmt.Fprintf(&b, "#### `%s`\n\n", rp.Role)
		if len(rp.Tables) == 0 && len(rp.Functions) == 0 {
			b.WriteString("Nothing in schema public.\n\n")
			continue
		}
		b.WriteString("| table | SELECT (reads) | INSERT | UPDATE | DELETE |\n| --- | --- | --- | --- | --- |\n")
		tables := make([]string, 0, len(rp.Tables))
		for t := range rp.Tables {
			tables = append(tables, t)
		}
		slices.Sort(tables)
		for _, t := range tables {
			fmt.Fprintf(&b, "| `%s` |", t)
			for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
				cols, ok := rp.Tables[t][p]
				switch {
				case !ok:
					b.WriteString(" |")
				case cols == "":
					b.WriteString(" every column |")
				default:
					fmt.Fprintf(&b, " %s |", cols)
				}
			}
			b.WriteString("\n")
		}
		if len(rp.Functions) > 0 {
			b.WriteString("\nMay execute: ")
			for i, f := range rp.Functions {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "`%s`", f)
			}
			b.WriteString(".\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// RolesSummary renders one row per role: the tables it reads, the tables
// it writes (with the privileges), the functions it calls.
func RolesSummary(rps []RolePrivileges) string {
	var b strings.Builder
	b.WriteString("| role | reads | writes | calls |\n| --- | --- | --- | --- |\n")
	for _, rp := range rps {
		tables := make([]string, 0, len(rp.Tables))
		for t := range rp.Tables {
			tables = append(tables, t)
		}
		slices.Sort(tables)
		var reads, writes []string
		for _, t := range tables {
			if _, ok := rp.Tables[t]["SELECT"]; ok {
				reads = append(reads, "`"+t+"`")
			}
			var ps []string
			for _, p := range []string{"INSERT", "UPDATE", "DELETE"} {
				if _, ok := rp.Tables[t][p]; ok {
					ps = append(ps, p[:1])
				}
			}
			if len(ps) > 0 {
				writes = append(writes, "`"+t+"` ("+strings.Join(ps, "")+")")
			}
		}
		fns := make([]string, len(rp.Functions))
		for i, f := range rp.Functions {
			fns[i] = "`" + f[:strings.Index(f, "(")] + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", rp.Role, orNone(reads), orNone(writes), orNone(fns))
	}
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// Marked blocks: the generated text sits between these lines.
const (
	rolesBegin = "<!-- roles:begin (generated from the grants: HOOKINBOX_UPDATE_DOCS=1 go test ./internal/docscheck -run TestRoleDocs) -->"
	rolesEnd   = "<!-- roles:end -->"
)

// ReplaceRolesBlock returns doc with its marked roles block replaced by
// block, and whether doc has one.
func ReplaceRolesBlock(doc, block string) (string, bool) {
	i := strings.Index(doc, rolesBegin)
	j := strings.Index(doc, rolesEnd)
	if i < 0 || j < i {
		return doc, false
	}
	return doc[:i] + rolesBegin + "\n\n" + block + "\n" + doc[j:], true
}
