package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// InboxWriter commits the inbox rows of concurrent callers together: group
// commit. A caller's row is queued; whoever holds one of Writers flush
// slots takes the queue (up to MaxBatch rows) and sends it as one pipelined
// batch, one round trip and one implicit transaction: one commit, one WAL
// flush for all of them. Every caller gets its own InsertInboxEvent answer,
// and only once the batch has committed. A lone caller (one sender, a quiet
// intake) finds a free slot and its row goes out alone, at once: nothing
// waits for a batch to fill.
//
// If any statement of a batch fails, the transaction rolls back as a whole
// and every caller of that batch commits its row alone, so one bad row never
// fails another's delivery.
type InboxWriter struct {
	pool     *pgxpool.Pool
	maxBatch int
	timeout  time.Duration
	slots    chan struct{}

	mu    sync.Mutex
	queue []*writeReq

	batches, rows atomic.Int64
}

// InboxWriterOptions size an InboxWriter.
type InboxWriterOptions struct {
	// Writers is the number of batches in flight at once (connections the
	// writer holds at most); at least 1.
	Writers int
	// MaxBatch caps the rows of one batch (default 64).
	MaxBatch int
	// Timeout bounds one batch (default 5 s, the intake's request
	// deadline); each caller's own deadline still ends its wait.
	Timeout time.Duration
}

type writeReq struct {
	e    *InboxEvent
	done chan struct{}
	res  InsertResult
	err  error
}

// errAlone tells a caller that its batch did not commit: it inserts alone.
var errAlone = errors.New("batch rolled back")

// errReread tells a caller that its row conflicted with one already there
// (or with another row of its batch): once the batch has committed, it
// reads the row that won.
var errReread = errors.New("conflict: read the winner")

// NewInboxWriter builds a writer on pool.
func NewInboxWriter(pool *pgxpool.Pool, o InboxWriterOptions) *InboxWriter {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	return &InboxWriter{pool: pool, maxBatch: o.MaxBatch, timeout: o.Timeout, slots: make(chan struct{}, max(1, o.Writers))}
}

// Stats are the batches sent and the rows they carried.
func (w *InboxWriter) Stats() (batches, rows int64) { return w.batches.Load(), w.rows.Load() }

// Insert commits e as InsertInboxEvent does, in a batch with the rows of
// other callers waiting at the same time.
func (w *InboxWriter) Insert(ctx context.Context, e *InboxEvent) (InsertResult, error) {
	r := &writeReq{e: e, done: make(chan struct{})}
	w.mu.Lock()
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	for {
		select {
		case <-r.done:
			return w.answer(ctx, r)
		case w.slots <- struct{}{}:
			batch := w.take()
			if len(batch) == 0 {
				// Another flush took this row: wait for its answer.
				<-w.slots
				select {
				case <-r.done:
					return w.answer(ctx, r)
				case <-ctx.Done():
					return InsertResult{}, fmt.Errorf("insert inbox event %s: %w", e.Key, ctx.Err())
				}
			}
			if len(batch) == 1 && batch[0] == r {
				// Alone: InsertInboxEvent on the caller's own deadline.
				w.count(1)
				res, err := InsertInboxEvent(ctx, w.pool, e)
				<-w.slots
				return res, err
			}
			// The batch runs on its own deadline (the others' rows must
			// not fail with this caller's), while this caller goes on
			// waiting for its own answer, or its own deadline.
			go func() {
				defer func() { <-w.slots }()
				w.flush(ctx, batch)
			}()
		case <-ctx.Done():
			// If a flush has taken it already, its batch may commit it:
			// the caller answers "not stored" and the sender's retry
			// finds a duplicate.
			w.withdraw(r)
			return InsertResult{}, fmt.Errorf("insert inbox event %s: %w", e.Key, ctx.Err())
		}
	}
}

// answer is r's result; a rolled-back batch's row is inserted alone, and
// a conflicting one reads the row that won.
func (w *InboxWriter) answer(ctx context.Context, r *writeReq) (InsertResult, error) {
	switch {
	case errors.Is(r.err, errAlone):
		return InsertInboxEvent(ctx, w.pool, r.e)
	case errors.Is(r.err, errReread):
		return planInsert(r.e).reread(ctx, w.pool)
	}
	return r.res, r.err
}

func (w *InboxWriter) count(rows int) {
	w.batches.Add(1)
	w.rows.Add(int64(rows))
}

// take removes up to maxBatch queued rows, oldest first.
func (w *InboxWriter) take() []*writeReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.queue), w.maxBatch)
	batch := make([]*writeReq, n)
	copy(batch, w.queue)
	w.queue = append(w.queue[:0], w.queue[n:]...)
	return batch
}

// withdraw removes r from the queue if no flush has taken it yet.
func (w *InboxWriter) withdraw(r *writeReq) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, q := range w.queue {
		if q == r {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			return
		}
	}
}

// flush commits batch and answers each of its callers. The batch runs on
// its own deadline, not the flushing caller's: that caller may give up
// while the others still wait.
func (w *InboxWriter) flush(ctx context.Context, batch []*writeReq) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	w.count(len(batch))
	if len(batch) == 1 {
		r := batch[0]
		r.res, r.err = InsertInboxEvent(ctx, w.pool, r.e)
		close(r.done)
		return
	}
	results, err := sendInserts(ctx, w.pool, batch)
	for i, r := range batch {
		r.res, r.err = results[i].res, results[i].err
		if err != nil {
			r.err = errAlone
		}
		close(r.done)
	}
}

type batchAnswer struct {
	res InsertResult
	err error
}

// sendInserts runs one insertSQL per row in one pipelined batch (one
// implicit transaction). A row that conflicted (pgx.ErrNoRows) is answered
// errReread: it reads the winner once the batch has committed. Any other
// failure rolls back the whole batch: err.
func sendInserts(ctx context.Context, pool *pgxpool.Pool, batch []*writeReq) ([]batchAnswer, error) {
	b := &pgx.Batch{}
	plans := make([]insertPlan, len(batch))
	for i, r := range batch {
		plans[i] = planInsert(r.e)
		b.Queue(insertSQL, plans[i].args...)
	}
	out := make([]batchAnswer, len(batch))
	br := pool.SendBatch(ctx, b)
	var failed error
	for i := range batch {
		var id int64
		err := br.QueryRow().Scan(&id)
		switch {
		case err == nil:
			out[i].res = InsertResult{Outcome: Inserted, ID: id}
		case errors.Is(err, pgx.ErrNoRows):
			out[i].err = errReread
		case failed == nil:
			failed = err
		}
	}
	if err := br.Close(); err != nil && failed == nil {
		failed = err
	}
	return out, failed
}
