package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestQueryTimeout: a write (and, where the database can block one, a
// read) held up longer than QueryTimeout fails with DeadlineExceeded
// instead of hanging; nothing of the failed write is stored, and the
// store works once the obstruction is gone.
func TestQueryTimeout(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "state.db") },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) { testQueryTimeout(t, url(t)) })
	}
}

// obstruct blocks the store's writes (and reads of tabula_rev where the
// database allows) from a connection of the store's own write pool; it
// returns whether reads are blocked too, and the release function.
func obstruct(t *testing.T, s *Store) (readsBlocked bool, release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.write.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	switch s.d.name() {
	case "postgres":
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "LOCK TABLE tabula_rev IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		return true, func() { _ = tx.Rollback(); conn.Close() }
	case "mysql":
		if _, err := conn.ExecContext(ctx, "LOCK TABLES tabula_rev WRITE"); err != nil {
			t.Fatal(err)
		}
		return true, func() { _, _ = conn.ExecContext(ctx, "UNLOCK TABLES"); conn.Close() }
	default:
		// SQLite has one writer connection: holding it stops every
		// write; WAL readers are never blocked.
		return false, func() { conn.Close() }
	}
}

func testQueryTimeout(t *testing.T, url string) {
	// Long enough that the calls after the obstruction do not hit it on a
	// loaded machine.
	const timeout = time.Second
	s, err := Open(context.Background(), url, Options{QueryTimeout: timeout, CompactInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The caller's context has no deadline: only the store's bound can
	// end the obstructed calls (without it the test hangs and fails).
	ctx := context.Background()
	key := kv.Key{Resource: "configmaps", Namespace: "n", Name: "a"}
	put := func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil }

	readsBlocked, release := obstruct(t, s)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	if _, err := s.Create(ctx, key, put); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("create while obstructed: %v, want DeadlineExceeded", err)
	}
	if readsBlocked {
		if _, err := s.CurrentRev(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("read while obstructed: %v, want DeadlineExceeded", err)
		}
	}
	release()
	released = true

	if _, err := s.Get(ctx, key); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("get after the failed create: %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, key, put); err != nil {
		t.Errorf("create after the obstruction: %v", err)
	}
}

// TestQueryTimeoutFileLock: on SQLite a write's statements run without a
// context (uncancelledWrites), so what bounds a write kept waiting by
// another process's write lock on the same file is the transaction's
// begin. Held past QueryTimeout (well under busy_timeout's 10 s), the
// write fails with DeadlineExceeded, nothing of it is stored, and the
// store writes once the lock is gone.
func TestQueryTimeoutFileLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), "sqlite://"+path, Options{QueryTimeout: time.Second, CompactInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A connection of its own, as another process sharing the file has.
	other, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas+"&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	lock, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := kv.Key{Resource: "configmaps", Namespace: "n", Name: "a"}
	put := func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil }
	start := time.Now()
	_, err = s.Create(ctx, key, put)
	waited := time.Since(start)
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("create while another connection holds the write lock: %v, want DeadlineExceeded", err)
	}
	if waited >= 10*time.Second {
		t.Errorf("create waited %v: busy_timeout ended it, not the query timeout", waited)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("get after the failed create: %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, key, put); err != nil {
		t.Errorf("create after the lock: %v", err)
	}
}
