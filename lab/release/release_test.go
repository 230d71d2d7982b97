package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReleasedExamples is the proof that a released hookinbox works: every
// team module under examples/ is copied outside the tree, made to require
// this repository at VERSION from a module proxy on disk (no replace), and
// tidied, vetted and tested there with a fresh module cache and no
// HOOKINBOX_ROOT. The module cache's copy of hookinbox must be the zip's
// files exactly, before and after every example's tests.
func TestReleasedExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests every example module against a released copy (PostgreSQL, Temporal)")
	}
	ctx := t.Context()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	examples, err := Examples(root)
	require.NoError(t, err)
	require.NotEmpty(t, examples, "no examples/*/go.mod")

	start := time.Now()
	p, err := BuildProxy(ctx, ProxyOptions{Root: root, Out: t.TempDir()})
	require.NoError(t, err)
	t.Logf("proxy: %s@%s from %s, %d files, %d bytes, %s (%s)", ModulePath, p.Version, p.Rev, len(p.Files), p.Size, p.Hash, time.Since(start).Round(time.Millisecond))
	for _, l := range p.LeftOut() {
		t.Logf("left out of the zip: %s", l)
	}
	nested := nestedModules(t, root)
	for _, f := range p.Files {
		require.False(t, strings.HasPrefix(f, ".tools/") || strings.HasPrefix(f, ".data/"), "%s: local state is in the module zip", f)
		for _, n := range nested {
			require.False(t, strings.HasPrefix(f, n), "%s is in the zip: %s is a module of its own", f, n)
		}
	}
	require.Contains(t, p.Files, "go.mod")
	require.Contains(t, p.Files, "VERSION")

	fallback, err := GoEnv(ctx, "GOPROXY")
	require.NoError(t, err)
	modCache, err := os.MkdirTemp("", "hookinbox-released-modcache-")
	require.NoError(t, err)
	t.Cleanup(func() { removeModCache(modCache) })
	env := Env(os.Environ(), p, fallback, modCache)
	cached := CacheDir(modCache, p.Version)

	var tree Tree
	times := map[string]time.Duration{}
	for _, ex := range examples {
		name := filepath.Base(ex)
		ok := t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			rel, err := filepath.Rel(root, dir)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(rel, ".."), "the copy %s must be outside the tree %s", dir, root)
			require.NoError(t, CopyModule(ex, dir, p.Version))

			goCmd(t, dir, env, 10*time.Minute, "mod", "tidy")
			sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			require.NoError(t, err)
			require.Contains(t, string(sum), fmt.Sprintf("%s %s %s\n", ModulePath, p.Version, p.Hash),
				"go.sum must record the zip of the proxy on disk")

			if tree == nil {
				tree, err = ReadTree(cached)
				require.NoError(t, err, "the module cache holds no %s@%s", ModulePath, p.Version)
				require.Equal(t, p.Files, tree.Files(), "the module cache's copy is not the zip's files")
				h, err := DirHash(cached, p.Version)
				require.NoError(t, err)
				require.Equal(t, p.Hash, h)
			}

			goCmd(t, dir, env, 10*time.Minute, "vet", "./...")
			began := time.Now()
			goCmd(t, dir, env, 25*time.Minute, "test", "-count=1", "-timeout", "20m", "./...")
			times[name] = time.Since(began)
			t.Logf("%s: go test ./... took %s", name, times[name].Round(time.Second))

			after, err := ReadTree(cached)
			require.NoError(t, err)
			require.Empty(t, tree.Diff(after), "%s's tests changed the module cache's copy of hookinbox", name)
		})
		if !ok {
			break
		}
	}

	after, err := ReadTree(cached)
	require.NoError(t, err)
	require.Empty(t, tree.Diff(after), "the module cache's copy of hookinbox changed")
	h, err := DirHash(cached, p.Version)
	require.NoError(t, err)
	require.Equal(t, p.Hash, h, "the module cache's copy of hookinbox changed")

	var b strings.Builder
	fmt.Fprintf(&b, "module cache %s: %d files, unchanged (%s)\n", cached, len(after), h)
	for _, f := range after.Files() {
		fmt.Fprintf(&b, "  %s %s\n", after[f][:12], f)
	}
	t.Log(b.String())
	for _, ex := range examples {
		if d, ok := times[filepath.Base(ex)]; ok {
			t.Logf("time: %s's tests %s", filepath.Base(ex), d.Round(time.Second))
		}
	}
}

// goCmd runs the go command in dir with env, failing the test with its
// output if it fails; its output is logged.
func goCmd(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began).Round(time.Millisecond)
	require.NoError(t, err, "go %s in %s (%s):\n%s", strings.Join(args, " "), dir, took, out.String())
	t.Logf("go %s (%s)\n%s", strings.Join(args, " "), took, out.String())
}

// removeModCache deletes a module cache: the go command makes its folders
// read-only.
func removeModCache(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
