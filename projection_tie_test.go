package hookinbox_test

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
)

type tiedRow struct {
	ID        string    `db:"id"`
	State     string    `db:"state"`
	UpdatedAt time.Time `db:"updated_at"`
	EventSeq  int64     `db:"event_seq"`
	note      string    // unexported: never a column
	Ignored   string    `db:"-"`
}

// Two changes within one second of a timestamp version both apply, in the
// intake's order (Event.Seq as the TieColumn); without the tie-breaker the
// second is dropped as stale. An older version still loses.
func TestATieBreakerAppliesTwoChangesOfOneSecondInOrder(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{"0001_tied.sql": {Data: []byte(`
CREATE TABLE tied (id text PRIMARY KEY, state text NOT NULL, updated_at timestamptz, event_seq bigint, write_seq bigint NOT NULL DEFAULT 1);
---- create above / drop below ----
DROP TABLE tied;`)}}
	tied := hookinbox.Projection{Table: "tied", Key: []string{"id"}, VersionColumn: "updated_at", TieColumn: "event_seq"}
	untied := hookinbox.Projection{Table: "tied", Key: []string{"id"}, VersionColumn: "updated_at"}
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	wrote := map[string]bool{}
	app := hookinbox.New(hookinbox.WithMigrations("tied", files, hookinbox.Table{Name: "tied", Worker: []string{"SELECT", "INSERT", "UPDATE"}}))
	app.HandleFunc("standard", "thing.v", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		var sec int
		var state, proj string
		if _, err := fmt.Sscanf(ev.Key.EventID, "%1s%d-%s", &proj, &sec, &state); err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(err)
		}
		p := tied
		if proj == "u" {
			p = untied
		}
		row, err := hookinbox.RowOf(&tiedRow{ID: ev.Resource.ID, State: state, UpdatedAt: base.Add(time.Duration(sec) * time.Second),
			EventSeq: ev.Seq, note: "x", Ignored: "y"})
		if err != nil {
			return hookinbox.Result{}, hookinbox.Permanent(err)
		}
		return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
			ok, err := tx.WriteNewer(ctx, p, row)
			wrote[ev.Key.EventID] = ok
			return hookinbox.Result{}, err
		})
	})
	h := hookintest.New(t, app)
	h.AddEndpoint(context.Background(), hookintest.Endpoint{Slug: "team", Provider: "standard", Secret: secret, Account: "proj_1", Workspace: "ws_1"})
	ctx := context.Background()
	state := func(id string) string {
		var s string
		require.NoError(t, h.DB.QueryRow(ctx, `SELECT state FROM tied WHERE id = $1`, id).Scan(&s))
		return s
	}

	var seqs []int64
	for _, id := range []string{"t1-opened", "t1-edited", "t1-closed"} {
		key := deliver(t, h, id, "thing.v", "i1")
		require.NoError(t, h.Handle(ctx, key).Err)
		var seq int64
		require.NoError(t, h.DB.QueryRow(ctx, `SELECT event_seq FROM tied WHERE id = 'i1'`).Scan(&seq))
		seqs = append(seqs, seq)
	}
	require.True(t, wrote["t1-opened"] && wrote["t1-edited"] && wrote["t1-closed"], "three changes in one second: all applied, %v", wrote)
	require.Equal(t, "closed", state("i1"))
	require.Less(t, seqs[0], seqs[1])
	require.Less(t, seqs[1], seqs[2], "in the intake's order")
	require.NoError(t, h.Handle(ctx, deliver(t, h, "t0-edited", "thing.v", "i1")).Err)
	require.False(t, wrote["t0-edited"], "an older second loses whatever its tie")
	require.Equal(t, "closed", state("i1"))

	// The same without a tie-breaker: the second change of the second is dropped.
	for _, id := range []string{"u1-opened", "u1-edited"} {
		require.NoError(t, h.Handle(ctx, deliver(t, h, id, "thing.v", "i2")).Err)
	}
	require.True(t, wrote["u1-opened"])
	require.False(t, wrote["u1-edited"], "a strictly greater version alone drops a change within the same second")
	require.Equal(t, "opened", state("i2"))
}

func TestRowOf(t *testing.T) {
	t.Parallel()
	at := time.Unix(5, 0)
	type base struct {
		ID string `db:"id"`
	}
	type withPtr struct {
		base
		Version *int64    `db:"provider_version"`
		At      time.Time `db:"at,omitempty"`
	}
	row, err := hookinbox.RowOf(withPtr{base: base{ID: "x"}, At: at})
	require.NoError(t, err)
	require.Equal(t, hookinbox.Row{"id": "x", "provider_version": nil, "at": at}, row)
	v := int64(3)
	row, err = hookinbox.RowOf(&withPtr{Version: &v})
	require.NoError(t, err)
	require.Equal(t, &v, row["provider_version"])

	_, err = hookinbox.RowOf(42)
	require.Error(t, err)
	_, err = hookinbox.RowOf((*withPtr)(nil))
	require.Error(t, err)
	_, err = hookinbox.RowOf(struct{ A string }{"a"})
	require.Error(t, err, "no db tag")
	_, err = hookinbox.RowOf(struct {
		A string `db:"a"`
		B string `db:"a"`
	}{})
	require.Error(t, err, "two fields of one column")
}
