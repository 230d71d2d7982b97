package docscheck

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// A generated benchmark table sits between two markers, the first naming
// the command that prints it (FILEs relative to the repository root):
//
//	<!-- bench report KIND FILE… -->
//	| … the table hookinbox-lab bench report KIND FILE… prints … |
//	<!-- end bench report -->
//
// BenchTables regenerates every such table of a document; make docs writes
// the result back (hookinbox-lab bench report --write-docs), and the docs
// check compares it with the document (FirstDifference).
var (
	benchMarker = regexp.MustCompile(`^<!-- bench report (\S+)((?: \S+)+) -->$`)
	benchEnd    = "<!-- end bench report -->"
)

// A TableRenderer prints a table of a kind from reports (bench.Tables).
type TableRenderer func(kind string, files []string) (string, error)

// BenchTables returns doc with every marked table replaced by what render
// prints for its marker, files joined to root; and how many it found. A
// marker without its end, an unknown kind or a report that cannot give the
// table is an error naming the line.
func BenchTables(doc []byte, root string, render TableRenderer) ([]byte, int, error) {
	lines := strings.SplitAfter(string(doc), "\n")
	var out strings.Builder
	n := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line)
		m := benchMarker.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == benchEnd {
				end = j
				break
			}
			if benchMarker.MatchString(strings.TrimSpace(lines[j])) {
				break
			}
		}
		if end < 0 {
			return nil, n, fmt.Errorf("line %d: %q has no %q after it", i+1, strings.TrimSpace(line), benchEnd)
		}
		var files []string
		for _, f := range strings.Fields(m[2]) {
			files = append(files, filepath.Join(root, filepath.FromSlash(f)))
		}
		table, err := render(m[1], files)
		if err != nil {
			return nil, n, fmt.Errorf("line %d: bench report %s: %w", i+1, m[1], err)
		}
		out.WriteString(table)
		out.WriteString(lines[end])
		i = end
		n++
	}
	return []byte(out.String()), n, nil
}

// FirstDifference returns "" when got and want are the same, else the
// first line where they differ, 1-based, with both texts of it.
func FirstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d is %q, the generated table has %q", i+1, gl, wl)
		}
	}
	return ""
}
