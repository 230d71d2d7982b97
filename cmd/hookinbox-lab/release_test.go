package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// release proxy --out DIR writes the proxy the guide's GOPROXY line names,
// and says how to use it; --out is required.
func TestReleaseProxyCommand(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	root := newRootCmd()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stdout)
	root.SetArgs([]string{"release", "proxy", "--out", out})
	require.NoError(t, root.ExecuteContext(context.Background()), stdout.String())
	v, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	require.NoError(t, err)
	version := string(bytes.TrimSpace(v))
	for _, f := range []string{"list", version + ".info", version + ".mod", version + ".zip"} {
		require.FileExists(t, filepath.Join(out, "github.com", "hookinbox", "hookinbox", "@v", f))
	}
	require.Contains(t, stdout.String(), "GOPROXY=file://"+out+",https://proxy.golang.org,direct\n")
	require.Contains(t, stdout.String(), "GONOSUMDB=github.com/hookinbox/hookinbox\n")
	require.Contains(t, stdout.String(), "left out tools/temporal/ (a module of its own)")

	require.Error(t, execute("release", "proxy"), "--out is required")
}
