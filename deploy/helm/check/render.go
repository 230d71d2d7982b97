package check

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Release and Namespace are the names the chart is rendered under.
const (
	Release   = "hk"
	Namespace = "hookinbox"
	// KubeVersion is the cluster version rendered for: the oldest the
	// chart's kubeVersion admits.
	KubeVersion = "1.27.0"
)

// Chart is the chart in a checkout, and the Helm that renders it.
type Chart struct {
	// Root is the repository's root; Dir the chart's folder.
	Root, Dir string
	// Helm is the helm binary; Home the folder its configuration, cache
	// and data go to (none of the user's: no repository, no plugin).
	Helm, Home string
}

// Open finds the repository (devenv.FindRoot) and the pinned Helm,
// building it first when it is missing (progress to out). Helm's home is a
// folder of its own that need not exist: template, lint and a client-side
// dry run write nothing there, and none of the user's repositories,
// plugins or clusters is seen.
func Open(ctx context.Context, out io.Writer) (*Chart, error) {
	home := filepath.Join(os.TempDir(), fmt.Sprintf("hookinbox-chart-check-%d", os.Getpid()))
	root, err := devenv.FindRoot()
	if err != nil {
		return nil, err
	}
	helm, err := devenv.Helm.Ensure(ctx, root, out)
	if err != nil {
		return nil, err
	}
	return &Chart{Root: root, Dir: filepath.Join(root, "deploy", "helm", "hookinbox"), Helm: helm, Home: home}, nil
}

// ValuesFile is the path of one of the chart's ci/ values files.
func (c *Chart) ValuesFile(name string) string { return filepath.Join(c.Dir, "ci", name) }

// Template renders the chart (`helm template`) with args (-f FILE, --set …).
func (c *Chart) Template(ctx context.Context, args ...string) ([]byte, error) {
	return c.run(ctx, append([]string{"template", Release, c.Dir, "--namespace", Namespace, "--kube-version", KubeVersion}, args...)...)
}

// Lint runs `helm lint --strict` with args.
func (c *Chart) Lint(ctx context.Context, args ...string) ([]byte, error) {
	return c.run(ctx, append([]string{"lint", "--strict", c.Dir, "--namespace", Namespace, "--kube-version", KubeVersion}, args...)...)
}

// Notes renders the chart's NOTES.txt as `helm install` prints it, with no
// cluster (a client-side dry run).
func (c *Chart) Notes(ctx context.Context, args ...string) (string, error) {
	out, err := c.run(ctx, append([]string{"install", Release, c.Dir, "--namespace", Namespace, "--dry-run=client"}, args...)...)
	if err != nil {
		return "", err
	}
	_, notes, ok := strings.Cut(string(out), "\nNOTES:\n")
	if !ok {
		return "", fmt.Errorf("helm install --dry-run printed no NOTES:\n%s", out)
	}
	return notes, nil
}

func (c *Chart) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Helm, args...) //nolint:gosec // G204: the pinned Helm devenv built, on the chart in this checkout
	cmd.Dir = c.Root
	// No user's Helm configuration or repositories: only the chart.
	cmd.Env = append(cmd.Environ(), "HELM_CONFIG_HOME="+filepath.Join(c.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(c.Home, "cache"), "HELM_DATA_HOME="+filepath.Join(c.Home, "data"),
		"KUBECONFIG="+filepath.Join(c.Home, "no-kubeconfig"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}
