package console

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/ops"
)

// The overview's trend charts are SVG drawn here, on the server: no script
// and no inline style (the CSP allows neither), only elements, their
// geometry and classes that console.css colours.

// The geometry of a chart, in SVG user units: the plot is the box inside
// the margins, the y axis's labels left of it, the times below it.
const (
	chartWidth   = 360
	chartHeight  = 140
	chartLeft    = 40
	chartRight   = 8
	chartTop     = 10
	chartBottom  = 22
	chartPlotW   = chartWidth - chartLeft - chartRight
	chartPlotH   = chartHeight - chartTop - chartBottom
	chartPointR  = 2
	chartTimeFmt = "15:04"
)

// chartSeries is one line of a chart: a value per bucket, nil where
// nothing was recorded (the line breaks there).
type chartSeries struct {
	// Key names the series in data-series and its class (s-KEY).
	Key    string
	Label  string
	Values []*float64
}

// chart is one trend chart: series over the same buckets, on one scale
// from 0 to a round number at or above the highest value.
type chart struct {
	ID     string
	Title  string
	Window string // "the last hour", for the accessible title
	Start  time.Time
	Bucket time.Duration
	Series []chartSeries
}

// niceCeil is the smallest of 1, 2 and 5 times a power of ten that is at
// least v (1 for nothing to show), so that the axis reads as a round number.
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if c := m * p; c >= v*(1-1e-9) {
			return c
		}
	}
	return 10 * p
}

// max is the top of the chart's scale.
func (c chart) max() float64 {
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v != nil && *v > top {
				top = *v
			}
		}
	}
	return niceCeil(top)
}

func (c chart) buckets() int {
	n := 0
	for _, s := range c.Series {
		n = max(n, len(s.Values))
	}
	return n
}

// x is the centre of bucket i of n.
func chartX(i, n int) float64 { return chartLeft + (float64(i)+0.5)*chartPlotW/float64(n) }

// y is where v sits on a scale from 0 to top.
func chartY(v, top float64) float64 { return chartTop + chartPlotH*(1-v/top) }

func coord(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// formatValue writes a count as a whole number and a rate with at most two
// decimals.
func formatValue(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
}

// SVG draws the chart.
func (c chart) SVG() template.HTML {
	n := c.buckets()
	top := c.max()
	esc := template.HTMLEscapeString
	var b strings.Builder
	titleID := "chart-" + c.ID + "-title"
	fmt.Fprintf(&b, `<svg class="chart-svg" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="%s" data-max="%s" data-buckets="%d">`,
		chartWidth, chartHeight, chartWidth, chartHeight, esc(titleID), formatValue(top), n)
	fmt.Fprintf(&b, `<title id="%s">%s</title>`, esc(titleID), esc(c.summary()))
	// Axes: the top of the scale, its middle and 0; the window's first and last times.
	left, right := coord(chartLeft), coord(chartLeft+chartPlotW)
	for _, g := range []struct {
		class string
		v     float64
	}{{"grid", top}, {"grid", top / 2}, {"base", 0}} {
		y := coord(chartY(g.v, top))
		fmt.Fprintf(&b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, g.class, left, y, right, y)
	}
	fmt.Fprintf(&b, `<text class="ylabel" x="%s" y="%s" text-anchor="end">%s</text>`, coord(chartLeft-4), coord(chartY(top, top)+4), formatValue(top))
	fmt.Fprintf(&b, `<text class="ylabel" x="%s" y="%s" text-anchor="end">0</text>`, coord(chartLeft-4), coord(chartY(0, top)+4))
	if n > 0 {
		end := c.Start.Add(time.Duration(n) * c.Bucket)
		fmt.Fprintf(&b, `<text class="xlabel" x="%s" y="%d" text-anchor="start">%s</text>`, left, chartHeight-6, c.Start.UTC().Format(chartTimeFmt))
		fmt.Fprintf(&b, `<text class="xlabel" x="%s" y="%d" text-anchor="end">%s UTC</text>`, right, chartHeight-6, end.UTC().Format(chartTimeFmt))
	}
	points := 0
	for _, s := range c.Series {
		fmt.Fprintf(&b, `<g class="series s-%s" data-series="%s">`, esc(s.Key), esc(s.Key))
		var d strings.Builder
		run := 0 // points in the current stretch without a gap
		for i, v := range s.Values {
			if v == nil {
				run = 0
				continue
			}
			cmd := "L"
			if run == 0 {
				cmd = "M"
				if d.Len() > 0 {
					d.WriteByte(' ')
				}
			} else {
				d.WriteByte(' ')
			}
			d.WriteString(cmd + coord(chartX(i, n)) + " " + coord(chartY(*v, top)))
			run++
		}
		if strings.Contains(d.String(), "L") {
			fmt.Fprintf(&b, `<path class="line" fill="none" stroke="currentColor" d="%s"/>`, d.String())
		}
		for i, v := range s.Values {
			if v == nil {
				continue
			}
			points++
			at := c.Start.Add(time.Duration(i) * c.Bucket).UTC()
			fmt.Fprintf(&b, `<circle class="point" cx="%s" cy="%s" r="%d" data-at="%s" data-value="%s"><title>%s %s: %s</title></circle>`,
				coord(chartX(i, n)), coord(chartY(*v, top)), chartPointR, at.Format(time.RFC3339), formatValue(*v),
				at.Format(chartTimeFmt), esc(s.Label), formatValue(*v))
		}
		b.WriteString(`</g>`)
	}
	if points == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%s" y="%s" text-anchor="middle">no samples yet</text>`,
			coord(chartLeft+chartPlotW/2.0), coord(chartTop+chartPlotH/2.0))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: every value written above is a number, a time, a constant or escaped
}

// summary is the chart's accessible title: what it shows and the latest
// value of each series.
func (c chart) summary() string {
	parts := []string{}
	for _, s := range c.Series {
		latest := "no samples"
		for i := len(s.Values) - 1; i >= 0; i-- {
			if s.Values[i] != nil {
				latest = "latest " + formatValue(*s.Values[i])
				break
			}
		}
		parts = append(parts, s.Label+" "+latest)
	}
	return c.Title + " over " + c.Window + " (UTC): " + strings.Join(parts, ", ")
}

func ints(ps []ops.TrendPoint, f func(ops.TrendPoint) *int64) []*float64 {
	out := make([]*float64, len(ps))
	for i, p := range ps {
		if v := f(p); v != nil {
			x := float64(*v)
			out[i] = &x
		}
	}
	return out
}

// trendWindowNames name the windows in the overview's links and titles.
var trendWindowNames = map[string]string{"1h": "the last hour", "24h": "the last day"}

// trendCharts are the overview's charts of v: pending, handled per minute,
// exhausted (and failed), quarantine and outbox.
func trendCharts(v ops.TrendsView) []chart {
	ps := v.Points
	start := v.From
	bucket := time.Duration(v.BucketSeconds) * time.Second
	handled := make([]*float64, len(ps))
	for i, p := range ps {
		handled[i] = p.HandledPerMinute
	}
	mk := func(id, title string, s ...chartSeries) chart {
		return chart{ID: id, Title: title, Window: trendWindowNames[v.Window], Start: start, Bucket: bucket, Series: s}
	}
	return []chart{
		mk("pending", "Pending", chartSeries{Key: "pending", Label: "pending", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.Pending })}),
		mk("handled", "Handled per minute", chartSeries{Key: "handled", Label: "handled per minute", Values: handled}),
		mk("exhausted", "Exhausted and failed",
			chartSeries{Key: "exhausted", Label: "exhausted", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.Exhausted })},
			chartSeries{Key: "failed", Label: "failed", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.Failed })}),
		mk("quarantine", "Quarantine open", chartSeries{Key: "quarantine", Label: "open", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.QuarantineOpen })}),
		mk("outbox", "Outbox",
			chartSeries{Key: "unsent", Label: "to send", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.OutboxUnsent })},
			chartSeries{Key: "held", Label: "held for review", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.OutboxHeld })},
			chartSeries{Key: "outbox-failed", Label: "failed", Values: ints(ps, func(p ops.TrendPoint) *int64 { return p.OutboxFailed })}),
	}
}
