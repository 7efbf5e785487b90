package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestDirectGets: SQLite's gets run on the driver's connections
// (directget.go). They read the live row, wait for a pooled connection
// no longer than the store's bound, and leave no statement behind that
// would keep the database file open after Close.
func TestDirectGets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), "sqlite://"+path, Options{QueryTimeout: 300 * time.Millisecond, CompactInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	if s.directGets == nil {
		t.Fatal("SQLite store reads without the direct path")
	}
	ctx := context.Background()
	key := func(i int) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "n", Name: fmt.Sprint("cm-", i)} }
	value := func(s string) func(int64) (kv.Entry, error) {
		return func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(s)}, nil }
	}
	created := map[int]int64{}
	for i := 0; i < 3; i++ {
		rec, err := s.Create(ctx, key(i), value(fmt.Sprint(`{"v":`, i, `}`)))
		if err != nil {
			t.Fatal(err)
		}
		created[i] = rec.Rev
	}
	up, err := s.Update(ctx, key(1), created[1], value(`{"v":"updated"}`))
	if err != nil {
		t.Fatal(err)
	}
	updated := up.Rev
	if _, err := s.Delete(ctx, key(2), created[2], value(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(ctx, key(0))
	if err != nil || string(r.Value) != `{"v":0}` || r.Rev != created[0] || r.CreatedRev != created[0] {
		t.Errorf("get of an untouched key: %+v, %v", r, err)
	}
	r, err = s.Get(ctx, key(1))
	if err != nil || string(r.Value) != `{"v":"updated"}` || r.Rev != updated || r.CreatedRev != created[1] {
		t.Errorf("get of an updated key: %+v, %v; want rev %d created %d", r, err, updated, created[1])
	}
	for _, k := range []kv.Key{key(2), key(3)} {
		if _, err := s.Get(ctx, k); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("get of %v (deleted or never written): %v, want ErrNotFound", k.Name, err)
		}
	}
	// A caller holding the live revision gets it alone, the value unread.
	r, skipped, err := s.GetKnown(ctx, key(1), func(rev int64) bool { return rev == updated })
	if err != nil || !skipped || r.Rev != updated || r.Value != nil {
		t.Errorf("get of a held revision: %+v skipped %v, %v; want revision %d alone", r, skipped, err, updated)
	}

	// Every reader connection held: a get waits for one no longer than
	// the store's bound.
	var held []*sql.Conn
	for i := 0; i < s.directDB.Stats().MaxOpenConnections; i++ {
		c, err := s.directDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if _, err := s.Get(ctx, key(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("get with every reader connection busy: %v, want DeadlineExceeded", err)
	}
	for _, c := range held {
		c.Close()
	}
	if _, err := s.Get(ctx, key(0)); err != nil {
		t.Errorf("get after the connections came back: %v", err)
	}

	// Each get with the connections before it held goes to a new one,
	// which prepares the statement too. (Gets run at once were left to
	// the scheduler to overlap, and on a busy machine sometimes all ran
	// on one connection.)
	var busy []*sql.Conn
	for range 3 {
		if _, err := s.Get(ctx, key(0)); err != nil {
			t.Fatal(err)
		}
		c, err := s.directDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
	}
	for _, c := range busy {
		c.Close()
	}
	s.directGets.mu.Lock()
	prepared := len(s.directGets.stmts)
	s.directGets.mu.Unlock()
	if prepared < 3 {
		t.Errorf("%d connections prepared the get, want 3", prepared)
	}

	// Gets still running while the store closes end with the value or
	// an error; Close waits for those that hold a statement.
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 200; i++ {
				r, err := s.Get(ctx, key(0))
				if err != nil {
					return
				}
				if string(r.Value) != `{"v":0}` {
					t.Errorf("get racing Close: %q", r.Value)
					return
				}
			}
		}()
	}
	close(start)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	wg.Wait()
	if open := openFiles(t, path); len(open) != 0 {
		t.Errorf("after Close the process still has %v open", open)
	}
}

// TestDirectGetsSurviveInterruptedReads: a read query cut short by its
// context makes modernc's connection unusable, and database/sql closes
// it. Direct gets prepare statements on their connections, so before they
// had a pool of their own a get followed by such a query on the same
// connection left statements on a closed connection: Close crashed
// finalizing them, and the file stayed open as SQLite's zombie. Here the
// read pool has one connection, which a get and the cut query would share.
func TestDirectGetsSurviveInterruptedReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), "sqlite://"+path, Options{QueryTimeout: 300 * time.Millisecond, CompactInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.read.SetMaxOpenConns(1)
	ctx := context.Background()
	k := kv.Key{Resource: "configmaps", Namespace: "n", Name: "cm"}
	if _, err := s.Create(ctx, k, func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{"v":0}`)}, nil }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
		// Endless, so its context always cuts it short.
		cut, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		var n int64
		err := s.read.QueryRowContext(cut, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c").Scan(&n)
		cancel()
		if err == nil {
			t.Fatal("an endless query ended")
		}
	}
	if _, err := s.Get(ctx, k); err != nil {
		t.Errorf("get after interrupted reads: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if open := openFiles(t, path); len(open) != 0 {
		t.Errorf("after Close the process still has %v open", open)
	}
}

// openFiles lists this process's descriptors on path or its WAL and
// shared-memory files.
func openFiles(t *testing.T, path string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("this test reads /proc/self/fd: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, path) {
			open = append(open, target)
		}
	}
	return open
}
