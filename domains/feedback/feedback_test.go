package feedback_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/feedback"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

const (
	project   = "proj_1"
	workspace = "ws"
	slug      = "fb"
)

var secret = simulator.StandardSecret("feedback-domain-test-key-0123456789")

type fixture struct {
	ctx context.Context
	h   *hookintest.Harness
	sim *simulator.Simulator
}

// setup registers the feedback domain and a live Standard Webhooks endpoint
// of the feedback tool whose project (data.project_id) is linked to ws.
func setup(t *testing.T, seed uint64) *fixture {
	t.Helper()
	app := hookinbox.New()
	feedback.Register(app)
	h := hookintest.New(t, app)
	ctx := context.Background()
	h.AddEndpoint(ctx, hookintest.Endpoint{Slug: slug, Provider: "standard", Environment: hookintype.Live, Secret: secret,
		AccountPath: "data.project_id", Account: project, Workspace: workspace})
	return &fixture{ctx: ctx, h: h, sim: simulator.New(simulator.Config{Seed: seed, Projects: []string{project}})}
}

// deliver admits body as message id (webhook-id) through the intake's path.
func (f *fixture) deliver(t *testing.T, id string, body []byte) hookintest.Delivery {
	t.Helper()
	return f.h.Deliver(f.ctx, slug, secret, http.Header{"Webhook-Id": {id}}, body)
}

func (f *fixture) handleDone(t *testing.T, key hookintype.EventKey) hookintest.Handled {
	t.Helper()
	out := f.h.Handle(f.ctx, key)
	require.NoError(t, out.Err)
	require.Equal(t, hookintype.StatusDone, out.Status, out.Note)
	return out
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.h.DB.QueryRow(f.ctx, sql, args...).Scan(&n))
	return n
}

func TestFeedbackAlertOncePerItemAndOneIntentPerDestination(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	for _, d := range []hookintest.Destination{
		{Workspace: workspace, Name: "oncall", Kind: "webhook", Target: "https://example.invalid/hook"},
		{Workspace: workspace, Name: "team-mail", Kind: "email", Target: "team@ws.example"},
		{Workspace: workspace, Name: "off", Kind: "email", Target: "x@ws.example", Disabled: true},
	} {
		f.h.AddDestination(f.ctx, d)
	}
	item, ev := f.sim.CreateFeedback(project, "search is slow")

	first := f.deliver(t, ev.ID, ev.Body)
	require.Equal(t, "accepted", first.Outcome, first.Reason)
	require.Equal(t, project, first.Key.Account, "the project is the source account")
	out := f.handleDone(t, first.Key)
	require.Len(t, out.Outbox, 2, "one intent per enabled destination")
	require.Equal(t, "initial alert created, 2 destination(s)", out.Note)
	base := feedback.AlertKey("standard", project, hookintype.Live, item.ID)
	require.Equal(t, base, out.BusinessKey)

	// The same message again is a duplicate at the intake.
	dup := f.deliver(t, ev.ID, ev.Body)
	require.Equal(t, "duplicate", dup.Outcome)

	// Another message about the same item: no second alert.
	second := f.deliver(t, "msg_2", ev.Body)
	require.Equal(t, "accepted", second.Outcome, second.Reason)
	out = f.handleDone(t, second.Key)
	require.Empty(t, out.Outbox)
	require.Equal(t, "initial alert already exists", out.Note)

	// Its replay neither.
	f.h.Replay(f.ctx, first.Key, "operator replays it")
	out = f.handleDone(t, first.Key)
	require.Empty(t, out.Outbox)

	rows, err := f.h.DB.Query(f.ctx, `SELECT operation_key, class, kind, destination, workspace_id, payload FROM outbox ORDER BY operation_key`)
	require.NoError(t, err)
	type intent struct {
		Key, Class, Kind, Destination, Workspace string
		Payload                                  map[string]any
	}
	var got []intent
	for rows.Next() {
		var in intent
		var payload []byte
		require.NoError(t, rows.Scan(&in.Key, &in.Class, &in.Kind, &in.Destination, &in.Workspace, &payload))
		require.NoError(t, json.Unmarshal(payload, &in.Payload))
		got = append(got, in)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	payload := map[string]any{"type": "feedback.alert", "project": project, "feedback_id": item.ID, "workspace": workspace, "message": "search is slow"}
	require.Equal(t, []intent{
		{base + ":oncall", feedback.ClassAlert, "webhook", "oncall", workspace, payload},
		{base + ":team-mail", feedback.ClassAlert, "email", "team-mail", workspace, payload},
	}, got)

	var alerts int
	var by string
	require.NoError(t, f.h.DB.QueryRow(f.ctx, `SELECT count(*), min(event_key) FROM feedback_alerts
		WHERE provider = 'standard' AND project = $1 AND environment = 'live' AND feedback_id = $2 AND operation = $3 AND workspace_id = $4`,
		project, item.ID, feedback.OperationInitialAlert, workspace).Scan(&alerts, &by))
	require.Equal(t, 1, alerts)
	require.Equal(t, first.Key.String(), by)
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM feedback_alerts`))
}

// Every feedback item has its own alert; a workspace without destinations
// still records it (there is nowhere to send it yet).
func TestFeedbackAlertPerItemWithoutDestinations(t *testing.T) {
	t.Parallel()
	f := setup(t, 2)
	for i := range 2 {
		_, ev := f.sim.CreateFeedback(project, "")
		d := f.deliver(t, ev.ID, ev.Body)
		require.Equal(t, "accepted", d.Outcome, d.Reason)
		out := f.handleDone(t, d.Key)
		require.Equal(t, "initial alert created, 0 destination(s)", out.Note, i)
		require.Empty(t, out.Outbox)
	}
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM feedback_alerts`))
	require.Zero(t, f.count(t, `SELECT count(*) FROM outbox`))
}
