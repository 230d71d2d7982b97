package devenv

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Tool is a binary built from a pinned tools module under tools/.
type Tool struct {
	// Name of the binary and of its tools/ folder.
	Name string
	// Module whose version go.mod pins (the key of the cache folder).
	Module string
	// Package to build.
	Package string
	// OwnSource: the tools module holds code of ours (not only a pin), so
	// its go.mod and *.go files key the cache folder too and an edit
	// rebuilds (`make temporal-server` computes the same key).
	OwnSource bool
	// Pin is the version tools/<Name>/go.mod pins, as the root module knows
	// it (pins.go): what Binary builds outside a checkout.
	Pin string
	// BinEnv names the variable pointing at a binary of the user's own
	// (Binary uses it as it is, building nothing), when the tool has one.
	BinEnv string
}

// The tools the local stack needs.
var (
	TemporalCLI = Tool{Name: "temporal", Module: "github.com/temporalio/cli", Package: "github.com/temporalio/cli/cmd/temporal",
		Pin: TemporalCLIVersion, BinEnv: TemporalBinEnv}
	MailpitTool = Tool{Name: "mailpit", Module: "github.com/axllent/mailpit", Package: "github.com/axllent/mailpit",
		Pin: MailpitVersion, BinEnv: MailpitBinEnv}
	// Amtool is Alertmanager's command-line tool: make compose-check
	// (scripts/compose-check.sh) validates deploy/alertmanager with it, from
	// the path Path gives (.tools/amtool-VERSION/amtool).
	Amtool = Tool{Name: "amtool", Module: "github.com/prometheus/alertmanager", Package: "github.com/prometheus/alertmanager/cmd/amtool", Pin: AmtoolVersion}
	// Helm builds and checks the Kubernetes chart: make chart-check
	// (deploy/helm/check, a module of its own) runs `helm lint` and `helm
	// template` on deploy/helm/hookinbox with the binary Ensure gives.
	// Only built when the chart is checked.
	Helm = Tool{Name: "helm", Module: "helm.sh/helm/v4", Package: "helm.sh/helm/v4/cmd/helm", Pin: HelmVersion}
	// TemporalServer is go.temporal.io/server built as production runs it
	// (PostgreSQL, several history shards): tools/temporal-server, the
	// "postgres" engine of the tests and benchmarks (StartTemporalPostgres).
	// Only built when that engine is asked for.
	TemporalServer = Tool{Name: "temporal-server", Module: "go.temporal.io/server", Package: "hookinbox/tools/temporal-server", OwnSource: true,
		Pin: TemporalServerVersion}
)

// Version reads the pinned version from tools/<name>/go.mod.
func (t Tool) Version(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "tools", t.Name, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("tools module for %s: %w", t.Name, err)
	}
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(t.Module) + `\s+(v\S+)`)
	m := re.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("tools/%s/go.mod does not pin %s", t.Name, t.Module)
	}
	return string(m[1]), nil
}

// Path is where the built binary lives, keyed by version so a bump rebuilds
// (and, for OwnSource, by its source).
func (t Tool) Path(root string) (string, error) {
	v, err := t.Version(root)
	if err != nil {
		return "", err
	}
	key := v
	if t.OwnSource {
		h, err := t.sourceHash(root)
		if err != nil {
			return "", err
		}
		key += "-" + h
	}
	return filepath.Join(ToolsDir(root), t.Name+"-"+key, t.Name), nil
}

// sourceHash is the first 12 hex digits of the SHA-256 of go.mod followed
// by the module's *.go files in name order: what the Makefile computes with
// `cat go.mod $(sort *.go) | sha256sum`.
func (t Tool) sourceHash(root string) (string, error) {
	dir := filepath.Join(root, "tools", t.Name)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range append([]string{filepath.Join(dir, "go.mod")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("tools module for %s: %w", t.Name, err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Ensure returns the binary's path, building it first if it is missing.
// Concurrent callers (parallel test packages) wait on a file lock instead of
// building twice. Progress goes to out.
func (t Tool) Ensure(ctx context.Context, root string, out io.Writer) (string, error) {
	bin, err := t.Path(root)
	if err != nil {
		return "", err
	}
	if isExecutable(bin) {
		return bin, nil
	}
	if err := mkdirAll(ToolsDir(root)); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(ToolsDir(root), "."+t.Name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) { // built by whoever held the lock
		return bin, nil
	}
	if err := t.build(ctx, root, bin, out); err != nil {
		return "", err
	}
	return bin, nil
}

func (t Tool) build(ctx context.Context, root, bin string, out io.Writer) error {
	dir := filepath.Join(root, "tools", t.Name)
	v, _ := t.Version(root)
	start := time.Now()
	fmt.Fprintf(out, "building %s %s into %s (once per machine; a few minutes on 2 cores)\n", t.Name, v, filepath.Dir(bin))

	fmt.Fprintf(out, "  %s: downloading modules…\n", t.Name)
	dl := exec.CommandContext(ctx, "go", "mod", "download")
	dl.Dir = dir
	if b, err := dl.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download for %s: %w\n%s", t.Name, err, b)
	}
	return t.compile(ctx, dir, nil, bin, start, out)
}

// compile builds t.Package in the module at dir (with env added to the
// environment) into bin, a line of progress every few seconds.
func (t Tool) compile(ctx context.Context, dir string, env []string, bin string, start time.Time, out io.Writer) error {
	list := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", t.Package)
	list.Dir = dir
	list.Env = append(os.Environ(), env...)
	listed, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list for %s: %w", t.Name, err)
	}
	total := 0
	for _, l := range strings.Split(string(listed), "\n") {
		if strings.TrimSpace(l) != "" {
			total++
		}
	}

	tmp := bin + ".tmp"
	if err := mkdirAll(filepath.Dir(bin)); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-v", "-o", tmp, t.Package)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build %s: %w", t.Name, err)
	}
	var done atomic.Int64
	var tail []string
	stop := make(chan struct{})
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				n := done.Load()
				pct := 0
				if total > 0 {
					pct = int(min(100, n*100/int64(total)))
				}
				fmt.Fprintf(out, "  %s: compiled %d of ~%d packages (%d%%), %s elapsed\n", t.Name, n, total, pct, time.Since(start).Round(time.Second))
			}
		}
	}()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, ": ") {
			tail = append(tail, line) // compiler messages, kept for the error
			if len(tail) > 40 {
				tail = tail[1:]
			}
			continue
		}
		done.Add(1)
	}
	err = cmd.Wait()
	close(stop)
	if err != nil {
		return fmt.Errorf("go build %s: %w\n%s", t.Name, err, strings.Join(tail, "\n"))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %s: built in %s\n", t.Name, time.Since(start).Round(time.Second))
	return nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock, waiting for other holders.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
