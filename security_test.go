package hookinbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintype"
)

// L5 (issue #32): the outbox class "notification" is hookinbox's own
// notices: its sender reads Destination as a rule's name and signs with that
// rule's secret (or posts to its Slack URL). A team's handler may not send
// in that class, whatever its spelling; nothing is recorded.
func TestLeastPrivilegeTeamCodeCannotSendHookinboxNotices(t *testing.T) {
	t.Parallel()
	var errs []error
	h := team(t, func(app *hookinbox.App) {
		app.HandleFunc("standard", "thing.made", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
			return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
				for _, class := range []string{"notification", "Notification", " notification "} {
					_, err := tx.Send(ctx, hookinbox.Intent{OperationKey: "fake/" + class, Class: class, Kind: "webhook",
						Destination: "oncall", Payload: map[string]any{"title": "hookinbox: all clear"}})
					errs = append(errs, err)
				}
				return hookinbox.Result{Note: "tried"}, nil
			})
		})
	})
	ctx := context.Background()
	res := h.Handle(ctx, deliver(t, h, "msg_n", "thing.made", "t1"))
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Len(t, errs, 3)
	for _, err := range errs {
		require.Error(t, err, "a team's handler sent in hookinbox's notification class")
		require.Contains(t, err.Error(), "reserved")
	}
	var n int
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n))
	require.Zero(t, n)
}
