package sqlstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestBumpRevision: after a restore's bump, the objects stay, reads and
// watches from any earlier revision are compacted (410 to clients), and
// the next write continues past the new revision. On every database.
func TestBumpRevision(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "bump.db") },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, url(t), Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			key := kv.Key{Resource: "configmaps", Namespace: "n", Name: "a"}
			put := func() kv.Record {
				r, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: "x" + key.Name}, func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil })
				if err != nil {
					t.Fatal(err)
				}
				key.Name += "a"
				return r
			}
			first := put()
			before, err := s.CurrentRev(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rev, err := s.BumpRevision(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if rev != before+1000 {
				t.Fatalf("bumped to %d; want %d", rev, before+1000)
			}
			if _, err := s.Get(ctx, first.Key); err != nil {
				t.Errorf("the object is gone after the bump: %v", err)
			}
			var ce *kv.CompactedError
			if _, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Rev: before}); !errors.As(err, &ce) {
				t.Errorf("list at the old revision: %v; want compacted", err)
			}
			if _, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: before + 10}); !errors.As(err, &ce) {
				t.Errorf("watch from a revision the lost history issued: %v; want compacted", err)
			}
			if next := put(); next.Rev != rev+1 {
				t.Errorf("next write at %d; want %d", next.Rev, rev+1)
			}
			if w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: rev}); err != nil {
				t.Errorf("watch from the new revision: %v", err)
			} else {
				w.Stop()
			}
		})
	}
}

// TestBackupSQLiteOnly: a backup copies an SQLite database; the other
// databases point to their own tools.
func TestBackupSQLiteOnly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "src.db"), Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: "a"}, func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{"k":1}`)}, nil }); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	if err := s.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, dest); err == nil {
		t.Error("a backup overwrote an existing file")
	}
	c, err := Open(ctx, "sqlite://"+dest, Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Get(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: "a"}); err != nil || string(r.Value) != `{"k":1}` {
		t.Errorf("the copy holds %q, %v", r.Value, err)
	}
	pg, err := Open(ctx, dbtest.Postgres(t), Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.Backup(ctx, filepath.Join(t.TempDir(), "pg.db")); err == nil {
		t.Error("tabula backup of PostgreSQL did not point to pg_dump")
	}
}
