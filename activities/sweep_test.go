package activities_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// fakeSweeps is a ports.Sweeps with one stale resource and a trend sample
// that fails when told to.
type fakeSweeps struct {
	samples    int
	sampleFail bool
}

func (f *fakeSweeps) StalePending(context.Context, time.Duration, int) ([]keys.Resource, error) {
	return []keys.Resource{{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}}, nil
}

func (f *fakeSweeps) StaleOutbox(context.Context, time.Duration, int) ([]string, error) {
	return nil, nil
}

func (f *fakeSweeps) SampleTrends(context.Context) error {
	f.samples++
	if f.sampleFail {
		return errors.New("console_trends: permission denied")
	}
	return nil
}

// Each inbox sweep samples the console's trends once; a sample that fails
// does not fail the sweep nor stop its doorbells.
func TestTheInboxSweepSamplesTheTrendsAndRingsWhenTheSampleFails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		fail bool
	}{{"sample ok", false}, {"sample fails", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sw := &fakeSweeps{sampleFail: tt.fail}
			sig := &signals{}
			ctl := &activities.ControlActivities{Sweeps: sw, Doorbell: sig, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestActivityEnvironment()
			env.RegisterActivity(ctl)
			v, err := env.ExecuteActivity(ctl.SweepInbox, activities.SweepInput{OlderThan: time.Minute, Limit: 10})
			require.NoError(t, err)
			var res activities.SweepResult
			require.NoError(t, v.Get(&res))
			require.Equal(t, activities.SweepResult{Stale: 1, Signalled: 1}, res)
			require.Equal(t, 1, sw.samples)
			require.Equal(t, []string{keys.SignalEvent + " in_1"}, sig.got)
		})
	}
}
