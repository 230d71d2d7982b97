package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

// TestEveryDocumentedLabCommandParses: every hookinbox-lab command line of
// the README, docs/ and the CHANGELOG's current release, and every Example
// of this tree, is parsed by the real hookinbox-lab tree (see
// docscheck.CheckCommand; the hookinbox lines are checked in
// internal/docscheck).
func TestEveryDocumentedLabCommandParses(t *testing.T) {
	t.Parallel()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	lines, problems, err := docscheck.DocumentedCommands(root, "hookinbox-lab")
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Greater(t, len(lines), 20, "the docs hold many hookinbox-lab lines")
	examples, problems := docscheck.ExampleCommands(newRootCmd())
	require.Empty(t, problems)
	require.NotEmpty(t, examples)
	trees := map[string]func() *cobra.Command{"hookinbox-lab": newRootCmd}
	bad := docscheck.CheckCommands(trees, append(lines, examples...))
	require.Empty(t, bad, "\n%s", strings.Join(bad, "\n"))

	// A wrong flag planted in a copy of the benchmarks' commands fails.
	doc := readDoc(t, root, "docs/benchmarks.md")
	require.Contains(t, doc, "bench --suite intake")
	planted, _ := docscheck.MarkdownCommands("docs/benchmarks.md", []byte(strings.Replace(doc, "bench --suite intake", "bench --suites intake", 1)), "hookinbox-lab")
	bad = docscheck.CheckCommands(trees, planted)
	require.Len(t, bad, 1, "%q", bad)
	require.Contains(t, bad[0], "unknown flag: --suites")
}

func readDoc(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return string(b)
}
