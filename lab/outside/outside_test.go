// Package outside checks that a team's module works from outside this
// repository, with hookinbox read from a read-only copy (as Go's module
// cache holds it): the team's tests pass with no HOOKINBOX_ROOT and nothing
// is written under the copy. It has no non-test code.
package outside

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// moduleFiles are the files of the root module as a module zip has them:
// tracked and new files, without those of nested modules (a folder with
// its own go.mod: tools/*, examples/*, deploy/helm/check).
func moduleFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	var nested []string
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if filepath.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, filepath.Dir(f)+"/")
		}
		files = append(files, f)
	}
	var kept []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
			continue // deleted in the work tree
		}
		inNested := false
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				inNested = true
				break
			}
		}
		if !inNested {
			kept = append(kept, f)
		}
	}
	return kept
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	fi, err := in.Stat()
	require.NoError(t, err)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// snapshot is every path under dir with its mode and, for a file, the
// SHA-256 of its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		}
		snap[rel] = v
		return nil
	}))
	return snap
}

// TestATeamModuleOutsideTheTreeTestsWithAReadOnlyHookinbox copies
// examples/provisioning to a temporary folder outside the repository, with
// hookinbox's module copied beside it read-only (chmod -R a-w) and the
// team's replace pointing at that copy, and runs the team's go test there
// with HOOKINBOX_ROOT unset, then its binary's --version. The tests must pass, and the copy
// must be byte for byte what it was: the same paths, modes and hashes.
func TestATeamModuleOutsideTheTreeTestsWithAReadOnlyHookinbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a team module's tests on the real stack")
	}
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	tmp := t.TempDir()
	lib, team := filepath.Join(tmp, "hookinbox"), filepath.Join(tmp, "team")

	for _, f := range moduleFiles(t, root) {
		copyFile(t, filepath.Join(root, f), filepath.Join(lib, f))
	}
	require.NoFileExists(t, filepath.Join(lib, "tools", "temporal", "go.mod"), "a module copy has no nested module")
	require.NoError(t, exec.Command("chmod", "-R", "a-w", lib).Run())
	t.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", lib).Run() })

	ex := filepath.Join(root, "examples", "provisioning")
	require.NoError(t, filepath.WalkDir(ex, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ex, p)
		if d.IsDir() && (rel == ".data" || rel == ".tools") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			copyFile(t, p, filepath.Join(team, rel))
		}
		return nil
	}))
	gomod, err := os.ReadFile(filepath.Join(team, "go.mod"))
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^replace github.com/hookinbox/hookinbox => \.\./\.\.$`)
	require.Regexp(t, re, string(gomod))
	gomod = re.ReplaceAll(gomod, []byte("replace github.com/hookinbox/hookinbox => "+lib))
	require.NoError(t, os.WriteFile(filepath.Join(team, "go.mod"), gomod, 0o644))

	// The tools a user already has (HOOKINBOX_TEMPORAL_BIN and _MAILPIT_BIN):
	// this checkout's, so the test builds none. Their build from the module
	// proxy is lab/devenv's test.
	// Every hookinbox package is compiled again from the copy's new folder:
	// on 2 shared cores a cold run took over 25 minutes (go vet alone 17).
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	temporal, err := devenv.TemporalCLI.Ensure(ctx, root, os.Stderr)
	require.NoError(t, err)
	mailpit, err := devenv.MailpitTool.Ensure(ctx, root, os.Stderr)
	require.NoError(t, err)

	before := snapshot(t, lib)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOOKINBOX_ROOT=") && !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOFLAGS=-mod=mod", "GOWORK=off", "HOOKINBOX_TEMPORAL_BIN="+temporal, "HOOKINBOX_MAILPIT_BIN="+mailpit,
		"HOOKINBOX_CACHE_DIR="+filepath.Join(tmp, "cache"))
	for _, args := range [][]string{{"test", "-count=1", "./..."}} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = team, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("go %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Second), out.String())
		require.NoError(t, err, "go %s in the team module outside the tree", strings.Join(args, " "))
	}
	// The team's program is its own: it names itself, and --version gives
	// its version beside hookinbox's.
	bin := filepath.Join(tmp, "bin", "provisioning")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir, build.Env = team, env
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^provisioning dev \(hookinbox `+regexp.QuoteMeta(strings.TrimSpace(string(version)))+`( \(replaced by [^)]+\))?\)\n$`, string(out))
	unknown := exec.CommandContext(ctx, bin, "no-such-command")
	b, err = unknown.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "run 'provisioning --help' for usage")

	after := snapshot(t, lib)
	require.Equal(t, sortedKeys(before), sortedKeys(after), "no file was added under or removed from the read-only copy")
	require.Equal(t, before, after, "no file of the read-only copy changed")
	require.NoDirExists(t, filepath.Join(team, ".tools"))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
