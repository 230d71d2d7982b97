package docscheck_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/docscheck"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

// configSources are the packages whose HOOKINBOX_* variables the README's
// configuration table must list: the service's configuration and the local
// stack's.
var configSources = []string{"internal/config", "lab/devenv", "domains"}

func root(t *testing.T) string {
	t.Helper()
	r, err := devenv.FindRoot()
	require.NoError(t, err)
	return r
}

func readRepo(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	require.NoError(t, err)
	return b
}

// TestTheConfigurationTableListsEveryVariableTheCodeReads: every HOOKINBOX_*
// variable internal/config, lab/devenv or the built-in domains read has a row in the README's
// configuration table, and every row names a variable one of them reads.
func TestTheConfigurationTableListsEveryVariableTheCodeReads(t *testing.T) {
	t.Parallel()
	reads, err := docscheck.EnvVarsRead(root(t), configSources...)
	require.NoError(t, err)
	documented, err := docscheck.ConfigTableVars(readRepo(t, "README.md"), "## Configuration")
	require.NoError(t, err)
	require.Empty(t, docscheck.CheckEnvVars(reads, documented))
}

// TestTheScanFindsWhatConfigAsksFor: the static scan of internal/config
// finds exactly the HOOKINBOX_* variables config.FromLookup asks the
// environment for, so the table check above misses none of them.
func TestTheScanFindsWhatConfigAsksFor(t *testing.T) {
	t.Parallel()
	var asked []string
	_, _ = config.FromLookup(func(name string) (string, bool) {
		if strings.HasPrefix(name, "HOOKINBOX_") {
			asked = append(asked, name)
		}
		return "", false
	})
	reads, err := docscheck.EnvVarsRead(root(t), "internal/config")
	require.NoError(t, err)
	var scanned []string
	for name := range reads {
		scanned = append(scanned, name)
	}
	require.NotEmpty(t, asked)
	require.ElementsMatch(t, asked, scanned)
}

// TestTheEnvCheckReportsAnUndocumentedVariable runs the check on a fixture
// source and README: the variable read but missing from the table, the
// row nothing reads and the row listed twice are each reported, and
// nothing else (a variable only mentioned, read by a test file, or named
// outside the table's first column is not a row).
func TestTheEnvCheckReportsAnUndocumentedVariable(t *testing.T) {
	t.Parallel()
	reads, err := docscheck.EnvVarsRead("testdata", "envfixture")
	require.NoError(t, err)
	require.Equal(t, []string{"HOOKINBOX_DOCUMENTED", "HOOKINBOX_UNDOCUMENTED", "HOOKINBOX_VIA_CONST"}, sortedKeys(reads))
	fixture, err := os.ReadFile("testdata/README-config.md")
	require.NoError(t, err)
	documented, err := docscheck.ConfigTableVars(fixture, "## Configuration")
	require.NoError(t, err)
	require.Equal(t, []string{"HOOKINBOX_DOCUMENTED", "HOOKINBOX_VIA_CONST", "HOOKINBOX_STALE", "HOOKINBOX_TWICE", "HOOKINBOX_TWICE"}, documented)

	require.Equal(t, []string{
		"HOOKINBOX_STALE is in the configuration table but nothing scanned reads it",
		"HOOKINBOX_TWICE is in the configuration table 2 times",
		"HOOKINBOX_TWICE is in the configuration table but nothing scanned reads it",
		"HOOKINBOX_UNDOCUMENTED is read (envfixture/config.go:24) but not in the configuration table",
	}, docscheck.CheckEnvVars(reads, documented))
}

// TestTheEnvCheckFailsOnTheRealREADMEWithARowRemoved: the real check, on the
// real README with one row deleted, reports exactly that variable.
func TestTheEnvCheckFailsOnTheRealREADMEWithARowRemoved(t *testing.T) {
	t.Parallel()
	readme := string(readRepo(t, "README.md"))
	var kept []string
	removed := 0
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "| `HOOKINBOX_SMTP_TLS` |") {
			removed++
			continue
		}
		kept = append(kept, line)
	}
	require.Equal(t, 1, removed, "the README has a HOOKINBOX_SMTP_TLS row to remove")
	reads, err := docscheck.EnvVarsRead(root(t), configSources...)
	require.NoError(t, err)
	documented, err := docscheck.ConfigTableVars([]byte(strings.Join(kept, "\n")), "## Configuration")
	require.NoError(t, err)
	problems := docscheck.CheckEnvVars(reads, documented)
	require.Len(t, problems, 1, "%q", problems)
	require.True(t, strings.HasPrefix(problems[0], "HOOKINBOX_SMTP_TLS is read (internal/config/config.go:"), problems[0])
}

func sortedKeys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
