package devenv

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestToolVersionAndPathComeFromThePinnedModule(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "tools", "temporal"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "tools", "temporal", "go.mod"),
		[]byte("module x\n\ngo 1.26\n\nrequire (\n\tgithub.com/temporalio/cli v1.5.1\n\tgithub.com/other v0.1.0\n)\n"), 0o644))
	v, err := TemporalCLI.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v1.5.1", v)
	p, err := TemporalCLI.Path(root)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, ".tools", "temporal-v1.5.1", "temporal"), p)

	_, err = MailpitTool.Version(root)
	require.Error(t, err, "no tools/mailpit module")
}

func TestTheRepositoryPinsTheDocumentedVersions(t *testing.T) {
	t.Parallel()
	root, err := FindRoot()
	require.NoError(t, err)
	v, err := TemporalCLI.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v1.5.1", v, "v1.9.x cannot be built from the module proxy")
	v, err = MailpitTool.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v1.27.11", v)
	// scripts/compose-check.sh runs amtool from this path (and checks the
	// version is the compose file's prom/alertmanager image's).
	v, err = Amtool.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v0.35.0", v)
	p, err := Amtool.Path(root)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, ".tools", "amtool-v0.35.0", "amtool"), p)
	// make chart-check (deploy/helm/check) renders the chart with it.
	v, err = Helm.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v4.3.2", v)
}

func TestTheTemporalServerIsTheVersionTheCLIEmbeds(t *testing.T) {
	t.Parallel()
	root, err := FindRoot()
	require.NoError(t, err)
	v, err := TemporalServer.Version(root)
	require.NoError(t, err)
	cli, err := Tool{Name: TemporalCLI.Name, Module: TemporalServer.Module}.Version(root)
	require.NoError(t, err)
	require.Equal(t, cli, v, "tools/temporal-server must pin the go.temporal.io/server the pinned CLI's dev server runs, so both engines are the same server")
	p, err := TemporalServer.Path(root)
	require.NoError(t, err)
	require.Regexp(t, `/\.tools/temporal-server-`+regexp.QuoteMeta(v)+`-[0-9a-f]{12}/temporal-server$`, p,
		"keyed by version and by the module's own source")
}

func TestAToolWithItsOwnSourceIsRebuiltWhenTheSourceChanges(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "tools", "x")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\nrequire example.com/x v1.2.3\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	tool := Tool{Name: "x", Module: "example.com/x", OwnSource: true}
	p1, err := tool.Path(root)
	require.NoError(t, err)
	// sha256sum of go.mod then main.go, as the Makefile computes it.
	require.Equal(t, filepath.Join(root, ".tools", "x-v1.2.3-6f3cdd66711a", "x"), p1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // edited\n"), 0o644))
	p2, err := tool.Path(root)
	require.NoError(t, err)
	require.NotEqual(t, p1, p2)
}

func TestAnNPMPackageIsPinnedToAnExactVersion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "tools", "x")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := NPMPackage{Name: "x", Package: "@scope/x"}
	for pin, ok := range map[string]bool{"7.6.1": true, "^7.6.1": false, "~7.6.1": false, "latest": false, "7.x": false} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"),
			[]byte(`{"private":true,"dependencies":{"@scope/x":"`+pin+`"}}`), 0o644))
		v, err := p.Version(root)
		if !ok {
			require.Error(t, err, pin)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, pin, v)
		d, err := p.Dir(root)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(root, ".tools", "x-7.6.1", "node_modules", "@scope", "x"), d)
	}
}

func TestTheRepositoryPinsTheCorpora(t *testing.T) {
	t.Parallel()
	root, err := FindRoot()
	require.NoError(t, err)
	v, err := StripeMock.Version(root)
	require.NoError(t, err)
	require.Equal(t, "v0.203.0", v)
	v, err = OctokitWebhooks.Version(root)
	require.NoError(t, err)
	require.Equal(t, "7.6.1", v)
	lock, err := os.ReadFile(filepath.Join(root, "tools", OctokitWebhooks.Name, "package-lock.json"))
	require.NoError(t, err)
	require.Contains(t, string(lock), `"node_modules/@octokit/webhooks-examples": {
      "version": "7.6.1",
      "integrity": "sha512-`, "npm ci checks the tarball against the locked integrity")
}

func TestListenLineFindsTheAddressAcrossWrites(t *testing.T) {
	t.Parallel()
	l := &listenLine{prefix: "Listening for HTTP at address: ", found: make(chan string, 1), log: io.Discard}
	for _, part := range []string{"stripe-mock master\nListening for HTTPS at address: 127.0.0.1:1\nListening for HTTP at addr", "ess: 127.0.0.1:4", "2\nmore\n"} {
		_, err := l.Write([]byte(part))
		require.NoError(t, err)
	}
	require.Equal(t, "127.0.0.1:42", <-l.found)
}
