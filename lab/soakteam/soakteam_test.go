package soakteam_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soakteam"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

// The team's handler counts each vote once in its own table, whatever the
// deliveries: a duplicate delivery, a second event for one vote and a
// replay change nothing; another vote counts. The built-in domains are
// there too (the soak's app is the shipped one plus the team).
func TestTheTeamCountsEachVoteOnce(t *testing.T) {
	t.Parallel()
	app, err := soakteam.New()
	require.NoError(t, err)
	h := hookintest.New(t, app)
	ctx := context.Background()
	secret := simulator.StandardSecret("soakteam-test/Wd0Gc5Yf7Jq2Lm9Xv4Rb1Tz8Nw3")
	h.AddEndpoint(ctx, hookintest.Endpoint{Slug: "feedback", Provider: "standard", Secret: secret, AccountPath: "data.project_id",
		Account: "proj_1", Workspace: "ws_1"})
	sim := simulator.New(simulator.Config{Projects: []string{"proj_1"}})
	item, _ := sim.CreateFeedback("proj_1", "search is slow")
	deliver := func(ev simulator.Event) hookintype.EventKey {
		d := h.Deliver(ctx, "feedback", secret, http.Header{"Webhook-Id": {ev.ID}}, ev.Body)
		require.Equal(t, "accepted", d.Outcome, d.Reason)
		return d.Key
	}
	votes := func() (n int) {
		err := h.DB.QueryRow(ctx, `SELECT coalesce(sum(votes), 0) FROM `+soakteam.Table+` WHERE project = 'proj_1' AND feedback_id = $1`, item.ID).Scan(&n)
		require.NoError(t, err)
		return n
	}

	v1, ev1, err := sim.VoteOn(item.ID)
	require.NoError(t, err)
	k1 := deliver(ev1)
	res := h.Handle(ctx, k1)
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)
	require.Contains(t, res.Note, v1.ID)
	require.Equal(t, 1, votes())

	// The same vote under another message id: counted once.
	again := ev1
	again.ID = "msg_again"
	res = h.Handle(ctx, deliver(again))
	require.NoError(t, res.Err)
	require.Contains(t, res.Note, "already counted by "+k1.String())
	require.Equal(t, 1, votes())
	h.Replay(ctx, k1, "test: a replay counts nothing")
	require.NoError(t, h.Handle(ctx, k1).Err)
	require.Equal(t, 1, votes())

	_, ev2, err := sim.VoteOn(item.ID)
	require.NoError(t, err)
	require.NoError(t, h.Handle(ctx, deliver(ev2)).Err)
	require.Equal(t, 2, votes())

	_, created := sim.CreateFeedback("proj_1", "")
	res = h.Handle(ctx, deliver(created))
	require.NoError(t, res.Err, "the built-in feedback domain runs beside the team")
	require.Equal(t, hookintype.StatusDone, res.Status)
}
