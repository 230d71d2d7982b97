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
	tools, notes := ToolEnv(root)
	env = append(env, tools...)
	for _, n := range notes {
		t.Logf("tool %s", n)
	}
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

			goCmd(t, dir, env, 30*time.Minute, "mod", "tidy")
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

			goCmd(t, dir, env, 40*time.Minute, "vet", "./...")
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

	if tree != nil {
		t.Run("guide", func(t *testing.T) {
			began := time.Now()
			runGuide(t, root, p, env)
			times["the guide's module"] = time.Since(began)
		})
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
	for _, ex := range append(examples, "the guide's module") {
		if d, ok := times[filepath.Base(ex)]; ok {
			t.Logf("time: %s's tests %s", filepath.Base(ex), d.Round(time.Second))
		}
	}
}

// guide is the handler guide, whose sections 1 to 5 build a module from an
// empty directory.
const guide = "docs/write-your-own-handler.md"

// runGuide runs the shell blocks of the guide's sections 1 to 5 as written,
// in order, in one shell in an empty directory outside the tree: the module,
// its go get, its files, go mod tidy, vet and test. The block that runs in a
// checkout (release proxy) is the proxy this test built, at the path the
// guide names. Section 6 (go run . dev, another terminal) is not run here.
func runGuide(t *testing.T, root string, p *Proxy, env []string) {
	b, err := os.ReadFile(filepath.Join(root, guide))
	require.NoError(t, err)
	text := string(b)
	end := strings.Index(text, "\n## 6. ")
	require.Positive(t, end, "%s has no section 6", guide)
	blocks := shellBlocks(text[:end])
	require.GreaterOrEqual(t, len(blocks), 5, "%s's sections 1 to 5 have too few shell blocks", guide)
	const proxyPath = "/tmp/hookinbox-proxy"
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	checkout := 0
	for _, bl := range blocks {
		if strings.Contains(bl, "hookinbox-lab release proxy") {
			require.Contains(t, bl, "--out "+proxyPath, "the guide's proxy folder changed: update runGuide")
			checkout++
			continue
		}
		script.WriteString(strings.ReplaceAll(bl, "file://"+proxyPath, "file://"+filepath.ToSlash(p.Dir)))
	}
	require.Equal(t, 1, checkout, "one block of %s runs in the checkout (release proxy)", guide)
	require.Contains(t, script.String(), "go get github.com/hookinbox/hookinbox@"+p.Version, "the guide requires VERSION")
	require.Contains(t, script.String(), "go test ./...")

	dir := t.TempDir()
	// The user's environment: no -mod=mod (only -trimpath, which changes
	// nothing but the build cache's keys), the guide's own GOPROXY.
	var guideEnv []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOFLAGS=") {
			guideEnv = append(guideEnv, kv)
		}
	}
	guideEnv = append(guideEnv, "GOFLAGS=-trimpath")
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = guideEnv
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err = cmd.Run()
	require.NoError(t, err, "%s's sections 1 to 5 in %s (%s):\n%s", guide, dir, time.Since(began).Round(time.Second), out.String())
	t.Logf("%s's sections 1 to 5 (%s):\n%s", guide, time.Since(began).Round(time.Second), out.String())
}

// shellBlocks are the bodies of the ```sh blocks of markdown, in order.
func shellBlocks(markdown string) []string {
	var blocks []string
	rest := markdown
	for {
		i := strings.Index(rest, "```sh\n")
		if i < 0 {
			return blocks
		}
		rest = rest[i+len("```sh\n"):]
		j := strings.Index(rest, "```")
		if j < 0 {
			return blocks
		}
		blocks = append(blocks, rest[:j])
		rest = rest[j+3:]
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
