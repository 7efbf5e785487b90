package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

const (
	opCreate = 1
	opUpdate = 2
	opDelete = 3
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// writeReq is one write waiting for the committer.
type writeReq struct {
	ctx    context.Context
	op     int
	key    kv.Key
	expect int64 // current revision the write requires (update, delete)
	enc    kv.Encoder
	done   chan writeResult
}

type writeResult struct {
	rec kv.Record
	err error
}

// Create stores a new object; kv.ErrExists if the key is live.
func (s *Store) Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error) {
	if s.unstorable(key.Namespace, key.Name) {
		return kv.Record{}, fmt.Errorf("%w: %q holds a NUL character, which %s cannot store", kv.ErrInvalidKey, key.Name, s.d.name())
	}
	return s.submit(ctx, &writeReq{ctx: ctx, op: opCreate, key: key, enc: enc})
}

// Update replaces the object whose current revision is expect;
// kv.ErrConflict if it changed, kv.ErrNotFound if it is gone.
func (s *Store) Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	if s.unstorable(key.Namespace, key.Name) {
		return kv.Record{}, kv.ErrNotFound
	}
	return s.submit(ctx, &writeReq{ctx: ctx, op: opUpdate, key: key, expect: expect, enc: enc})
}

// Delete removes the object whose current revision is expect, appending a
// tombstone holding enc's final state of it.
func (s *Store) Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	if s.unstorable(key.Namespace, key.Name) {
		return kv.Record{}, kv.ErrNotFound
	}
	return s.submit(ctx, &writeReq{ctx: ctx, op: opDelete, key: key, expect: expect, enc: enc})
}

// submit queues a write for the committer and waits for its outcome. Once
// queued, the caller waits for the result even if its context ends, so an
// answer never hides a write that did commit.
func (s *Store) submit(ctx context.Context, req *writeReq) (kv.Record, error) {
	req.done = make(chan writeResult, 1)
	select {
	case s.writes <- req:
	case <-ctx.Done():
		return kv.Record{}, ctx.Err()
	case <-s.closed:
		return kv.Record{}, fmt.Errorf("%w: store closed", kv.ErrUnavailable)
	}
	select {
	case res := <-req.done:
		return res.rec, res.err
	case <-s.committerDone:
		// The committer exited; it may have answered just before.
		select {
		case res := <-req.done:
			return res.rec, res.err
		default:
			return kv.Record{}, fmt.Errorf("%w: store closed", kv.ErrUnavailable)
		}
	}
}

// runCommitter is the group commit loop: it takes every write queued
// while the previous transaction committed and commits them together, so
// concurrent clients share one fsync instead of paying one each.
func (s *Store) runCommitter() {
	defer close(s.committerDone)
	for {
		var first *writeReq
		select {
		case <-s.closed:
			s.failQueued()
			return
		case first = <-s.writes:
		}
		batch := s.fill([]*writeReq{first})
		if len(batch) < maxBatch {
			// The first write woke the committer ahead of the requests
			// still on their way to it; on a single core those could
			// not run at all before this commit, and every write paid
			// a transaction and an fsync of its own (batches of 1.07 at
			// 32 clients). One yield lets whatever is runnable reach
			// the queue first; with nothing else to run it returns at
			// once, so a lone writer waits no longer.
			runtime.Gosched()
			batch = s.fill(batch)
		}
		s.commitBatch(batch)
		s.prepareKept()
	}
}

// fill adds the writes already queued to batch, up to maxBatch.
func (s *Store) fill(batch []*writeReq) []*writeReq {
	for len(batch) < maxBatch {
		select {
		case r := <-s.writes:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

func (s *Store) failQueued() {
	for {
		select {
		case r := <-s.writes:
			r.done <- writeResult{err: fmt.Errorf("%w: store closed", kv.ErrUnavailable)}
		default:
			return
		}
	}
}

// commitBatch commits a batch in one transaction. If the transaction
// itself fails, each write is retried alone so that only the write that
// caused the failure fails.
func (s *Store) commitBatch(batch []*writeReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- writeResult{err: err}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	results, err := s.runBatch(live)
	if err != nil && len(live) > 1 {
		for _, r := range live {
			s.commitBatch([]*writeReq{r})
		}
		return
	}
	for i, r := range live {
		if err != nil {
			r.done <- writeResult{err: err}
			continue
		}
		r.done <- results[i]
	}
}

// runBatch applies the writes in order inside one transaction. It reads
// the batch's keys once, works out every row in Go, then writes each table
// with one statement per batch (in chunks for large batches): the number
// of round trips does not grow with the batch, which is what lets a
// networked database approach its batched-insert rate.
//
// Invariant: the counter row is locked first, before any other row is read
// or written, and stays locked until commit; this gives every writer the
// same lock order (no deadlocks) and makes revisions commit-ordered. Since
// no other writer can run meanwhile, the keys read at the start stay true
// for the whole transaction. A write that fails its precondition consumes
// no revision, so revisions stay dense.
func (s *Store) runBatch(batch []*writeReq) ([]writeResult, error) {
	defer s.observe("write_batch", time.Now())
	batchSize.Observe(float64(len(batch)))
	ctx, cancel := s.bound(context.Background())
	defer cancel()
	if _, ok := s.d.(*postgresDialect); ok {
		return s.runBatchPipelined(ctx, batch)
	}
	tx, ctx, release, err := s.beginWrite(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	defer release()
	defer tx.Rollback()
	if _, locked := s.d.(writeLockedAtBegin); !locked {
		// Lock the counter row first, so writers queue on it.
		if _, err := s.txExec(ctx, tx, "UPDATE tabula_rev SET rev = rev WHERE id = 1"); err != nil {
			return nil, unavailable(err)
		}
	}
	var rev int64
	if err := s.txQueryRow(ctx, tx, "SELECT rev FROM tabula_rev WHERE id = 1").Scan(&rev); err != nil {
		return nil, unavailable(err)
	}
	live, err := s.liveRows(ctx, tx, batchKeys(batch))
	if err != nil {
		return nil, err
	}
	p, results := planBatch(batch, live, rev)
	if len(p.log) == 0 {
		return results, nil
	}
	if err := s.writePlan(txExecer{s, ctx, tx}, p); err != nil {
		return nil, err
	}
	if _, err := s.txExec(ctx, tx, s.q("UPDATE tabula_rev SET rev = ? WHERE id = 1"), p.log[len(p.log)-1].rev); err != nil {
		return nil, unavailable(err)
	}
	if n, ok := s.d.(notifier); ok {
		if _, err := tx.ExecContext(ctx, n.notifySQL(), strconv.FormatInt(p.log[len(p.log)-1].rev, 10)); err != nil {
			return nil, unavailable(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlstore: commit: %w", unavailable(err))
	}
	s.hub.committed(p.log[0].rev, p.log[len(p.log)-1].rev, func() []logRow { return p.events(live) })
	s.wroteLog(p)
	return results, nil
}

// beginWrite starts a write transaction bounded by ctx and returns the
// context its statements run with: ctx, or none where the dialect's
// statements never wait once the transaction has begun
// (uncancelledWrites).
//
// release gives back what the transaction held once it has ended.
func (s *Store) beginWrite(ctx context.Context) (tx *sql.Tx, _ context.Context, release func(), err error) {
	if _, ok := s.d.(uncancelledWrites); ok {
		// The pool's connection is waited for within ctx (another task
		// may hold it), the transaction begun without a context: BEGIN's
		// wait for the file's write lock is bounded by the connection's
		// busy_timeout, the query timeout (sqliteWriteWait), and nothing
		// after it waits. Begun with ctx, every transaction cost three
		// goroutines, each woken once (the driver's watches of BEGIN
		// and of COMMIT, database/sql's of the transaction).
		conn, err := s.write.Conn(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		tx, err := conn.BeginTx(context.Background(), s.d.writeTx())
		if err != nil {
			conn.Close()
			if isBusy(err) && s.opts.QueryTimeout > 0 && s.opts.QueryTimeout <= sqliteBusyTimeout {
				// The query timeout set the wait (sqliteWriteWait):
				// its end is the timeout's, as a context's would be.
				// A longer one waits SQLite's own 10 s, whose end is
				// SQLITE_BUSY, the store unavailable.
				err = fmt.Errorf("sqlstore: the database's write lock stayed taken: %w (%w)", context.DeadlineExceeded, err)
			}
			return nil, nil, nil, err
		}
		return tx, context.Background(), func() { conn.Close() }, nil
	}
	tx, err = s.write.BeginTx(ctx, s.d.writeTx())
	return tx, ctx, func() {}, err
}

// isBusy says err is SQLite's SQLITE_BUSY (any extended code of it): a
// lock stayed taken past the connection's busy_timeout.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy
}

// sqliteBusy is SQLITE_BUSY's primary result code.
const sqliteBusy = 5

// encode calls a write's encoder; a panicking encoder fails its own
// request, not the committer.
func encode(r *writeReq, rev int64) (e kv.Entry, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlstore: encoder panic: %v", p)
		}
	}()
	return r.enc(rev)
}

func expiry(e kv.Entry) sql.NullInt64 {
	if e.ExpiresAt.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: e.ExpiresAt.Unix(), Valid: true}
}
