package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// The Go-name rule, which CheckGoNames enforces:
//
// A Go name is an inline code span (outside fenced blocks) of one of these
// shapes; a call's argument list at its end, as in `hookinbox.Permanent(err)`
// or `domains.New()`, is dropped first:
//
//   - pkg.Name[.Member…] (`hookinbox.WithProvider`, `store.Grants`,
//     `providers.Normalized.Reply`): pkg is lower case, every part after it
//     starts upper case. It is checked only when pkg is the name of one of
//     the module's packages; any other (`ev.Fetch`, `time.Duration`) is a
//     variable or another module's package and is not checked. It passes if
//     any candidate declares Name (and, for each Member, a field, method or
//     embedded member of the type before it): the module's packages of that
//     name (there are several `schema`s), the packages the module imports
//     whose name it is (stripe-go's `webhook` beside ours), and, as the docs
//     call an *hookinbox.App `app` and a hookinbox.Tx `tx`, the types of the
//     module named like pkg with its first letter upper-cased (App).
//   - Type.Member[.Member…] (`Event.Fetch`, `Projection.TieColumn`): it
//     passes if a type of that name in the module, or in a package it
//     imports, has the member.
//   - a path in the tree: a span whose first segment is a top-level
//     directory of the repository (`internal/catalog`, `providers/github`,
//     `lab/soak/soak_test.go`), or that starts with the module's path
//     (github.com/hookinbox/hookinbox/…), must name a file or directory that
//     is there. A span holding a placeholder (<name>, …, *, ...) is a
//     pattern, not a path, and is not checked.
//
// A member whose type the source does not say plainly (one from another
// package, a slice or a map, a var with no written type) ends the check
// there: what follows it passes. File names (`config.yml`), hosts and
// anything else are not Go names.

var (
	callSuffix    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)\(.*\)$`)
	pkgForm       = regexp.MustCompile(`^[a-z][a-z0-9]*(?:\.[A-Z][A-Za-z0-9_]*)+$`)
	typeForm      = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)+$`)
	exportedChain = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)*$`)
	pathForm      = regexp.MustCompile(`^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?$`)
)

// A GoIndex holds the declarations of the module's packages, and reads the
// packages the module imports when a name needs them.
type GoIndex struct {
	root, module string
	byName       map[string][]*goPkg // the module's packages, by name
	topDirs      map[string]bool     // the repository's top-level directories
	imported     []string            // import paths from outside the module
	deps         map[string]*goPkg   // parsed on demand, by import path (nil: none)
	requires     map[string]string   // go.mod: module path → version
	modcache     string
	goroot       string
	mu           sync.Mutex // guards deps: GoName may be called from parallel tests
}

type goPkg struct {
	name  string
	dir   string // relative to the root, for the module's own
	decls map[string]*goDecl
	types map[string]*goType
}

type goDecl struct {
	kind string // "type", "func", "var", "const"
	typ  string // a var's written type, when it is one of this package's
}

type goType struct {
	opaque   bool              // defined from another package's type: members unknown
	members  map[string]string // field or method → its type, when it is one of this package's
	embedded []string          // embedded types of this package
}

// NewGoIndex parses the Go files of the module at root (every directory
// but hidden ones, testdata and nested modules). goroot and modcache are
// where the standard library's and the dependencies' sources are (go env
// GOROOT GOMODCACHE); they are read only for a name the module's own
// packages do not settle.
func NewGoIndex(root, goroot, modcache string) (*GoIndex, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	idx := &GoIndex{
		root: root, byName: map[string][]*goPkg{}, topDirs: map[string]bool{},
		deps: map[string]*goPkg{}, goroot: goroot, modcache: modcache,
	}
	idx.module, idx.requires = parseGoMod(gomod)
	if idx.module == "" {
		return nil, fmt.Errorf("%s/go.mod names no module", root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			idx.topDirs[e.Name()] = true
		}
	}
	imports := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root {
			n := d.Name()
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		pkg, imps, err := parseDir(fset, p, true)
		if err != nil {
			return err
		}
		if pkg != nil {
			rel, _ := filepath.Rel(root, p)
			pkg.dir = filepath.ToSlash(rel)
			idx.byName[pkg.name] = append(idx.byName[pkg.name], pkg)
		}
		for _, imp := range imps {
			if imp != idx.module && !strings.HasPrefix(imp, idx.module+"/") {
				imports[imp] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for imp := range imports {
		idx.imported = append(idx.imported, imp)
	}
	slices.Sort(idx.imported)
	return idx, nil
}

// parseGoMod returns a go.mod's module path and its requirements.
func parseGoMod(gomod []byte) (string, map[string]string) {
	module := ""
	req := map[string]string{}
	inBlock := false
	for _, l := range strings.Split(string(gomod), "\n") {
		l, _, _ = strings.Cut(l, "//")
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "module" && len(f) == 2:
			module = strings.Trim(f[1], `"`)
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inBlock = true
		case f[0] == "require" && len(f) == 3:
			req[f[1]] = f[2]
		case inBlock && f[0] == ")":
			inBlock = false
		case inBlock && len(f) == 2:
			req[f[0]] = f[1]
		}
	}
	return module, req
}

// parseDir parses the package of one directory: its exported
// declarations (and, with tests, those of its in-package _test.go files)
// and the paths its files import. It returns no package for a directory
// with no Go files.
func parseDir(fset *token.FileSet, dir string, tests bool) (*goPkg, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	var pkg *goPkg
	var imports []string
	for _, f := range files {
		if !tests && strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		name := file.Name.Name
		if strings.HasSuffix(name, "_test") || name == "documentation" {
			continue
		}
		if pkg == nil {
			pkg = &goPkg{name: name, decls: map[string]*goDecl{}, types: map[string]*goType{}}
		} else if pkg.name != name {
			continue // a file of another build (a generator's main)
		}
		for _, imp := range file.Imports {
			imports = append(imports, strings.Trim(imp.Path.Value, `"`))
		}
		pkg.add(file)
	}
	return pkg, imports, nil
}

func (p *goPkg) typ(name string) *goType {
	t := p.types[name]
	if t == nil {
		t = &goType{members: map[string]string{}}
		p.types[name] = t
	}
	return t
}

// add records a file's top-level declarations, its types' fields and
// methods.
func (p *goPkg) add(file *ast.File) {
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.decls[d.Name.Name] = &goDecl{kind: "func"}
				continue
			}
			if len(d.Recv.List) == 1 {
				if recv := localType(d.Recv.List[0].Type); recv != "" {
					p.typ(recv).members[d.Name.Name] = resultType(d.Type)
				}
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = &goDecl{kind: "type"}
					t := p.typ(s.Name.Name)
					switch tt := s.Type.(type) {
					case *ast.StructType:
						p.addFields(t, tt.Fields)
					case *ast.InterfaceType:
						p.addFields(t, tt.Methods)
					default:
						// An alias or a type defined from another: the members of
						// the other, when it is ours, else none we can tell.
						if local := localType(s.Type); local != "" {
							t.embedded = append(t.embedded, local)
						} else {
							t.opaque = true
						}
					}
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					for _, n := range s.Names {
						decl := &goDecl{kind: kind}
						if s.Type != nil {
							decl.typ = localType(s.Type)
						} else if len(s.Values) == len(s.Names) {
							decl.typ = literalType(s.Values[slices.Index(s.Names, n)])
						}
						p.decls[n.Name] = decl
					}
				}
			}
		}
	}
}

func (p *goPkg) addFields(t *goType, fields *ast.FieldList) {
	if fields == nil {
		return
	}
	for _, f := range fields.List {
		ft := localType(f.Type)
		if ft == "" {
			if fn, ok := f.Type.(*ast.FuncType); ok {
				ft = resultType(fn) // an interface method
			}
		}
		if len(f.Names) == 0 {
			// Embedded: its members are promoted.
			if ft != "" {
				t.embedded = append(t.embedded, ft)
			} else {
				t.opaque = true
			}
			if n := embeddedName(f.Type); n != "" {
				t.members[n] = ft
			}
			continue
		}
		for _, n := range f.Names {
			t.members[n.Name] = ft
		}
		if st, ok := f.Type.(*ast.StructType); ok && len(f.Names) == 1 {
			// An anonymous struct: its fields under a made-up type name.
			anon := t.members[f.Names[0].Name]
			if anon == "" {
				anon = "struct·" + f.Names[0].Name + fmt.Sprint(st.Pos())
			}
			t.members[f.Names[0].Name] = anon
			p.addFields(p.typ(anon), st.Fields)
		}
	}
}

// localType is the name of the package's own type that e denotes (T, *T,
// T[X]), or "".
func localType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return localType(e.X)
	case *ast.IndexExpr:
		return localType(e.X)
	case *ast.IndexListExpr:
		return localType(e.X)
	}
	return ""
}

// embeddedName is the field name an embedded type gives: T for T, *T,
// pkg.T.
func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	}
	return ""
}

// resultType is a function's only (or first) result's local type.
func resultType(fn *ast.FuncType) string {
	if fn.Results == nil || len(fn.Results.List) == 0 {
		return ""
	}
	return localType(fn.Results.List[0].Type)
}

// literalType is the local type of a composite literal (T{…}, &T{…}).
func literalType(e ast.Expr) string {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	if c, ok := e.(*ast.CompositeLit); ok && c.Type != nil {
		return localType(c.Type)
	}
	return ""
}

// found is what a lookup tells: no, yes, or that the source cannot say
// (a type from another package, one not written plainly).
type found int

const (
	no found = iota
	yes
	unsure
)

// has says whether the package declares name, then each member in turn.
func (p *goPkg) has(parts []string) found {
	d, ok := p.decls[parts[0]]
	if !ok {
		return no
	}
	cur := ""
	switch d.kind {
	case "type":
		cur = parts[0]
	case "var", "const":
		cur = d.typ
	default:
		if len(parts) == 1 {
			return yes
		}
		return no
	}
	return p.hasMembers(cur, parts[1:])
}

// hasMembers says whether type typ has the chain of members.
func (p *goPkg) hasMembers(typ string, members []string) found {
	for _, m := range members {
		if typ == "" {
			return unsure
		}
		next, ok, known := p.member(typ, m, map[string]bool{})
		switch {
		case ok:
			typ = next
		case !known:
			return unsure
		default:
			return no
		}
	}
	return yes
}

// verdict combines the candidates' answers: one yes passes; else one no
// fails; else (all unsure) it passes.
func verdict(fs []found) bool {
	if slices.Contains(fs, yes) {
		return true
	}
	return !slices.Contains(fs, no)
}

// member looks up m on type typ and its embedded types. known is false
// when a type on the way is opaque (its members cannot be told).
func (p *goPkg) member(typ, m string, seen map[string]bool) (next string, ok, known bool) {
	if seen[typ] {
		return "", false, true
	}
	seen[typ] = true
	t := p.types[typ]
	if t == nil {
		return "", false, p.decls[typ] != nil
	}
	if next, ok := t.members[m]; ok {
		return next, true, true
	}
	known = !t.opaque
	for _, e := range t.embedded {
		next, ok, k := p.member(e, m, seen)
		if ok {
			return next, true, true
		}
		known = known && k
	}
	return "", false, known
}

// dep parses, once, the imported package at path.
func (idx *GoIndex) dep(imp string) *goPkg {
	if p, ok := idx.deps[imp]; ok {
		return p
	}
	idx.deps[imp] = nil
	dir := ""
	if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
		dir = filepath.Join(idx.goroot, "src", imp)
	} else {
		best := ""
		for mod := range idx.requires {
			if (imp == mod || strings.HasPrefix(imp, mod+"/")) && len(mod) > len(best) {
				best = mod
			}
		}
		if best == "" {
			return nil
		}
		dir = filepath.Join(idx.modcache, escapeModPath(best)+"@"+idx.requires[best], strings.TrimPrefix(imp, best))
	}
	p, _, err := parseDir(token.NewFileSet(), dir, false)
	if err != nil {
		return nil
	}
	idx.deps[imp] = p
	return p
}

// escapeModPath is the module cache's spelling of a module path: each
// upper-case letter is ! and its lower case.
func escapeModPath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var majorSuffix = regexp.MustCompile(`^v[0-9]+$`)

// importedNamed returns the imported packages a span's pkg may be:
// those whose declared name is it, among those whose last path element
// (less a /vN suffix) holds it.
func (idx *GoIndex) importedNamed(name string) []*goPkg {
	var out []*goPkg
	for _, imp := range idx.imported {
		elems := strings.Split(imp, "/")
		last := elems[len(elems)-1]
		if len(elems) > 1 && majorSuffix.MatchString(last) {
			last = elems[len(elems)-2]
		}
		if !strings.Contains(last, name) {
			continue
		}
		if p := idx.dep(imp); p != nil && p.name == name {
			out = append(out, p)
		}
	}
	return out
}

// GoName checks one code span. It returns "" when the span is not a Go
// name or a path, or names something that exists, else why not.
func (idx *GoIndex) GoName(span string) string {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	s := strings.TrimSpace(span)
	if m := callSuffix.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	switch {
	case pkgForm.MatchString(s):
		parts := strings.Split(s, ".")
		own := idx.byName[parts[0]]
		if len(own) == 0 {
			return "" // a variable, or another module's package
		}
		var fs []found
		for _, p := range own {
			fs = append(fs, p.has(parts[1:]))
		}
		for _, p := range idx.importedNamed(parts[0]) {
			fs = append(fs, p.has(parts[1:]))
		}
		// A variable named after its type: app for an App.
		fs = append(fs, idx.typeHas(strings.ToUpper(parts[0][:1])+parts[0][1:], parts[1:], false)...)
		if verdict(fs) {
			return ""
		}
		var dirs []string
		for _, p := range own {
			dirs = append(dirs, p.dir)
		}
		return fmt.Sprintf("%s: no package %s (%s) declares %s", span, parts[0], strings.Join(dirs, ", "), strings.Join(parts[1:], "."))
	case typeForm.MatchString(s):
		parts := strings.Split(s, ".")
		fs := idx.typeHas(parts[0], parts[1:], false)
		if !slices.Contains(fs, yes) {
			fs = append(fs, idx.typeHas(parts[0], parts[1:], true)...)
		}
		if len(fs) > 0 && verdict(fs) {
			return ""
		}
		return fmt.Sprintf("%s: no type %s in the module or a package it imports has %s", span, parts[0], strings.Join(parts[1:], "."))
	}
	return idx.checkPath(s)
}

// typeHas returns, for each type called typ, whether it has the chain of
// members: those of the module's packages, or (deps) of the packages it
// imports.
func (idx *GoIndex) typeHas(typ string, members []string, deps bool) []found {
	var pkgs []*goPkg
	if deps {
		for _, imp := range idx.imported {
			if p := idx.dep(imp); p != nil {
				pkgs = append(pkgs, p)
			}
		}
	} else {
		for _, ps := range idx.byName {
			pkgs = append(pkgs, ps...)
		}
	}
	var out []found
	for _, p := range pkgs {
		if d := p.decls[typ]; d != nil && d.kind == "type" {
			out = append(out, p.hasMembers(typ, members))
		}
	}
	return out
}

// placeholderPath holds a pattern character: not one path.
var placeholderPath = regexp.MustCompile(`[<>…*{}\[\]]|\.\.\.`)

// checkPath checks a span that may be a path in the tree.
func (idx *GoIndex) checkPath(s string) string {
	rel := ""
	switch {
	case strings.HasPrefix(s, idx.module+"/"):
		rel = strings.TrimPrefix(s, idx.module+"/")
	case pathForm.MatchString(s):
		first, _, _ := strings.Cut(s, "/")
		if !idx.topDirs[first] {
			return ""
		}
		rel = s
	default:
		return ""
	}
	if placeholderPath.MatchString(rel) {
		return ""
	}
	if _, err := os.Stat(filepath.Join(idx.root, filepath.FromSlash(path.Clean(rel)))); err == nil {
		return ""
	}
	// A package's path and a name in it: internal/notify.Decide.
	if dir, name, ok := strings.Cut(rel, "."); ok && !strings.Contains(name, "/") && exportedChain.MatchString(name) {
		for _, ps := range idx.byName {
			for _, p := range ps {
				if p.dir == dir {
					if p.has(strings.Split(name, ".")) != no {
						return ""
					}
					return fmt.Sprintf("%s: package %s declares no %s", s, dir, name)
				}
			}
		}
		return fmt.Sprintf("%s: there is no package %s in the module", s, dir)
	}
	return fmt.Sprintf("%s: there is no %s in the repository", s, path.Clean(rel))
}

// CheckGoNames returns one problem per code span of doc (outside fenced
// blocks) that names a Go identifier or a path of the tree that is not
// there (see the rule above). In a changelog (changelog true), a name in a
// sentence that says it went away is the change's old side and is not
// checked: one with gone, removed, renamed, moved, replaced, dropped,
// deleted, no longer or formerly.
func (idx *GoIndex) CheckGoNames(doc []byte, changelog bool) []Problem {
	var problems []Problem
	text := proseOnly(doc)
	for _, sp := range codeSpans(text) {
		if changelog && pastTense.MatchString(sentenceAt(text, sp.off)) {
			continue
		}
		if why := idx.GoName(sp.text); why != "" {
			problems = append(problems, Problem{Line: sp.line, Text: sp.text, Why: why})
		}
	}
	for _, b := range goBlocks(doc) {
		for _, c := range goChains(b.text) {
			if why := idx.GoName(c.text); why != "" {
				problems = append(problems, Problem{Line: b.line + c.line - 1, Text: c.text, Why: why})
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return problems
}

// goBlocks returns the bodies of doc's ```go blocks, each with the line
// of its first line.
func goBlocks(doc []byte) []span {
	lines := strings.Split(string(doc), "\n")
	var out []span
	for i := 0; i < len(lines); i++ {
		m := fenceOpener.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, lang := m[1], strings.ToLower(m[2])
		start := i + 1
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), fence[:3]) && strings.Trim(strings.TrimSpace(lines[i]), fence[:1]) == "" {
				break
			}
		}
		if lang == "go" {
			out = append(out, span{text: strings.Join(lines[start:min(i, len(lines))], "\n"), line: start + 1})
		}
	}
	return out
}

// goChains returns the selector chains (pkg.Name, pkg.Type.Member) of a
// Go fragment whose first name is not declared in the fragment (with :=
// or var, as app := hookinbox.New(…) declares app), each with its line in
// the fragment. Comments and strings are skipped.
func goChains(src string) []span {
	type tok struct {
		t    token.Token
		lit  string
		line int
	}
	var toks []tok
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var sc scanner.Scanner
	sc.Init(file, []byte(src), func(token.Position, string) {}, 0)
	for {
		pos, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{t, lit, fset.Position(pos).Line})
	}
	local := map[string]bool{}
	for i, t := range toks {
		if t.t == token.DEFINE || t.t == token.VAR {
			// The names before := (a, b :=) or after var.
			if t.t == token.VAR && i+1 < len(toks) && toks[i+1].t == token.IDENT {
				local[toks[i+1].lit] = true
			}
			for j := i - 1; j >= 0 && (toks[j].t == token.IDENT || toks[j].t == token.COMMA); j-- {
				if toks[j].t == token.IDENT {
					local[toks[j].lit] = true
				}
			}
		}
	}
	var out []span
	for i := 0; i < len(toks); i++ {
		if toks[i].t != token.IDENT || (i > 0 && toks[i-1].t == token.PERIOD) || local[toks[i].lit] {
			continue
		}
		chain := toks[i].lit
		j := i + 1
		for ; j+1 < len(toks) && toks[j].t == token.PERIOD && toks[j+1].t == token.IDENT; j += 2 {
			chain += "." + toks[j+1].lit
		}
		if j > i+1 {
			out = append(out, span{text: chain, line: toks[i].line})
		}
		i = j - 1
	}
	return out
}

// pastTense is what a changelog says of a name that went away.
var pastTense = regexp.MustCompile(`(?i)\b(?:gone|removed|renamed|moved|replaced|dropped|deleted|no longer|formerly)\b`)

// sentenceAt returns the sentence of text around offset off: from the end
// of the one before (". ", a blank line, a list item's start) to its own.
func sentenceAt(text string, off int) string {
	start := 0
	for _, sep := range []string{". ", ".\n", "\n\n", "\n- ", "\n  - ", ": "} {
		if i := strings.LastIndex(text[:off], sep); i >= 0 && i+len(sep) > start {
			start = i + len(sep)
		}
	}
	end := len(text)
	for _, sep := range []string{". ", ".\n", "\n\n", "\n- ", "\n  - "} {
		if i := strings.Index(text[off:], sep); i >= 0 && off+i < end {
			end = off + i
		}
	}
	return text[start:end]
}

// proseOnly returns doc with its fenced code blocks blanked, keeping line
// numbers.
func proseOnly(doc []byte) string {
	lines := strings.Split(string(doc), "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceOpener.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence := m[1]
		lines[i] = ""
		for i++; i < len(lines); i++ {
			closing := strings.HasPrefix(strings.TrimSpace(lines[i]), fence[:3]) && strings.Trim(strings.TrimSpace(lines[i]), fence[:1]) == ""
			lines[i] = ""
			if closing {
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}
