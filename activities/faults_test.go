package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// lostMarkSent is the outbox whose MarkSent fails the next fails times
// (the destination accepted, then recording it did not commit).
type lostMarkSent struct {
	ports.Outbox
	fails int
	err   error // default: an injected failure that is not an outage
}

func (o *lostMarkSent) MarkSent(ctx context.Context, id int64, remoteID, note string) error {
	if o.fails > 0 {
		o.fails--
		if o.err != nil {
			return o.err
		}
		return errors.New("injected: mark sent did not commit")
	}
	return o.Outbox.MarkSent(ctx, id, remoteID, note)
}

// The send succeeded but marking the row sent failed: the row must stay
// uncertain, and the next attempt must take its class's uncertain-outcome
// path (ask the destination, or hold for review), never send blindly as if
// the row were pending.
func TestAFailedMarkSentAfterASuccessfulSendKeepsTheRowUncertain(t *testing.T) {
	t.Parallel()
	hold := map[string]string{keys.ClassCreditsConfirmation: activities.PolicyHoldForReview}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"held for review when the destination cannot be asked", func(t *testing.T) {
			sim, url := emailAPI(t, simulator.EmailKnobs{NoIdempotency: true})
			b := newOutbox(t, &outbound.HTTPMailer{BaseURL: url, From: "h@x"}, hold)
			b.acts.Outbox = &lostMarkSent{Outbox: b.acts.Outbox, fails: 1}
			id := b.confirmation(t, "op-lost-mark-hold")

			_, err := b.send(t, id)
			require.Error(t, err)
			require.Equal(t, keys.OutboxUncertain, b.row(t, id).Status, "the destination accepted: the outcome is not pending")
			res, err := b.send(t, id)
			require.NoError(t, err)
			require.Equal(t, keys.OutboxHeld, res.Status)
			require.Equal(t, keys.OutboxHeld, b.row(t, id).Status)
			require.Len(t, sim.Emails(), 1)
			require.Equal(t, 1, sim.Emails()[0].Posts, "not sent blindly a second time")
		}},
		{"found at a destination that can be asked", func(t *testing.T) {
			mp := testenv.Mailpit(t)
			mailer := &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "h@test.local", LookupURL: mp.HTTPURL, Timeout: 5 * time.Second}
			b := newOutbox(t, mailer, hold)
			b.acts.Outbox = &lostMarkSent{Outbox: b.acts.Outbox, fails: 1}
			id := b.confirmation(t, "op-lost-mark-find")

			_, err := b.send(t, id)
			require.Error(t, err)
			require.Equal(t, keys.OutboxUncertain, b.row(t, id).Status)
			require.Eventually(t, func() bool {
				res, err := b.send(t, id)
				return err == nil && res.Status == keys.OutboxSent
			}, 10*time.Second, 200*time.Millisecond)
			require.Len(t, mailpitMessages(t, mp.HTTPURL), 1, "looked up, not sent again")
			require.Contains(t, b.row(t, id).LastError, "found at the destination")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}

// awayEvents is an inbox whose database is away.
type awayEvents struct {
	ports.Events
	recorded int
}

func (e *awayEvents) Handle(context.Context, keys.Event) (ports.Handled, error) {
	return ports.Handled{}, fault.Unavailable(errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"))
}

func (e *awayEvents) RecordFailure(context.Context, keys.Event, string, time.Time) error {
	e.recorded++
	return nil
}

// An attempt that finds the database away is reported as a wait
// (ErrDatabaseUnavailable, which the workflow does not count against the
// budget), and nothing is recorded as a failed attempt on the row.
func TestAnAttemptThatFindsTheDatabaseAwayIsAWait(t *testing.T) {
	t.Parallel()
	t.Run("handling an event", func(t *testing.T) {
		t.Parallel()
		ev := &awayEvents{}
		a := &activities.ResourceActivities{Events: ev, RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(a)
		_, err := env.ExecuteActivity(a.HandleEvent, activities.HandleInput{Key: keys.Event{Provider: "stripe", Account: "a", Environment: "test", EventID: "evt_1"}})
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, activities.ErrDatabaseUnavailable, appErr.Type())
		require.Zero(t, ev.recorded, "no attempt recorded against the row")
	})
	t.Run("marking a sent row", func(t *testing.T) {
		t.Parallel()
		sim, url := emailAPI(t, simulator.EmailKnobs{NoIdempotency: true})
		b := newOutbox(t, &outbound.HTTPMailer{BaseURL: url, From: "h@x"}, nil)
		b.acts.Outbox = &lostMarkSent{Outbox: b.acts.Outbox, fails: 1, err: fault.Unavailable(errors.New("unexpected EOF"))}
		id := b.confirmation(t, "op-away")
		_, err := b.send(t, id)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, activities.ErrDatabaseUnavailable, appErr.Type())
		row := b.row(t, id)
		require.Equal(t, keys.OutboxUncertain, row.Status, "the send went out: uncertain until the database answers")
		require.Equal(t, 1, row.Attempts)
		require.Len(t, sim.Emails(), 1)
	})
}
