package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestKeptLists: a warm whole list asked for again is answered from the
// keys kept from the last one, brought forward by the log rows written
// since, and is the list the database holds: after creates, updates,
// deletes and re-creations in its namespace, in another namespace and of
// another resource; within one namespace and across all. Too many rows
// written since, or a compaction past the kept revision, read the keys
// again instead.
func TestKeptLists(t *testing.T) {
	eachDialect(t, testKeptLists)
}

func testKeptLists(t *testing.T, s *Store) {
	ctx := context.Background()
	s.keptKeys.min = 1
	value := func(k kv.Key, n int) []byte { return fmt.Appendf(nil, `{"key":%q,"n":%d}`, k.Namespace+"/"+k.Name, n) }
	revs := map[kv.Key]int64{}
	n := 0
	put := func(k kv.Key) {
		t.Helper()
		n++
		var rec kv.Record
		var err error
		if rev, ok := revs[k]; ok {
			rec, err = s.Update(ctx, k, rev, func(int64) (kv.Entry, error) { return kv.Entry{Value: value(k, n)}, nil })
		} else {
			rec, err = s.Create(ctx, k, func(int64) (kv.Entry, error) { return kv.Entry{Value: value(k, n)}, nil })
		}
		if err != nil {
			t.Fatal(err)
		}
		revs[k] = rec.Rev
	}
	del := func(k kv.Key) {
		t.Helper()
		if _, err := s.Delete(ctx, k, revs[k], func(int64) (kv.Entry, error) { return kv.Entry{Value: value(k, 0)}, nil }); err != nil {
			t.Fatal(err)
		}
		delete(revs, k)
	}
	cm := func(ns string, i int) kv.Key {
		return kv.Key{Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("cm-%03d", i)}
	}
	for i := 0; i < 40; i++ {
		put(cm("a", i))
	}
	for i := 0; i < 10; i++ {
		put(cm("b", i))
		put(kv.Key{Resource: "secrets", Namespace: "a", Name: fmt.Sprintf("s-%d", i)})
	}

	// list lists ns warm (even revisions "cached") and checks it against
	// the plain list, which reads everything; fromKept says whether the
	// kept keys must have answered.
	cached := []byte("cached")
	list := func(t *testing.T, ns string, fromKept bool) {
		t.Helper()
		plain, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		before := s.keptListed.Load()
		read := testutil.ToFloat64(listKeys.WithLabelValues("read"))
		warm, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: ns,
			Cached: func(r kv.Record) ([]byte, bool) { return cached, r.Rev%2 == 0 }})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.keptListed.Load() > before; got != fromKept {
			t.Errorf("list of %q from kept keys: %v, want %v", ns, got, fromKept)
		}
		if got := testutil.ToFloat64(listKeys.WithLabelValues("read")) - read; got != map[bool]float64{false: 1, true: 0}[fromKept] {
			t.Errorf("list of %q: tabula_sql_list_keys_total{result=\"read\"} rose by %v", ns, got)
		}
		if warm.Rev != plain.Rev || len(warm.Items) != len(plain.Items) {
			t.Fatalf("list of %q: %d items at %d; the plain one %d at %d", ns, len(warm.Items), warm.Rev, len(plain.Items), plain.Rev)
		}
		for i, w := range warm.Items {
			p := plain.Items[i]
			if w.Key != p.Key || w.Rev != p.Rev {
				t.Fatalf("list of %q: item %d is %v at %d; the plain list's %v at %d", ns, i, w.Key, w.Rev, p.Key, p.Rev)
			}
			want := p.Value
			if p.Rev%2 == 0 {
				want = cached
			}
			if w.Cached != (p.Rev%2 == 0) || !bytes.Equal(w.Value, want) {
				t.Fatalf("list of %q: item %v has %q (cached %v), want %q", ns, w.Key, w.Value, w.Cached, want)
			}
		}
		// The plain list is the database's; check it against what was
		// written, so the comparison above is with the truth.
		var keys []kv.Key
		for k := range revs {
			if k.Resource == "configmaps" && (ns == "" || k.Namespace == ns) {
				keys = append(keys, k)
			}
		}
		if len(keys) != len(plain.Items) {
			t.Fatalf("list of %q: %d items, %d written", ns, len(plain.Items), len(keys))
		}
		for _, p := range plain.Items {
			if revs[p.Key] != p.Rev {
				t.Fatalf("list of %q: %v at %d, written at %d", ns, p.Key, p.Rev, revs[p.Key])
			}
		}
	}

	list(t, "a", false) // read and kept
	list(t, "a", true)
	list(t, "", false)
	list(t, "", true)

	// Changes in "a", in "b" and to secrets: both lists are brought
	// forward (a 40-key list takes up to 5 rows, 50 keys up to 6).
	put(cm("a", 3))                                                  // updated
	del(cm("a", 7))                                                  // deleted
	put(cm("a", 40))                                                 // created at the end
	put(kv.Key{Resource: "configmaps", Namespace: "a", Name: "aaa"}) // created first
	list(t, "a", true)
	list(t, "", true)
	put(cm("b", 1))
	del(cm("a", 9))
	put(cm("a", 9)) // deleted and created again: one key, its new revision
	put(kv.Key{Resource: "secrets", Namespace: "a", Name: "s-1"})
	list(t, "", true)
	list(t, "a", true)
	// Nothing written: the same kept keys.
	list(t, "a", true)

	// More rows since than a kept list takes (5 for "a"): read again,
	// then kept from there.
	for i := 0; i < 6; i++ {
		put(kv.Key{Resource: "secrets", Namespace: "a", Name: fmt.Sprintf("s-%d", i)})
	}
	list(t, "a", false)
	list(t, "a", true)

	// A compaction past the kept revision: the log since may have lost
	// rows, so the keys are read again.
	del(cm("a", 11))
	cur, err := s.CurrentRev(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	list(t, "a", false)
	list(t, "a", true)
}

// TestKeptListsForward: a kept list brought forward has each changed key
// once, at its last change, in key order, and its size estimate follows;
// the kept lists stay within their budget, the least recently listed
// going first.
func TestKeptListsForward(t *testing.T) {
	k := func(ns, name string, rev int64) keptKey { return keptKey{ns, name, rev} }
	l := &keptList{rev: 10, keys: []keptKey{k("a", "b", 1), k("a", "d", 2), k("b", "a", 3)}}
	for _, key := range l.keys {
		l.bytes += keptKeyBytes + len(key.name)
	}
	got := l.forward(15, []logChange{
		{key: k("a", "c", 11)},
		{key: k("a", "d", 12), deleted: true},
		{key: k("a", "a", 13)},
		{key: k("a", "c", 14)},
		{key: k("b", "a", 15)},
	})
	want := []keptKey{k("a", "a", 13), k("a", "b", 1), k("a", "c", 14), k("b", "a", 15)}
	if got.rev != 15 || !slices.Equal(got.keys, want) {
		t.Fatalf("forward: %v at %d, want %v at 15", got.keys, got.rev, want)
	}
	if got.bytes != 4*(keptKeyBytes+1) {
		t.Errorf("forward: %d bytes, want %d", got.bytes, 4*(keptKeyBytes+1))
	}
	if !slices.Equal(l.keys, []keptKey{k("a", "b", 1), k("a", "d", 2), k("b", "a", 3)}) {
		t.Errorf("forward changed the list it started from: %v", l.keys)
	}

	var kl keptLists
	third := keptListBudget/3 + 1
	kl.keep(keptListID{"x", ""}, &keptList{rev: 1, bytes: third})
	kl.keep(keptListID{"y", ""}, &keptList{rev: 1, bytes: third})
	kl.keep(keptListID{"x", ""}, &keptList{rev: 0, bytes: 1}) // older: ignored
	kl.get(keptListID{"x", ""})                               // x listed after y
	kl.keep(keptListID{"z", ""}, &keptList{rev: 1, bytes: third})
	if kl.lists[keptListID{"y", ""}] != nil || kl.lists[keptListID{"x", ""}] == nil || kl.lists[keptListID{"z", ""}] == nil {
		t.Errorf("over budget, kept %v; want x and z", kl.lists)
	}
	if kl.bytes != 2*third || kl.lists[keptListID{"x", ""}].rev != 1 {
		t.Errorf("kept %d bytes, x at %d; want %d and 1", kl.bytes, kl.lists[keptListID{"x", ""}].rev, 2*third)
	}
	kl.keep(keptListID{"w", ""}, &keptList{rev: 1, bytes: keptListBudget + 1})
	if kl.lists[keptListID{"w", ""}] != nil {
		t.Error("a list over the whole budget was kept")
	}
}
