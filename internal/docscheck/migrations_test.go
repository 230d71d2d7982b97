package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
)

func migrationNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root(t), "migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".sql"))
	}
	return names
}

// TestEveryQuotedMigrationExists: every migration number or file name the
// README, docs/ and the CHANGELOG quote is one in migrations/.
func TestEveryQuotedMigrationExists(t *testing.T) {
	t.Parallel()
	names := migrationNames(t)
	files, err := filepath.Glob(filepath.Join(root(t), "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join(root(t), "README.md"), filepath.Join(root(t), "CHANGELOG.md"))
	for _, f := range files {
		doc, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Empty(t, docscheck.CheckMigrations(doc, names), f)
	}
}

// TestTheMigrationCheckReportsAMissingOne: a number or file name that is
// not there is reported; a team's own migration, a range and a present
// one are not.
func TestTheMigrationCheckReportsAMissingOne(t *testing.T) {
	t.Parallel()
	doc := "The backoff (migration 0013) and `migrations/0013_perf.sql`.\n" +
		"A team's `provisioning/migrations/0001_accounts.sql`; migrations 0011–0013.\n" +
		"Wrong: migration 0099, `0013_speed.sql`, migrations 0018–0042.\n"
	var got []string
	for _, p := range docscheck.CheckMigrations([]byte(doc), []string{"0011_secrets", "0012_github_recovery", "0013_perf", "0018_console_trends"}) {
		got = append(got, p.Why)
	}
	require.Equal(t, []string{
		"quotes migration 0013_speed, which is not in migrations/",
		"quotes migration 0099, which is not in migrations/",
		"quotes migration 0042, which is not in migrations/",
	}, got)
}
