package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A Route is one API route and its least role ("public" for none).
type Route struct {
	Method, Path, Role string
}

func (r Route) String() string { return r.Method + " " + r.Path + " [" + r.Role + "]" }

// routeSpan is a code span naming an API route: a method, then a path.
var routeSpan = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/[^ ?]*)`)

// RouteTableRoutes returns the routes of the first table under heading
// whose first header cell is "route": each code span of the first cell
// that starts with a method and a path (a query string and a body after it
// are ignored; a last segment a|b|c names one route each), with the
// second cell's first word as its least role.
func RouteTableRoutes(doc []byte, heading string) ([]Route, error) {
	lines := strings.Split(string(doc), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	var out []Route
	inTable := false
	for _, line := range lines[start+1:] {
		if headingLevel(line) > 0 {
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
			inTable = len(cells) > 1 && cells[0] == "route"
			continue
		}
		if len(cells) < 2 || strings.Trim(cells[0], "-: ") == "" {
			continue
		}
		role := strings.Fields(cells[1] + " ?")[0]
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			rm := routeSpan.FindStringSubmatch(m[1])
			if rm == nil {
				continue
			}
			dir, last := "", rm[2]
			if i := strings.LastIndexByte(rm[2], '/'); i >= 0 {
				dir, last = rm[2][:i+1], rm[2][i+1:]
			}
			for _, alt := range strings.Split(last, "|") {
				out = append(out, Route{Method: rm[1], Path: dir + alt, Role: role})
			}
		}
	}
	if !inTable {
		return nil, fmt.Errorf("no table with a \"route\" column under %q", heading)
	}
	return out, nil
}

// CheckRoutes compares the documented routes with those served and
// returns one sentence per difference, sorted: a documented route not
// served, one served with another role, one served but not documented. A
// served path parameter ({act}) matches any one segment of a documented
// path (pause, unpause, trigger); a documented parameter matches only a
// served one.
func CheckRoutes(served, documented []Route) []string {
	var problems []string
	used := make([]bool, len(served))
	for _, d := range documented {
		found := -1
		for i, r := range served {
			if r.Method == d.Method && pathMatches(r.Path, d.Path) && (found < 0 || r.Path == d.Path) {
				found = i
			}
		}
		switch {
		case found < 0:
			problems = append(problems, fmt.Sprintf("%s %s is documented, but the console does not serve it", d.Method, d.Path))
		case served[found].Role != d.Role:
			problems = append(problems, fmt.Sprintf("%s %s is documented for %s, but the console's least role for it is %s", d.Method, d.Path, d.Role, served[found].Role))
		}
		if found >= 0 {
			used[found] = true
		}
	}
	for i, r := range served {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("%s %s (%s) is served but not in the route table", r.Method, r.Path, r.Role))
		}
	}
	slices.Sort(problems)
	return problems
}

func pathMatches(served, documented string) bool {
	ss, ds := strings.Split(served, "/"), strings.Split(documented, "/")
	if len(ss) != len(ds) {
		return false
	}
	for i := range ss {
		sParam, dParam := strings.HasPrefix(ss[i], "{"), strings.HasPrefix(ds[i], "{")
		if ss[i] != ds[i] && !sParam {
			return false
		}
		if dParam && !sParam {
			return false
		}
	}
	return true
}
