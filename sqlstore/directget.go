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
// prepared get statement. The pool keeps its connections (max idle =
// max open), so the map stays small; a statement that fails is closed
// and prepared again on next use.
type directGets struct {
	query string
	// use is held shared while a statement runs and whole by close, so
	// no statement is finalized under a running get (database/sql's Stmt
	// counted its users for the same reason).
	use   sync.RWMutex
	mu    sync.Mutex
	stmts map[any]driver.Stmt
	done  bool
}

func (g *directGets) stmt(ctx context.Context, dc any) (driver.Stmt, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil, errors.New("sqlstore: closed")
	}
	if st, ok := g.stmts[dc]; ok {
		return st, nil
	}
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("sqlstore: driver connection %T cannot prepare", dc)
	}
	st, err := pc.PrepareContext(ctx, g.query)
	if err != nil {
		return nil, err
	}
	if g.stmts == nil {
		g.stmts = map[any]driver.Stmt{}
	}
	g.stmts[dc] = st
	return st, nil
}

// drop closes dc's statement after a failure; the connection may be
// discarded by the pool next.
func (g *directGets) drop(dc any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st, ok := g.stmts[dc]; ok {
		_ = st.Close()
		delete(g.stmts, dc)
	}
}

// close finalizes every statement before the pool closes its
// connections (SQLite keeps a connection with live statements open).
func (g *directGets) close() {
	g.use.Lock()
	defer g.use.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	for dc, st := range g.stmts {
		_ = st.Close()
		delete(g.stmts, dc)
	}
	g.done = true
}

// getDirect reads key's current row on a driver connection of the read
// pool (see directReads). found is false when the key has no live row.
func (s *Store) getDirect(ctx context.Context, key kv.Key, r *kv.Record) (found bool, err error) {
	conn, err := s.read.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		s.directGets.use.RLock()
		defer s.directGets.use.RUnlock()
		st, err := s.directGets.stmt(ctx, dc)
		if err != nil {
			return err
		}
		q, ok := st.(driver.StmtQueryContext)
		if !ok {
			return fmt.Errorf("sqlstore: driver statement %T cannot query", st)
		}
		args := [3]driver.NamedValue{
			{Ordinal: 1, Value: key.Resource},
			{Ordinal: 2, Value: key.Namespace},
			{Ordinal: 3, Value: key.Name},
		}
		// No context: see directReads.
		rows, err := q.QueryContext(context.Background(), args[:])
		if err != nil {
			s.directGets.drop(dc)
			return err
		}
		var dest [3]driver.Value
		err = rows.Next(dest[:])
		if cerr := rows.Close(); cerr != nil && (err == nil || err == io.EOF) {
			s.directGets.drop(dc)
			return cerr
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			s.directGets.drop(dc)
			return err
		}
		found = true
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
	})
	return found, err
}
