package sqlstore

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// openSharedFile opens a store on the SQLite file at path, as each
// process sharing the file does, closed when the test ends.
func openSharedFile(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite://"+path, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
