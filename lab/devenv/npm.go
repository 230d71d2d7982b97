package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// NPMPackage is test data published on the npm registry, pinned to an
// exact version (and, by its lockfile, to its integrity hash) by
// tools/<Name>/package.json and package-lock.json, and installed by `npm
// ci` into .tools/<Name>-<version>/ the first time it is asked for (make
// tools, or the first test that needs it).
type NPMPackage struct {
	// Name of its tools/ folder and of its cache folder.
	Name string
	// Package is its npm name.
	Package string
}

// OctokitWebhooks is @octokit/webhooks-examples: GitHub's example webhook
// payloads, by event, for github.com and each GitHub Enterprise Server
// release (<dir>/index.json). The GitHub corpus test sends every one
// through the intake.
var OctokitWebhooks = NPMPackage{Name: "octokit-webhooks-examples", Package: "@octokit/webhooks-examples"}

var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// Version is the exact version tools/<Name>/package.json pins.
func (p NPMPackage) Version(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "tools", p.Name, "package.json"))
	if err != nil {
		return "", fmt.Errorf("npm pin of %s: %w", p.Package, err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("tools/%s/package.json: %w", p.Name, err)
	}
	v := pkg.Dependencies[p.Package]
	if !exactVersion.MatchString(v) {
		return "", fmt.Errorf("tools/%s/package.json must pin %s to an exact version, not %q", p.Name, p.Package, v)
	}
	return v, nil
}

// Dir is where the installed package lives.
func (p NPMPackage) Dir(root string) (string, error) {
	v, err := p.Version(root)
	if err != nil {
		return "", err
	}
	return filepath.Join(ToolsDir(root), p.Name+"-"+v, "node_modules", filepath.FromSlash(p.Package)), nil
}

// installed reports whether dir holds the pinned version of the package.
func (p NPMPackage) installed(dir, version string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	return json.Unmarshal(b, &pkg) == nil && pkg.Name == p.Package && pkg.Version == version
}

// Ensure returns the package's folder, installing it first when missing:
// `npm ci` (integrity checked against the lockfile, no install scripts)
// in a temporary folder under .tools/, renamed into place when complete.
// Concurrent callers wait on a file lock. Progress goes to out.
func (p NPMPackage) Ensure(ctx context.Context, root string, out io.Writer) (string, error) {
	v, err := p.Version(root)
	if err != nil {
		return "", err
	}
	dir, err := p.Dir(root)
	if err != nil {
		return "", err
	}
	if p.installed(dir, v) {
		return dir, nil
	}
	if err := mkdirAll(ToolsDir(root)); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(ToolsDir(root), "."+p.Name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if p.installed(dir, v) {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm is not installed: it fetches " + p.Package + " from the npm registry (Debian: apt-get install npm)")
	}
	start := time.Now()
	fmt.Fprintf(out, "fetching %s %s from the npm registry into %s (once per machine)\n", p.Package, v, ToolsDir(root))
	final := filepath.Join(ToolsDir(root), p.Name+"-"+v)
	tmp, err := os.MkdirTemp(ToolsDir(root), "."+p.Name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(root, "tools", p.Name, f))
		if err != nil {
			return "", fmt.Errorf("npm pin of %s: %w", p.Package, err)
		}
		//nolint:gosec // G703: f is one of the two names above, tmp our own temporary directory
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci for %s %s: %w\n%s", p.Package, v, err, b)
	}
	if !p.installed(filepath.Join(tmp, "node_modules", filepath.FromSlash(p.Package)), v) {
		return "", fmt.Errorf("npm ci did not install %s %s", p.Package, v)
	}
	_ = os.RemoveAll(final) // a partial folder left by an older layout
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "  %s: fetched in %s\n", p.Name, time.Since(start).Round(time.Second))
	return dir, nil
}

// CI reports whether this runs under continuous integration (CI set, as
// every CI service sets it, and not "false" or "0"): there a tool or
// corpus that cannot be had fails the build instead of skipping its tests.
func CI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}
