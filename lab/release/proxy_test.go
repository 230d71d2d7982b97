package release

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// The proxy on disk serves the module as the go command reads it: go mod
// download, with a fresh module cache, gets the zip and the go.mod, checks
// the zip and records the same hash; nested modules are not in it.
func TestProxyServesTheModule(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	p, err := BuildProxy(ctx, ProxyOptions{Root: root, Out: t.TempDir()})
	require.NoError(t, err)
	v, err := ReadVersion(root)
	require.NoError(t, err)
	require.Equal(t, v, p.Version)

	at := filepath.Join(p.Dir, filepath.FromSlash(ModulePath), "@v")
	list, err := os.ReadFile(filepath.Join(at, "list"))
	require.NoError(t, err)
	require.Equal(t, v+"\n", string(list))
	var info struct{ Version string }
	b, err := os.ReadFile(filepath.Join(at, v+".info"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &info))
	require.Equal(t, v, info.Version)
	mod, err := os.ReadFile(filepath.Join(at, v+".mod"))
	require.NoError(t, err)
	own, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, string(own), string(mod))

	nested := nestedModules(t, root)
	require.Contains(t, nested, "examples/provisioning/")
	require.Contains(t, nested, "tools/temporal/")
	for _, f := range p.Files {
		for _, n := range nested {
			require.False(t, strings.HasPrefix(f, n), "%s is in the zip: %s is a module of its own", f, n)
		}
	}
	require.NotEmpty(t, p.Omitted, "the nested modules (tools/*, examples/*) are left out and said so")

	modCache := t.TempDir()
	t.Cleanup(func() { removeModCache(modCache) })
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", ModulePath+"@"+v)
	cmd.Dir = t.TempDir()
	cmd.Env = Env(os.Environ(), p, "off", modCache)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var dl struct{ Sum, GoModSum, Dir string }
	require.NoError(t, json.Unmarshal(out, &dl))
	require.Equal(t, p.Hash, dl.Sum)
	require.Equal(t, CacheDir(modCache, v), dl.Dir)
	tree, err := ReadTree(dl.Dir)
	require.NoError(t, err)
	require.Equal(t, p.Files, tree.Files())
}

// nestedModules are the folders (slash-terminated) of root's tracked
// go.mod files other than its own.
func nestedModules(t *testing.T, root string) []string {
	out, err := git(t.Context(), root, nil, "ls-files", "--", "*go.mod")
	require.NoError(t, err)
	var dirs []string
	for _, f := range strings.Fields(string(out)) {
		if f != "go.mod" && filepath.Base(f) == "go.mod" {
			dirs = append(dirs, strings.TrimSuffix(f, "go.mod"))
		}
	}
	return dirs
}

// A change to the work tree is in the zip before it is committed, and an
// ignored file is not.
func TestProxyFromTheWorkTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		_, err := git(ctx, repo, nil, args...)
		require.NoError(t, err)
	}
	write := func(name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644))
	}
	write("go.mod", "module "+ModulePath+"\n\ngo 1.26.0\n")
	write("VERSION", "v0.3.0\n")
	write("CHANGELOG.md", "# Changelog\n\n## v0.3.0 (2026-12-02)\n")
	write("a.go", "package hookinbox\n")
	write(".gitignore", "/.data/\n")
	write("tools/x/go.mod", "module tools/x\n")
	write("tools/x/x.go", "package x\n")
	_, err := git(ctx, repo, nil, "add", "-A")
	require.NoError(t, err)
	_, err = git(ctx, repo, nil, "commit", "-q", "-m", "one")
	require.NoError(t, err)
	write("b.go", "package hookinbox\n")
	write(".data/state", "local\n")

	p, err := BuildProxy(ctx, ProxyOptions{Root: repo, Out: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "v0.3.0", p.Version)
	require.Equal(t, []string{".gitignore", "CHANGELOG.md", "VERSION", "a.go", "b.go", "go.mod"}, p.Files)
	require.Len(t, p.Omitted, 2, "tools/x is a module of its own: %v", p.Omitted)
	require.Equal(t, []string{"tools/x/ (a module of its own): 2 files"}, p.LeftOut())

	head, err := git(ctx, repo, nil, "rev-parse", "HEAD")
	require.NoError(t, err)
	p, err = BuildProxy(ctx, ProxyOptions{Root: repo, Out: t.TempDir(), Rev: strings.TrimSpace(string(head))})
	require.NoError(t, err)
	require.NotContains(t, p.Files, "b.go", "--rev HEAD is the commit")

	write("CHANGELOG.md", "# Changelog\n\n## v0.4.0 (2026-12-03)\n")
	_, err = ReadVersion(repo)
	require.ErrorContains(t, err, `top release heading is "v0.4.0", VERSION is "v0.3.0"`)
}

// CopyModule drops the replace of hookinbox and requires the version; the
// tree comparison sees an added, a removed and a changed file.
func TestCopyModuleAndTree(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/team\n\ngo 1.26.0\n\nrequire "+ModulePath+" v0.0.0\n\nreplace "+ModulePath+" => ../..\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, ".data", "pg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, ".data", "pg", "x"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, CopyModule(src, dst, "v0.1.0"))
	b, err := os.ReadFile(filepath.Join(dst, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", b, nil)
	require.NoError(t, err)
	require.Empty(t, f.Replace)
	require.Len(t, f.Require, 1)
	require.Equal(t, "v0.1.0", f.Require[0].Mod.Version)
	_, err = os.Stat(filepath.Join(dst, ".data"))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.ErrorContains(t, CopyModule(dst, t.TempDir(), "v0.1.0"), "no replace")

	before, err := ReadTree(dst)
	require.NoError(t, err)
	require.Equal(t, []string{"go.mod", "main.go"}, before.Files())
	require.NoError(t, os.WriteFile(filepath.Join(dst, "main.go"), []byte("package main // edited\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "new.go"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dst, "go.mod")))
	after, err := ReadTree(dst)
	require.NoError(t, err)
	require.Equal(t, "removed go.mod\nchanged main.go\nadded new.go\n", before.Diff(after))
}
