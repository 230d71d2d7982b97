package layers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

const module = "github.com/hookinbox/hookinbox/"

// pkgInfo is what go list says of one package.
type pkgInfo struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// list runs go list -json over patterns (module-relative, "." the root).
func list(t *testing.T, patterns ...string) []pkgInfo {
	t.Helper()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	args := []string{"list", "-json=ImportPath,Standard,Imports,Deps"}
	for _, p := range patterns {
		if p == "." {
			args = append(args, strings.TrimSuffix(module, "/"))
		} else {
			args = append(args, module+p)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v", patterns)
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// standard reports whether an import path is the standard library's (its
// first segment has no dot).
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// covers reports whether banned (a module-relative or full path) matches
// path on whole path segments.
func covers(banned, path string) bool {
	full := banned
	if standard(banned) {
		full = module + banned
	}
	return path == full || strings.HasPrefix(path, full+"/")
}

// rule is one row of docs/architecture.md's layers table.
type rule struct {
	layer    string
	packages []string
	banned   []string
	direct   map[string]bool // banned entries checked against direct imports only
	except   []string        // what `*` lets through besides the standard library
}

var backticked = regexp.MustCompile("`([^`]+)`( \\*\\(directly\\)\\*)?")

// rules parses the layers table: the rows under its header, until the
// first line that is not a table row.
func rules(t *testing.T, doc string) []rule {
	t.Helper()
	var out []rule
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| layer | packages | must not depend on |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		r := rule{layer: strings.TrimSpace(cells[0]), direct: map[string]bool{}}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			r.packages = append(r.packages, m[1])
		}
		banned, except, _ := strings.Cut(cells[2], " except ")
		for _, m := range backticked.FindAllStringSubmatch(except, -1) {
			r.except = append(r.except, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(banned, -1) {
			r.banned = append(r.banned, m[1])
			if m[2] != "" {
				r.direct[m[1]] = true
			}
		}
		out = append(out, r)
	}
	return out
}

// violations checks pkgs against r and lists what breaks it.
func violations(r rule, pkgs []pkgInfo) []string {
	var out []string
	for _, p := range pkgs {
		for _, b := range r.banned {
			against := p.Deps
			if r.direct[b] {
				against = p.Imports
			}
			for _, d := range against {
				if d == p.ImportPath || covers(p.ImportPath, d) && false {
					continue
				}
				if b == "*" {
					excepted := slices.ContainsFunc(r.except, func(e string) bool { return covers(e, d) })
					if !standard(d) && !strings.HasPrefix(d, "vendor/") && !excepted {
						out = append(out, fmt.Sprintf("%s depends on %s (%s: the standard library only)", p.ImportPath, d, r.layer))
					}
					continue
				}
				if covers(b, d) && !covers(b, p.ImportPath) {
					out = append(out, fmt.Sprintf("%s depends on %s (%s may not depend on %s)", p.ImportPath, d, r.layer, b))
				}
			}
		}
	}
	return out
}

func architectureDoc(t *testing.T) string {
	t.Helper()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	return string(b)
}

// TestImportRules checks every row of docs/architecture.md's layers table:
// the doc is the rule, so a rule written there is a rule checked.
func TestImportRules(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	rs := rules(t, architectureDoc(t))
	require.GreaterOrEqual(t, len(rs), 15, "the layers table of docs/architecture.md is read")
	for _, r := range rs {
		t.Run(r.layer, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, r.packages, "a row names its packages")
			require.NotEmpty(t, r.banned, "a row names what they must not depend on")
			pkgs := list(t, r.packages...)
			require.NotEmpty(t, pkgs)
			require.Empty(t, violations(r, pkgs))
		})
	}
}

// The checker itself: each kind of entry catches what it should, and only
// that, on known packages.
func TestTheRulesCatchWhatTheySay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	doc := "x\n| layer | packages | must not depend on |\n| --- | --- | --- |\n" +
		"| a | `internal/routes` | `*` |\n" +
		"| b | `webhook` | `go.temporal.io`, `internal/store` |\n" +
		"| c | `domains/credits` | `internal` *(directly)* |\n" +
		"| d | `internal/store/inbox` | `internal/store` |\n" +
		"| e | `domains/credits` | `internal` |\n" +
		"| f | `internal/keys` | `*` except `hookintype` |\n" +
		"| g | `internal/keys` | `*` |\n" +
		"after the table\n| z | `x` | `y` |\n"
	rs := rules(t, doc)
	require.Len(t, rs, 7, "rows end with the table")
	require.Equal(t, []string{"*"}, rs[5].banned)
	require.Equal(t, []string{"hookintype"}, rs[5].except)
	require.True(t, rs[2].direct["internal"])
	get := func(r rule) []string { return violations(r, list(t, r.packages...)) }
	require.Empty(t, get(rs[0]), "the route table imports the standard library only")
	require.NotEmpty(t, get(rs[1]), "the intake reaches Temporal (its hand-off) and the store")
	require.Empty(t, get(rs[2]), "a domain imports nothing internal itself")
	require.Empty(t, get(rs[3]), "a package's own path and its parent's segment never count against it")
	require.NotEmpty(t, get(rs[4]), "a domain depends on the machinery through the root: only the direct rule can hold")
	require.Empty(t, get(rs[5]), "the identities depend on the public types and the standard library")
	require.NotEmpty(t, get(rs[6]), "the public types are not the standard library")
	require.True(t, covers("internal/store", module+"internal/store/inbox"))
	require.False(t, covers("internal/store", module+"internal/storeports"))
}

// One place inserts an inbox row: every other path goes through
// admission.Admit, so verification, normalization and tenant mapping
// cannot be skipped.
func TestOnlyAdmissionInsertsInboxRows(t *testing.T) {
	t.Parallel()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	var callers []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			// InsertInboxEvent, or the group-commit writer that calls it.
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "InsertInboxEvent" || sel.Sel.Name == "NewInboxWriter") {
				rel, _ := filepath.Rel(root, path)
				if dir := filepath.ToSlash(filepath.Dir(rel)); !slices.Contains(callers, dir) {
					callers = append(callers, dir)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	// lab/bench is the one other caller, and no product path: its
	// StatementTarget times the inbox statement alone, into a throw-away
	// database of its own (the intake's three-way split, issue #26).
	require.Equal(t, []string{"internal/admission", "lab/bench"}, callers, "only admission inserts inbox rows (and the bench that times it)")
}

// The CLI acts through ops (and opens its database through app, the
// composition root): no non-test file of the command tree or of a binary
// imports the store or one of its aggregates, so every act the CLI has is
// one the console's API can have, validated and audited the same way.
func TestTheCommandTreeNeverImportsTheStore(t *testing.T) {
	t.Parallel()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	var offenders []string
	files := 0
	for _, dir := range []string{"internal/command", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if p == module+"internal/store" || strings.HasPrefix(p, module+"internal/store/") {
					rel, _ := filepath.Rel(root, path)
					offenders = append(offenders, filepath.ToSlash(rel)+" imports "+p)
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Greater(t, files, 20, "the walk found the command tree")
	require.Empty(t, offenders, "act through ops (internal/ops) and open the database through internal/app")
}
