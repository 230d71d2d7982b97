package docscheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// benchmarkDocs are the sections whose figures must cite bench-results/.
var benchmarkDocs = []struct{ file, heading string }{
	{"docs/benchmarks.md", "## Figures"},
	{"README.md", "## Benchmarks"},
}

// TestEveryBenchmarkFigureNamesItsCommittedReport: every figure of the
// benchmark docs names the bench-results/ JSON it comes from, and every
// report cited there is in the repository.
func TestEveryBenchmarkFigureNamesItsCommittedReport(t *testing.T) {
	t.Parallel()
	r := root(t)
	exists := func(rel string) bool {
		fi, err := os.Stat(filepath.Join(r, rel))
		return err == nil && fi.Mode().IsRegular()
	}
	for _, d := range benchmarkDocs {
		doc := readRepo(t, d.file)
		problems, err := docscheck.CheckFigures(doc, d.heading, exists)
		require.NoError(t, err, d.file)
		require.Empty(t, problems, "%s, section %q:\n%s", d.file, d.heading, lines(problems))

		// The section has figures to check: with its citations gone, it fails.
		uncited, err := docscheck.CheckFigures(bytes.ReplaceAll(doc, []byte("bench-results/"), []byte("results/")), d.heading, exists)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(uncited), 5, "%s: the check found almost no figures", d.file)
	}
}

// TestTheFigureCheckReportsAnUncitedFigure runs the check on a fixture:
// each uncited figure and each missing report is reported at its line, and
// settings, code, cited units and tables cited by their header or by the
// block before them are not.
func TestTheFigureCheckReportsAnUncitedFigure(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("testdata/figures.md")
	require.NoError(t, err)
	exists := func(rel string) bool { return rel == "bench-results/present.json" }
	problems, err := docscheck.CheckFigures(doc, "## Figures", exists)
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		`line 14: 0.59 figure cites no bench-results/ file: "An uncited paragraph, its figure on its second line:"`,
		`line 18: 82 figure cites no bench-results/ file: "- an uncited item: 82 s"`,
		`line 34: 18.4 figure cites no bench-results/ file: "| an uncited row | 18.4% |"`,
		`line 40: cites bench-results/missing.json, which is not in the repository: "A citation of a file that is not there: 2× (` + "`bench-results/missing.json`" + `), and a…"`,
		`line 40: cites bench-results/gone.json, which is not in the repository: "A citation of a file that is not there: 2× (` + "`bench-results/missing.json`" + `), and a…"`,
		`line 45: 289 figure cites no bench-results/ file: "Its figure, 289 MiB, is uncited."`,
		`line 53: 12.0 figure cites no bench-results/ file: "| a row | 12.0 |"`,
	}
	require.Equal(t, want, got)

	_, err = docscheck.CheckFigures(doc, "## Absent", exists)
	require.Error(t, err)
}

func TestFiguresTellMeasuredNumbersFromSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"53.8 events/s, 1.31×, 2× the target, 18.4% and +5%", []string{"53.8", "1.31", "2", "18.4", "5"}},
		{"1,001/s at one sender, 651–751 events/s, 38 ev/s", []string{"1,001", "751", "38"}},
		{"0.92 ms, 82 s, 289 MiB, 300 MB, 0.6 cores", []string{"0.92", "82", "289", "300", "0.6"}},
		{"2 cores, 16 senders, 2,000 invoices, 20 × 50, 4 shards, 10-minute timeout", nil},
		{"v1.29.1, p99, F6, R10, issue #17, 2026-12-01 10:28, migration 0009", nil},
		{"`--scale 1000 --intake-settle 15s` and ``1.5 ms``", nil},
		{"[a link](#two-engines-dev-server-sqlite-1-shard) and 3 seconds", nil},
	} {
		require.Equal(t, tt.want, docscheck.Figures(tt.text), tt.text)
	}
}

func lines(ps []docscheck.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}
