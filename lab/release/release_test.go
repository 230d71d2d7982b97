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

	"github.com/hookinbox/hookinbox/lab/devenv"
	guidepkg "github.com/hookinbox/hookinbox/lab/guide"
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

// guide is the handler guide, whose shell blocks build a module from an
// empty directory and run it.
const guide = "docs/write-your-own-handler.md"

// runGuide runs the guide's shell blocks as written, in order, in one
// terminal (lab/guide) in an empty directory outside the tree: the module,
// its go get, its files, go mod tidy, vet and test (sections 1 to 5), then
// section 6: go run . dev in the background until the intake and the
// worker answer, the endpoint, a signed delivery sent twice, inbox list.
// The block that runs in a checkout (release proxy) is skipped by its
// marker: the proxy is the one this test built, stood in for the path the
// guide names. Section 6 needs the local stack's fixed ports: when one is
// taken it is not run (under CI=true the test fails).
func runGuide(t *testing.T, root string, p *Proxy, env []string) {
	g, err := guidepkg.ParseFile(filepath.Join(root, guide), guide)
	require.NoError(t, err)
	const proxyPath = "/tmp/hookinbox-proxy"
	var script strings.Builder
	skipped := 0
	for _, b := range g.Blocks {
		if b.Marker.Kind == guidepkg.Skip {
			skipped++
			require.Contains(t, b.Text, "hookinbox-lab release proxy --out "+proxyPath,
				"%s: the one block the test skips is the proxy's, which it builds itself (%s)", b.Where(), b.Marker.Reason)
			continue
		}
		script.WriteString(b.Text)
	}
	require.Equal(t, 1, skipped, "one block of %s runs in the checkout (release proxy)", guide)
	require.Contains(t, script.String(), "go get github.com/hookinbox/hookinbox@"+p.Version, "the guide requires VERSION")
	require.Contains(t, script.String(), "go test ./...")
	run := g.Blocks
	if taken := guidepkg.TakenPorts(guidepkg.LocalStackPorts...); len(taken) > 0 {
		if devenv.CI() {
			t.Fatalf("section 6 of %s: %s", guide, guidepkg.PortsMessage(taken))
		}
		t.Logf("section 6 of %s is not run: %s", guide, guidepkg.PortsMessage(taken))
		run = nil
		for _, b := range g.Blocks {
			if !b.Under("6. Run it") {
				run = append(run, b)
			}
		}
	}
	require.NotEmpty(t, g.Under("6. Run it"), "%s has no section 6", guide)

	dir := t.TempDir()
	// go run . dev keeps its PostgreSQL cluster under the module's .data/,
	// run as the postgres user when we are root: it must reach it.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	// The user's environment: no -mod=mod (only -trimpath, which changes
	// nothing but the build cache's keys, and -count=1, so the guide's
	// go test runs its tests rather than an earlier run's result), the
	// guide's own GOPROXY, nothing pointing the CLI at another database.
	guideEnv := append(guidepkg.ReaderEnv(env), "GOFLAGS=-trimpath -count=1")
	began := time.Now()
	gt := guidepkg.StartTest(t, guidepkg.Options{Dir: dir, Env: guideEnv, Timeout: 25 * time.Minute, Ready: 10 * time.Minute,
		Replace: []string{"file://" + proxyPath, "file://" + filepath.ToSlash(p.Dir)}})
	outs := gt.Run(run...)
	t.Logf("%s's blocks (%s)", guide, time.Since(began).Round(time.Second))
	if len(run) < len(g.Blocks) {
		return
	}
	// What section 6 says follows: of the two events of one session, one is
	// recorded, the other already recorded by it. send printed what it saw
	// within its --wait; the listing is asked until both are done.
	require.Contains(t, outs[len(outs)-1], "cs_local_1", "send and inbox list ran")
	last := gt.Eventually("the handler guide's inbox list", "go run . inbox list --limit 5\n", 2*time.Minute, func(out string) bool {
		return strings.Contains(out, "recorded session cs_local_1") && strings.Contains(out, "already recorded by")
	})
	require.Equal(t, 1, strings.Count(last, "recorded session cs_local_1"), "one event records the session:\n%s", last)
	require.Equal(t, 1, strings.Count(last, "already recorded by"), "the other finds it recorded:\n%s", last)
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
