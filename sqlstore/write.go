package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// requestError is a failure that belongs to one request (a failed
// precondition, an encoder error) rather than to the transaction.
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }

// Create stores a new object; kv.ErrExists if the key is live.
func (s *Store) Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error) {
	return s.submit(ctx, &writeReq{ctx: ctx, op: opCreate, key: key, enc: enc})
}

// Update replaces the object whose current revision is expect;
// kv.ErrConflict if it changed, kv.ErrNotFound if it is gone.
func (s *Store) Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	return s.submit(ctx, &writeReq{ctx: ctx, op: opUpdate, key: key, expect: expect, enc: enc})
}

// Delete removes the object whose current revision is expect, appending a
// tombstone holding enc's final state of it.
func (s *Store) Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
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
		batch := []*writeReq{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-s.writes:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commitBatch(batch)
	}
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

// runBatch applies the writes in order inside one transaction.
//
// Invariant: the counter row is locked first, before any other row is read
// or written, and stays locked until commit; this gives every writer the
// same lock order (no deadlocks) and makes revisions commit-ordered. A
// write that fails its precondition consumes no revision, so revisions
// stay dense.
func (s *Store) runBatch(batch []*writeReq) ([]writeResult, error) {
	defer s.observe("write_batch", time.Now())
	batchSize.Observe(float64(len(batch)))
	ctx, cancel := s.bound(context.Background())
	defer cancel()
	tx, err := s.write.BeginTx(ctx, s.d.writeTx())
	if err != nil {
		return nil, unavailable(err)
	}
	defer tx.Rollback()
	if _, err := s.txExec(ctx, tx, "UPDATE tabula_rev SET rev = rev WHERE id = 1"); err != nil {
		return nil, unavailable(err)
	}
	var rev int64
	if err := s.txQueryRow(ctx, tx, "SELECT rev FROM tabula_rev WHERE id = 1").Scan(&rev); err != nil {
		return nil, unavailable(err)
	}
	start := rev
	results := make([]writeResult, len(batch))
	for i, r := range batch {
		rec, err := s.apply(ctx, tx, r, rev+1)
		var re *requestError
		switch {
		case errors.As(err, &re):
			results[i] = writeResult{err: re.err}
		case err != nil:
			return nil, err
		default:
			rev++
			results[i] = writeResult{rec: rec}
		}
	}
	if rev == start {
		return results, nil
	}
	if _, err := s.txExec(ctx, tx, s.q("UPDATE tabula_rev SET rev = ? WHERE id = 1"), rev); err != nil {
		return nil, unavailable(err)
	}
	if n, ok := s.d.(notifier); ok {
		if _, err := tx.ExecContext(ctx, n.notifySQL()); err != nil {
			return nil, unavailable(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlstore: commit: %w", unavailable(err))
	}
	s.hub.notify()
	return results, nil
}

// apply performs one write at revision rev inside tx.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, r *writeReq, rev int64) (rec kv.Record, err error) {
	defer func() {
		// A panicking encoder fails its own request, not the committer.
		if p := recover(); p != nil {
			err = &requestError{fmt.Errorf("sqlstore: encoder panic: %v", p)}
		}
	}()
	key := r.key
	cur, err := s.currentRev(ctx, tx, key)
	exists := err == nil
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return kv.Record{}, err
	}
	switch {
	case r.op == opCreate && exists:
		return kv.Record{}, &requestError{kv.ErrExists}
	case r.op != opCreate && !exists:
		return kv.Record{}, &requestError{kv.ErrNotFound}
	case r.op != opCreate && cur.rev != r.expect:
		return kv.Record{}, &requestError{kv.ErrConflict}
	}
	e, err := r.enc(rev)
	if err != nil {
		return kv.Record{}, &requestError{err}
	}
	created := rev
	if exists {
		created = cur.created
	}
	if err := s.appendRow(ctx, tx, key, rev, r.op, created, cur.rev, e); err != nil {
		return kv.Record{}, err
	}
	expires := expiry(e)
	switch r.op {
	case opCreate:
		_, err = s.txExec(ctx, tx, s.q("INSERT INTO tabula_current (resource, namespace, name, rev, expires_at) VALUES (?, ?, ?, ?, ?)"),
			key.Resource, key.Namespace, key.Name, rev, expires)
	case opUpdate:
		if _, err = s.txExec(ctx, tx, s.q("UPDATE tabula_log SET next_rev = ? WHERE rev = ?"), rev, cur.rev); err == nil {
			_, err = s.txExec(ctx, tx, s.q("UPDATE tabula_current SET rev = ?, expires_at = ? WHERE resource = ? AND namespace = ? AND name = ?"),
				rev, expires, key.Resource, key.Namespace, key.Name)
		}
	case opDelete:
		if _, err = s.txExec(ctx, tx, s.q("UPDATE tabula_log SET next_rev = ? WHERE rev = ?"), rev, cur.rev); err == nil {
			_, err = s.txExec(ctx, tx, s.q("DELETE FROM tabula_current WHERE resource = ? AND namespace = ? AND name = ?"),
				key.Resource, key.Namespace, key.Name)
		}
	}
	if err != nil {
		return kv.Record{}, err
	}
	return kv.Record{Key: key, Rev: rev, CreatedRev: created, Value: e.Value}, nil
}

type current struct{ rev, created int64 }

const (
	currentRevSQL = `SELECT c.rev, l.created_rev FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev
		WHERE c.resource = ? AND c.namespace = ? AND c.name = ?`
	insertLogSQL = `INSERT INTO tabula_log
		(rev, resource, namespace, name, op, created_rev, prev_rev, next_rev, labels, fields, expires_at, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertIndexRowSQL = "INSERT INTO tabula_index (rev, name, value) VALUES (?, ?, ?)"
)

func (s *Store) currentRev(ctx context.Context, tx *sql.Tx, key kv.Key) (current, error) {
	var c current
	err := s.txQueryRow(ctx, tx, s.q(currentRevSQL), key.Resource, key.Namespace, key.Name).Scan(&c.rev, &c.created)
	if errors.Is(err, sql.ErrNoRows) {
		return c, kv.ErrNotFound
	}
	return c, err
}

func (s *Store) appendRow(ctx context.Context, tx *sql.Tx, key kv.Key, rev int64, op int, created, prev int64, e kv.Entry) error {
	labels, err := json.Marshal(nonNil(e.Labels))
	if err != nil {
		return err
	}
	fields, err := json.Marshal(nonNil(e.Fields))
	if err != nil {
		return err
	}
	// A tombstone is superseded by itself: compaction then finds every
	// removable row through next_rev alone.
	var next sql.NullInt64
	if op == opDelete {
		next = sql.NullInt64{Int64: rev, Valid: true}
	}
	_, err = s.txExec(ctx, tx, s.q(insertLogSQL),
		rev, key.Resource, key.Namespace, key.Name, op, created, prev, next, string(labels), string(fields), expiry(e), e.Value)
	if err != nil || op == opDelete {
		return err
	}
	rows := indexRows(e)
	if len(rows) == 0 {
		return nil
	}
	if st := s.prepared(ctx, s.write, s.q(insertIndexRowSQL)); st != nil {
		// A cached one-row statement beats parsing a multi-row one.
		txst := tx.StmtContext(ctx, st)
		for _, r := range rows {
			if _, err := txst.ExecContext(ctx, rev, r[0], r[1]); err != nil {
				return err
			}
		}
		return nil
	}
	args := make([]any, 0, 3*len(rows))
	for _, r := range rows {
		args = append(args, rev, r[0], r[1])
	}
	_, err = s.txExec(ctx, tx, s.q("INSERT INTO tabula_index (rev, name, value) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?, ?, ?),", len(rows)), ",")), args...)
	return err
}

func expiry(e kv.Entry) sql.NullInt64 {
	if e.ExpiresAt.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: e.ExpiresAt.Unix(), Valid: true}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
