package e2e

import (
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// counterValue sums a counter family's samples whose label values include
// label (all samples when label is empty).
func counterValue(t *testing.T, s *stack, name, label string) float64 {
	t.Helper()
	fams, err := s.metrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" || hasLabelValue(m, label) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func hasLabelValue(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

// scrape GETs url, requires the status and returns the body.
func scrape(t *testing.T, url string, status int) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "GET %s", url)
	return string(body)
}

// histogramCount sums a histogram family's sample counts whose label
// values include label.
func histogramCount(t *testing.T, s *stack, name, label string) float64 {
	t.Helper()
	fams, err := s.metrics.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabelValue(m, label) {
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}
