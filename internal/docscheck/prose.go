package docscheck

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The rule for figures next to a citation, which CheckCitedFigures
// enforces:
//
// In a paragraph, list item or hand-typed table row that cites
// bench-results/ reports (a row: in itself, its header or the block right
// before its table, as CheckFigures reads it), every figure (as Figures
// finds them: a decimal, a ratio with ×, a share with %, a number with a
// unit of rate, time or size) must be one of the cited reports' numbers,
// after rounding to the figure's written precision (53.8 matches 53.76;
// 1,093 matches 1092.8). Which numbers a report holds:
//
//   - every number in its JSON, at any depth (fields, per-round lists,
//     maps of signals or history types); a field named …_ms also in
//     seconds (a p50 of 82 s is latency_p50_ms 82,000);
//   - the mean of a field over the runs of one design on one load (a row
//     of end_to_end or scaling repeated with --repeat), as tables quote
//     "mean of 2 runs";
//   - for a ratio (a figure followed by ×, or in a table column whose
//     header holds ÷ or "ratio"): also the quotient of two of those
//     numbers of the same rate field (ratioFields), one run or mean over another of the same
//     design or the same load (hookinbox ÷ hookinbox-v1 events/s on one
//     load, the floor at 100,000 resources ÷ the floor at 20,000);
//   - the numbers of a generated table (between bench report markers)
//     earlier in the section whose reports the block all cites: its
//     means, ratios and the like were computed from those reports;
//   - for a share (a figure followed by %): also 100 times a number, a
//     quotient, or one less either (0.12 sent per event: 88% refused; a
//     ratio of 1.10: +10%).
//
// Not figures, so never checked: whole numbers without a unit (counts,
// settings: 2 cores, 16 senders, issue #17, migration 0013, 2,000
// invoices), numbers in code spans and code blocks (commands, flags, file
// names such as bench-results/20261201-intake.json), numbers glued to a
// letter (p99, v1.29.1, F6) and clock times (10:28). A figure of a time
// or size unit that is a setting rather than a measurement (an 8 s window,
// 15 s after the last effect) is exempt when it is a whole number and the
// same sentence says so with one of settingWords (or names the flag that
// sets it, `--progress-every`). A sentence that says its figures come from
// elsewhere (elsewhere: a pprof profile, "not a committed report") is not
// checked. Whole numbers written with trailing zeros are read to their
// last nonzero digit (11,000 is 11 thousand). Generated tables (between
// bench report markers) are checked by BenchTables instead.

// settingWords mark a whole number of seconds, milliseconds or MiB in the
// same sentence as a setting: what a run was told, not what it measured.
var settingWords = []string{"window", "warm-up", "after the last effect", "settle", "idle", "timeout", "`--"}

// elsewhere mark a sentence whose figures come from somewhere else than
// the reports the paragraph cites, and say so: a heap profile's (a .pprof
// beside the report), or one the sentence says is not in a committed
// report.
var elsewhere = []string{"pprof", "not a committed report", "not in a committed report"}

// rangeEnd is the rest of a range after its first end: "–1.9×" (group 1
// what follows the second end).
var rangeEnd = regexp.MustCompile(`^[–-]\d[\d,]*(?:\.\d+)?(.*)`)

// reportNumbers are the numbers of the reports one block cites.
type reportNumbers struct {
	all   []float64          // every number, and the seconds of _ms fields
	byKey map[string][]keyed // per field, with the means of repeated runs
}

// keyed is a number of a field, with the run it is of: its design and
// load, "" outside end_to_end and scaling.
type keyed struct {
	x            float64
	design, load string
}

// comparable says whether a quotient of two runs' numbers is one the docs
// may write: of the same design (at two sizes) or the same load (two
// designs), or of numbers outside runs.
func (k keyed) comparable(o keyed) bool {
	return k.design == "" || o.design == "" || k.design == o.design || k.load == o.load
}

// readReportNumbers collects the numbers of reports.
func readReportNumbers(files map[string][]byte) (*reportNumbers, error) {
	rn := &reportNumbers{byKey: map[string][]keyed{}}
	for name, b := range files {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rn.walk("", v, keyed{})
		// Means of a field over the runs of one design on one load.
		if m, ok := v.(map[string]any); ok {
			for _, section := range []string{"end_to_end", "scaling"} {
				runs, _ := m[section].([]any)
				groups := map[string]map[string][]float64{}
				where := map[string]keyed{}
				for _, r := range runs {
					o, ok := r.(map[string]any)
					if !ok {
						continue
					}
					g := fmt.Sprint(o["design"], "\x00", o["load"], "\x00", o["temporal_engine"])
					where[g] = keyed{design: fmt.Sprint(o["design"]), load: fmt.Sprint(o["load"])}
					if groups[g] == nil {
						groups[g] = map[string][]float64{}
					}
					for k, x := range o {
						if f, ok := x.(float64); ok {
							groups[g][k] = append(groups[g][k], f)
						}
					}
				}
				for g, fields := range groups {
					for k, xs := range fields {
						if len(xs) > 1 {
							mean := 0.0
							for _, x := range xs {
								mean += x
							}
							mean /= float64(len(xs))
							rn.add(k, mean, where[g])
						}
					}
				}
			}
		}
	}
	return rn, nil
}

func (rn *reportNumbers) add(key string, x float64, run keyed) {
	rn.all = append(rn.all, x)
	run.x = x
	rn.byKey[key] = append(rn.byKey[key], run)
	if strings.HasSuffix(key, "_ms") {
		rn.all = append(rn.all, x/1000)
		run.x = x / 1000
		rn.byKey[key+"/1000"] = append(rn.byKey[key+"/1000"], run)
	}
}

func (rn *reportNumbers) walk(key string, v any, run keyed) {
	switch v := v.(type) {
	case float64:
		rn.add(key, v, run)
	case map[string]any:
		if d, ok := v["design"].(string); ok {
			l, _ := v["load"].(string)
			run = keyed{design: d, load: l}
		}
		for k, x := range v {
			rn.walk(k, x, run)
		}
	case []any:
		for _, x := range v {
			rn.walk(key, x, run)
		}
	case string:
		// A string of numbers alone, as load_average's "6.32 4.72 3.71".
		f := strings.Fields(v)
		var xs []float64
		for _, w := range f {
			x, err := strconv.ParseFloat(w, 64)
			if err != nil {
				return
			}
			xs = append(xs, x)
		}
		for _, x := range xs {
			rn.add(key, x, run)
		}
	}
}

// ratioFields are the fields whose quotients the docs write: rates and
// the server's CPU per event (its quotient is the capacity ratio). Any
// field's would match almost any ratio to two places.
var ratioFields = []string{"events_per_sec", "per_sec", "temporal_cpu_ms_per_event", "temporal_cpu_ms_per_event_drained",
	"peak_heap_mib", "peak_rss_mib", "after_rss_mib", "raw_rounds", "statement_rounds", "intake_rounds", "wide_rounds", "unpaced_rounds"}

// quotients are the ratios of two numbers of the same field.
func (rn *reportNumbers) quotients() []float64 {
	var out []float64
	for key, xs := range rn.byKey {
		if !slices.Contains(ratioFields, key) {
			continue
		}
		for _, a := range xs {
			for _, b := range xs {
				if b.x != 0 && a.comparable(b) {
					out = append(out, a.x/b.x)
				}
			}
		}
	}
	return out
}

// writtenFigure is a figure as written: its value and the half-unit of its
// last digit.
func writtenFigure(s string) (value, tolerance float64, ok bool) {
	s = strings.ReplaceAll(s, ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, 0, false
	}
	decimals := 0
	if _, frac, found := strings.Cut(s, "."); found {
		decimals = len(frac)
	} else if v != 0 {
		// A whole number's trailing zeros are not significant: 11,000
		// is 11 thousand, to the thousand.
		for t := strings.TrimRight(s, "0"); len(t) < len(s); t += "0" {
			decimals--
		}
	}
	return v, 0.5*math.Pow10(-decimals) + 1e-9, true
}

func anyNear(xs []float64, v, tol float64, f func(float64) float64) bool {
	for _, x := range xs {
		if math.Abs(f(x)-v) <= tol {
			return true
		}
	}
	return false
}

// matches says whether a written figure is one of the numbers (see the
// rule above); kind is "×", "%" or "".
func (rn *reportNumbers) matches(figure, kind string, q func() []float64) bool {
	v, tol, ok := writtenFigure(figure)
	if !ok {
		return true
	}
	id := func(x float64) float64 { return x }
	if anyNear(rn.all, v, tol, id) {
		return true
	}
	switch kind {
	case "×":
		return anyNear(q(), v, tol, id)
	case "%":
		pct := func(x float64) float64 { return 100 * x }
		less := func(x float64) float64 { return math.Abs(100 * (1 - x)) }
		return anyNear(rn.all, v, tol, pct) || anyNear(rn.all, v, tol, less) ||
			anyNear(q(), v, tol, pct) || anyNear(q(), v, tol, less)
	}
	return false
}

// figureKinds returns, for the figures of text (as Figures finds them, in
// order), whether each is a ratio (×), a share (%) or neither, and whether
// a whole number of a time or size unit is a setting.
func figureKinds(text string) (figs, kinds []string, settings []bool) {
	// Code and link targets masked in place, so positions stay the text's.
	mask := func(m string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'x'
			}
			return r
		}, m)
	}
	clean := anyCode.ReplaceAllStringFunc(text, mask)
	clean = linkTarget.ReplaceAllStringFunc(clean, mask)
	figs = Figures(text)
	pos := 0
	for _, f := range figs {
		i := strings.Index(clean[pos:], f)
		kind, setting := "", false
		if i >= 0 {
			at := pos + i
			rest := clean[at+len(f):]
			if m := rangeEnd.FindStringSubmatch(rest); m != nil {
				rest = m[1] // the unit of a range, 1.5–1.9×, is each end's
			}
			switch {
			case strings.HasPrefix(rest, "×"):
				kind = "×"
			case strings.HasPrefix(rest, "%"):
				kind = "%"
			}
			sentence := sentenceAround(text, at)
			for _, w := range elsewhere {
				if strings.Contains(sentence, w) {
					setting = true
				}
			}
			if kind == "" && !strings.Contains(f, ".") {
				for _, w := range settingWords {
					if strings.Contains(sentence, w) {
						setting = true
					}
				}
			}
			pos = at + len(f)
		}
		kinds = append(kinds, kind)
		settings = append(settings, setting)
	}
	return figs, kinds, settings
}

// sentenceAround is the sentence of text holding position at: from the
// last ". " or ": " before it to the next after it.
func sentenceAround(text string, at int) string {
	start := 0
	for _, sep := range []string{". ", ": ", "; ", "(", "\n- "} {
		if i := strings.LastIndex(text[:at], sep); i >= 0 && i+len(sep) > start {
			start = i + len(sep)
		}
	}
	end := len(text)
	for _, sep := range []string{". ", ": ", "; ", ")"} {
		if i := strings.Index(text[at:], sep); i >= 0 && at+i < end {
			end = at + i
		}
	}
	return text[start:end]
}

// globCitation is a cited pattern (bench-results/20261201-bisect-*.json),
// and elided a run of numbered reports written as its first and its last:
// `bench-results/X-old-1.json` … `-old-4.json` cites X-old-1 to X-old-4.
var (
	globCitation = regexp.MustCompile(`bench-results/[A-Za-z0-9_.{},-]*\*[A-Za-z0-9_.{},*-]*\.json`)
	elided       = regexp.MustCompile("bench-results/([A-Za-z0-9_.-]*?)(\\d+)\\.json`? *… *`?(-[A-Za-z0-9_-]*?)(\\d+)\\.json")
)

// citedReports are the reports text cites: as citations reads them, and
// the patterns and elided runs above, in the repository fsys.
func citedReports(text string, fsys fs.FS) []string {
	out := citations(text)
	for _, g := range globCitation.FindAllString(text, -1) {
		for _, pat := range expandBraces(g) {
			if ms, err := fs.Glob(fsys, pat); err == nil {
				out = append(out, ms...)
			}
		}
	}
	for _, m := range elided.FindAllStringSubmatch(text, -1) {
		from, _ := strconv.Atoi(m[2])
		to, _ := strconv.Atoi(m[4])
		if !strings.HasSuffix("-"+m[1], m[3]) || to < from || to-from > 50 {
			continue
		}
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("bench-results/%s%d.json", m[1], i))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckCitedFigures applies the rule above to the section of doc under
// heading (as CheckFigures cuts it), the cited reports read from the
// repository fsys; a missing report is CheckFigures' to report, and is
// skipped here.
func CheckCitedFigures(doc []byte, heading string, fsys fs.FS) ([]Problem, error) {
	lines := strings.Split(string(doc), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	blocks := splitBlocks(lines[start+1:sectionEnd(lines, start)], start+2)
	cache := map[string][]byte{}
	read := func(paths []string) (*reportNumbers, error) {
		files := map[string][]byte{}
		for _, p := range paths {
			b, ok := cache[p]
			if !ok {
				var err error
				if b, err = fs.ReadFile(fsys, p); err != nil {
					continue
				}
				cache[p] = b
			}
			files[p] = b
		}
		return readReportNumbers(files)
	}

	// The generated tables so far: the reports each is made from, and its
	// numbers, which a block citing all of those reports may quote.
	type genTable struct {
		files  []string
		values []float64
	}
	var tables []*genTable
	var current *genTable
	var problems []Problem
	ratioColumn := map[int][]bool{} // table → which columns are ratios
	for i, b := range blocks {
		if b.kind == "paragraph" {
			t := strings.TrimSpace(b.text)
			if m := benchMarker.FindStringSubmatch(t); m != nil {
				current = &genTable{files: strings.Fields(m[2])}
				tables = append(tables, current)
			}
			if strings.HasPrefix(t, benchEnd) {
				current = nil
			}
		}
		if b.kind == "row" && current != nil {
			for _, n := range number.FindAllString(b.text, -1) {
				if v, _, ok := writtenFigure(n); ok {
					current.values = append(current.values, v)
				}
			}
			continue
		}
		if b.kind == "code" || b.kind == "heading" {
			continue
		}
		cited := citedReports(b.text, fsys)
		if b.kind == "row" {
			if i == b.table {
				ratioColumn[b.table] = ratioHeaders(b.text)
				continue // the header row
			}
			if len(cited) == 0 {
				// The table's: its header's and the block's before it.
				cited = citedReports(blocks[b.table].text, fsys)
				if b.table > 0 {
					cited = append(cited, citedReports(blocks[b.table-1].text, fsys)...)
				}
			}
		}
		if len(cited) == 0 {
			continue
		}
		rn, err := read(cited)
		if err != nil {
			return nil, err
		}
		if len(rn.all) == 0 {
			continue
		}
		for _, g := range tables {
			if len(g.files) > 0 && !slices.ContainsFunc(g.files, func(f string) bool { return !slices.Contains(cited, f) }) {
				rn.all = append(rn.all, g.values...)
			}
		}
		var qs []float64
		q := func() []float64 {
			if qs == nil {
				qs = rn.quotients()
			}
			return qs
		}
		var bad []string
		check := func(text string, ratioCell bool) {
			figs, kinds, settings := figureKinds(text)
			for j, f := range figs {
				kind := kinds[j]
				if kind == "" && ratioCell {
					kind = "×"
				}
				if settings[j] || rn.matches(f, kind, q) {
					continue
				}
				bad = append(bad, f+kind)
			}
		}
		if b.kind == "row" {
			for c, cell := range tableCells(b.text) {
				cols := ratioColumn[b.table]
				check(cell, c < len(cols) && cols[c])
			}
		} else {
			check(b.text, false)
		}
		if len(bad) > 0 {
			problems = append(problems, b.problem(fmt.Sprintf("%s %s not in %s", strings.Join(bad, ", "), plural(len(bad), "is", "are"), strings.Join(cited, ", "))))
		}
	}
	return problems, nil
}

// ratioHeaders says which columns of a header row hold ratios.
func ratioHeaders(row string) []bool {
	var out []bool
	for _, c := range tableCells(row) {
		out = append(out, strings.Contains(c, "÷") || strings.Contains(strings.ToLower(c), "ratio"))
	}
	return out
}
