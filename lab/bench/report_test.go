package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNumWritesThousandsAndRounds(t *testing.T) {
	for _, c := range []struct {
		x    float64
		prec int
		want string
	}{{1067.24, 1, "1,067.2"}, {1092810.0 / 1000, 0, "1,093"}, {51.745, 1, "51.7"}, {0.4, 2, "0.40"}, {123456789, 0, "123,456,789"}, {-0.001, 1, "0.0"}} {
		require.Equal(t, c.want, num(c.x, c.prec), "%v", c.x)
	}
}

func TestLabelsKeepWhatSetsEachFileApart(t *testing.T) {
	require.Equal(t, []string{"before", "after"}, labels([]string{"b/20261201-intake-split-before.json", "b/20261201-intake-split-after.json"}))
	require.Equal(t, []string{"main", "traces"}, labels([]string{"20261202-traces-off-main-1.json", "20261202-traces-off-traces-1.json"}))
	require.Equal(t, []string{"20261201-forward-e2e"}, labels([]string{"20261201-forward-e2e.json"}))
}

// TestEveryTableKindRendersACommittedReport: each kind prints a table from
// the committed reports it is made for, and refuses a report that lacks
// what it needs.
func TestEveryTableKindRendersACommittedReport(t *testing.T) {
	r := func(name string) string { return filepath.Join("..", "..", "bench-results", name) }
	for kind, files := range map[string][]string{
		"e2e":          {r("20261201-forward-e2e.json")},
		"scale-pair":   {r("20261201-scale-floor-2k-20k.json")},
		"scale":        {r("20261201-scale-100k.json")},
		"intake-split": {r("20261201-intake-split-before.json"), r("20261201-intake-split-after.json")},
		"e2e-ab":       {r("20261202-redesign-ab-old-1.json"), r("20261202-redesign-ab-new-1.json")},
		"intake-ab":    {r("20261202-traces-off-main-1.json"), r("20261202-traces-off-traces-1.json")},
		"e2e-sides":    {r("20261201-redesign-ab-1-before.json"), r("20261201-redesign-ab-1-after.json"), r("20261201-redesign-ab-2-before.json")},
		"memory":       {r("20261202-scale-2k-conn-reuse-before.json")},
		"intake":       {r("20261201-intake.json")},
		"e2e-runs":     {r("20261201-bisect-old.json"), r("20261201-bisect-new.json")},
		"coalesce":     {r("20261203-coalesce-1ms-1.json"), r("20261203-coalesce-50ms.json")},
		"intake-floor": {r("20261203-intake-floor-1.json"), r("20261203-intake-floor-2.json")},
	} {
		out, err := Tables[kind](files)
		require.NoError(t, err, kind)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.GreaterOrEqual(t, len(lines), 3, "%s: a header, its separator and a row:\n%s", kind, out)
		require.True(t, strings.HasPrefix(lines[1], "| --- |"), kind)
	}
	require.ElementsMatch(t, TableKinds(), []string{"e2e", "scale-pair", "scale", "intake-split", "e2e-ab", "intake-ab", "e2e-sides", "memory", "intake", "e2e-runs", "coalesce", "intake-floor"})

	// A split from before the HTTP floor cannot make the floor's table.
	_, err := Tables["intake-floor"]([]string{r("20261203-intake-split-after.json")})
	require.ErrorContains(t, err, "no inbox statement or HTTP floor")

	// An intake report has no end-to-end runs; a pair table wants pairs.
	_, err = Tables["e2e"]([]string{r("20261201-intake.json")})
	require.ErrorContains(t, err, "compares two designs")
	_, err = Tables["e2e-ab"]([]string{r("20261202-redesign-ab-old-1.json")})
	require.ErrorContains(t, err, "in pairs")
	_, err = Tables["e2e-sides"]([]string{r("20261201-redesign-ab-1-before.json"), r("20261201-redesign-ab-2-before.json")})
	require.ErrorContains(t, err, "not two")
	_, err = Tables["coalesce"]([]string{r("20261201-forward-e2e.json")})
	require.ErrorContains(t, err, "lacks one of", "a report without the coalescing designs")
	_, err = Tables["intake-split"]([]string{r("20261201-intake.json")})
	require.ErrorContains(t, err, "no inbox statement")
	_, err = Tables["scale"]([]string{filepath.Join(t.TempDir(), "missing.json")})
	require.ErrorIs(t, err, os.ErrNotExist)
}
