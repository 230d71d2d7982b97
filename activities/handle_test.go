package activities_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// TestAWorkerWithoutTheHandlerLeavesTheRowPending: the intake decided a
// handler takes the type, but this worker has none registered (rolled back,
// or the intake was deployed first). The row is never ignored: it stays
// pending with the reason in last_error, its attempts untouched, due again
// only after a backoff (no hot loop), and the worker counts it under
// status="no_handler" for the alert.
func TestAWorkerWithoutTheHandlerLeavesTheRowPending(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	body := []byte(`{"id":"evt_nh"}`)
	sum := sha256.Sum256(body)
	k := keys.Event{Provider: "stripe", Account: "acct_nh", Environment: "test", EventID: "evt_nh"}
	_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_nh", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)

	m := metrics.New()
	a := &activities.ResourceActivities{Events: &engine.Events{Store: st, Routes: routestest.Builtin(), Handlers: engine.Set{}}, Metrics: m,
		RetryInitial: time.Second, RetryMax: time.Minute}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	before := time.Now()
	v, err := env.ExecuteActivity(a.HandleEvent, activities.HandleInput{Key: k})
	require.NoError(t, err)
	var res activities.HandleResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, keys.StatusPending, res.Status)
	require.Contains(t, res.Note, "no handler registered for stripe event type invoice.paid")

	row, err := inbox.GetInboxEvent(ctx, st.Pool, k)
	require.NoError(t, err)
	require.Equal(t, keys.StatusPending, row.Status, "never ignored")
	require.Contains(t, row.LastError, "no handler registered for stripe event type invoice.paid")
	require.Zero(t, row.Attempts, "not an attempt against the budget: the event is not at fault")
	require.True(t, row.NextAttemptAt.After(before.Add(20*time.Second)), "due again after a backoff, not at once: %s", row.NextAttemptAt.Sub(before))
	require.NotNil(t, res.RetryAt)
	require.WithinDuration(t, row.NextAttemptAt, *res.RetryAt, time.Millisecond, "the workflow wakes when the row is due")
	require.EqualValues(t, 1, testutil.ToFloat64(m.EventsHandled.WithLabelValues(routestest.Credits, activities.StatusNoHandler)))
	require.EqualValues(t, 0, testutil.ToFloat64(m.EventsHandled.WithLabelValues(routestest.Credits, keys.StatusIgnored)))
}

// handledEvents answers every Handle with h (the other methods are not called).
type handledEvents struct {
	ports.Events
	h ports.Handled
}

func (e handledEvents) Handle(context.Context, keys.Event) (ports.Handled, error) { return e.h, nil }

// TestSameVersionDivergencesAreCounted: the handler's same-version
// divergences reach hookinbox_same_version_divergences_total.
func TestSameVersionDivergencesAreCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	a := &activities.ResourceActivities{Metrics: m, Events: handledEvents{h: ports.Handled{Route: routestest.Subscriptions,
		Status: keys.StatusDone, Note: "differs", Divergences: []keys.Divergence{{Field: "status", SameVersion: true}}}}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	_, err := env.ExecuteActivity(a.HandleEvent, activities.HandleInput{Key: keys.Event{Provider: "stripe", Account: "a", Environment: "test", EventID: "e"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, testutil.ToFloat64(m.SameVersionDivergences.WithLabelValues("stripe", "status")))
}
