// Package release builds hookinbox as a released module and uses it as a
// team would: a module proxy on disk (GOPROXY=file://…) serving this
// repository at its VERSION, with the module zip made as the go command
// makes it from a VCS checkout (golang.org/x/mod/zip over `git archive`:
// nested modules, vendor directories, symlinks and ignored files left out),
// and the example modules built and tested against it from outside the tree.
//
// There are no tags yet: the proxy is how a team, and make test, gets
// "github.com/hookinbox/hookinbox@VERSION" before the module is published.
package release

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// ModulePath is the module the proxy serves.
const ModulePath = "github.com/hookinbox/hookinbox"

// ProxyOptions say what to serve and where.
type ProxyOptions struct {
	// Root is the repository's work tree (the folder of its go.mod).
	Root string
	// Out is the proxy's folder; GOPROXY=file://<Out> serves it. Created if
	// missing; the module's @v folder in it is replaced.
	Out string
	// Rev is the git revision to release. Empty: the work tree as it would
	// be committed (HEAD plus tracked and untracked, not ignored, changes),
	// which is HEAD itself on a clean checkout.
	Rev string
	// Version overrides the VERSION file.
	Version string
}

// Proxy is a module proxy on disk holding one version of ModulePath.
type Proxy struct {
	// Dir is the proxy's root: GOPROXY=file://<Dir>.
	Dir string
	// Version served, e.g. v0.1.0.
	Version string
	// Rev is the git tree or commit the zip was made from.
	Rev string
	// Zip is the module zip's path.
	Zip string
	// Hash is the zip's go.sum hash (h1:…), as go.sum and the module
	// cache's .ziphash record it.
	Hash string
	// Files are the zip's files, relative to the module root, sorted.
	Files []string
	// Omitted are the files git archived that the go command leaves out of
	// a module zip (nested modules, vendor, symlinks), with the reason.
	Omitted []string
	// Size is the uncompressed size of the zip's files, in bytes.
	Size int64
}

// GOPROXY is the value that serves this proxy first, then fallback (the
// normal proxy, for third-party modules), as the go command reads it.
func (p *Proxy) GOPROXY(fallback string) string {
	u := "file://" + filepath.ToSlash(p.Dir)
	if fallback == "" {
		return u
	}
	return u + "," + fallback
}

// ReadVersion reads root/VERSION and checks it is a canonical semantic
// version that CHANGELOG.md's first release heading names.
func ReadVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if module.CanonicalVersion(v) != v {
		return "", fmt.Errorf("VERSION %q is not a canonical semantic version (vMAJOR.MINOR.PATCH)", v)
	}
	if err := module.Check(ModulePath, v); err != nil {
		return "", fmt.Errorf("VERSION: %w", err)
	}
	cl, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(cl), "\n") {
		if strings.HasPrefix(line, "## v") || strings.HasPrefix(line, "## Unreleased") {
			head := strings.Fields(strings.TrimPrefix(line, "## "))[0]
			if head != v {
				return "", fmt.Errorf("CHANGELOG.md's top release heading is %q, VERSION is %q", head, v)
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("CHANGELOG.md has no release heading (## %s)", v)
}

// BuildProxy writes the proxy: <Out>/github.com/hookinbox/hookinbox/@v/
// holding list, VERSION.info, VERSION.mod and VERSION.zip, laid out as
// GOPROXY's protocol (go help goproxy) asks.
func BuildProxy(ctx context.Context, o ProxyOptions) (*Proxy, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	v := o.Version
	if v == "" {
		if v, err = ReadVersion(root); err != nil {
			return nil, err
		}
	}
	rev := o.Rev
	if rev == "" {
		if rev, err = workTree(ctx, root); err != nil {
			return nil, err
		}
	}
	commitTime, err := git(ctx, root, nil, "log", "-1", "--format=%cI", "HEAD")
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(commitTime)))
	if err != nil {
		return nil, fmt.Errorf("HEAD's commit time: %w", err)
	}

	files, err := archive(ctx, root, rev)
	if err != nil {
		return nil, err
	}
	m := module.Version{Path: ModulePath, Version: v}
	checked, err := modzip.CheckFiles(files)
	if err != nil {
		return nil, fmt.Errorf("module zip of %s: %w", rev, err)
	}
	var gomod []byte
	for _, f := range files {
		if f.Path() == "go.mod" {
			if gomod, err = readAll(f); err != nil {
				return nil, err
			}
		}
	}
	if gomod == nil {
		return nil, fmt.Errorf("%s has no go.mod", rev)
	}
	if mf, err := modfile.ParseLax("go.mod", gomod, nil); err != nil || mf.Module == nil || mf.Module.Mod.Path != ModulePath {
		return nil, fmt.Errorf("go.mod at %s is not module %s", rev, ModulePath)
	}

	dir := filepath.Join(out, filepath.FromSlash(ModulePath), "@v")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	zipPath := filepath.Join(dir, v+".zip")
	zf, err := os.Create(zipPath)
	if err != nil {
		return nil, err
	}
	if err := modzip.Create(zf, m, files); err != nil {
		zf.Close()
		return nil, err
	}
	if err := zf.Close(); err != nil {
		return nil, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v, t.UTC()})
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{
		"list":      []byte(v + "\n"),
		v + ".info": info,
		v + ".mod":  gomod,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}

	p := &Proxy{Dir: out, Version: v, Rev: rev, Zip: zipPath}
	if p.Hash, err = dirhash.HashZip(zipPath, dirhash.Hash1); err != nil {
		return nil, err
	}
	// Read back what the go command will read, and check it as it does.
	if _, err := modzip.CheckZip(m, zipPath); err != nil {
		return nil, fmt.Errorf("the module zip does not pass the go command's checks: %w", err)
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = zr.Close() }() // read only
	prefix := m.Path + "@" + m.Version + "/"
	for _, f := range zr.File {
		p.Files = append(p.Files, strings.TrimPrefix(f.Name, prefix))
		p.Size += int64(f.UncompressedSize64)
	}
	sort.Strings(p.Files)
	for _, fe := range checked.Omitted {
		p.Omitted = append(p.Omitted, fe.Path+": "+fe.Err.Error())
	}
	return p, nil
}

// workTree is the tree a commit of the work tree would have now: HEAD's
// tree if nothing changed, else a tree written through a scratch index
// (git add -A: ignored files stay out, as from a commit).
func workTree(ctx context.Context, root string) (string, error) {
	st, err := git(ctx, root, nil, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(st)) == 0 {
		head, err := git(ctx, root, nil, "rev-parse", "HEAD")
		return strings.TrimSpace(string(head)), err
	}
	idx, err := os.CreateTemp("", "hookinbox-release-index-*")
	if err != nil {
		return "", err
	}
	idx.Close()
	defer func() { _ = os.Remove(idx.Name()) }() // a scratch file in the temp dir
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	if _, err := git(ctx, root, env, "read-tree", "HEAD"); err != nil {
		return "", err
	}
	if _, err := git(ctx, root, env, "add", "-A"); err != nil {
		return "", err
	}
	tree, err := git(ctx, root, env, "write-tree")
	return strings.TrimSpace(string(tree)), err
}

// archive lists the files of rev as the go command sees a VCS checkout:
// through `git archive` with the same settings (golang.org/x/mod/zip's
// CreateFromVCS does the same, but refuses a linked worktree, whose .git is
// a file).
func archive(ctx context.Context, root, rev string) ([]modzip.File, error) {
	b, err := git(ctx, root, nil, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", rev)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		files = append(files, archived{f})
	}
	return files, nil
}

type archived struct{ f *zip.File }

func (a archived) Path() string                 { return a.f.Name }
func (a archived) Lstat() (os.FileInfo, error)  { return a.f.FileInfo(), nil }
func (a archived) Open() (io.ReadCloser, error) { return a.f.Open() }

func readAll(f modzip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func git(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PWD="+dir), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// LeftOut summarizes Omitted: one line per nested module (its folder and
// how many files), then each other omitted file with its reason.
func (p *Proxy) LeftOut() []string {
	var mods []string
	for _, o := range p.Omitted {
		f, _, _ := strings.Cut(o, ": ")
		if strings.HasSuffix(f, "/go.mod") {
			mods = append(mods, strings.TrimSuffix(f, "go.mod"))
		}
	}
	counts := map[string]int{}
	var other []string
	for _, o := range p.Omitted {
		f, _, _ := strings.Cut(o, ": ")
		in := ""
		for _, m := range mods {
			if strings.HasPrefix(f, m) && len(m) > len(in) {
				in = m
			}
		}
		if in == "" {
			other = append(other, o)
			continue
		}
		counts[in]++
	}
	var out []string
	for _, m := range mods {
		out = append(out, fmt.Sprintf("%s (a module of its own): %d files", m, counts[m]))
	}
	sort.Strings(out)
	return append(out, other...)
}
