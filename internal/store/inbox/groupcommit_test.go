package inbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// insertAll inserts es from one goroutine each through w and returns each
// one's result and error, in order.
func insertAll(ctx context.Context, w *inbox.InboxWriter, es []*inbox.InboxEvent) ([]inbox.InsertResult, []error) {
	res, errs := make([]inbox.InsertResult, len(es)), make([]error, len(es))
	var wg sync.WaitGroup
	for i, e := range es {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = w.Insert(ctx, e)
		}()
	}
	wg.Wait()
	return res, errs
}

func countRows(t *testing.T, s *store.Store) int {
	var n int
	require.NoError(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_inbox`).Scan(&n))
	return n
}

// TestGroupCommitSharesRoundTripsAndAnswersEachCaller: 64 concurrent
// deliveries through one flush slot travel in batches, and each caller
// gets its own answer: every distinct event inserted once, the copies of
// one event one Inserted and the rest Duplicate, the other body under that
// key a Conflict.
func TestGroupCommitSharesRoundTripsAndAnswersEachCaller(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	w := inbox.NewInboxWriter(s.Pool, inbox.InboxWriterOptions{Writers: 1, MaxBatch: 16})
	var es []*inbox.InboxEvent
	for i := range 56 {
		es = append(es, event(fmt.Sprintf("evt_gc_%d", i), fmt.Sprintf(`{"n":%d}`, i)))
	}
	for range 7 {
		es = append(es, event("evt_gc_same", `{"same":1}`))
	}
	es = append(es, event("evt_gc_same", `{"same":2}`))

	res, errs := insertAll(ctx, w, es)
	outcomes := map[inbox.InsertOutcome]int{}
	for i := range es {
		require.NoError(t, errs[i])
		outcomes[res[i].Outcome]++
		if i < 56 {
			require.Equal(t, inbox.Inserted, res[i].Outcome, es[i].Key.EventID)
			require.NotZero(t, res[i].ID)
		}
	}
	require.Equal(t, 57, outcomes[inbox.Inserted])
	require.Equal(t, 7, outcomes[inbox.Duplicate]+outcomes[inbox.Conflict], "of 8 deliveries of one key, one is inserted")
	if outcomes[inbox.Conflict] != 7 { // the first of them had the body most have
		require.Equal(t, 1, outcomes[inbox.Conflict])
	}
	require.Equal(t, 57, countRows(t, s))

	batches, rows := w.Stats()
	require.Equal(t, int64(len(es)), rows)
	require.Less(t, batches, rows, "concurrent deliveries shared batches")
}

// TestGroupCommitARowThatFailsFailsAlone: a batch in which one row breaks
// a constraint rolls back; every other caller of that batch commits alone,
// and only the bad row's caller sees an error.
func TestGroupCommitARowThatFailsFailsAlone(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	w := inbox.NewInboxWriter(s.Pool, inbox.InboxWriterOptions{Writers: 1, MaxBatch: 64})
	var es []*inbox.InboxEvent
	for i := range 40 {
		e := event(fmt.Sprintf("evt_bad_%d", i), fmt.Sprintf(`{"n":%d}`, i))
		if i == 20 {
			e.Status = "nonsense" // the status CHECK refuses it
		}
		es = append(es, e)
	}
	// Hold the only slot so that all 40 queue into one batch.
	block := event("evt_bad_first", `{"first":1}`)
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = inbox.InsertInboxEvent(ctx, tx, block)
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() { _, err := w.Insert(ctx, block); first <- err }() // waits on tx's row lock
	time.Sleep(200 * time.Millisecond)
	type answer struct {
		res  []inbox.InsertResult
		errs []error
	}
	got := make(chan answer, 1)
	go func() { r, e := insertAll(ctx, w, es); got <- answer{r, e} }()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-first)
	a := <-got
	for i := range es {
		if i == 20 {
			require.Error(t, a.errs[i])
			require.Contains(t, a.errs[i].Error(), "webhook_inbox_status_check")
			continue
		}
		require.NoError(t, a.errs[i], i)
		require.Equal(t, inbox.Inserted, a.res[i].Outcome)
	}
	require.Equal(t, 40, countRows(t, s), "39 rows and the blocking one")
	batches, rows := w.Stats()
	require.Less(t, batches, rows)
}

// TestABatchIsOneTransaction pins the pgx behaviour group commit relies on:
// a batch is one implicit transaction, so a failing statement leaves none
// of the batch's rows behind (each caller then inserts alone).
func TestABatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO webhook_inbox (provider, source_account, environment, event_id, endpoint_slug, workspace_id,
		event_type, resource_kind, resource_id, payload, body_sha256, origin, status)
		VALUES ('stripe', 'acct_1', 'test', 'evt_tx_1', 'ep', 'ws_1', 'invoice.paid', 'invoice', 'in_1', '{}', '\x00', 'webhook', 'pending')`)
	b.Queue(`SELECT 1/0`)
	err := s.Pool.SendBatch(ctx, b).Close()
	require.Error(t, err)
	require.Equal(t, 0, countRows(t, s))
}

// TestGroupCommitACallerThatGivesUpLeavesTheQueue: a caller whose context
// ends while its row waits gets its error at once and its row is not
// written.
func TestGroupCommitACallerThatGivesUpLeavesTheQueue(t *testing.T) {
	t.Parallel()
	s, ctx := setup(t)
	w := inbox.NewInboxWriter(s.Pool, inbox.InboxWriterOptions{Writers: 1})
	block := event("evt_wait_first", `{"first":1}`)
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = inbox.InsertInboxEvent(ctx, tx, block)
	require.NoError(t, err)
	var holder int32
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder))
	first := make(chan error, 1)
	go func() { _, err := w.Insert(ctx, block); first <- err }()
	// The first caller holds the only flush slot once its insert waits on
	// the open transaction's row lock: PostgreSQL says so.
	require.Eventually(t, func() bool {
		var blocked bool
		err := s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`,
			holder).Scan(&blocked)
		return err == nil && blocked
	}, 30*time.Second, 5*time.Millisecond, "the first insert never waited on the row lock")

	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = w.Insert(cctx, event("evt_gave_up", `{"gave":"up"}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-first)
	require.Equal(t, 1, countRows(t, s), "only the first row")
	_, rows := w.Stats()
	require.Equal(t, int64(1), rows)
}
