package sqlstore

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// openSQLiteFile opens a store on the SQLite file at path (stores opened
// on one path share it, as processes do), without compaction; the test's
// cleanup closes it.
func openSQLiteFile(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite://"+path, Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// createEmpty commits the create of an empty ConfigMap name in namespace
// ns through s.
func createEmpty(t *testing.T, s *Store, name string) {
	t.Helper()
	if _, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "ns", Name: name}, func(int64) (kv.Entry, error) {
		return kv.Entry{Value: []byte(`{}`)}, nil
	}); err != nil {
		t.Fatal(err)
	}
}
