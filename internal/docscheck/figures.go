package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The benchmark citation rule, which CheckFigures enforces:
//
// A figure is a measured number: one with a decimal part (23.9, 0.6 cores),
// a ratio or share written against its number (1.30×, 2×, 18.4%), or a
// number followed by a unit of rate, time or size (1,001/s, 651 events/s,
// 0.92 ms, 82 s, 289 MiB). A whole number without such a unit is a setting
// (2 cores, 16 senders, 2,000 invoices, 20 × 50). Numbers inside code spans
// and code blocks are commands and flags, not figures; a number glued to a
// letter (p99, v1.29.1, F6) is a name.
//
// Every paragraph, list item or table row that holds a figure must cite, in
// its own text, at least one bench-results/NAME.json file (a shell-style
// brace list such as bench-results/engines-{1,2}-dev.json names several). A
// table row may instead rely on its table's citation: one in the table's
// header row, or in the block right before the table (a paragraph, list
// item or code block such as the `--save bench-results/…json` command that
// produced it). Every file cited anywhere in the checked section must exist.

// citation is one cited report; braces are expanded afterwards.
var citation = regexp.MustCompile(`bench-results/[A-Za-z0-9_.{},-]*?\.json`)

// number is a decimal number, with thousands separators or not.
var number = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`)

// spacedUnits may follow a number after one space; attached ones directly.
var (
	spacedUnits   = []string{"ms", "s", "MiB", "MB", "KB", "GB"}
	attachedUnits = []string{"×", "%", "/s", "ms", "s", "MiB"}
)

// A Problem is a place in a document where the citation rule is broken.
type Problem struct {
	Line int    // 1-based line of the unit's first line
	Text string // the unit's first line, shortened
	Why  string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s: %q", p.Line, p.Why, p.Text) }

// block is one unit of a Markdown section.
type block struct {
	kind  string // "paragraph", "item", "row", "code", "heading"
	line  int    // first line, 1-based
	text  string
	table int // rows: the index of the table's first block (its header row)
}

// CheckFigures applies the citation rule to the section of doc that starts
// at the heading line heading and ends before the next heading of the same
// or a higher level. exists says whether a cited path (relative to the
// repository root) is there.
func CheckFigures(doc []byte, heading string, exists func(path string) bool) ([]Problem, error) {
	lines := strings.Split(string(doc), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	blocks := splitBlocks(lines[start+1:sectionEnd(lines, start)], start+2)

	var problems []Problem
	for i, b := range blocks {
		for _, c := range citations(b.text) {
			if !exists(c) {
				problems = append(problems, b.problem(fmt.Sprintf("cites %s, which is not in the repository", c)))
			}
		}
		if b.kind == "code" || b.kind == "heading" {
			continue
		}
		figs := Figures(b.text)
		if len(figs) == 0 || len(citations(b.text)) > 0 {
			continue
		}
		if b.kind == "row" && tableCited(blocks, i) {
			continue
		}
		problems = append(problems, b.problem(fmt.Sprintf("%s %s cites no bench-results/ file", strings.Join(figs, ", "), plural(len(figs), "figure", "figures"))))
	}
	return problems, nil
}

func (b block) problem(why string) Problem {
	text, _, _ := strings.Cut(b.text, "\n")
	if r := []rune(text); len(r) > 80 {
		text = string(r[:80]) + "…"
	}
	return Problem{Line: b.line, Text: text, Why: why}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// tableCited reports whether the table of row i is cited in its header row
// or in the block right before the table.
func tableCited(blocks []block, i int) bool {
	first := blocks[i].table
	if len(citations(blocks[first].text)) > 0 {
		return true
	}
	return first > 0 && len(citations(blocks[first-1].text)) > 0
}

// sectionEnd is the index of the line that ends the section whose heading
// is lines[start]: the next heading of the same or a higher level outside
// a fenced code block (a shell comment such as "# pairs 2 to 4" is no
// heading), or len(lines).
func sectionEnd(lines []string, start int) int {
	level := headingLevel(lines[start])
	fenced := false
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
			fenced = !fenced
			continue
		}
		if l := headingLevel(lines[i]); !fenced && l > 0 && l <= level {
			return i
		}
	}
	return len(lines)
}

func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n > 6 || (len(line) > n && line[n] != ' ') {
		return 0
	}
	return n
}

var listItem = regexp.MustCompile(`^(?:[-*+]|\d+\.) `)

// splitBlocks cuts lines (the first being line first) into paragraphs,
// list items, table rows, code blocks and headings; blank lines only
// separate them.
func splitBlocks(lines []string, first int) []block {
	var out []block
	var cur *block
	table := -1
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], first+i
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			table = -1
			b := block{kind: "code", line: n}
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				body = append(body, lines[i])
			}
			b.text = strings.Join(body, "\n")
			out = append(out, b)
		case trimmed == "":
			flush()
			table = -1
		case headingLevel(line) > 0:
			// Kept as a block of its own, so a table right under a heading
			// takes no citation from the section before it.
			flush()
			table = -1
			out = append(out, block{kind: "heading", line: n, text: line})
		case strings.HasPrefix(trimmed, "|"):
			flush()
			if table < 0 {
				table = len(out)
			}
			out = append(out, block{kind: "row", line: n, text: line, table: table})
		case listItem.MatchString(trimmed):
			flush()
			table = -1
			cur = &block{kind: "item", line: n, text: line}
		default:
			table = -1
			if cur == nil {
				cur = &block{kind: "paragraph", line: n, text: line}
			} else {
				cur.text += "\n" + line
			}
		}
	}
	flush()
	return out
}

// citations returns the bench-results files text cites, braces expanded.
func citations(text string) []string {
	var out []string
	for _, c := range citation.FindAllString(text, -1) {
		out = append(out, expandBraces(c)...)
	}
	return out
}

// expandBraces expands shell-style {a,b} lists: x-{1,2}.json is x-1.json
// and x-2.json.
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	closing := strings.IndexByte(s[open:], '}')
	if closing < 0 {
		return []string{s}
	}
	closing += open
	var out []string
	for _, alt := range strings.Split(s[open+1:closing], ",") {
		out = append(out, expandBraces(s[:open]+alt+s[closing+1:])...)
	}
	return out
}

// link targets and code spans hold no figures.
var (
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	anyCode    = regexp.MustCompile("`+[^`]*`+")
)

// Figures returns the figures of a Markdown text, as written.
func Figures(text string) []string {
	text = anyCode.ReplaceAllString(text, " ")
	text = linkTarget.ReplaceAllString(text, "]")
	var out []string
	for _, loc := range number.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 {
			if r, _ := utf8.DecodeLastRuneInString(text[:s]); unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' {
				continue // p99, v1.29.1, F6: a name, not a figure
			}
		}
		rest := text[e:]
		if strings.HasPrefix(rest, ".") && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' {
			continue // a dotted version
		}
		if strings.Contains(text[s:e], ".") || hasUnit(rest) {
			out = append(out, text[s:e])
		}
	}
	return out
}

// hasUnit reports whether rest (what follows a number) starts with a unit.
func hasUnit(rest string) bool {
	for _, u := range attachedUnits {
		if after, ok := strings.CutPrefix(rest, u); ok && wordEnds(after) {
			return true
		}
	}
	after, ok := strings.CutPrefix(rest, " ")
	if !ok {
		return false
	}
	for _, u := range spacedUnits {
		if a, ok := strings.CutPrefix(after, u); ok && wordEnds(a) {
			return true
		}
	}
	// A rate: a word ending in /s, as in "651 events/s" or "38.0 ev/s".
	word := after
	if i := strings.IndexFunc(after, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:)(", r) }); i >= 0 {
		word = after[:i]
	}
	return strings.HasSuffix(strings.TrimRight(word, "."), "/s") && !strings.Contains(word, "`")
}

// wordEnds reports whether a unit ends where after starts.
func wordEnds(after string) bool {
	r, _ := utf8.DecodeRuneInString(after)
	return after == "" || (!unicode.IsLetter(r) && !unicode.IsDigit(r))
}
