package console

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// svgDoc is what the tests read back of a chart's SVG.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Max     string   `xml:"data-max,attr"`
	Title   string   `xml:"title"`
	Lines   []struct {
		Class string `xml:"class,attr"`
		Y1    string `xml:"y1,attr"`
	} `xml:"line"`
	Texts []struct {
		Class string `xml:"class,attr"`
		X     string `xml:"x,attr"`
		Y     string `xml:"y,attr"`
		Text  string `xml:",chardata"`
	} `xml:"text"`
	Series []struct {
		Key  string `xml:"data-series,attr"`
		Path *struct {
			D string `xml:"d,attr"`
		} `xml:"path"`
		Points []struct {
			CX    string `xml:"cx,attr"`
			CY    string `xml:"cy,attr"`
			At    string `xml:"data-at,attr"`
			Value string `xml:"data-value,attr"`
			Title string `xml:"title"`
		} `xml:"circle"`
	} `xml:"g"`
}

func parseSVG(t *testing.T, c chart) svgDoc {
	t.Helper()
	raw := string(c.SVG())
	require.NotContains(t, raw, "style=", "no inline style: the CSP (style-src 'self') would refuse it")
	var d svgDoc
	require.NoError(t, xml.Unmarshal([]byte(raw), &d), raw)
	return d
}

func vals(vs ...any) []*float64 {
	out := make([]*float64, len(vs))
	for i, v := range vs {
		switch x := v.(type) {
		case nil:
		case int:
			f := float64(x)
			out[i] = &f
		case float64:
			out[i] = &x
		}
	}
	return out
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestNiceCeilIsTheNextOneTwoOrFiveTimesAPowerOfTen(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ v, want float64 }{
		{0, 1}, {-3, 1}, {0.3, 0.5}, {0.5, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {5, 5}, {7, 10}, {10, 10}, {11, 20},
		{150, 200}, {501, 1000}, {2000, 2000}, {2001, 5000},
	} {
		require.InDelta(t, tt.want, niceCeil(tt.v), 1e-12, "niceCeil(%v)", tt.v)
	}
}

// The plot is 312 wide (40 to 352) and 108 high (10 to 118): with 4
// buckets their centres are at 79, 157, 235 and 313, and a scale of 0 to 10
// puts 0 at 118, 5 at 64 and 10 at 10.
func TestAChartScalesItsPointsIntoThePlot(t *testing.T) {
	t.Parallel()
	d := parseSVG(t, chart{ID: "pending", Title: "Pending", Window: "the last hour", Start: t0, Bucket: time.Minute,
		Series: []chartSeries{{Key: "pending", Label: "pending", Values: vals(0, 5, 10, 10)}}})
	require.Equal(t, "10", d.Max)
	require.Len(t, d.Series, 1)
	s := d.Series[0]
	require.Equal(t, "pending", s.Key)
	require.NotNil(t, s.Path)
	require.Equal(t, "M79.0 118.0 L157.0 64.0 L235.0 10.0 L313.0 10.0", s.Path.D)
	require.Len(t, s.Points, 4)
	require.Equal(t, []string{"79.0", "118.0", "0", "2026-12-01T12:00:00Z"}, []string{s.Points[0].CX, s.Points[0].CY, s.Points[0].Value, s.Points[0].At})
	require.Equal(t, []string{"157.0", "64.0", "5", "2026-12-01T12:01:00Z"}, []string{s.Points[1].CX, s.Points[1].CY, s.Points[1].Value, s.Points[1].At})
	require.Equal(t, "12:01 pending: 5", s.Points[1].Title)
	// Grid at the top (10), the middle (64) and the base at 0 (118); the
	// scale's labels beside them, the window's times below.
	require.Equal(t, []string{"grid 10.0", "grid 64.0", "base 118.0"},
		[]string{d.Lines[0].Class + " " + d.Lines[0].Y1, d.Lines[1].Class + " " + d.Lines[1].Y1, d.Lines[2].Class + " " + d.Lines[2].Y1})
	labels := map[string]string{}
	for _, tx := range d.Texts {
		labels[tx.Class+" "+tx.Text] = tx.X + "," + tx.Y
	}
	require.Equal(t, map[string]string{"ylabel 10": "36.0,14.0", "ylabel 0": "36.0,122.0", "xlabel 12:00": "40.0,134", "xlabel 12:04 UTC": "352.0,134"}, labels)
	require.Equal(t, "Pending over the last hour (UTC): pending latest 10", d.Title)
}

// A scale rounds up to a round number: 7 on a scale of 0 to 10 is at
// 118 - 108 × 0.7 = 42.4; a rate keeps its decimals.
func TestAChartRoundsItsScaleUpAndKeepsFractions(t *testing.T) {
	t.Parallel()
	d := parseSVG(t, chart{ID: "handled", Title: "Handled per minute", Start: t0, Bucket: 15 * time.Minute,
		Series: []chartSeries{{Key: "handled", Label: "handled per minute", Values: vals(7, 0.25)}}})
	require.Equal(t, "10", d.Max)
	s := d.Series[0]
	// Two buckets: centres at 40 + 78 = 118 and 40 + 234 = 274.
	require.Equal(t, "M118.0 42.4 L274.0 115.3", s.Path.D)
	require.Equal(t, "0.25", s.Points[1].Value)
	require.Equal(t, "2026-12-01T12:15:00Z", s.Points[1].At)
}

// Nothing recorded: the frame on a scale of 0 to 1, no line, no point,
// and a note that says so.
func TestAnEmptyChartSaysItHasNoSamples(t *testing.T) {
	t.Parallel()
	d := parseSVG(t, chart{ID: "pending", Title: "Pending", Window: "the last hour", Start: t0, Bucket: time.Minute,
		Series: []chartSeries{{Key: "pending", Label: "pending", Values: vals(nil, nil, nil)}}})
	require.Equal(t, "1", d.Max)
	require.Nil(t, d.Series[0].Path)
	require.Empty(t, d.Series[0].Points)
	var empty string
	for _, tx := range d.Texts {
		if tx.Class == "empty" {
			empty = tx.Text
		}
	}
	require.Equal(t, "no samples yet", empty)
	require.Equal(t, "Pending over the last hour (UTC): pending no samples", d.Title)
}

// One point alone draws no line (a line needs two) but its dot, at its
// bucket's centre: bucket 1 of 3 is at 40 + 312 × 1.5 / 3 = 196, and 4 on a
// scale of 0 to 5 at 118 - 108 × 0.8 = 31.6.
func TestASinglePointIsADot(t *testing.T) {
	t.Parallel()
	d := parseSVG(t, chart{ID: "q", Title: "Quarantine open", Start: t0, Bucket: time.Minute,
		Series: []chartSeries{{Key: "quarantine", Label: "open", Values: vals(nil, 4, nil)}}})
	require.Equal(t, "5", d.Max)
	require.Nil(t, d.Series[0].Path)
	require.Len(t, d.Series[0].Points, 1)
	require.Equal(t, "196.0", d.Series[0].Points[0].CX)
	require.Equal(t, "31.6", d.Series[0].Points[0].CY)
	for _, tx := range d.Texts {
		require.NotEqual(t, "empty", tx.Class)
	}
}

// A gap breaks the line: a new subpath starts after it, and the point
// alone after a gap is a dot on no line. Series of one chart share one scale.
func TestAGapBreaksTheLineAndSeriesShareTheScale(t *testing.T) {
	t.Parallel()
	d := parseSVG(t, chart{ID: "outbox", Title: "Outbox", Start: t0, Bucket: time.Minute, Series: []chartSeries{
		{Key: "unsent", Label: "to send", Values: vals(1, 2, nil, 2, 1, nil)},
		{Key: "held", Label: "held for review", Values: vals(nil, nil, nil, nil, nil, 20)},
	}})
	require.Equal(t, "20", d.Max, "the highest of both series")
	// Six buckets of 52: centres 66, 118, 170, 222, 274, 326; a scale of 0
	// to 20 puts 1 at 112.6 and 2 at 107.2, 20 at 10.
	require.Equal(t, "M66.0 112.6 L118.0 107.2 M222.0 107.2 L274.0 112.6", d.Series[0].Path.D)
	require.Len(t, d.Series[0].Points, 4)
	require.Nil(t, d.Series[1].Path)
	require.Equal(t, []string{"326.0", "10.0"}, []string{d.Series[1].Points[0].CX, d.Series[1].Points[0].CY})
	require.Equal(t, 2, strings.Count(d.Series[0].Path.D, "M"))
}

// Labels are escaped: a chart's text never becomes markup.
func TestAChartEscapesItsText(t *testing.T) {
	t.Parallel()
	raw := string(chart{ID: "x", Title: `<b>"x"</b>`, Start: t0, Bucket: time.Minute,
		Series: []chartSeries{{Key: "k", Label: "<script>", Values: vals(1)}}}.SVG())
	require.NotContains(t, raw, "<script>")
	require.NotContains(t, raw, "<b>")
	require.Contains(t, raw, "&lt;script&gt;")
}
