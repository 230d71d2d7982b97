package layers_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

const module = "github.com/hookinbox/hookinbox/"

// deps lists the packages pkg depends on, directly or not (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard", module+pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list %s", pkg)
	var names []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Standard   bool
		}
		require.NoError(t, dec.Decode(&p))
		if !p.Standard && p.ImportPath != module+pkg {
			names = append(names, p.ImportPath)
		}
	}
	return names
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	tests := []struct {
		pkg    string
		banned []string
		why    string
	}{
		{"internal/keys", []string{""}, "the domain leaf imports only the standard library"},
		{"internal/secretbox", []string{""}, "secrets are sealed with the standard library's crypto only"},
		{"workflows", []string{"github.com/jackc/pgx", module + "internal/store"}, "workflow code never reaches the database"},
		{"activities", []string{"github.com/jackc/pgx", module + "internal/store"}, "activities hold ports, never the store"},
		{"activities/ports", []string{"github.com/jackc/pgx", module + "internal/store", "go.temporal.io"}, "ports are plain interfaces"},
		{"providers", []string{"github.com/jackc/pgx", module + "internal/store", "go.temporal.io"}, "the provider contract needs no database"},
		{"internal/samples", []string{"github.com/jackc/pgx", module + "internal/store", module + "internal/ops", "go.temporal.io"}, "send's payloads are bytes and headers: it neither signs nor stores"},
		{"internal/engine", []string{"go.temporal.io"}, "business handlers are Temporal-free"},
		{"webhook", []string{"go.temporal.io/sdk/workflow"}, "the HTTP intake runs no workflow code"},
		{"internal/console", []string{module + "internal/app", module + "webhook"}, "the console is HTTP over ops"},
		{"internal/ops", []string{module + "internal/app", module + "internal/console", module + "webhook"}, "operator acts sit below their two front ends"},
		{"internal/ops", []string{module + "worker"}, "operator acts read schedules through starter: the console's binary holds no worker"},
		{"cmd/hookinbox", []string{module + "lab/simulator", module + "lab/soak", module + "lab/bench", module + "lab/verify", module + "lab/demo", module + "lab/testenv"}, "the service binary carries no harness"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			for _, d := range deps(t, tt.pkg) {
				for _, b := range tt.banned {
					require.False(t, strings.HasPrefix(d, b), "%s depends on %s: %s", tt.pkg, d, tt.why)
				}
			}
		})
	}
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
	require.Equal(t, []string{"internal/admission"}, callers)
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
