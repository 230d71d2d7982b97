package bench

import (
	"fmt"
	"slices"
	"strconv"
)

// coalesceTable is issue #34's bench: for each report of the three designs
// side by side (the handler, DesignForwardFetch and
// DesignForwardCoalesce), its receiver latency, its runs, each design's median
// events/s end to end (from the worker's start in parentheses), the median
// over the runs of each run's ratios, how many runs the coalescing route
// beat the handler in, and the documents each route sent for the events.
func coalesceTable(files []string) (string, error) {
	reps, err := readAll(files)
	if err != nil {
		return "", err
	}
	var t table
	t.header("report", "receiver", "runs", "handler ev/s", "plain route ev/s", "coalescing route ev/s",
		"coalescing ÷ handler", "plain ÷ handler", "coalescing ÷ plain", "coalescing beat the handler", "documents (plain / coalescing)")
	names := labels(files)
	for i, rep := range reps {
		byRun := map[int]map[string]E2EResult{}
		latency := 0.0
		for _, r := range rep.EndToEnd {
			if r.Design != DesignHookinbox && r.Design != DesignForwardFetch && r.Design != DesignForwardCoalesce {
				continue
			}
			if byRun[r.Repeat] == nil {
				byRun[r.Repeat] = map[string]E2EResult{}
			}
			byRun[r.Repeat][r.Design] = r
			latency = max(latency, r.ReceiverLatencyMs)
		}
		var handler, plain, coal, handlerDrain, plainDrain, coalDrain, ch, ph, cp []float64
		beat, docsPlain, docsCoal := 0, 0, 0
		repeats := make([]int, 0, len(byRun))
		for n := range byRun {
			repeats = append(repeats, n)
		}
		slices.Sort(repeats)
		for _, n := range repeats {
			run := byRun[n]
			h, okH := run[DesignHookinbox]
			p, okP := run[DesignForwardFetch]
			c, okC := run[DesignForwardCoalesce]
			if !okH || !okP || !okC {
				return "", fmt.Errorf("%s: run %d lacks one of %s, %s, %s", files[i], n, DesignHookinbox, DesignForwardFetch, DesignForwardCoalesce)
			}
			handler, plain, coal = append(handler, h.EventsPerSec), append(plain, p.EventsPerSec), append(coal, c.EventsPerSec)
			handlerDrain, plainDrain, coalDrain = append(handlerDrain, h.DrainEventsPerSec), append(plainDrain, p.DrainEventsPerSec),
				append(coalDrain, c.DrainEventsPerSec)
			ch, ph, cp = append(ch, c.EventsPerSec/h.EventsPerSec), append(ph, p.EventsPerSec/h.EventsPerSec), append(cp, c.EventsPerSec/p.EventsPerSec)
			if c.EventsPerSec > h.EventsPerSec {
				beat++
			}
			docsPlain, docsCoal = max(docsPlain, p.ForwardDocuments), max(docsCoal, c.ForwardDocuments)
		}
		if len(repeats) == 0 {
			return "", fmt.Errorf("%s: no run of the coalescing bench's three designs", files[i])
		}
		cell := func(end, drain []float64) string { return rate(medianOf(end)) + " (" + rate(medianOf(drain)) + ")" }
		t.row(names[i], num(latency, 0)+" ms", strconv.Itoa(len(repeats)), cell(handler, handlerDrain), cell(plain, plainDrain),
			cell(coal, coalDrain), ratio(medianOf(ch)), ratio(medianOf(ph)), ratio(medianOf(cp)),
			fmt.Sprintf("%d of %d", beat, len(repeats)), num(float64(docsPlain), 0)+" / "+num(float64(docsCoal), 0))
	}
	return t.b.String(), nil
}

// medianOf is the median of xs (the mean of the middle two for an even count).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
