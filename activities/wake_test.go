package activities_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// An effect that wakes waiting rows (Tx.Wake, through the public API)
// makes them run at once: rows of the event's own resource (SerializeOn:
// a credit note on its invoice) are reported to the workflow running it,
// which loads again (HandleResult.Woke); rows of another resource get that
// resource's doorbell rung after the commit.
func TestAWakeReachesTheWorkflowThatHoldsTheWokenRows(t *testing.T) {
	t.Parallel()
	thing := func(id string) keys.Resource {
		return keys.Resource{Provider: "standard", Account: "proj_1", Environment: "test", Kind: "thing", ID: id}
	}
	for _, tt := range []struct {
		name     string
		child    keys.Resource // where the waiting row runs
		wantWoke bool
		wantRung []keys.Resource
	}{
		{name: "own resource: the workflow loads again", child: thing("p1"), wantWoke: true},
		{name: "another resource: its doorbell", child: thing("c1"), wantRung: []keys.Resource{thing("c1")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := testenv.Store(t)
			ctx := context.Background()
			var parentDone atomic.Bool
			a := hookinbox.New()
			a.HandleFunc("standard", "thing.child", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
				if !parentDone.Load() {
					return hookinbox.Result{}, hookinbox.Wait("waiting for the parent", nil)
				}
				return hookinbox.Result{Note: "applied after the parent"}, nil
			})
			a.HandleFunc("standard", "thing.parent", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
				res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
					return hookinbox.Result{Note: "parent made"}, tx.Wake(ctx, tt.child)
				})
				parentDone.Store(err == nil)
				return res, err
			})
			b := app.BusinessOf(a)
			bell := &countingBell{rings: map[keys.Resource]int{}}
			acts := &activities.ResourceActivities{Events: &engine.Events{Store: st, Routes: b.Routes, Handlers: b.Handlers},
				Doorbell: bell, RetryInitial: time.Second, RetryMax: time.Minute}
			insert := func(id, typ string, r keys.Resource) keys.Event {
				body := fmt.Appendf(nil, `{"type":%q,"data":{"id":%q}}`, typ, r.ID)
				sum := sha256.Sum256(body)
				k := keys.Event{Provider: r.Provider, Account: r.Account, Environment: r.Environment, EventID: id}
				_, err := inbox.InsertInboxEvent(ctx, st.Pool, &inbox.InboxEvent{Key: k, EndpointSlug: "team", WorkspaceID: "ws_1",
					EventType: typ, ResourceKind: r.Kind, ResourceID: r.ID, Payload: body, BodySHA256: sum[:]})
				require.NoError(t, err)
				return k
			}
			child := insert("msg_child", "thing.child", tt.child)
			parent := insert("msg_parent", "thing.parent", thing("p1"))

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(acts)
			handle := func(k keys.Event) activities.HandleResult {
				v, err := env.ExecuteActivity(acts.HandleEvent, activities.HandleInput{Key: k})
				require.NoError(t, err)
				var res activities.HandleResult
				require.NoError(t, v.Get(&res))
				return res
			}
			res := handle(child)
			require.Equal(t, keys.StatusPending, res.Status, "the child waits")
			require.False(t, res.Woke)
			row, err := inbox.GetInboxEvent(ctx, st.Pool, child)
			require.NoError(t, err)
			require.True(t, row.NextAttemptAt.After(time.Now()), "not due while it waits")

			res = handle(parent)
			require.Equal(t, keys.StatusDone, res.Status)
			require.Equal(t, tt.wantWoke, res.Woke)
			var rung []keys.Resource
			for r := range bell.rings {
				rung = append(rung, r)
			}
			require.ElementsMatch(t, tt.wantRung, rung)
			row, err = inbox.GetInboxEvent(ctx, st.Pool, child)
			require.NoError(t, err)
			require.False(t, row.NextAttemptAt.After(time.Now()), "due now")
			require.Equal(t, keys.StatusDone, handle(child).Status)
		})
	}
}
