package activities_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// ringing records the doorbells rung.
type ringing struct {
	mu  sync.Mutex
	got []keys.Resource
}

func (r *ringing) Ring(_ context.Context, res keys.Resource, _, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, res)
	return nil
}

// unreadable schedules: Temporal did not answer.
type unreadable struct{}

func (unreadable) Health(context.Context) ([]notify.ScheduleHealth, error) {
	return nil, errors.New("temporal: unavailable")
}

// An evaluation commits the notice, rings its rule's workflow, counts it;
// schedules it could not read are said so and not evaluated. Sending the
// notice through SendOutbox counts it sent, or failed, by channel and
// trigger.
func TestNotificationsAreEvaluatedRungSentAndCounted(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	var status atomic.Int64
	status.Store(http.StatusNoContent)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
	t.Cleanup(rcv.Close)
	require.NoError(t, notifications.Insert(ctx, st.Pool, st.Keys, notifications.Rule{Name: "hook",
		Triggers: []string{notify.TriggerEventFailed, notify.TriggerScheduleFailed}, Channel: notify.ChannelWebhook, Target: rcv.URL,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Window: time.Hour, PendingAge: time.Hour, AllowPrivate: true, Enabled: true}))
	body := []byte(`{}`)
	sum := sha256.Sum256(body)
	k := keys.Event{Provider: "stripe", Account: "acct_n", Environment: "test", EventID: "evt_n"}
	_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "ep", WorkspaceID: "ws",
		EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: "in_n", Payload: body, BodySHA256: sum[:]})
	require.NoError(t, err)
	_, err = inbox.StopInboxEvent(ctx, st.Pool, k, keys.StatusExhausted, "API down")
	require.NoError(t, err)

	m := metrics.New()
	bell := &ringing{}
	ca := &activities.ControlActivities{Notifications: &storeports.Notifications{Store: st, TaskQueue: "q"}, Schedules: unreadable{},
		Doorbell: bell, Metrics: m}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(ca)
	v, err := env.ExecuteActivity(ca.EvaluateNotifications, activities.NotifyInput{})
	require.NoError(t, err)
	var res activities.NotifyResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, activities.NotifyResult{Rules: 1, Firing: 1, Rung: 1, Schedules: "schedules unread: temporal: unavailable"}, res)
	require.Equal(t, []keys.Resource{notify.Resource("q", "hook")}, bell.got)
	require.EqualValues(t, 1, testutil.ToFloat64(m.NotificationsDecided.WithLabelValues(notify.TriggerEventFailed, notify.PhaseFiring)))
	var states int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM notification_states WHERE trigger = 'schedule_failed'`).Scan(&states))
	require.Zero(t, states, "unread schedules are not evaluated")

	ra := &activities.ResourceActivities{Outbox: &storeports.Outbox{Store: st}, Metrics: m, RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
	renv := s.NewTestActivityEnvironment()
	renv.RegisterActivity(ra)
	var id int64
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT id FROM outbox WHERE class = 'notification'`).Scan(&id))
	_, err = renv.ExecuteActivity(ra.SendOutbox, activities.SendInput{ID: id})
	require.NoError(t, err)
	require.EqualValues(t, 1, testutil.ToFloat64(m.NotificationsSent.WithLabelValues(notify.ChannelWebhook, notify.TriggerEventFailed)))

	// A second notice the receiver refuses (400): failed, at once.
	status.Store(http.StatusBadRequest)
	require.NoError(t, st.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload)
			SELECT operation_key || '/again', class, kind, destination, workspace_id, resource_key, payload FROM outbox WHERE id = $1`, id)
		return err
	}))
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT id FROM outbox WHERE operation_key LIKE '%/again'`).Scan(&id))
	_, err = renv.ExecuteActivity(ra.SendOutbox, activities.SendInput{ID: id})
	require.ErrorContains(t, err, "HTTP 400")
	require.EqualValues(t, 1, testutil.ToFloat64(m.NotificationsFailed.WithLabelValues(notify.ChannelWebhook, notify.TriggerEventFailed)))
	require.EqualValues(t, 1, testutil.ToFloat64(m.NotificationsSent.WithLabelValues(notify.ChannelWebhook, notify.TriggerEventFailed)))
}
