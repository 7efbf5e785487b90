package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// directGets holds, for each driver connection of the read pool, its
// prepared statements: the get, and GetKnown's two steps (a key's live
// revision alone, then that revision's row). The pool keeps its
// connections (max idle = max open), so the map stays small; a
// connection whose statement fails has its statements closed and
// prepared again on next use.
type directGets struct {
	queries [directQueries]string
	// use is held shared while a statement runs and whole by close, so
	// no statement is finalized under a running get (database/sql's Stmt
	// counted its users for the same reason).
	use   sync.RWMutex
	mu    sync.Mutex
	stmts map[any]*[directQueries]driver.Stmt
	done  bool
}

// The direct statements, by their index in directGets.queries.
const (
	directGet = iota
	directRev
	directRow
	directQueries
)

func newDirectGets(q func(string) string) *directGets {
	return &directGets{queries: [directQueries]string{directGet: q(getSQL), directRev: q(liveRevSQL), directRow: q(logRowSQL)}}
}

func (g *directGets) stmt(ctx context.Context, dc any, which int) (driver.StmtQueryContext, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil, errors.New("sqlstore: closed")
	}
	stmts := g.stmts[dc]
	if stmts == nil {
		stmts = new([directQueries]driver.Stmt)
		if g.stmts == nil {
			g.stmts = map[any]*[directQueries]driver.Stmt{}
		}
		g.stmts[dc] = stmts
	}
	if stmts[which] == nil {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return nil, fmt.Errorf("sqlstore: driver connection %T cannot prepare", dc)
		}
		st, err := pc.PrepareContext(ctx, g.queries[which])
		if err != nil {
			return nil, err
		}
		stmts[which] = st
	}
	q, ok := stmts[which].(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("sqlstore: driver statement %T cannot query", stmts[which])
	}
	return q, nil
}

// drop closes dc's statements after a failure; the connection may be
// discarded by the pool next.
func (g *directGets) drop(dc any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	closeStmts(g.stmts[dc])
	delete(g.stmts, dc)
}

func closeStmts(stmts *[directQueries]driver.Stmt) {
	if stmts == nil {
		return
	}
	for _, st := range stmts {
		if st != nil {
			_ = st.Close()
		}
	}
}

// close finalizes every statement before the pool closes its
// connections (SQLite keeps a connection with live statements open).
func (g *directGets) close() {
	g.use.Lock()
	defer g.use.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	for dc, stmts := range g.stmts {
		closeStmts(stmts)
		delete(g.stmts, dc)
	}
	g.done = true
}

// getDirect reads key's current row on a driver connection of the direct
// pool (see directReads). found is false when the key has no live row.
// With known set, the key's live revision is read first, and when known
// says the caller has what it needs of that revision, r gets the revision
// alone (skipped): no log row is read or copied.
func (s *Store) getDirect(ctx context.Context, key kv.Key, r *kv.Record, known func(rev int64) bool) (found, skipped bool, err error) {
	conn, err := s.directDB.Conn(ctx)
	if err != nil {
		return false, false, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		s.directGets.use.RLock()
		defer s.directGets.use.RUnlock()
		args := [3]driver.NamedValue{
			{Ordinal: 1, Value: key.Resource},
			{Ordinal: 2, Value: key.Namespace},
			{Ordinal: 3, Value: key.Name},
		}
		if known != nil {
			var live [1]driver.Value
			ok, err := s.directGets.queryRow(ctx, dc, directRev, args[:], live[:])
			if err != nil || !ok {
				return err
			}
			rev, isInt := live[0].(int64)
			if !isInt {
				return fmt.Errorf("sqlstore: revision of %v read as %T", key, live[0])
			}
			if known(rev) {
				found, skipped, r.Rev = true, true, rev
				return nil
			}
			// Not known: that revision's log row, by its key. A row
			// superseded since stays until compacted; one compacted
			// already (a compaction up to a write made just now) leaves
			// the live row to read as below.
			var dest [3]driver.Value
			dest[0] = rev
			ok, err = s.directGets.queryRow(ctx, dc, directRow, []driver.NamedValue{{Ordinal: 1, Value: rev}}, dest[1:])
			if err != nil {
				return err
			}
			if ok {
				found = true
				return fromDirect(r, key, dest)
			}
		}
		var dest [3]driver.Value
		ok, err := s.directGets.queryRow(ctx, dc, directGet, args[:], dest[:])
		if err != nil || !ok {
			return err
		}
		found = true
		return fromDirect(r, key, dest)
	})
	return found, skipped, err
}

// fromDirect fills r from a direct read's revision, creation revision and
// value.
func fromDirect(r *kv.Record, key kv.Key, dest [3]driver.Value) error {
	var ok1, ok2 bool
	r.Rev, ok1 = dest[0].(int64)
	r.CreatedRev, ok2 = dest[1].(int64)
	if !ok1 || !ok2 {
		return fmt.Errorf("sqlstore: revisions of %v read as %T, %T", key, dest[0], dest[1])
	}
	switch v := dest[2].(type) {
	case []byte:
		r.Value = v
	case string:
		r.Value = []byte(v)
	case nil:
		r.Value = nil
	default:
		return fmt.Errorf("sqlstore: value of %v read as %T", key, v)
	}
	return nil
}

// queryRow runs direct statement which on dc and reads its first row
// into dest; false when there is none.
func (g *directGets) queryRow(ctx context.Context, dc any, which int, args []driver.NamedValue, dest []driver.Value) (bool, error) {
	q, err := g.stmt(ctx, dc, which)
	if err != nil {
		return false, err
	}
	// No context: see directReads.
	rows, err := q.QueryContext(context.Background(), args)
	if err != nil {
		g.drop(dc)
		return false, err
	}
	err = rows.Next(dest)
	if cerr := rows.Close(); cerr != nil && (err == nil || err == io.EOF) {
		g.drop(dc)
		return false, cerr
	}
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		g.drop(dc)
		return false, err
	}
	return true, nil
}
