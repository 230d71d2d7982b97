package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// varName is one of hookinbox's own environment variables.
var varName = regexp.MustCompile(`^HOOKINBOX_[A-Z0-9_]+$`)

// EnvVarsRead returns the HOOKINBOX_* variables the non-test Go files of
// dirs read, each with where ("file:line", relative to root). A read is a
// string literal that is exactly such a name, passed to a call
// (os.Getenv("HOOKINBOX_X"), the config parser's p.str("HOOKINBOX_X", …)) or
// given to a constant or variable (then read through it). Text that only
// mentions a variable, such as an error message or a comment, is not a read.
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
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, path)
			record := func(e ast.Expr) {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || !varName.MatchString(s) {
					return
				}
				reads[s] = append(reads[s], fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(lit.Pos()).Line))
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
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
		}
	}
	return reads, nil
}

// ConfigTableVars returns the HOOKINBOX_* names in the first column of the
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

// CheckEnvVars compares what the code reads with what the table documents
// and returns one sentence per difference, sorted: a variable read but not
// documented, one documented that nothing reads, one documented twice.
func CheckEnvVars(reads map[string][]string, documented []string) []string {
	var problems []string
	seen := map[string]int{}
	for _, v := range documented {
		seen[v]++
	}
	for v, where := range reads {
		if seen[v] == 0 {
			problems = append(problems, fmt.Sprintf("%s is read (%s) but not in the configuration table", v, strings.Join(where, ", ")))
		}
	}
	for v, n := range seen {
		if _, ok := reads[v]; !ok {
			problems = append(problems, fmt.Sprintf("%s is in the configuration table but nothing scanned reads it", v))
		}
		if n > 1 {
			problems = append(problems, fmt.Sprintf("%s is in the configuration table %d times", v, n))
		}
	}
	slices.Sort(problems)
	return problems
}
