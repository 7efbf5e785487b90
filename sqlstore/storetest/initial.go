package storetest

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// testWatchInitialState: a watch that opens with the state sends the
// matching objects as they are at one revision, every page of them in key
// order (more than one page), then InitialEnd with that revision, then
// only the changes after it; writes made while the state streams are
// neither lost nor sent twice.
func testWatchInitialState(t *testing.T, s *sqlstore.Store) {
	const n = 230 // more than two pages
	want := map[string]int64{}
	for i := range n {
		l := map[string]string{"app": "db"}
		if i%10 == 0 {
			l["app"] = "web"
		}
		name := fmt.Sprintf("o%03d", i)
		r := mustCreate(t, s, key(name), l)
		if l["app"] == "db" {
			want[name] = r.Rev
		}
	}
	mustCreate(t, s, kv.Key{Resource: "configmaps", Namespace: "ns2", Name: "other"}, map[string]string{"app": "db"})
	mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns1", Name: "s"}, map[string]string{"app": "db"})
	snapshot, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	db, _ := labels.Parse("app=db")
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", Pred: kv.Predicate{Label: db}, Initial: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Written while the state streams: after the snapshot, so a change.
	late := mustCreate(t, s, key("zz-late"), map[string]string{"app": "db"})
	prev := ""
	for range want {
		ev := recv(t, w)
		if ev.Type != kv.Added || ev.Rev != want[ev.Name] || ev.Namespace != "ns1" {
			t.Fatalf("initial event %s %s/%s@%d; want ADDED of a matching ns1 object at its revision %d", ev.Type, ev.Namespace, ev.Name, ev.Rev, want[ev.Name])
		}
		if want := fmt.Sprintf(`{"name":%q,"rev":%d}`, ev.Name, ev.Rev); string(ev.Value) != want {
			t.Fatalf("initial event of %s holds %s; want %s", ev.Name, ev.Value, want)
		}
		if ev.Name <= prev {
			t.Fatalf("initial event %s after %s: not in key order", ev.Name, prev)
		}
		prev = ev.Name
	}
	if ev := recv(t, w); ev.Type != kv.InitialEnd || ev.Rev < snapshot || ev.Rev >= late.Rev {
		t.Fatalf("after the state: %s@%d; want INITIAL-END at the snapshot (%d ≤ rev < %d)", ev.Type, ev.Rev, snapshot, late.Rev)
	}
	if ev := recv(t, w); ev.Type != kv.Added || ev.Name != "zz-late" || ev.Rev != late.Rev {
		t.Fatalf("after the initial events: %s %s@%d; want ADDED zz-late@%d once", ev.Type, ev.Name, ev.Rev, late.Rev)
	}
}

// testWatchInitialStateSharesValues: watches that open with the same state
// at once read each value from the database once between them, and read
// none again while the values are held.
func testWatchInitialStateSharesValues(t *testing.T, s *sqlstore.Store) {
	const objects, watchers = 40, 25
	total := int64(0)
	for i := range objects {
		r := mustCreate(t, s, kv.Key{Resource: "configmaps", Namespace: "shared", Name: fmt.Sprintf("o%02d", i)}, nil)
		total += int64(len(fmt.Sprintf(`{"name":"o%02d","rev":%d}`, i, r.Rev)))
	}
	round := func() {
		var wg sync.WaitGroup
		for range watchers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "shared", Initial: true})
				if err != nil {
					t.Error(err)
					return
				}
				defer w.Stop()
				got := 0
				for ev := range w.Events() {
					if ev.Type == kv.InitialEnd {
						break
					}
					got++
				}
				if got != objects {
					t.Errorf("a watcher got %d initial events; want %d (err %v)", got, objects, w.Err())
				}
			}()
		}
		wg.Wait()
	}
	before := s.SharedReadBytes()
	round()
	if got := s.SharedReadBytes() - before; got != total {
		t.Fatalf("%d watchers opening with %d objects (%d bytes) read %d bytes of values; want each value read once", watchers, objects, total, got)
	}
	round()
	if got := s.SharedReadBytes() - before; got != total {
		t.Fatalf("a second round read %d more bytes; want none (the values are held)", got-total)
	}
}
