package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Examples are the team modules under root/examples: every folder there
// holding a go.mod, sorted.
func Examples(root string) ([]string, error) {
	mods, err := filepath.Glob(filepath.Join(root, "examples", "*", "go.mod"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mods {
		dirs = append(dirs, filepath.Dir(m))
	}
	sort.Strings(dirs)
	return dirs, nil
}

// CopyModule copies the team module in src to dst (a folder outside the
// repository) and makes it require ModulePath at version instead of
// replacing it with the checkout: its replace of ModulePath is dropped.
// Local state (.data, .tools) is not copied.
func CopyModule(src, dst, version string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".data" || d.Name() == ".tools" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
	if err != nil {
		return err
	}
	gomod := filepath.Join(dst, "go.mod")
	b, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(gomod, b, nil)
	if err != nil {
		return err
	}
	replaced := false
	for _, r := range f.Replace {
		if r.Old.Path == ModulePath {
			replaced = true
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	if !replaced {
		return fmt.Errorf("%s: no replace of %s to drop (is it a module of this repository?)", src, ModulePath)
	}
	if err := f.AddRequire(ModulePath, version); err != nil {
		return err
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(gomod, out, 0o644)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Env is the environment of a team module built from outside the tree:
// base (os.Environ()) less the variables that would tie it to this
// checkout or to another module cache, plus GOPROXY (this proxy first,
// then fallback), GONOSUMDB for ModulePath (the zip on disk is in no
// checksum database), GOFLAGS=-mod=mod -trimpath, GOWORK=off and
// GOMODCACHE. -trimpath keys the build cache of a module cache's packages
// by module and version, not by folder: a fresh module cache in a new
// folder then reuses what an earlier run compiled (without it, every run
// compiles every dependency again, ten minutes on a loaded machine).
// HOOKINBOX_ROOT is removed. The build cache (GOCACHE) and the tools'
// cache (HOOKINBOX_CACHE_DIR, HOOKINBOX_TEMPORAL_BIN, HOOKINBOX_MAILPIT_BIN)
// pass through, so the pinned tools are built once per machine.
func Env(base []string, p *Proxy, fallback, modCache string) []string {
	drop := map[string]bool{
		"HOOKINBOX_ROOT": true, "GOPROXY": true, "GONOSUMDB": true, "GONOSUMCHECK": true,
		"GOPRIVATE": true, "GONOPROXY": true, "GOFLAGS": true, "GOWORK": true, "GOMODCACHE": true,
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env,
		"GOPROXY="+p.GOPROXY(fallback),
		"GONOSUMDB="+ModulePath,
		"GOFLAGS=-mod=mod -trimpath",
		"GOWORK=off",
		"GOMODCACHE="+modCache,
	)
}

// GoEnv reads one variable as the go command resolves it (environment,
// then go env -w's file, then its default).
func GoEnv(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CacheDir is where the go command extracts ModulePath at version in the
// module cache modCache.
func CacheDir(modCache, version string) string {
	return filepath.Join(modCache, filepath.FromSlash(ModulePath)+"@"+version)
}

// Tree is a folder's files (slash paths relative to it) and their SHA-256.
type Tree map[string]string

// ReadTree hashes every file under dir. A symlink or other non-regular
// file is recorded by its type, so a change of kind shows.
func ReadTree(dir string) (Tree, error) {
	t := Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			t[rel] = "type " + d.Type().String()
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		t[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return t, err
}

// Files lists the tree's paths, sorted.
func (t Tree) Files() []string {
	var fs []string
	for f := range t {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}

// Diff says how after differs from t: files added, removed and changed,
// one per line; empty when they are the same.
func (t Tree) Diff(after Tree) string {
	var b bytes.Buffer
	for _, f := range t.Files() {
		h, ok := after[f]
		switch {
		case !ok:
			fmt.Fprintf(&b, "removed %s\n", f)
		case h != t[f]:
			fmt.Fprintf(&b, "changed %s\n", f)
		}
	}
	for _, f := range after.Files() {
		if _, ok := t[f]; !ok {
			fmt.Fprintf(&b, "added %s\n", f)
		}
	}
	return b.String()
}

// DirHash is dir's go.sum hash (h1:…) as the module ModulePath@version:
// equal to the zip's Hash when the module cache holds exactly the zip.
func DirHash(dir, version string) (string, error) {
	return dirhash.HashDir(dir, ModulePath+"@"+version, dirhash.Hash1)
}

// ToolEnv points a team module's runs at the pinned tools this checkout
// already built into its .tools/ (make tools), through the variables a
// user sets for binaries of their own (HOOKINBOX_TEMPORAL_BIN,
// HOOKINBOX_MAILPIT_BIN), so make test does not build them a second time
// into the user cache. A variable already set, or a tool not built, is
// left alone: the tool is then built once per machine into the user cache.
func ToolEnv(root string) (env, notes []string) {
	for _, t := range []devenv.Tool{devenv.TemporalCLI, devenv.MailpitTool} {
		if os.Getenv(t.BinEnv) != "" {
			notes = append(notes, fmt.Sprintf("%s: %s as set", t.Name, t.BinEnv))
			continue
		}
		p, err := t.Path(root)
		if err == nil {
			if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				env = append(env, t.BinEnv+"="+p)
				notes = append(notes, fmt.Sprintf("%s: %s=%s (the checkout's, from make tools)", t.Name, t.BinEnv, p))
				continue
			}
		}
		notes = append(notes, fmt.Sprintf("%s: built once per machine into the user cache (%s)", t.Name, devenv.CacheDirEnv))
	}
	return env, notes
}
