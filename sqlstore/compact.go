package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// compactBatch bounds the rows one compaction transaction deletes, so the
// write lock (SQLite) or row locks are held only briefly.
const compactBatch = 500

type compactState struct {
	mu     sync.Mutex
	status kv.CompactionStatus
}

// Compaction returns the compactor's status as this process saw it.
func (s *Store) Compaction() kv.CompactionStatus {
	s.compact.mu.Lock()
	defer s.compact.mu.Unlock()
	return s.compact.status
}

// runCompactor compacts every CompactInterval, keeping CompactWindow of
// history. Failures are logged and retried on the next tick; they never
// stop the loop.
func (s *Store) runCompactor() {
	t := time.NewTicker(s.opts.CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		// Closing the store cancels a run in progress.
		stop := context.AfterFunc(s.closedCtx, cancel)
		err := s.compactOnce(ctx, time.Now())
		stop()
		cancel()
		s.compact.mu.Lock()
		s.compact.status.LastError = err
		if err == nil {
			s.compact.status.LastSuccess = time.Now()
		}
		s.compact.mu.Unlock()
		if err != nil {
			s.log.Error("compaction failed; will retry", "err", err, "retry_in", s.opts.CompactInterval)
		}
	}
}

// compactOnce records a time mark and compacts to the newest mark older
// than the window, if this process wins the compaction lock.
func (s *Store) compactOnce(ctx context.Context, now time.Time) error {
	unlock, ok, err := s.d.tryCompactLock(ctx, s.write)
	if err != nil {
		return err
	}
	if !ok {
		return nil // another replica compacts
	}
	defer unlock()
	cur, compacted, err := s.revs(ctx)
	if err != nil {
		return err
	}
	if _, err := s.write.ExecContext(ctx, s.q(s.d.insertIgnore("tabula_compact_marks", "rev, ts", "?, ?")), cur, now.Unix()); err != nil {
		return fmt.Errorf("record compaction mark: %w", err)
	}
	var target sql.NullInt64
	if err := s.read.QueryRowContext(ctx, s.q("SELECT MAX(rev) FROM tabula_compact_marks WHERE ts <= ?"),
		now.Add(-s.opts.CompactWindow).Unix()).Scan(&target); err != nil {
		return err
	}
	if !target.Valid || target.Int64 <= compacted {
		return nil
	}
	return s.Compact(ctx, target.Int64)
}

// Compact discards history up to rev: reads and watches at older
// revisions get kv.ErrCompacted. The compacted revision is recorded first,
// in its own transaction, so no reader ever sees half-deleted history;
// rows are then deleted in small batches.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	// A whole run's time, in the query metric but not the slow-query
	// log: a large compaction is expected to take a while.
	defer func(start time.Time) {
		queryDuration.WithLabelValues(s.d.name(), "compact").Observe(time.Since(start).Seconds())
	}(time.Now())
	cur, compacted, err := s.revs(ctx)
	if err != nil {
		return err
	}
	if rev > cur {
		return &kv.FutureRevError{Requested: rev, Current: cur}
	}
	// Never compact what this process's watchers have not been sent yet:
	// give the poller a moment to catch up, else compact less.
	if delivered := s.hub.waitFor(ctx, rev, 5*time.Second); rev > delivered {
		rev = delivered
	}
	if rev > compacted {
		if _, err := s.write.ExecContext(ctx, s.q("UPDATE tabula_rev SET compact_rev = ? WHERE id = 1 AND compact_rev < ?"), rev, rev); err != nil {
			return unavailable(err)
		}
		s.compact.mu.Lock()
		s.compact.status.Revision = rev
		s.compact.mu.Unlock()
	}
	for {
		n, err := s.compactBatch(ctx, rev)
		if err != nil {
			return err
		}
		if n < compactBatch {
			break
		}
	}
	if _, err := s.write.ExecContext(ctx, s.q("DELETE FROM tabula_compact_marks WHERE rev < ?"), rev); err != nil {
		return err
	}
	return s.d.reclaim(ctx, s.write)
}

// compactBatch deletes up to compactBatch rows superseded at or before rev
// (tombstones are superseded by themselves).
func (s *Store) compactBatch(ctx context.Context, rev int64) (int, error) {
	defer s.observe("compact_batch", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	found, err := column[int64](s.write.QueryContext(ctx, s.q("SELECT rev FROM tabula_log WHERE next_rev <= ? ORDER BY next_rev LIMIT ?"), rev, compactBatch))
	if err != nil || len(found) == 0 {
		return 0, err
	}
	revs := make([]any, len(found))
	for i, r := range found {
		revs[i] = r
	}
	in := "(" + placeholders(len(revs)) + ")"
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, unavailable(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM tabula_index WHERE rev IN "+in), revs...); err != nil {
		return 0, unavailable(err)
	}
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM tabula_log WHERE rev IN "+in), revs...); err != nil {
		return 0, unavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return 0, unavailable(err)
	}
	return len(revs), nil
}

// Expired returns up to limit live objects of resource whose expiry time
// has passed, oldest first, for the caller to delete.
func (s *Store) Expired(ctx context.Context, resource string, now time.Time, limit int) ([]kv.Record, error) {
	defer s.observe("expired", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT c.namespace, c.name, l.rev, l.created_rev, l.value
		FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev
		WHERE c.expires_at IS NOT NULL AND c.expires_at <= ? AND c.resource = ?
		ORDER BY c.expires_at LIMIT ?`), now.Unix(), resource, limit)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []kv.Record
	for rows.Next() {
		r := kv.Record{Key: kv.Key{Resource: resource}}
		if err := rows.Scan(&r.Namespace, &r.Name, &r.Rev, &r.CreatedRev, &r.Value); err != nil {
			return nil, err
		}
		if s.opts.Values != nil {
			if r.Value, err = s.open(r.Key, r.Value); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
