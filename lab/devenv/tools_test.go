package devenv

import (
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
