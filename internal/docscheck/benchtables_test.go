package docscheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
	"github.com/hookinbox/hookinbox/lab/bench"
)

// benchDocs are the documents whose benchmark tables are generated.
var benchDocs = []string{"README.md", "docs/benchmarks.md"}

func renderBench(kind string, files []string) (string, error) {
	render, ok := bench.Tables[kind]
	if !ok {
		return "", fmt.Errorf("no table kind %q", kind)
	}
	return render(files)
}

// checkBenchTables returns, per document, the first line where a marked
// table differs from what its reports give.
func checkBenchTables(t *testing.T, docs map[string][]byte) (problems []string, tables int) {
	t.Helper()
	for _, name := range benchDocs {
		doc := docs[name]
		regenerated, n, err := docscheck.BenchTables(doc, root(t), renderBench)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		tables += n
		if d := docscheck.FirstDifference(doc, regenerated); d != "" {
			problems = append(problems, fmt.Sprintf("%s: a generated benchmark table differs from its reports (run make docs): %s", name, d))
		}
	}
	return problems, tables
}

func benchDocTexts(t *testing.T) map[string][]byte {
	docs := map[string][]byte{}
	for _, name := range benchDocs {
		docs[name] = readRepo(t, name)
	}
	return docs
}

// TestEveryGeneratedBenchTableIsWhatItsReportsGive: every table between
// <!-- bench report KIND FILE… --> and <!-- end bench report --> is what
// hookinbox-lab bench report KIND FILE… prints from the committed JSON.
func TestEveryGeneratedBenchTableIsWhatItsReportsGive(t *testing.T) {
	t.Parallel()
	problems, n := checkBenchTables(t, benchDocTexts(t))
	require.Empty(t, problems, "\n%s", strings.Join(problems, "\n"))
	require.GreaterOrEqual(t, n, 6, "the generated tables")
}

// TestAFigureChangedInAGeneratedTableFails plants a figure in a copy of
// docs/benchmarks.md (hookinbox's 53.7 events/s at 2,000 resources beside
// the floor, made 99.9) and expects the check to name the file and line;
// a marker left open or of an unknown kind fails too.
func TestAFigureChangedInAGeneratedTableFails(t *testing.T) {
	t.Parallel()
	docs := benchDocTexts(t)
	orig := string(docs["docs/benchmarks.md"])
	row := "| 2,000 invoices, one per resource | 52.9 | 53.7 | 1.01× |"
	require.Equal(t, 1, strings.Count(orig, row), "the row to plant in")
	line := strings.Count(orig[:strings.Index(orig, row)], "\n") + 1

	docs["docs/benchmarks.md"] = []byte(strings.Replace(orig, row, "| 2,000 invoices, one per resource | 52.9 | 99.9 | 1.01× |", 1))
	problems, _ := checkBenchTables(t, docs)
	require.Len(t, problems, 1, "%q", problems)
	require.Contains(t, problems[0], fmt.Sprintf("docs/benchmarks.md: a generated benchmark table differs from its reports (run make docs): line %d is \"| 2,000 invoices, one per resource | 52.9 | 99.9 |", line))
	require.Contains(t, problems[0], "the generated table has \"| 2,000 invoices, one per resource | 52.9 | 53.7 |")

	// A row added at the end of a table is a difference too.
	end := strings.Index(orig, "\n<!-- end bench report -->") + 1
	docs["docs/benchmarks.md"] = []byte(orig[:end] + "| 1 | 2 |\n" + orig[end:])
	problems, _ = checkBenchTables(t, docs)
	require.Len(t, problems, 1, "%q", problems)

	for _, bad := range []struct{ doc, want string }{
		{"<!-- bench report scale bench-results/20261201-scale-100k.json -->\n| x |\n", "has no \"<!-- end bench report -->\" after it"},
		{"<!-- bench report nosuchkind bench-results/20261201-scale-100k.json -->\n<!-- end bench report -->\n", "line 1: bench report nosuchkind: no table kind"},
		{"<!-- bench report scale bench-results/nothere.json -->\n<!-- end bench report -->\n", "no such file"},
	} {
		_, _, err := docscheck.BenchTables([]byte(bad.doc), root(t), renderBench)
		require.ErrorContains(t, err, bad.want)
	}
}
