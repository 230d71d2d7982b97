package docscheck_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// TestMain stops the PostgreSQL testenv starts for TestRoleDocs.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestRoleDocs: docs/security.md's per-role privileges and the README's
// roles table are what the grants give each role on a migrated database
// (PostgreSQL's catalog, after store.ApplyRoles), rendered by
// docscheck.RolesDetail and RolesSummary. HOOKINBOX_UPDATE_DOCS=1 writes
// them instead of comparing.
func TestRoleDocs(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	rps, err := docscheck.RoleTables(context.Background(), st.Pool, store.Roles)
	require.NoError(t, err)
	for _, f := range []struct{ file, block string }{
		{"docs/security.md", docscheck.RolesDetail(rps)},
		{"README.md", docscheck.RolesSummary(rps)},
	} {
		path := filepath.Join(root(t), f.file)
		doc, err := os.ReadFile(path)
		require.NoError(t, err)
		want, ok := docscheck.ReplaceRolesBlock(string(doc), f.block)
		require.True(t, ok, "%s has no roles block (<!-- roles:begin … --> … <!-- roles:end -->)", f.file)
		if os.Getenv("HOOKINBOX_UPDATE_DOCS") == "1" {
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644)) //nolint:gosec // a document of the repository
			continue
		}
		require.Equal(t, want, string(doc), "%s: the roles block is not what the grants give "+
			"(HOOKINBOX_UPDATE_DOCS=1 go test ./internal/docscheck -run TestRoleDocs)", f.file)
	}
}
