package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// varName is an environment variable the docs must list: hookinbox's own
// (HOOKINBOX_*), the Temporal client's (TEMPORAL_*), OpenTelemetry's
// (OTEL_*) and DATABASE_URL.
var varName = regexp.MustCompile(`^(?:(?:HOOKINBOX|TEMPORAL|OTEL)(?:_[A-Z0-9]+)+|DATABASE_URL)$`)

// EnvVarsRead returns the variables (varName) the non-test Go files of
// dirs read, each with where ("file:line", relative to root). A read is a
// string literal that is exactly such a name, passed to a call
// (os.Getenv("HOOKINBOX_X"), the config parser's p.str("HOOKINBOX_X", …)) or
// given to a constant or variable (then read through it). Text that only
// mentions a variable, such as an error message or a comment, is not a read;
// nor is setting one (os.Setenv, t.Setenv, os.Unsetenv), nor a test's
// assertion about one (require.ErrorContains(t, err, "HOOKINBOX_X"), any
// call of testify's require or assert). In a _test.go file, which names
// variables as data too (a table row to remove), only a call of a function
// whose name holds "env" (os.Getenv, LookupEnv, a getenvOr of its own) reads.
func EnvVarsRead(root string, dirs ...string) (map[string][]string, error) {
	reads := map[string][]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no Go files in %s", filepath.Join(root, dir))
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			rs, err := fileEnvReads(fset, root, path)
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				reads[r.Name] = append(reads[r.Name], r.Where)
			}
		}
	}
	return reads, nil
}

// An EnvRead is one read of a variable (see EnvVarsRead for what a read
// is).
type EnvRead struct {
	Name  string
	Where string // "file:line", relative to the root
	Test  bool   // in a _test.go file
	Lab   bool   // under lab/
}

// fileEnvReads returns the reads of one Go file.
func fileEnvReads(fset *token.FileSet, root, path string) ([]EnvRead, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, path)
	rel = filepath.ToSlash(rel)
	test := strings.HasSuffix(rel, "_test.go")
	var out []EnvRead
	record := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !varName.MatchString(s) {
			return
		}
		out = append(out, EnvRead{
			Name: s, Where: fmt.Sprintf("%s:%d", rel, fset.Position(lit.Pos()).Line),
			Test: test, Lab: strings.HasPrefix(rel, "lab/"),
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			name := calledName(n.Fun)
			if name == "Setenv" || name == "Unsetenv" || isAssertion(n.Fun) {
				return true
			}
			if test && !strings.Contains(strings.ToLower(name), "env") {
				return true // a test names variables as data too
			}
			for _, a := range n.Args {
				record(a)
			}
		case *ast.ValueSpec:
			for _, v := range n.Values {
				record(v)
			}
		}
		return true
	})
	return out, nil
}

// calledName is the name of the function a call calls: Getenv for
// os.Getenv, str for p.str.
func calledName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// isAssertion says whether a call is testify's: require.X or assert.X.
func isAssertion(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && (x.Name == "require" || x.Name == "assert")
}

// TreeEnvReads returns every read of a variable in the Go files of the
// module at root, test files and lab/ included (hidden directories,
// testdata and nested modules are not the module's).
func TreeEnvReads(root string) ([]EnvRead, error) {
	var out []EnvRead
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			n := d.Name()
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rs, err := fileEnvReads(fset, root, p)
		out = append(out, rs...)
		return err
	})
	return out, err
}

// testVarPrefix marks a variable of the tests wherever it is read
// (hookintest, a package teams import, reads HOOKINBOX_TEST_DATABASE_URL).
const testVarPrefix = "HOOKINBOX_TEST_"

// SplitEnvReads sorts the reads into the service's, which the README's
// configuration table lists, and the tests' and the harness's, which its
// test variables table lists. A variable is the service's when non-test
// code outside lab/ reads it and it is not a HOOKINBOX_TEST_ one; every
// other variable read (by a test file, by lab/, HOOKINBOX_TEST_*) is the
// tests'. Each maps a name to where it is read.
func SplitEnvReads(reads []EnvRead) (service, tests map[string][]string) {
	service, tests = map[string][]string{}, map[string][]string{}
	for _, r := range reads {
		if !r.Test && !r.Lab && !strings.HasPrefix(r.Name, testVarPrefix) {
			service[r.Name] = append(service[r.Name], r.Where)
		}
	}
	for _, r := range reads {
		if _, ok := service[r.Name]; !ok {
			tests[r.Name] = append(tests[r.Name], r.Where)
		}
	}
	return service, tests
}

// ConfigTableVars returns the variable names (varName) in the first column of the
// configuration table of a README: the first table, under the heading line
// heading (e.g. "## Configuration") and before the next heading, whose
// first header cell is "variable". A cell may name several, each in its own
// code span.
func ConfigTableVars(readme []byte, heading string) ([]string, error) {
	lines := strings.Split(string(readme), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	var names []string
	inTable := false
	for _, line := range lines[start+1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := tableCells(line)
		if !inTable {
			if len(cells) > 0 && cells[0] == "variable" {
				inTable = true
			}
			continue
		}
		if len(cells) == 0 || strings.Trim(cells[0], "-: ") == "" {
			continue // the separator row
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			if varName.MatchString(m[1]) {
				names = append(names, m[1])
			}
		}
	}
	if !inTable {
		return nil, fmt.Errorf("no table with a \"variable\" column under %q", heading)
	}
	return names, nil
}

// codeSpan is an inline code span; group 1 its text.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// tableCells splits a Markdown table row into trimmed cells; `\|` is a
// literal bar inside a cell.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// CheckEnvTables compares the reads, split by SplitEnvReads, with the
// README's two tables (the names each lists, see ConfigTableVars) and
// returns one sentence per difference, sorted: a variable read but in
// neither table, one in the other table than its reads put it in, one in
// a table that nothing reads, one listed twice.
func CheckEnvTables(service, tests map[string][]string, configTable, testTable []string) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	inConfig, inTests := map[string]int{}, map[string]int{}
	for _, v := range configTable {
		inConfig[v]++
	}
	for _, v := range testTable {
		inTests[v]++
	}
	for v, where := range service {
		if inConfig[v] == 0 {
			add("%s is read (%s) but not in the configuration table", v, strings.Join(where, ", "))
		}
		if inTests[v] > 0 {
			add("%s is in the test variables table, but the service reads it (%s): it belongs in the configuration table only", v, strings.Join(where, ", "))
		}
	}
	for v, where := range tests {
		if inTests[v] == 0 {
			add("%s is read by tests or lab/ only (%s) but not in the test variables table", v, strings.Join(where, ", "))
		}
		if inConfig[v] > 0 {
			add("%s is in the configuration table, but only tests or lab/ read it (%s): it belongs in the test variables table", v, strings.Join(where, ", "))
		}
	}
	for _, table := range []struct {
		name  string
		count map[string]int
	}{{"configuration", inConfig}, {"test variables", inTests}} {
		for v, n := range table.count {
			_, s := service[v]
			_, t := tests[v]
			if !s && !t {
				add("%s is in the %s table but nothing reads it", v, table.name)
			}
			if n > 1 {
				add("%s is in the %s table %d times", v, table.name, n)
			}
		}
	}
	slices.Sort(problems)
	return problems
}
