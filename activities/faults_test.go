package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/testenv"
	"github.com/hookinbox/hookinbox/simulator"
)

// lostMarkSent is the outbox whose MarkSent fails the next fails times
// (the destination accepted, then recording it did not commit).
type lostMarkSent struct {
	ports.Outbox
	fails int
}

func (o *lostMarkSent) MarkSent(ctx context.Context, id int64, remoteID, note string) error {
	if o.fails > 0 {
		o.fails--
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
			require.Equal(t, store.OutboxUncertain, b.row(t, id).Status, "the destination accepted: the outcome is not pending")
			res, err := b.send(t, id)
			require.NoError(t, err)
			require.Equal(t, store.OutboxHeld, res.Status)
			require.Equal(t, store.OutboxHeld, b.row(t, id).Status)
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
			require.Equal(t, store.OutboxUncertain, b.row(t, id).Status)
			require.Eventually(t, func() bool {
				res, err := b.send(t, id)
				return err == nil && res.Status == store.OutboxSent
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
