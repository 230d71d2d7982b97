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

// The README's two tables of variables: the service's configuration, and
// the tests' and the harness's.
const (
	configHeading = "## Configuration"
	testsHeading  = "### Test and harness variables"
)

// readmeTables returns the names the README's two tables list.
func readmeTables(t *testing.T, readme []byte) (config, tests []string) {
	t.Helper()
	config, err := docscheck.ConfigTableVars(readme, configHeading)
	require.NoError(t, err)
	tests, err = docscheck.ConfigTableVars(readme, testsHeading)
	require.NoError(t, err)
	return config, tests
}

// treeReads scans the whole module once per test.
func treeReads(t *testing.T) (service, tests map[string][]string) {
	t.Helper()
	reads, err := docscheck.TreeEnvReads(root(t))
	require.NoError(t, err)
	return docscheck.SplitEnvReads(reads)
}

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

// TestTheTwoVariableTablesListEveryVariableTheCodeReads: every
// HOOKINBOX_*, TEMPORAL_*, OTEL_* and DATABASE_URL variable the module's Go
// code reads is in the README: the ones non-test code outside lab/ reads
// in the configuration table, the ones only tests and lab/ read (and every
// HOOKINBOX_TEST_*) in the test variables table; and every row of either
// names a variable the code reads, of its own kind.
func TestTheTwoVariableTablesListEveryVariableTheCodeReads(t *testing.T) {
	t.Parallel()
	service, tests := treeReads(t)
	for _, v := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "OTEL_SERVICE_NAME", "HOOKINBOX_RETRY_BUDGET", "HOOKINBOX_CREDIT_NOTE_WAIT"} {
		require.Contains(t, service, v, "the scan finds the service's variables")
	}
	for _, v := range []string{"HOOKINBOX_ROOT", "HOOKINBOX_UPGRADE_FROM", "HOOKINBOX_UPDATE_DOCS", "HOOKINBOX_TEST_DATABASE_URL", "HOOKINBOX_TEST_LOG"} {
		require.Contains(t, tests, v, "the scan finds the tests' variables")
	}
	config, testTable := readmeTables(t, readRepo(t, "README.md"))
	problems := docscheck.CheckEnvTables(service, tests, config, testTable)
	require.Empty(t, problems, "\n%s", strings.Join(problems, "\n"))
}

// TestTheScanFindsWhatConfigAsksFor: the static scan of internal/config
// finds exactly the variables config.FromLookup asks the environment for
// (HOOKINBOX_*, TEMPORAL_*, OTEL_*, DATABASE_URL), so the table check above
// misses none of them.
func TestTheScanFindsWhatConfigAsksFor(t *testing.T) {
	t.Parallel()
	var asked []string
	_, _ = config.FromLookup(func(name string) (string, bool) {
		asked = append(asked, name)
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

// TestTheEnvCheckReportsEachKindOfMistake runs the check on a fixture tree
// and README: a variable read but in no table, one in the other table than
// its readers put it in, a row nothing reads and a row listed twice are each
// reported, and nothing else. A variable only mentioned, set, asserted on,
// read under testdata/ or in another module is no read; a HOOKINBOX_TEST_
// one is the tests' even when non-test code reads it.
func TestTheEnvCheckReportsEachKindOfMistake(t *testing.T) {
	t.Parallel()
	reads, err := docscheck.TreeEnvReads("testdata/envtree")
	require.NoError(t, err)
	service, tests := docscheck.SplitEnvReads(reads)
	require.Equal(t, []string{"DATABASE_URL", "HOOKINBOX_DOCUMENTED", "HOOKINBOX_UNDOCUMENTED", "HOOKINBOX_VIA_CONST", "TEMPORAL_FIXTURE_ADDRESS"}, sortedKeys(service))
	require.Equal(t, []string{"HOOKINBOX_FIXTURE_ROOT", "HOOKINBOX_FIXTURE_TEST_ONLY", "HOOKINBOX_TEST_FIXTURE", "OTEL_FIXTURE_MISPLACED"}, sortedKeys(tests))
	fixture, err := os.ReadFile("testdata/envtree/README.md")
	require.NoError(t, err)
	config, testTable := readmeTables(t, fixture)
	require.Equal(t, []string{"DATABASE_URL", "HOOKINBOX_DOCUMENTED", "HOOKINBOX_VIA_CONST", "TEMPORAL_FIXTURE_ADDRESS", "HOOKINBOX_STALE", "HOOKINBOX_TWICE", "HOOKINBOX_TWICE", "OTEL_FIXTURE_MISPLACED"}, config)
	require.Equal(t, []string{"HOOKINBOX_TEST_FIXTURE", "HOOKINBOX_FIXTURE_TEST_ONLY", "HOOKINBOX_DOCUMENTED"}, testTable)

	require.Equal(t, []string{
		"HOOKINBOX_DOCUMENTED is in the test variables table, but the service reads it (service/config.go:22): it belongs in the configuration table only",
		"HOOKINBOX_FIXTURE_ROOT is read by tests or lab/ only (lab/harness/harness.go:7) but not in the test variables table",
		"HOOKINBOX_STALE is in the configuration table but nothing reads it",
		"HOOKINBOX_TWICE is in the configuration table 2 times",
		"HOOKINBOX_TWICE is in the configuration table but nothing reads it",
		"HOOKINBOX_UNDOCUMENTED is read (service/config.go:23) but not in the configuration table",
		"OTEL_FIXTURE_MISPLACED is in the configuration table, but only tests or lab/ read it (lab/harness/harness.go:7): it belongs in the test variables table",
		"OTEL_FIXTURE_MISPLACED is read by tests or lab/ only (lab/harness/harness.go:7) but not in the test variables table",
	}, docscheck.CheckEnvTables(service, tests, config, testTable))
}

// TestTheEnvCheckFailsOnTheRealREADMEWithARowRemoved: the real check, on the
// real README with one row deleted from either table, or a row moved to the
// other table, reports exactly that variable.
func TestTheEnvCheckFailsOnTheRealREADMEWithARowRemoved(t *testing.T) {
	t.Parallel()
	service, tests := treeReads(t)
	readme := string(readRepo(t, "README.md"))
	rowOf := func(v string) string {
		for _, line := range strings.Split(readme, "\n") {
			if strings.HasPrefix(line, "| `"+v+"` |") {
				return line + "\n"
			}
		}
		t.Fatalf("the README has no %s row", v)
		return ""
	}
	for _, plant := range []struct {
		name, doc, want string
	}{
		{"a configuration row removed", strings.Replace(readme, rowOf("HOOKINBOX_SMTP_TLS"), "", 1),
			"HOOKINBOX_SMTP_TLS is read (internal/config/config.go:"},
		{"a Temporal row removed", strings.Replace(readme, rowOf("TEMPORAL_NAMESPACE"), "", 1),
			"TEMPORAL_NAMESPACE is read (internal/config/config.go:"},
		{"a test row removed", strings.Replace(readme, rowOf("HOOKINBOX_UPGRADE_FROM"), "", 1),
			"HOOKINBOX_UPGRADE_FROM is read by tests or lab/ only (lab/soak/upgrade_test.go:"},
		{"a stale row added", strings.Replace(readme, rowOf("HOOKINBOX_UPGRADE_FROM"), rowOf("HOOKINBOX_UPGRADE_FROM")+"| `HOOKINBOX_TEST_GONE` | | |\n", 1),
			"HOOKINBOX_TEST_GONE is in the test variables table but nothing reads it"},
	} {
		require.NotEqual(t, readme, plant.doc, plant.name)
		config, testTable := readmeTables(t, []byte(plant.doc))
		problems := docscheck.CheckEnvTables(service, tests, config, testTable)
		require.Len(t, problems, 1, "%s: %q", plant.name, problems)
		require.True(t, strings.HasPrefix(problems[0], plant.want), "%s: %s", plant.name, problems[0])
	}

	// HOOKINBOX_ROOT moved back into the configuration table: it is in the
	// wrong one, and missing from its own.
	moved := strings.Replace(readme, rowOf("HOOKINBOX_ROOT"), "", 1)
	moved = strings.Replace(moved, rowOf("HOOKINBOX_LOG_LEVEL"), rowOf("HOOKINBOX_LOG_LEVEL")+rowOf("HOOKINBOX_ROOT"), 1)
	config, testTable := readmeTables(t, []byte(moved))
	problems := docscheck.CheckEnvTables(service, tests, config, testTable)
	require.Len(t, problems, 2, "%q", problems)
	require.Contains(t, problems[0], "HOOKINBOX_ROOT is in the configuration table, but only tests or lab/ read it")
	require.Contains(t, problems[1], "HOOKINBOX_ROOT is read by tests or lab/ only")
}

func sortedKeys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
