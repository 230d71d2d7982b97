package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is everything one `hookinbox-lab bench` run measured: what
// --output json prints and --save writes, and what bench-results/ holds.
type Report struct {
	Started    time.Time `json:"started"`
	Cores      int       `json:"cores"`
	LoadBefore string    `json:"load_average_before"`
	LoadAfter  string    `json:"load_average_after"`
	Durable    bool      `json:"durable_postgres"`
	// Engine is the Temporal server: dev (CLI dev server, SQLite, 1 shard),
	// postgres (Temporal on PostgreSQL, 4 shards) or given (--temporal-address).
	Engine      string         `json:"temporal_engine"`
	Shards      int            `json:"temporal_history_shards,omitempty"`
	Intake      []IntakeResult `json:"intake,omitempty"`
	EndToEnd    []E2EResult    `json:"end_to_end,omitempty"`
	Scaling     []E2EResult    `json:"scaling,omitempty"`
	ScaleCapped []int          `json:"scaling_skipped_over_cap,omitempty"`
}

// ReadReport reads one saved report.
func ReadReport(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Tables are the kinds of table `hookinbox-lab bench report KIND FILE…`
// prints, each from the reports it is given (paths as the caller can open
// them), as a Markdown table ending in a newline. The docs mark each
// generated table with the command that makes it (docscheck.BenchTables),
// so make docs rewrites them and make test fails when one differs. A new
// kind is one more entry: a renderer that reads what it needs with
// ReadReport and fails on a report that lacks it.
var Tables = map[string]func(files []string) (string, error){
	"e2e":          func(files []string) (string, error) { return pairTable(files, false) },
	"scale-pair":   func(files []string) (string, error) { return pairTable(files, true) },
	"scale":        scaleTable,
	"intake-split": intakeSplitTable,
	"e2e-ab":       e2eABTable,
	"intake-ab":    intakeABTable,
	"e2e-sides":    e2eSidesTable,
	"memory":       memoryTable,
	"intake":       intakeTable,
	"e2e-runs":     e2eRunsTable,
	"coalesce":     coalesceTable,
	"intake-floor": intakeFloorTable,
}

// TableKinds are the names of Tables, sorted.
func TableKinds() []string {
	var out []string
	for k := range Tables {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// table builds a Markdown table.
type table struct {
	b strings.Builder
}

func (t *table) row(cells ...string) {
	t.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func (t *table) header(cells ...string) {
	t.row(cells...)
	sep := make([]string, len(cells))
	for i := range sep {
		sep[i] = "---"
	}
	t.row(sep...)
}

// num formats x with prec decimals and thousands separators (1,067.2).
func num(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg && strings.Trim(out, "0.,") != "" {
		out = "-" + out
	}
	return out
}

// rate formats a rate of events or operations per second: one decimal
// below 10,000/s is what the runs resolve.
func rate(x float64) string { return num(x, 1) }

func ratio(x float64) string { return num(x, 2) + "×" }

// measured formats a figure a design may not have (the floor has no
// acknowledgement to effect, nor memory of its own): "–" for zero.
func measured(x float64, prec int) string {
	if x == 0 {
		return "–"
	}
	return num(x, prec)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// loadName names a load of a result: "2,000 invoices, one per resource",
// "bursts 20 × 50".
func loadName(r E2EResult) string {
	if r.PerResource > 1 {
		return fmt.Sprintf("bursts %s × %s", num(float64(r.Resources), 0), num(float64(r.PerResource), 0))
	}
	kind := r.Kind
	if kind == "" {
		kind = "event"
	}
	return fmt.Sprintf("%s %ss, one per resource", num(float64(r.Resources), 0), kind)
}

// readAll reads every file.
func readAll(files []string) ([]Report, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no report given")
	}
	var out []Report
	for _, f := range files {
		r, err := ReadReport(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// runs groups results by engine and load, keeping the designs' order of
// first appearance.
type runs struct {
	keys    []string                          // engine + load, in order
	label   map[string]string                 // key → load name
	byKey   map[string]map[string][]E2EResult // key → design → runs
	designs []string
}

func group(reps []Report, scaling bool) *runs {
	g := &runs{label: map[string]string{}, byKey: map[string]map[string][]E2EResult{}}
	for _, rep := range reps {
		rs := rep.EndToEnd
		if scaling {
			rs = rep.Scaling
		}
		for _, r := range rs {
			engine := r.Engine
			if engine == "" {
				engine = rep.Engine
			}
			key := engine + "\x00" + loadName(r)
			if _, ok := g.byKey[key]; !ok {
				g.keys = append(g.keys, key)
				g.label[key] = loadName(r)
				if len(reps) > 1 && engineCount(reps) > 1 {
					g.label[key] = engine + ", " + loadName(r)
				}
				g.byKey[key] = map[string][]E2EResult{}
			}
			g.byKey[key][r.Design] = append(g.byKey[key][r.Design], r)
			if !slices.Contains(g.designs, r.Design) {
				g.designs = append(g.designs, r.Design)
			}
		}
	}
	return g
}

func engineCount(reps []Report) int {
	seen := map[string]bool{}
	for _, r := range reps {
		seen[r.Engine] = true
	}
	return len(seen)
}

func field(rs []E2EResult, f func(E2EResult) float64) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, f(r))
	}
	return out
}

func joinNums(xs []float64, prec int) string {
	var s []string
	for _, x := range xs {
		s = append(s, num(x, prec))
	}
	if len(s) == 0 {
		return "–"
	}
	return strings.Join(s, ", ")
}

// pairTable: two designs on the same loads (the first design to appear is
// the baseline), the mean of each one's runs, their ratio and every run.
// With scaling, the scaling runs (one row per resource count) instead of
// the end-to-end ones.
func pairTable(files []string, scaling bool) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	g := group(reps, scaling)
	if len(g.designs) != 2 {
		return "", fmt.Errorf("a pair table compares two designs; the reports have %d (%s)", len(g.designs), strings.Join(g.designs, ", "))
	}
	a, b := g.designs[0], g.designs[1]
	var t table
	t.header("load", a+" ev/s", b+" ev/s", b+" ÷ "+a, "every run ("+a+" / "+b+")",
		"history events per event ("+a+" / "+b+")", "Temporal CPU ms/event ("+a+" / "+b+")",
		"Temporal cores ("+a+" / "+b+")", "p50 ack→effect s ("+a+" / "+b+")",
		"hand-off / sweeper signals per event ("+b+")", "peak / after RSS MiB ("+b+")")
	evs := func(r E2EResult) float64 { return r.EventsPerSec }
	both := func(f func(E2EResult) float64, prec int, ra, rb []E2EResult) string {
		return measured(mean(field(ra, f)), prec) + " / " + measured(mean(field(rb, f)), prec)
	}
	for _, k := range g.keys {
		ra, rb := g.byKey[k][a], g.byKey[k][b]
		if len(ra) == 0 || len(rb) == 0 {
			continue
		}
		ma, mb := mean(field(ra, evs)), mean(field(rb, evs))
		cpu := "–"
		if ra[0].TemporalMsPerEvent > 0 || rb[0].TemporalMsPerEvent > 0 {
			cpu = both(func(r E2EResult) float64 { return r.TemporalMsPerEvent }, 1, ra, rb)
		}
		t.row(g.label[k], rate(ma), rate(mb), ratio(mb/ma),
			joinNums(field(ra, evs), 1)+" / "+joinNums(field(rb, evs), 1),
			both(func(r E2EResult) float64 { return r.HistoryPerEvent }, 1, ra, rb),
			cpu,
			both(func(r E2EResult) float64 { return r.TemporalCores }, 2, ra, rb),
			both(func(r E2EResult) float64 { return r.LatencyP50ms / 1000 }, 0, ra, rb),
			num(mean(field(rb, func(r E2EResult) float64 { return r.SignalsPerEvent })), 2)+" / "+
				num(mean(field(rb, func(r E2EResult) float64 { return r.SweeperSignalsPerEvent })), 2),
			measured(mean(field(rb, func(r E2EResult) float64 { return r.PeakRSSMiB })), 0)+" / "+
				measured(mean(field(rb, func(r E2EResult) float64 { return r.AfterRSSMiB })), 0))
	}
	return t.b.String(), nil
}

// scaleTable: every scaling run of the reports, one row each.
func scaleTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	var t table
	t.header("resources", "design", "events/s", "acks/s", "history events per event",
		"hand-off / sweeper signals per event", "p50 / p99 ack→effect s", "Temporal cores",
		"peak heap / RSS MiB", "after: heap / RSS MiB")
	n := 0
	for _, rep := range reps {
		for _, r := range rep.Scaling {
			n++
			t.row(num(float64(r.Resources), 0), r.Design, rate(r.EventsPerSec), num(r.AckPerSec, 0),
				num(r.HistoryPerEvent, 1), num(r.SignalsPerEvent, 2)+" / "+num(r.SweeperSignalsPerEvent, 2),
				num(r.LatencyP50ms/1000, 0)+" / "+num(r.LatencyP99ms/1000, 0), num(r.TemporalCores, 2),
				num(r.PeakHeapMiB, 0)+" / "+num(r.PeakRSSMiB, 0), num(r.AfterHeapMiB, 0)+" / "+num(r.AfterRSSMiB, 0))
		}
	}
	if n == 0 {
		return "", fmt.Errorf("no scaling run in %s", strings.Join(files, ", "))
	}
	return t.b.String(), nil
}

// labels names each file by what sets it apart from the others: its base
// name's parts (split at "-") less those every file starts or ends with,
// "before" for 20261201-intake-split-before.json beside …-after.json.
func labels(files []string) []string {
	parts := make([][]string, len(files))
	for i, f := range files {
		parts[i] = strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
	}
	shortest := slices.MinFunc(parts, func(x, y []string) int { return len(x) - len(y) })
	common := func(at func(p []string, i int) string) int {
		n := 0
		for n < len(shortest)-1 {
			for _, p := range parts {
				if at(p, n) != at(shortest, n) {
					return n
				}
			}
			n++
		}
		return n
	}
	pre := common(func(p []string, i int) string { return p[i] })
	suf := common(func(p []string, i int) string { return p[len(p)-1-i] })
	out := make([]string, len(files))
	for i, p := range parts {
		if len(files) > 1 && pre+suf < len(p) {
			out[i] = strings.Join(p[pre:len(p)-suf], "-")
		} else {
			out[i] = strings.Join(p, "-")
		}
	}
	return out
}

// intakeSplitTable: the raw insert, the inbox statement alone and the
// intake, per concurrency level and report (named as labels does), with
// the three ratios.
func intakeSplitTable(files []string) (string, error) {
	levels, err := intakeLevels(files, func(r IntakeResult) string {
		if r.Statement == nil {
			return "no inbox statement (--intake-statement)"
		}
		return ""
	})
	if err != nil {
		return "", err
	}
	var t table
	t.header("senders", "report", "raw insert /s (p50 ms)", "inbox statement /s (p50 ms)", "intake /s (p50 ms)",
		"statement ÷ raw", "intake ÷ statement", "intake ÷ raw")
	cell := func(r Rate) string { return num(r.PerSec, 0) + " (" + num(r.P50ms, 2) + ")" }
	for _, l := range levels {
		r := l.r
		t.row(strconv.Itoa(r.Concurrency), l.name, cell(r.Raw), cell(*r.Statement), cell(r.Intake),
			num(r.StatementRatio, 2), num(r.IntakeOverStatement, 2), num(r.Ratio, 2))
	}
	return t.b.String(), nil
}

// intakeLevel is one concurrency level of a report, with the report's
// name (labels).
type intakeLevel struct {
	name string
	r    IntakeResult
}

// intakeLevels reads every intake level of files, by concurrency (the
// reports' order within one). A level for which lacks gives a reason (""
// when it has what the table needs) is refused, and so are reports with no
// level at all.
func intakeLevels(files []string, lacks func(IntakeResult) string) ([]intakeLevel, error) {
	reps, err := readAll(files)
	if err != nil {
		return nil, err
	}
	names := labels(files)
	var out []intakeLevel
	for i, rep := range reps {
		for _, r := range rep.Intake {
			if why := lacks(r); why != "" {
				return nil, fmt.Errorf("%s: the intake at %d senders has %s", files[i], r.Concurrency, why)
			}
			out = append(out, intakeLevel{names[i], r})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no intake level in %s", strings.Join(files, ", "))
	}
	slices.SortStableFunc(out, func(x, y intakeLevel) int { return x.r.Concurrency - y.r.Concurrency })
	return out, nil
}

// intakeFloorTable: per concurrency level and report, the inbox statement
// alone, the HTTP floor (the statement behind a bare net/http server) and
// the intake: each one's rate, mean latency and CPU per event (this
// process's, and the machine's on every core), then the latency split
// (the floor's mean over the statement's is HTTP itself, the intake's over
// the floor's is the intake's own code) and the three ratios.
func intakeFloorTable(files []string) (string, error) {
	levels, err := intakeLevels(files, func(r IntakeResult) string {
		switch {
		case r.Statement == nil || r.Floor == nil:
			return "no inbox statement or HTTP floor (--intake-statement, --intake-http-floor)"
		case r.Statement.MeanMs == 0 || r.Floor.MeanMs == 0 || r.Intake.MeanMs == 0:
			return "no mean latency (a report from before mean_ms)"
		}
		return ""
	})
	if err != nil {
		return "", err
	}
	var t table
	t.header("senders", "report", "inbox statement /s (mean ms; CPU µs/event: process, machine)",
		"HTTP floor /s (…)", "intake /s (…)", "HTTP itself, ms (floor − statement)",
		"intake's own code, ms (intake − floor)", "floor ÷ statement", "intake ÷ floor", "intake ÷ statement")
	cell := func(r Rate) string {
		return num(r.PerSec, 0) + " (" + num(r.MeanMs, 3) + "; " + num(r.ProcessCPUus, 0) + ", " + num(r.MachineCPUus, 0) + ")"
	}
	for _, l := range levels {
		r := l.r
		t.row(strconv.Itoa(r.Concurrency), l.name, cell(*r.Statement), cell(*r.Floor), cell(r.Intake),
			num(r.Floor.MeanMs-r.Statement.MeanMs, 3), num(r.Intake.MeanMs-r.Floor.MeanMs, 3),
			num(r.FloorOverStatement, 2), num(r.IntakeOverFloor, 2), num(r.IntakeOverStatement, 2))
	}
	return t.b.String(), nil
}

// abPairs splits files given as pairs (A1 B1 A2 B2 …) and names the two
// sides from the first pair (labels without the pair's number).
func abPairs(files []string) (a, b string, err error) {
	if len(files) < 2 || len(files)%2 != 0 {
		return "", "", fmt.Errorf("give the reports in pairs, the baseline first: A1 B1 A2 B2 … (got %d)", len(files))
	}
	l := labels(files[:2])
	return l[0], l[1], nil
}

// e2eABTable: pairs of end-to-end reports of one design (the baseline's
// build first in each pair), one event per resource: each pair's rates,
// their ratio, and the means.
func e2eABTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	a, b, err := abPairs(files)
	if err != nil {
		return "", err
	}
	one := func(i int) (float64, error) {
		for _, r := range reps[i].EndToEnd {
			if r.PerResource == 1 {
				return r.EventsPerSec, nil
			}
		}
		return 0, fmt.Errorf("%s has no run of one event per resource", files[i])
	}
	var t table
	t.header("pair", a+" ev/s", b+" ev/s", b+" ÷ "+a)
	var as, bs []float64
	for i := 0; i < len(files); i += 2 {
		x, err := one(i)
		if err != nil {
			return "", err
		}
		y, err := one(i + 1)
		if err != nil {
			return "", err
		}
		as, bs = append(as, x), append(bs, y)
		t.row(strconv.Itoa(i/2+1), rate(x), rate(y), ratio(y/x))
	}
	t.row("mean", rate(mean(as)), rate(mean(bs)), ratio(mean(bs)/mean(as)))
	return t.b.String(), nil
}

// intakeABTable: pairs of intake reports of one level (the baseline
// first in each pair): each round's intake rate and p50, their ratio, the
// raw insert beside each, and the load average at each one's start.
func intakeABTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	a, b, err := abPairs(files)
	if err != nil {
		return "", err
	}
	level := func(i int) (IntakeResult, error) {
		if len(reps[i].Intake) != 1 {
			return IntakeResult{}, fmt.Errorf("%s has %d intake levels, not one", files[i], len(reps[i].Intake))
		}
		return reps[i].Intake[0], nil
	}
	var t table
	t.header("round", a+" intake /s (p50 ms)", b+" intake /s (p50 ms)", b+" ÷ "+a,
		"raw insert /s, "+a+" / "+b, "load (1 min), "+a+" / "+b)
	load1 := func(s string) string {
		f := strings.Fields(s)
		if len(f) == 0 {
			return "–"
		}
		return f[0]
	}
	for i := 0; i < len(files); i += 2 {
		x, err := level(i)
		if err != nil {
			return "", err
		}
		y, err := level(i + 1)
		if err != nil {
			return "", err
		}
		t.row(strconv.Itoa(i/2+1),
			num(x.Intake.PerSec, 0)+" ("+num(x.Intake.P50ms, 1)+")",
			num(y.Intake.PerSec, 0)+" ("+num(y.Intake.P50ms, 1)+")",
			num(y.Intake.PerSec/x.Intake.PerSec, 2),
			num(x.Raw.PerSec, 0)+" / "+num(y.Raw.PerSec, 0),
			load1(x.Load)+" / "+load1(y.Load))
	}
	return t.b.String(), nil
}

// sides names each file's side: its label (labels) without the parts that
// are numbers, "before" for …-ab-1-before.json and …-ab-2-before.json.
func sides(files []string) []string {
	out := labels(files)
	for i, l := range out {
		var keep []string
		for _, p := range strings.Split(l, "-") {
			if _, err := strconv.Atoi(p); err != nil {
				keep = append(keep, p)
			}
		}
		out[i] = strings.Join(keep, "-")
	}
	return out
}

// e2eSidesTable: end-to-end reports of one design from two sides (two
// builds, two settings), several runs each, the side of each file named
// by sides: per load, each side's runs and their mean, the ratio of the
// means (the second side over the first), and each run's server CPU and
// history per event.
func e2eSidesTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	names := sides(files)
	var order []string
	for _, n := range names {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	if len(order) != 2 {
		return "", fmt.Errorf("the reports' names give %d sides (%s), not two", len(order), strings.Join(order, ", "))
	}
	a, b := order[0], order[1]
	var loads []string
	runs := map[string]map[string][]E2EResult{}
	for i, rep := range reps {
		for _, r := range rep.EndToEnd {
			l := loadName(r)
			if runs[l] == nil {
				runs[l] = map[string][]E2EResult{}
				loads = append(loads, l)
			}
			runs[l][names[i]] = append(runs[l][names[i]], r)
		}
	}
	var t table
	t.header("load", a+": runs, mean ev/s", b+": runs, mean ev/s", b+" ÷ "+a,
		"Temporal CPU ms/event ("+a+" / "+b+")", "history events per event ("+a+" / "+b+")")
	evs := func(r E2EResult) float64 { return r.EventsPerSec }
	cpu := func(r E2EResult) float64 { return r.TemporalMsPerEvent }
	hist := func(r E2EResult) float64 { return r.HistoryPerEvent }
	for _, l := range loads {
		ra, rb := runs[l][a], runs[l][b]
		if len(ra) == 0 || len(rb) == 0 {
			continue
		}
		ma, mb := mean(field(ra, evs)), mean(field(rb, evs))
		t.row(l, joinNums(field(ra, evs), 1)+": "+rate(ma), joinNums(field(rb, evs), 1)+": "+rate(mb), ratio(mb/ma),
			joinNums(field(ra, cpu), 1)+" / "+joinNums(field(rb, cpu), 1),
			joinNums(field(ra, hist), 1)+" / "+joinNums(field(rb, hist), 1))
	}
	return t.b.String(), nil
}

// memoryTable: what each scaling run's process held at its peak and kept
// once settled (the live heap, the free heap the runtime still holds, its
// stacks and metadata, the resident set, open descriptors), one row per
// run, named by resources and report (labels).
func memoryTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	names := labels(files)
	var t table
	t.header("resources", "report", "peak heap / RSS MiB", "after: live heap / free heap / runtime / RSS MiB",
		"open files after", "ev/s", "Temporal CPU ms/event")
	n := 0
	for i, rep := range reps {
		for _, r := range rep.Scaling {
			n++
			t.row(num(float64(r.Resources), 0), names[i], num(r.PeakHeapMiB, 0)+" / "+num(r.PeakRSSMiB, 0),
				num(r.AfterHeapMiB, 0)+" / "+num(r.AfterHeapFreeMiB, 0)+" / "+num(r.AfterRuntimeMiB, 0)+" / "+num(r.AfterRSSMiB, 0),
				measured(float64(r.AfterOpenFiles), 0), rate(r.EventsPerSec), num(r.TemporalMsPerEvent, 1))
		}
	}
	if n == 0 {
		return "", fmt.Errorf("no scaling run in %s", strings.Join(files, ", "))
	}
	return t.b.String(), nil
}

// intakeTable: each concurrency level of intake reports: the raw insert,
// the intake with the paced hand-off and, when measured, the unpaced one,
// each with its p99 and ratio to the raw insert, and every round's rate.
func intakeTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	var t table
	t.header("senders", "raw INSERT…COMMIT /s (p99 ms)", "intake, paced hand-off /s (p99 ms)", "÷ raw",
		"intake, unpaced hand-off /s (p99 ms)", "÷ raw", "every round raw / paced / unpaced")
	cell := func(r Rate) string {
		prec := 2 // three figures: 0.81, 5.00, 30.6
		if r.P99ms >= 10 {
			prec = 1
		}
		return num(r.PerSec, 0) + " (" + num(r.P99ms, prec) + ")"
	}
	rounds := func(xs []float64) string {
		var s []string
		for _, x := range xs {
			s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
		}
		if len(s) == 0 {
			return "–"
		}
		return strings.Join(s, ",")
	}
	n := 0
	for _, rep := range reps {
		for _, r := range rep.Intake {
			n++
			unpaced, ur := "–", "–"
			if r.IntakeUnpaced != nil {
				unpaced, ur = cell(*r.IntakeUnpaced), num(r.UnpacedRatio, 2)
			}
			t.row(strconv.Itoa(r.Concurrency), cell(r.Raw), cell(r.Intake), num(r.Ratio, 2), unpaced, ur,
				rounds(r.RawRounds)+" / "+rounds(r.IntakeRounds)+" / "+rounds(r.UnpacedRounds))
		}
	}
	if n == 0 {
		return "", fmt.Errorf("no intake level in %s", strings.Join(files, ", "))
	}
	return t.b.String(), nil
}

// e2eRunsTable: one row per report (named by labels: the build or setting
// it ran), its end-to-end rate for each load.
func e2eRunsTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	names := labels(files)
	var loads []string
	for _, rep := range reps {
		for _, r := range rep.EndToEnd {
			if !slices.Contains(loads, loadName(r)) {
				loads = append(loads, loadName(r))
			}
		}
	}
	if len(loads) == 0 {
		return "", fmt.Errorf("no end-to-end run in %s", strings.Join(files, ", "))
	}
	var t table
	head := []string{"report"}
	for _, l := range loads {
		head = append(head, l+" ev/s")
	}
	t.header(head...)
	for i, rep := range reps {
		row := []string{names[i]}
		for _, l := range loads {
			var xs []float64
			for _, r := range rep.EndToEnd {
				if loadName(r) == l {
					xs = append(xs, r.EventsPerSec)
				}
			}
			row = append(row, joinNums(xs, 1))
		}
		t.row(row...)
	}
	return t.b.String(), nil
}
