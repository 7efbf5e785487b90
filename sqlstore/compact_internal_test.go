package sqlstore

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestCompactOnceKeepsWindow: the compactor compacts to the newest
// revision recorded at least one window ago, never to a newer one.
func TestCompactOnceKeepsWindow(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "sqlite://:memory:" },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) { testCompactOnceKeepsWindow(t, url(t)) })
	}
}

func testCompactOnceKeepsWindow(t *testing.T, url string) {
	ctx := context.Background()
	s, err := Open(ctx, url, Options{CompactInterval: -1, CompactWindow: 5 * time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(name string) int64 {
		r, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: name},
			func(rev int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return r.Rev
	}
	t0 := time.Unix(1_700_000_000, 0)
	r1 := put("a")
	if err := s.compactOnce(ctx, t0); err != nil { // mark r1 at t0
		t.Fatal(err)
	}
	put("b")
	if err := s.compactOnce(ctx, t0.Add(4*time.Minute)); err != nil { // mark r2 at t0+4m
		t.Fatal(err)
	}
	if got := s.Compaction().Revision; got != 0 {
		t.Fatalf("compacted to %d before the window passed; want 0", got)
	}
	if err := s.compactOnce(ctx, t0.Add(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := s.Compaction().Revision; got != r1 {
		t.Fatalf("compacted to %d six minutes after r1's mark; want %d (not the newer mark)", got, r1)
	}
	_, compacted, err := s.revs(ctx)
	if err != nil || compacted != r1 {
		t.Fatalf("stored compact_rev = %d, %v; want %d", compacted, err, r1)
	}
}
