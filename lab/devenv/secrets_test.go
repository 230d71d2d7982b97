package devenv

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// make run's key is made once, readable by its owner only, and never
// rewritten (that would orphan every secret sealed under it).
func TestEnsureSecretsKeyMakesOneKeyOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path, created, err := EnsureSecretsKey(root)
	require.NoError(t, err)
	require.True(t, created)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	k, err := secretbox.Load("", path)
	require.NoError(t, err)
	require.Equal(t, "local-1", k.CurrentID())

	again, created, err := EnsureSecretsKey(root)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, path, again)
	second, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, first, second)
}
