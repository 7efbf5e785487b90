package sqlstore

import (
	"context"
	"database/sql"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// prepared returns a statement prepared once on db for query, or nil when
// the dialect does not cache statements or preparing failed (the caller
// then runs the query directly). Queries are constant text, so the cache
// stays small.
//
// Hazard: with one writer connection, preparing on the write pool while a
// transaction holds that connection would wait forever, so statements run
// inside a write transaction are only ever taken from the cache filled by
// prepareWrites (inTx). A read outside a transaction may prepare on any
// pool, the write pool too where reads share it (an in-memory database):
// it waits for the connection as its query would.
func (s *Store) prepared(ctx context.Context, db *sql.DB, query string, inTx bool) *sql.Stmt {
	if !s.d.cacheStatements() {
		return nil
	}
	key := stmtKey{db, query}
	if v, ok := s.stmts.Load(key); ok {
		return v.(*sql.Stmt)
	}
	if inTx {
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if v, loaded := s.stmts.LoadOrStore(key, st); loaded {
		st.Close()
		return v.(*sql.Stmt)
	}
	return st
}

type stmtKey struct {
	db    *sql.DB
	query string
}

func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.prepared(ctx, s.write, query, true); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txExecKept is txExec for a statement of a batch whose text is one of a
// fixed few (shapedRows): one not prepared yet runs as text and is kept,
// to be prepared once the transaction is over (prepareKept).
func (s *Store) txExecKept(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.prepared(ctx, s.write, query, true); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	s.keep(query)
	return tx.ExecContext(ctx, query, args...)
}

// txQueryKept is txQuery for a query kept like txExecKept's statements.
func (s *Store) txQueryKept(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, s.write, query, true); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	s.keep(query)
	return tx.QueryContext(ctx, query, args...)
}

// keep notes a statement to prepare on the write pool after the current
// write transaction (see prepared's hazard).
func (s *Store) keep(query string) {
	if !s.d.cacheStatements() {
		return
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for _, q := range s.kept {
		if q == query {
			return
		}
	}
	s.kept = append(s.kept, query)
}

// prepareKept prepares the statements write transactions kept; the
// committer calls it between transactions, when the write pool's
// connection is free. One that fails to prepare runs as text again, and
// is kept again.
func (s *Store) prepareKept() {
	s.keptMu.Lock()
	kept := s.kept
	s.kept = nil
	s.keptMu.Unlock()
	if len(kept) == 0 {
		return
	}
	ctx, cancel := s.bound(context.Background())
	defer cancel()
	for _, q := range kept {
		if _, ok := s.stmts.Load(stmtKey{s.write, q}); ok {
			continue
		}
		st, err := s.write.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		if _, loaded := s.stmts.LoadOrStore(stmtKey{s.write, q}, st); loaded {
			st.Close()
		}
	}
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.prepared(ctx, s.write, query, true); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

func (s *Store) readQueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.prepared(ctx, s.read, query, false); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.QueryRowContext(ctx, query, args...)
}

func (s *Store) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, s.read, query, false); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, query, args...)
}

// writeStatements are the statements of a one-write transaction, the
// common case worth preparing ahead.
func (s *Store) writeStatements() []string {
	oneKey, _ := keysCondition("", []kv.Key{{}})
	var lock []string
	if _, locked := s.d.(writeLockedAtBegin); !locked {
		lock = []string{"UPDATE tabula_rev SET rev = rev WHERE id = 1"}
	}
	return append(lock,
		"SELECT rev FROM tabula_rev WHERE id = 1",
		"UPDATE tabula_rev SET rev = ? WHERE id = 1",
		liveRowsShapedSQL(1),
		insertValuesSQL("tabula_log", logColumns, 1, ""),
		insertValuesSQL("tabula_index", indexColumns, 1, ""),
		insertValuesSQL("tabula_current", currentColumns, 1, s.putCurrentSuffix()),
		supersedeSQL(1),
		"DELETE FROM tabula_current WHERE "+oneKey,
	)
}

// prepareWrites fills the statement cache for the write pool before any
// write transaction runs.
func (s *Store) prepareWrites(ctx context.Context) error {
	if !s.d.cacheStatements() {
		return nil
	}
	for _, q := range s.writeStatements() {
		q = s.q(q)
		st, err := s.write.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		s.stmts.Store(stmtKey{s.write, q}, st)
	}
	return nil
}
