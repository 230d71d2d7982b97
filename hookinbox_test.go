package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

func TestMain(m *testing.M) { hookintest.Main(m) }

var secret = simulator.StandardSecret("hookinbox-api-test/Wd0Gc5Yf7Jq2Lm9Xv4Rb1Tz8Nw3")

// team is an App on a Standard Webhooks endpoint ("team", account proj_1
// linked to ws_1) with one table of its own, and the harness to drive it.
func team(t *testing.T, handle func(app *hookinbox.App)) *hookintest.Harness {
	t.Helper()
	files := fstest.MapFS{"0001_things.sql": {Data: []byte(`
CREATE TABLE things (id text PRIMARY KEY, state text NOT NULL, provider_version bigint, write_seq bigint NOT NULL DEFAULT 1,
	provider text NOT NULL DEFAULT 'standard');
---- create above / drop below ----
DROP TABLE things;`)}}
	app := hookinbox.New(hookinbox.WithMigrations("team", files, hookinbox.Table{Name: "things", Worker: []string{"SELECT", "INSERT", "UPDATE"}}))
	handle(app)
	h := hookintest.New(t, app)
	h.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: "team", Provider: "standard", Secret: secret, Account: "proj_1", Workspace: "ws_1"})
	return h
}

// deliver sends one Standard Webhooks event of type typ about thing id.
func deliver(t *testing.T, h *hookintest.Harness, msgID, typ, id string) hookintype.EventKey {
	t.Helper()
	hd := http.Header{}
	hd.Set("webhook-id", msgID)
	d := h.Deliver(context.Background(), "team", secret, hd, fmt.Appendf(nil, `{"type":%q,"data":{"id":%q}}`, typ, id))
	require.Equal(t, "accepted", d.Outcome, d.Reason)
	return d.Key
}

func TestAHandlerThatDoesNotCommitCompletesItsRowAndIgnoredIsIgnored(t *testing.T) {
	t.Parallel()
	h := team(t, func(app *hookinbox.App) {
		app.HandleFunc("standard", "thing.seen", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{Note: "seen"}, nil
		})
		app.HandleFunc("standard", "thing.skipped", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{Ignored: true, Note: "not ours"}, nil
		})
	})
	ctx := context.Background()
	res := h.Handle(ctx, deliver(t, h, "msg_1", "thing.seen", "t1"))
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusDone, res.Status)
	res = h.Handle(ctx, deliver(t, h, "msg_2", "thing.skipped", "t2"))
	require.NoError(t, res.Err)
	require.Equal(t, hookintype.StatusIgnored, res.Status)
	d := h.Deliver(ctx, "team", secret, http.Header{"Webhook-Id": {"msg_3"}}, []byte(`{"type":"thing.unrouted","data":{"id":"t3"}}`))
	require.Equal(t, "ignored", d.Outcome, "a type no handler takes is recorded ignored at the intake")
}

func TestCommitIsOneTransactionOnceAndClaimsOnce(t *testing.T) {
	t.Parallel()
	var second error
	boom := errors.New("boom after the insert")
	h := team(t, func(app *hookinbox.App) {
		app.HandleFunc("standard", "thing.made", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
			res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
				c, err := tx.Claim(ctx, hookinbox.Key("make", ev.Resource.ID))
				if err != nil || !c.First {
					return hookinbox.Result{Note: "already made by " + c.By.String()}, err
				}
				if _, err := tx.Conn().Exec(ctx, `INSERT INTO things (id, state) VALUES ($1, 'made')`, ev.Resource.ID); err != nil {
					return hookinbox.Result{}, err
				}
				if _, err := tx.Send(ctx, hookinbox.Email("make/"+ev.Resource.ID, "team_notice", "ops@example.com", "made", "made")); err != nil {
					return hookinbox.Result{}, err
				}
				if ev.Key.EventID == "msg_fail" {
					return hookinbox.Result{}, boom // everything above rolls back
				}
				return hookinbox.Result{Note: "made"}, nil
			})
			if err == nil {
				_, second = ev.Commit(ctx, func(*hookinbox.Tx) (hookinbox.Result, error) { return hookinbox.Result{}, nil })
			}
			return res, err
		})
	})
	ctx := context.Background()
	failed := deliver(t, h, "msg_fail", "thing.made", "t1")
	res := h.Handle(ctx, failed)
	require.ErrorIs(t, res.Err, boom)
	require.Equal(t, hookintype.StatusPending, res.Status, "a failed attempt leaves the row pending")
	var n int
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM things) + (SELECT count(*) FROM business_claims) + (SELECT count(*) FROM outbox)`).Scan(&n))
	require.Zero(t, n, "the effect, the claim and the intent rolled back with the error")

	res = h.Handle(ctx, deliver(t, h, "msg_a", "thing.made", "t1"))
	require.NoError(t, res.Err)
	require.ErrorIs(t, second, hookinbox.ErrCommitted, "one event commits once")
	res = h.Handle(ctx, deliver(t, h, "msg_b", "thing.made", "t1"))
	require.NoError(t, res.Err)
	require.Contains(t, res.Note, "already made by standard/proj_1/test/msg_a")
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT count(*) FROM things`).Scan(&n))
	require.Equal(t, 1, n, "two events of one operation: one effect")
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE operation_key = 'make/t1'`).Scan(&n))
	require.Equal(t, 1, n)
	var claimer string
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT event_key FROM business_claims`).Scan(&claimer))
	require.Equal(t, "standard/proj_1/test/msg_a", claimer, "the lineage names the event that made the effect")

	// A retry of a completed event runs nothing: the row is final.
	res = h.Handle(ctx, deliver(t, h, "msg_c", "thing.made", "t2"))
	require.NoError(t, res.Err)
	again := h.Handle(ctx, hookintype.EventKey{Provider: "standard", Account: "proj_1", Environment: "test", EventID: "msg_c"})
	require.NoError(t, again.Err)
	require.Equal(t, hookintype.StatusDone, again.Status)
}

func TestPermanentAndWait(t *testing.T) {
	t.Parallel()
	h := team(t, func(app *hookinbox.App) {
		app.HandleFunc("standard", "thing.bad", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{}, hookinbox.Permanent(errors.New("never applies"))
		})
		app.HandleFunc("standard", "thing.early", func(context.Context, *hookinbox.Event) (hookinbox.Result, error) {
			return hookinbox.Result{}, hookinbox.Wait("waiting for its parent", nil)
		})
	})
	ctx := context.Background()
	res := h.Handle(ctx, deliver(t, h, "msg_bad", "thing.bad", "t1"))
	require.True(t, hookinbox.IsPermanent(res.Err))
	res = h.Handle(ctx, deliver(t, h, "msg_early", "thing.early", "t2"))
	require.NoError(t, res.Err, "a wait is not a failure")
	require.Equal(t, hookintype.StatusPending, res.Status)
	var lastErr string
	var attempts int
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT last_error, attempts FROM webhook_inbox WHERE event_id = 'msg_early'`).Scan(&lastErr, &attempts))
	require.Equal(t, "waiting for its parent", lastErr)
	require.Equal(t, 1, attempts)
}

// WriteNewer never lets an older version win; WriteFenced discards a write
// whose read came before another write.
func TestProjectionsNeverGoBackwards(t *testing.T) {
	t.Parallel()
	things := hookinbox.Projection{Table: "things", Key: []string{"id"}, TerminalColumn: "state", TerminalValue: "gone"}
	type step struct {
		version int64
		state   string
	}
	var fenced []bool
	h := team(t, func(app *hookinbox.App) {
		app.HandleFunc("standard", "thing.v", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
			var s step
			_, err := fmt.Sscanf(ev.Key.EventID, "v%d-%s", &s.version, &s.state)
			if err != nil {
				return hookinbox.Result{}, hookinbox.Permanent(err)
			}
			return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
				ok, err := tx.WriteNewer(ctx, things, hookinbox.Row{"id": ev.Resource.ID, "state": s.state, "provider_version": s.version})
				return hookinbox.Result{Note: fmt.Sprint(ok)}, err
			})
		})
		app.HandleFunc("standard", "thing.fetched", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
			var seq int64
			if err := ev.DB().QueryRow(ctx, `SELECT coalesce((SELECT write_seq FROM things WHERE id = $1), 0)`, ev.Resource.ID).Scan(&seq); err != nil {
				return hookinbox.Result{}, err
			}
			if ev.Key.EventID == "f-stale" {
				seq-- // as if another write came between its read and its write
			}
			return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
				ok, err := tx.WriteFenced(ctx, things, hookinbox.Row{"id": ev.Resource.ID, "state": "fetched:" + ev.Key.EventID}, seq)
				fenced = append(fenced, ok)
				return hookinbox.Result{}, err
			})
		})
	})
	ctx := context.Background()
	for _, id := range []string{"v2-active", "v1-stale", "v3-gone", "v4-active"} {
		require.NoError(t, h.Handle(ctx, deliver(t, h, id, "thing.v", "t1")).Err)
	}
	var state string
	var version int64
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT state, provider_version FROM things WHERE id = 't1'`).Scan(&state, &version))
	require.Equal(t, "gone", state, "an older version never wins, and a terminal state is never left")
	require.EqualValues(t, 3, version)

	for _, id := range []string{"f-first", "f-next", "f-stale"} {
		require.NoError(t, h.Handle(ctx, deliver(t, h, id, "thing.fetched", "t2")).Err)
	}
	require.Equal(t, []bool{true, true, false}, fenced, "the stale read's write is discarded")
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT state FROM things WHERE id = 't2'`).Scan(&state))
	require.Equal(t, "fetched:f-next", state)
}

// A team's App that registers none of the built-in domains creates none of
// their tables: they are the domains' own migration sets, not the core's.
func TestTeamAppHasNoBuiltinDomainTable(t *testing.T) {
	t.Parallel()
	h := team(t, func(*hookinbox.App) {})
	ctx := context.Background()
	for _, rel := range []string{"credit_grants", "credit_adjustments", "subscription_projection", "workspace_access", "feedback_alerts"} {
		var present bool
		require.NoError(t, h.DB.QueryRow(ctx, `SELECT to_regclass('public.' || $1) IS NOT NULL`, rel).Scan(&present))
		require.False(t, present, "a team's database has %s", rel)
	}
	var things bool
	require.NoError(t, h.DB.QueryRow(ctx, `SELECT to_regclass('public.things') IS NOT NULL`).Scan(&things))
	require.True(t, things, "the team's own table is there")
}
