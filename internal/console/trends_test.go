package console_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// circles reads the data points of one series of one chart in a page.
var (
	figureRe = regexp.MustCompile(`(?s)<figure class="chart" id="chart-([a-z]+)">.*?</figure>`)
	seriesRe = regexp.MustCompile(`(?s)<g class="series s-([a-z-]+)" data-series="[a-z-]+">(.*?)</g>`)
	pointRe  = regexp.MustCompile(`<circle class="point" cx="[0-9.]+" cy="[0-9.]+" r="2" data-at="([^"]+)" data-value="([^"]+)">`)
)

func chartPoints(t *testing.T, html string) map[string]map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]map[string]string{}
	for _, f := range figureRe.FindAllStringSubmatch(html, -1) {
		out[f[1]] = map[string]map[string]string{}
		for _, s := range seriesRe.FindAllStringSubmatch(f[0], -1) {
			pts := map[string]string{}
			for _, p := range pointRe.FindAllStringSubmatch(s[2], -1) {
				pts[p[1]] = p[2]
			}
			out[f[1]][s[1]] = pts
		}
	}
	return out
}

// The overview draws the trends as SVG on the server, one chart per
// series group, each point where the samples put it; no inline style (the
// CSP refuses it). GET /api/trends serves the same series to a viewer, and
// the OpenAPI document describes it.
func TestTheOverviewChartsTheTrendsAndTheAPIServesThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var m time.Time
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT date_bin('1 minute', now(), timestamptz '2000-01-01 00:00:00+00') - interval '10 minutes'`).Scan(&m))
	m = m.UTC()
	_, err := b.st.Pool.Exec(b.ctx, `INSERT INTO console_trends (minute, handled, sampled_at, pending, exhausted, failed, quarantine_open, outbox_unsent, outbox_held, outbox_failed)
		VALUES ($1, 4, $1, 12, 1, 0, 3, 2, 0, 1), ($1::timestamptz + interval '1 minute', 6, $1, 7, 1, 1, 3, 0, 1, 1)`, m)
	require.NoError(t, err)
	at0, at1 := m.Format(time.RFC3339), m.Add(time.Minute).Format(time.RFC3339)

	code, page := b.call("viewer", "GET", "/", nil)
	require.Equal(t, http.StatusOK, code, page)
	require.NotContains(t, page, "style=")
	require.Contains(t, page, `id="trends" data-window="1h"`)
	got := chartPoints(t, page)
	require.Equal(t, map[string]string{at0: "12", at1: "7"}, got["pending"]["pending"])
	require.Equal(t, map[string]string{at0: "4", at1: "6"}, got["handled"]["handled"])
	require.Equal(t, map[string]string{at0: "1", at1: "1"}, got["exhausted"]["exhausted"])
	require.Equal(t, map[string]string{at0: "0", at1: "1"}, got["exhausted"]["failed"])
	require.Equal(t, map[string]string{at0: "3", at1: "3"}, got["quarantine"]["quarantine"])
	require.Equal(t, map[string]string{at0: "2", at1: "0"}, got["outbox"]["unsent"])
	require.Equal(t, map[string]string{at0: "0", at1: "1"}, got["outbox"]["held"])
	require.Len(t, got, 5, "pending, handled, exhausted, quarantine, outbox")
	require.Contains(t, page, `data-max="20"`, "pending's scale: 12 rounds up to 20")

	code, page = b.call("viewer", "GET", "/?trends=24h", nil)
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `id="trends" data-window="24h"`)
	require.Contains(t, page, `data-bucket-seconds="900"`)
	require.Contains(t, page, `data-value="12"`, "the 15 minutes' highest pending")
	code, _ = b.call("viewer", "GET", "/?trends=7d", nil)
	require.Equal(t, http.StatusBadRequest, code)

	code, raw := b.call("viewer", "GET", "/api/trends?window=1h", nil)
	require.Equal(t, http.StatusOK, code, raw)
	var v struct {
		Window string `json:"window"`
		Points []struct {
			At      string   `json:"at"`
			Pending *int64   `json:"pending"`
			Handled *float64 `json:"handled_per_minute"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	require.Equal(t, "1h", v.Window)
	require.Len(t, v.Points, 60)
	seen := 0
	for _, p := range v.Points {
		switch p.At {
		case at0:
			require.EqualValues(t, 12, *p.Pending)
			require.InDelta(t, 4.0, *p.Handled, 1e-9)
			seen++
		case at1:
			require.EqualValues(t, 7, *p.Pending)
			seen++
		default:
			require.Nil(t, p.Pending, "no sample at %s", p.At)
		}
	}
	require.Equal(t, 2, seen)
	code, _ = b.call("", "GET", "/api/trends", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	code, raw = b.call("viewer", "GET", "/api/trends?window=1w", nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, raw, "window must be 1h or 24h")

	code, raw = b.call("", "GET", "/api/openapi.json", nil)
	require.Equal(t, http.StatusOK, code)
	var doc struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &doc))
	op := doc.Paths["/api/trends"]["get"]
	require.Equal(t, "viewer", op["x-hookinbox-role"])
	require.True(t, strings.Contains(raw, `"#/components/schemas/TrendPoint"`))
}
