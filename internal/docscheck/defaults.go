package docscheck

import (
	"fmt"
	"slices"
	"strings"
)

// ConfigTableDefaults returns, for each variable in the first column of the
// configuration table under heading (see ConfigTableVars), the default its
// second column states: the code span at the variable's position when a
// row names several (`1s`, `5m`), else the first; spans inside
// parentheses (what make run sets) do not count. A variable whose row
// states no default in a code span is absent, and so is one whose default
// is another variable (`DATABASE_URL`).
func ConfigTableDefaults(readme []byte, heading string) (map[string]string, error) {
	lines := strings.Split(string(readme), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	out := map[string]string{}
	inTable := false
	for _, line := range lines[start+1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := tableCells(line)
		if !inTable {
			inTable = len(cells) > 1 && cells[0] == "variable"
			continue
		}
		if len(cells) < 2 || strings.Trim(cells[0], "-: ") == "" {
			continue
		}
		var vars []string
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			vars = append(vars, m[1])
		}
		var defaults []string
		for _, m := range codeSpan.FindAllStringSubmatch(outsideParens(cells[1]), -1) {
			defaults = append(defaults, m[1])
		}
		for i, v := range vars {
			d := ""
			switch {
			case len(vars) > 1 && len(defaults) == len(vars):
				d = defaults[i]
			case len(vars) == 1 && len(defaults) > 0:
				d = defaults[0]
			}
			if d != "" && !strings.Contains(d, "_URL") {
				out[v] = d
			}
		}
	}
	if !inTable {
		return nil, fmt.Errorf("no table with a \"variable\" column under %q", heading)
	}
	return out, nil
}

// outsideParens drops the parenthesized parts of s.
func outsideParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
