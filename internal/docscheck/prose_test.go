package docscheck_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// citedDocs are the sections whose figures must be in the reports they cite.
var citedDocs = append(benchmarkDocs[:len(benchmarkDocs):len(benchmarkDocs)], struct{ file, heading string }{"docs/soak.md", "# The chaos soak"})

func citedProblems(t *testing.T, doc []byte, heading string) []string {
	t.Helper()
	problems, err := docscheck.CheckCitedFigures(doc, heading, os.DirFS(root(t)))
	require.NoError(t, err)
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return out
}

// TestEveryCitedFigureIsInItsReport: every figure of a paragraph, list
// item or table row that cites bench-results/ reports is one of their
// numbers, rounded as written (the rule is in prose.go).
func TestEveryCitedFigureIsInItsReport(t *testing.T) {
	t.Parallel()
	for _, d := range citedDocs {
		problems := citedProblems(t, readRepo(t, d.file), d.heading)
		assert.Empty(t, problems, "%s:\n%s", d.file, strings.Join(problems, "\n"))
	}
}

// TestTheCitedFigureCheckReportsEachFigureNotInItsReports runs the check on
// a fixture: figures that round to a report's number, a mean of its runs,
// a quotient, a share, a range, a load average, a glob or an elided run of
// reports pass, as do settings, counts, dates and issue numbers; a figure
// rounded the wrong way, a ratio no quotient gives, a figure of a report
// not cited and a generated table's number quoted without its report fail.
func TestTheCitedFigureCheckReportsEachFigureNotInItsReports(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("testdata/prose/doc.md")
	require.NoError(t, err)
	problems, err := docscheck.CheckCitedFigures(doc, "## Figures", os.DirFS("testdata/prose"))
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, fmt.Sprintf("line %d: %s", p.Line, p.Why))
	}
	require.Equal(t, []string{
		"line 10: 53.7 is not in bench-results/20261201-run-old.json",
		"line 12: 1.50× is not in bench-results/20261201-run-old.json",
		"line 18: 999.9 is not in bench-results/20261201-pair-1.json, bench-results/20261201-pair-2.json",
		"line 29: 41.5 is not in bench-results/20261201-run-old.json",
		"line 38: 77.7 is not in bench-results/20261201-run-old.json",
	}, got)
}

// TestAFigureChangedInProseFails plants 99.9 for 53.8 events/s in the
// prose of docs/benchmarks.md (the second pass's spread traffic, citing
// bench-results/20261201-1132-e2e-dev.json) and in the README's table row
// citing the same report, a wrong ratio in each, and a wrong raw insert
// rate: each is reported.
func TestAFigureChangedInProseFails(t *testing.T) {
	t.Parallel()
	for _, plant := range []struct{ file, heading, old, new string }{
		{"docs/benchmarks.md", "## Figures", "on the dev server, 53.8 events/s", "on the dev server, 99.9 events/s"},
		{"README.md", "## Benchmarks", "| 41.0 | 53.8 (1.31×) |", "| 41.0 | 99.9 (1.31×) |"},
		{"README.md", "## Benchmarks", "(0.40× of 7,171/s)", "(0.40× of 7,271/s)"},
		{"README.md", "## Benchmarks", "| 41.0 | 53.8 (1.31×) |", "| 41.0 | 53.8 (1.91×) |"},
		{"docs/benchmarks.md", "## Figures", "hookinbox from 79.2 to 47.7 (0.60×)", "hookinbox from 79.2 to 47.7 (0.75×)"},
	} {
		doc := string(readRepo(t, plant.file))
		require.Equal(t, 1, strings.Count(doc, plant.old), plant.old)
		problems := citedProblems(t, []byte(strings.Replace(doc, plant.old, plant.new, 1)), plant.heading)
		require.Len(t, problems, 1, "%s: %q", plant.new, problems)
		require.Contains(t, problems[0], "is not in bench-results/", plant.new)
	}
}
