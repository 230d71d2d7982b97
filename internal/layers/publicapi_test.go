package layers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// publicAPI are the packages a team imports (docs/architecture.md, "The
// public API"): nothing they export may name a type an outside module
// cannot name.
var publicAPI = []string{".", "providers/...", "domains/...", "hookintest", "hookintype"}

// exported is what go list says of one package, with its export data.
type exported struct {
	ImportPath string
	Export     string
	Dir        string
	GoFiles    []string
	DepOnly    bool
}

// loadTypes type-checks nothing itself: it reads the compiler's export data
// of patterns and their dependencies (go list -export, from the build
// cache) and returns the packages patterns name.
func loadTypes(t *testing.T, patterns ...string) []*types.Package {
	t.Helper()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles,DepOnly"}
	for _, p := range patterns {
		args = append(args, strings.TrimSuffix(module+strings.TrimPrefix(p, "."), "/"))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export %v: %s", patterns, stderr.String())
	files := map[string]string{}
	var targets []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p exported
		require.NoError(t, dec.Decode(&p))
		files[p.ImportPath] = p.Export
		if !p.DepOnly {
			targets = append(targets, p.ImportPath)
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var pkgs []*types.Package
	for _, path := range targets {
		p, err := imp.Import(path)
		require.NoError(t, err, path)
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// internalPath reports whether path is an internal package (of any
// module): only its own module may import it.
func internalPath(path string) bool {
	return strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// apiWalker finds the internal types an exported declaration names.
type apiWalker struct {
	pkg  *types.Package
	seen map[types.Type]bool
	out  []string
}

func (w *apiWalker) report(where string, obj types.Object, kind string) {
	w.out = append(w.out, fmt.Sprintf("%s names %s %s.%s", where, kind, obj.Pkg().Path(), obj.Name()))
}

// typ walks t as seen from where: every named type or alias it names, its
// elements, fields, methods, parameters and type arguments. Named types of
// other packages are checked by name only (their own package answers for
// their insides); the package's own are walked once.
func (w *apiWalker) typ(where string, t types.Type) {
	if t == nil || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		obj := t.Obj()
		if obj.Pkg() != nil && internalPath(obj.Pkg().Path()) {
			w.report(where, obj, "the alias")
			return
		}
		for i := range t.TypeArgs().Len() {
			w.typ(where, t.TypeArgs().At(i))
		}
		w.typ(where, t.Rhs())
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && internalPath(obj.Pkg().Path()) {
			w.report(where, obj, "the type")
			return
		}
		for i := range t.TypeArgs().Len() {
			w.typ(where, t.TypeArgs().At(i))
		}
		if obj.Pkg() == w.pkg {
			// Reported at the type's own declaration, however it was
			// reached.
			w.declared(w.pkg.Path()+"."+obj.Name(), t)
		}
	case *types.Pointer:
		w.typ(where, t.Elem())
	case *types.Slice:
		w.typ(where, t.Elem())
	case *types.Array:
		w.typ(where, t.Elem())
	case *types.Chan:
		w.typ(where, t.Elem())
	case *types.Map:
		w.typ(where, t.Key())
		w.typ(where, t.Elem())
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				w.typ(where, tup.At(i).Type())
			}
		}
		if tps := t.TypeParams(); tps != nil {
			for i := range tps.Len() {
				w.typ(where, tps.At(i).Constraint())
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() {
				w.typ(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := range t.NumEmbeddeds() {
			w.typ(where, t.EmbeddedType(i))
		}
		for i := range t.NumExplicitMethods() {
			if m := t.ExplicitMethod(i); m.Exported() {
				w.typ(where+"."+m.Name(), m.Type())
			}
		}
	case *types.Union:
		for i := range t.Len() {
			w.typ(where, t.Term(i).Type())
		}
	case *types.TypeParam:
		w.typ(where, t.Constraint())
	}
}

// declared walks a named type of the package: its underlying type and its
// exported methods.
func (w *apiWalker) declared(where string, t *types.Named) {
	w.typ(where, t.Underlying())
	for i := range t.NumMethods() {
		if m := t.Method(i); m.Exported() {
			w.typ(where+"."+m.Name(), m.Type())
		}
	}
}

// internalNames lists what the exported declarations of pkg name from an
// internal package: each exported constant, variable, function, type
// (its fields, methods, parameters) and alias.
func internalNames(pkg *types.Package) []string {
	w := &apiWalker{pkg: pkg, seen: map[types.Type]bool{}}
	scope := pkg.Scope()
	// Types first, so that what a type holds is reported at the type, not
	// at the first function that takes it.
	for _, typesPass := range []bool{true, false} {
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			tn, isType := obj.(*types.TypeName)
			if !obj.Exported() || isType != typesPass {
				continue
			}
			where := pkg.Path() + "." + name
			if n, ok := obj.Type().(*types.Named); ok && isType && !tn.IsAlias() {
				if !w.seen[n] {
					w.seen[n] = true
					w.declared(where, n)
				}
				continue
			}
			// An alias (materialized or not), or the type of a constant,
			// variable or function.
			w.typ(where, obj.Type())
		}
	}
	return w.out
}

// TestThePublicAPINamesNoInternalType: an outside module cannot name an
// internal package's type, nor an alias of one, and `go doc` shows no
// fields of an alias. Every exported declaration of the public packages is
// walked, fields, methods and parameters included.
func TestThePublicAPINamesNoInternalType(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	pkgs := loadTypes(t, publicAPI...)
	var paths []string
	var found []string
	for _, p := range pkgs {
		paths = append(paths, p.Path())
		found = append(found, internalNames(p)...)
	}
	for _, want := range []string{".", "providers", "providers/stripe", "domains/credits", "hookintest", "hookintype"} {
		require.Contains(t, paths, strings.TrimSuffix(module+strings.TrimPrefix(want, "."), "/"), "the public packages are read")
	}
	require.Empty(t, found, "the public API names internal types: give them a public type (package hookintype) or keep them unexported")
}

// The walker itself: it finds a field, a parameter, a method and an alias
// naming an internal type in packages known to have them, and passes a
// package of the standard library only.
func TestTheAPIWalkerCatchesWhatItSays(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	found := map[string]string{}
	for _, p := range loadTypes(t, "webhook", "activities/ports") {
		found[strings.TrimPrefix(p.Path(), module)] = strings.Join(internalNames(p), "\n")
	}
	hook, ports := found["webhook"], found["activities/ports"]
	// keys.Event is an alias of the public hookintype.EventKey, and still
	// a name no outside module can write.
	require.Contains(t, ports, module+"activities/ports.Admission.Key names the alias "+module+"internal/keys.Event", "an internal alias of a public type")
	require.Contains(t, hook, module+"webhook.Options.Store names the type "+module+"internal/store.Store", "a field")
	require.Contains(t, hook, module+"webhook.Handoff names the type "+module+"internal/admission.Handoff", "an alias of an internal type")
	require.Contains(t, hook, module+"webhook.Options.Routes names the type "+module+"internal/routes.Router", "an interface")
	require.NotContains(t, hook, "webhook.Server.Handler", "a method naming only public types")
	require.True(t, internalPath(module+"internal/keys"))
	require.True(t, internalPath("golang.org/x/tools/internal"))
	require.False(t, internalPath(module+"hookintype"))
	require.False(t, internalPath("github.com/a/internalized"))
}

// TestHookintypeDocumentsEveryField: the public types are what `go doc`
// shows a team, so every field of every exported struct of hookintype has
// its own comment.
func TestHookintypeDocumentsEveryField(t *testing.T) {
	t.Parallel()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	undocumented, structs, err := undocumentedFields(filepath.Join(root, "hookintype"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, structs, 6, "hookintype's structs are read")
	require.Empty(t, undocumented, "document each field of hookintype's exported structs")

	// The check itself, on a file with one documented and one bare field.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n\n// T is.\ntype T struct {\n\t// A is.\n\tA int\n\tB int // B is.\n\tC, D string\n\te int\n}\n"), 0o600))
	bad, n, err := undocumentedFields(dir)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"T.C", "T.D"}, bad)
}

// undocumentedFields lists the exported fields of exported structs in the
// non-test files of dir that have neither a doc comment nor a line comment.
func undocumentedFields(dir string) (bad []string, structs int, err error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, 0, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				structs++
				for _, fld := range st.Fields.List {
					if fld.Doc != nil || fld.Comment != nil {
						continue
					}
					for _, n := range fld.Names {
						if n.IsExported() {
							bad = append(bad, ts.Name.Name+"."+n.Name)
						}
					}
				}
			}
		}
	}
	return bad, structs, nil
}
