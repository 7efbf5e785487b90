package sqlstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestJoinedKeyLists: on SQLite a warm whole list reads its keys a batch
// to one concatenated row (listkeys.go). Its items are the ones the row
// path gives, in key order, across batch boundaries, within a namespace
// and across all of them; items the caller has no encoding of get their
// stored values; names the store holds with a "/" in them (which kube
// never sends) are read row by row instead of split wrongly.
func TestJoinedKeyLists(t *testing.T) {
	s, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "state.db"),
		Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.d.(concatKeys); !ok {
		t.Fatal("SQLite lists warm keys row by row")
	}
	ctx := context.Background()
	value := func(k kv.Key) []byte { return []byte(`{"name":"` + k.Namespace + "/" + k.Name + `"}`) }
	revs := map[kv.Key]int64{}
	create := func(k kv.Key) {
		t.Helper()
		rec, err := s.Create(ctx, k, func(int64) (kv.Entry, error) { return kv.Entry{Value: value(k)}, nil })
		if err != nil {
			t.Fatal(err)
		}
		revs[k] = rec.Rev
	}
	// More than the first batch (listBatch) and a whole keyBatch after it
	// in namespace "b"; a few in "a" and "c" around it.
	n := listBatch + keyBatch + 7
	for i := 0; i < n; i++ {
		create(kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprintf("o%05d", i)})
	}
	for _, ns := range []string{"a", "c"} {
		for i := 0; i < 3; i++ {
			create(kv.Key{Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("o%d", i)})
		}
	}
	// Deleted and updated objects: the list has each live one once, at
	// its live revision.
	gone := kv.Key{Resource: "configmaps", Namespace: "b", Name: "o00003"}
	if _, err := s.Delete(ctx, gone, revs[gone], func(int64) (kv.Entry, error) { return kv.Entry{Value: value(gone)}, nil }); err != nil {
		t.Fatal(err)
	}
	up := kv.Key{Resource: "configmaps", Namespace: "b", Name: "o00004"}
	if _, err := s.Update(ctx, up, revs[up], func(int64) (kv.Entry, error) { return kv.Entry{Value: value(up)}, nil }); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, ns string) {
		t.Helper()
		plain, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		// Every other revision is "cached"; the rest need their values.
		cached := []byte("cached")
		warm, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: ns,
			Cached: func(r kv.Record) ([]byte, bool) { return cached, r.Rev%2 == 0 }})
		if err != nil {
			t.Fatal(err)
		}
		if len(warm.Items) != len(plain.Items) || warm.Rev != plain.Rev {
			t.Fatalf("warm list: %d items at %d; the plain one %d at %d", len(warm.Items), warm.Rev, len(plain.Items), plain.Rev)
		}
		for i, w := range warm.Items {
			p := plain.Items[i]
			if w.Key != p.Key || w.Rev != p.Rev {
				t.Fatalf("item %d: %v at %d; the plain list has %v at %d", i, w.Key, w.Rev, p.Key, p.Rev)
			}
			want := p.Value
			if w.Rev%2 == 0 {
				want = cached
			}
			if w.Cached != (w.Rev%2 == 0) || string(w.Value) != string(want) {
				t.Fatalf("item %d (%v, rev %d): cached %v, value %q", i, w.Key, w.Rev, w.Cached, w.Value)
			}
		}
	}
	t.Run("OneNamespace", func(t *testing.T) { check(t, "b") })
	t.Run("AllNamespaces", func(t *testing.T) { check(t, "") })
	t.Run("SlashInName", func(t *testing.T) {
		for _, name := range []string{"p/1/q", "p/2", "p3"} {
			create(kv.Key{Resource: "configmaps", Namespace: "d", Name: name})
		}
		check(t, "d")
		check(t, "")
	})
}

// TestJoinedKeysOutOfOrder: the concatenated keys are put in key order
// even when SQLite hands them over in another (its aggregate's order is
// not promised).
func TestJoinedKeysOutOfOrder(t *testing.T) {
	s, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "state.db"),
		Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	tx, err := s.read.BeginTx(ctx, s.d.readTx())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	q := `SELECT 7 AS rev, 'x' AS namespace, 'b' AS name UNION ALL SELECT 5, 'x', 'a' UNION ALL SELECT 9, 'w', 'c'`
	items := []kv.Record{{Key: kv.Key{Name: "before"}}}
	n, ok, err := s.readKeyBatch(ctx, tx, kv.ListOptions{Resource: "configmaps"}, q, nil, listCols{namespace: true}, &items)
	if err != nil || !ok || n != 3 {
		t.Fatalf("readKeyBatch: %d keys, ok %v, %v", n, ok, err)
	}
	var got []string
	for _, r := range items {
		got = append(got, fmt.Sprintf("%s/%s@%d", r.Namespace, r.Name, r.Rev))
	}
	if want := []string{"/before@0", "w/c@9", "x/a@5", "x/b@7"}; !slices.Equal(got, want) {
		t.Fatalf("items %v; want %v", got, want)
	}
}
