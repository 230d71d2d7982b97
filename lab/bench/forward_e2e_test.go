package bench

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/testenv"
)

// A small burst through the real product (PostgreSQL, a Temporal dev
// server, the intake over HTTP, the lab simulator as Stripe), held until
// every event is acknowledged: the fetching route sends one document per
// event, the coalescing route one per resource, and both runs end with
// every event done and every resource at its latest state (RunOnce fails
// otherwise: the service's check). The three share one Temporal server
// (as --fresh-temporal=false does), so a run whose resources' ids repeat an
// earlier run's would signal that run's workflows, whose worker is gone.
func TestForwardDesignsRunABurstWithEveryResourceAtItsLatestState(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL and Temporal: run without -short")
	}
	srv := testenv.NewTemporal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := StartEnv(ctx, EnvOptions{TemporalAddress: srv.Address, Ephemeral: true, Progress: io.Discard})
	require.NoError(t, err)
	defer env.Close()
	l := Load{Name: "bursts", Resources: 3, PerResource: 10}
	s := E2ESuite{Timeout: 2 * time.Minute, Designs: []string{DesignForwardFetch, DesignHookinbox, DesignForwardCoalesce}, Senders: 4, HistorySample: 3,
		HoldWorker: true, ReceiverLatency: time.Millisecond}

	for _, d := range s.Designs {
		r, err := RunOnce(ctx, env, d, l, s)
		require.NoError(t, err, d)
		require.Zero(t, r.NotDone, d)
		require.True(t, r.FetchSource, "%s: the same simulated bursts for every design of the suite", d)
		require.True(t, r.HeldWorker, d)
		require.Positive(t, r.DrainEventsPerSec, d)
		switch d {
		case DesignHookinbox:
			require.Zero(t, r.ForwardDocuments, "the handler forwards nothing")
		case DesignForwardFetch:
			require.Equal(t, 30, r.ForwardDocuments, "one document per event")
			require.Zero(t, r.CoalescedDocuments)
			require.Equal(t, 3, r.LatestChecked)
			require.EqualValues(t, 1, r.ReceiverLatencyMs)
		case DesignForwardCoalesce:
			// Held, each resource's ten events are pending together when its
			// workflow first runs: its first document covers them all.
			require.Equal(t, 3, r.ForwardDocuments, "one document per resource")
			require.Equal(t, 3, r.CoalescedDocuments)
			require.EqualValues(t, 10, r.EventsPerDocument)
			require.Equal(t, 3, r.LatestChecked)
			require.Positive(t, r.SendCommitP50ms, "each document's send and commit, timed")
			require.GreaterOrEqual(t, r.LastSendRecordedSeconds, r.FirstSendRecordedSeconds)
		}
	}
}
