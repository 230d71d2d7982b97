package e2e

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// TestFailureSuite is SPEC's failure cases F1–F6 (seed 000, last section),
// each against the real stack (HTTP intake, PostgreSQL, Temporal dev server,
// worker, the simulator as the provider) and each asserting the database's
// final state. Run it alone with: go test ./e2e -run TestFailureSuite -v
func TestFailureSuite(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(*testing.T)
	}{
		{"F1 same event delivered concurrently: one row, one grant", f1SameEventDeliveredConcurrently},
		{"F2 different event ids for one invoice: two rows, one grant, one confirmation intent", f2DistinctEventsForOneInvoice},
		{"F3 crash after the intake commit: the sweeper finds the pending row", f3CrashAfterIntakeCommit},
		{"F3 Temporal down during intake: accepted, then processed", f3TemporalDownDuringIntake},
		{"F4 crash before and after the business commit: rollback or one grant", f4CrashBeforeAndAfterTheBusinessCommit},
		{"F5 lost answer from an idempotent email API: retried with the same key", f5LostAnswerFromTheEmailAPI},
		{"F5 SMTP down then up: sent once", f5SMTPDownThenUp},
		{"F5 workflow terminated mid-send: the sweeper re-dispatches", f5OutboxOfATerminatedWorkflow},
		{"F6 reversed snapshots with versions, replay alongside traffic", f6ReversedSnapshotsWithVersionsAndReplay},
		{"F6 reversed notices without versions", f6ReversedNoticesWithoutVersions},
		{"F6 a timed-out attempt that writes late loses", f6TimedOutAttemptWritesLate},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}

func f5LostAnswerFromTheEmailAPI(t *testing.T) {
	email := simulator.New(simulator.Config{Seed: 99})
	srv := httptest.NewServer(email.Handler())
	t.Cleanup(srv.Close)
	s := newStack(t, stackOptions{configure: func(c *config.Config) {
		c.Mailer, c.EmailAPIURL, c.EmailAPIIdempotent = "http", srv.URL, true
	}})
	w := newSimWorld(t, s, simulator.Config{})
	email.LoseNextEmailAnswers(2) // accepted, answer lost; twice
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	eventually(t, 60*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	emails := email.Emails()
	require.Len(t, emails, 1, "one email: the API deduped the retries on the operation key")
	require.Equal(t, 3, emails[0].Posts)
	var policy string
	var attempts int
	require.NoError(t, s.store.Pool.QueryRow(s.ctx, `SELECT policy, attempts FROM outbox`).Scan(&policy, &attempts))
	require.Equal(t, "retry_same_key", policy)
	require.Equal(t, 3, attempts)
}
