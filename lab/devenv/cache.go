package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CacheDirEnv moves the per-machine cache Binary builds tools into.
const CacheDirEnv = "HOOKINBOX_CACHE_DIR"

// The variables naming a binary of the user's own (Tool.BinEnv).
const (
	TemporalBinEnv = "HOOKINBOX_TEMPORAL_BIN"
	MailpitBinEnv  = "HOOKINBOX_MAILPIT_BIN"
)

// CacheDir is hookinbox's per-machine cache: HOOKINBOX_CACHE_DIR, else
// hookinbox/ in os.UserCacheDir() (~/.cache/hookinbox on Linux). Tools are
// built into its tools/<name>-<version>/.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for hookinbox's tools (set %s): %w", CacheDirEnv, err)
	}
	return filepath.Join(d, "hookinbox"), nil
}

// CachePath is where Binary keeps the tool built outside a checkout:
// CacheDir()/tools/<name>-<pin>/<name>.
func (t Tool) CachePath() (string, error) {
	if t.Pin == "" {
		return "", fmt.Errorf("%s has no pinned version in the root module", t.Name)
	}
	d, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "tools", t.Name+"-"+t.Pin, t.Name), nil
}

// Binary is the tool's binary for what a team runs (hookintest, `dev`),
// which needs no hookinbox checkout:
//   - the binary t.BinEnv names, when set (HOOKINBOX_TEMPORAL_BIN,
//     HOOKINBOX_MAILPIT_BIN): nothing is built;
//   - inside a hookinbox checkout (FindRoot finds one holding
//     tools/<name>/go.mod), its .tools/ binary, built from tools/ as `make
//     tools` does (Ensure);
//   - otherwise CachePath, built there once per machine from the module
//     proxy at t.Pin, in a temporary module: nothing is written under the
//     module hookinbox is read from (a read-only module cache).
//
// Progress goes to out, a line per step with the time elapsed.
func (t Tool) Binary(ctx context.Context, out io.Writer) (string, error) {
	if t.BinEnv != "" {
		if p := os.Getenv(t.BinEnv); p != "" {
			if !isExecutable(p) {
				return "", fmt.Errorf("%s=%s is not an executable file", t.BinEnv, p)
			}
			return p, nil
		}
	}
	if root, err := FindRoot(); err == nil {
		if _, err := os.Stat(filepath.Join(root, "tools", t.Name, "go.mod")); err == nil {
			return t.Ensure(ctx, root, out)
		}
	}
	if t.OwnSource {
		return "", fmt.Errorf("%s is built from hookinbox's tools/%s: it needs a checkout", t.Name, t.Name)
	}
	bin, err := t.CachePath()
	if err != nil {
		return "", err
	}
	if isExecutable(bin) {
		return bin, nil
	}
	dir := filepath.Dir(filepath.Dir(bin))
	if err := mkdirAll(dir); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, "."+t.Name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) { // built by whoever held the lock
		return bin, nil
	}
	if err := t.buildFromProxy(ctx, bin, out); err != nil {
		return "", err
	}
	return bin, nil
}

// buildFromProxy builds t.Package at t.Pin as `go install pkg@version`
// would, in a temporary module (GOFLAGS=-mod=mod, no workspace), into bin.
func (t Tool) buildFromProxy(ctx context.Context, bin string, out io.Writer) error {
	start := time.Now()
	fmt.Fprintf(out, "building %s %s from the module proxy into %s (once per machine; a few minutes on 2 cores; %s or %s skip it)\n",
		t.Name, t.Pin, filepath.Dir(bin), orName(t.BinEnv, "a binary of your own"), CacheDirEnv)
	work, err := os.MkdirTemp("", "hookinbox-build-"+t.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	env := []string{"GOFLAGS=-mod=mod", "GOWORK=off"}
	step := func(what string, args ...string) error {
		fmt.Fprintf(out, "  %s: %s (%s elapsed)\n", t.Name, what, time.Since(start).Round(time.Second))
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s for %s: %w\n%s", strings.Join(args, " "), t.Name, err, b)
		}
		return nil
	}
	if err := step("creating a build module in "+work, "mod", "init", "hookinbox.build/"+t.Name); err != nil {
		return err
	}
	if err := step("resolving "+t.Package+"@"+t.Pin, "get", t.Package+"@"+t.Pin); err != nil {
		return err
	}
	if err := step("downloading modules", "mod", "download"); err != nil {
		return err
	}
	if err := t.compile(ctx, work, env, bin, start, out); err != nil {
		return err
	}
	if !isExecutable(bin) {
		return errors.New(t.Name + ": the build left no binary")
	}
	return nil
}

func orName(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ProjectDir is the folder whose .data/ holds the local stack's state
// (`dev`, and the key file operator commands read): HOOKINBOX_ROOT when set
// (the harness), else the nearest folder up from the working directory
// holding a go.mod (the team's module, or this repository), else the
// working directory. Never the module hookinbox is read from.
func ProjectDir() (string, error) {
	if r := os.Getenv("HOOKINBOX_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd, nil
		}
		dir = parent
	}
}
