package sqlstore

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestSQLiteChangeProbe: the probe the watch poller asks on its idle ticks
// says "changed" after a commit by this store (another connection of its
// pools) or by another process's store on the same file, and "unchanged"
// while nothing was committed, so an idle server does not read the log.
func TestSQLiteChangeProbe(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() *Store {
		s, err := Open(ctx, "sqlite://"+path, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	probe, release := sqliteDialect{}.changeProbe(a.read)
	defer release()
	ask := func(want bool, after string) {
		t.Helper()
		changed, err := probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if changed != want {
			t.Errorf("after %s: changed = %v; want %v", after, changed, want)
		}
	}
	ask(true, "the first question") // nothing to compare with yet
	ask(false, "nothing")
	ask(false, "nothing, again")
	create := func(s *Store, name string) {
		t.Helper()
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: name}, func(int64) (kv.Entry, error) {
			return kv.Entry{Value: []byte(`{}`)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	create(b, "by-the-other-store")
	ask(true, "a commit by another store on the file")
	ask(false, "nothing since")
	create(a, "by-this-store")
	ask(true, "a commit by this store's writer")
	ask(false, "nothing since")
}
