package release

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tidyDiff runs `go mod tidy -diff` in dir: its output, and whether the
// module is tidy (the command exits non-zero with a diff when it is not).
func tidyDiff(t *testing.T, dir string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy", "-diff")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("go mod tidy -diff in %s: %v\n%s", dir, err, out.String())
	}
	return out.String(), err == nil
}

// TestInTreeExamplesAreTidy: each examples/ module, as it is in the tree
// (replacing hookinbox with the checkout), is tidy. TestReleasedExamples
// tidies its copies, so an in-tree go.mod left behind by a change of the
// root module's requirements went unnoticed (138c639 tidied four of them
// by hand). A copy with one requirement dropped is not tidy: the check can
// fail.
func TestInTreeExamplesAreTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("resolves every example module's requirements")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	examples, err := Examples(root)
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, ex := range examples {
		diff, tidy := tidyDiff(t, ex)
		rel, _ := filepath.Rel(root, ex)
		require.True(t, tidy, "%s is not tidy: run (cd %s && go mod tidy) and commit its go.mod and go.sum\n%s", rel, rel, diff)
	}

	// Planted: the first example's copy, its replace made absolute, without
	// its first direct requirement other than hookinbox.
	src := examples[0]
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	lines := strings.Split(string(mod), "\n")
	var kept []string
	dropped := ""
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "replace" && f[1] == ModulePath:
			l = "replace " + ModulePath + " => " + root
		case dropped == "" && len(f) == 2 && f[0] != ModulePath && !strings.HasPrefix(f[0], "//") && strings.Contains(f[0], "."):
			dropped = f[0]
			continue
		}
		kept = append(kept, l)
	}
	require.NotEmpty(t, dropped, "%s/go.mod has a direct requirement to drop", src)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.Join(kept, "\n")), 0o644))
	diff, tidy := tidyDiff(t, dir)
	require.False(t, tidy, "a go.mod without %s passed as tidy", dropped)
	require.Contains(t, diff, dropped)
}
