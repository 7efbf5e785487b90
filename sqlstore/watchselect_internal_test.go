package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestWatchHistorySelectors: a watch opened at an old revision reads its
// history with only the labels or fields its selector looks at, and still
// sees an object that starts matching as ADDED, one that stops matching
// as DELETED, and a deletion of one that matched, as on the live path.
func TestWatchHistorySelectors(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		entry := func(app, node string) kv.Encoder {
			return func(int64) (kv.Entry, error) {
				return kv.Entry{Value: []byte(app), Labels: map[string]string{"app": app}, Fields: map[string]string{"spec.node": node}}, nil
			}
		}
		key := func(name string) kv.Key { return kv.Key{Resource: "pods", Namespace: "ns", Name: name} }
		must := func(rec kv.Record, err error) int64 {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return rec.Rev
		}
		a := must(s.Create(ctx, key("a"), entry("web", "n1")))
		b := must(s.Create(ctx, key("b"), entry("db", "n2")))
		a = must(s.Update(ctx, key("a"), a, entry("db", "n1"))) // a leaves app=web
		must(s.Update(ctx, key("b"), b, entry("db", "n1")))     // b joins spec.node=n1
		must(s.Delete(ctx, key("a"), a, entry("db", "n1")))
		start := a - 3 // before a's create

		web, err := labels.Parse("app=web")
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			pred kv.Predicate
			want []string
		}{
			// An object leaving the selector is DELETED as it was before.
			{"none", kv.Predicate{}, []string{"ADDED a web", "ADDED b db", "MODIFIED a db", "MODIFIED b db", "DELETED a db"}},
			{"labels", kv.Predicate{Label: web}, []string{"ADDED a web", "DELETED a web"}},
			{"fields", kv.Predicate{Field: fields.OneTermEqualSelector("spec.node", "n1")}, []string{"ADDED a web", "MODIFIED a db", "ADDED b db", "DELETED a db"}},
			{"both set", kv.Predicate{Label: web, Field: fields.OneTermEqualSelector("spec.node", "n1")}, []string{"ADDED a web", "DELETED a web"}},
		}
		// The history comes from the hub's recent rows, then from the log
		// once those are gone: the same events either way.
		for _, from := range []string{"memory", "log"} {
			if from == "log" {
				s.hub.mu.Lock()
				s.hub.recent.reset(s.hub.last)
				s.hub.mu.Unlock()
			}
			for _, tc := range cases {
				t.Run(tc.name+"/"+from, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					s.hub.mu.Lock()
					_, held := s.hub.recent.since(start, kv.Key{Resource: "pods", Namespace: "ns"})
					s.hub.mu.Unlock()
					if held != (from == "memory") {
						t.Fatalf("history held in memory: %v", held)
					}
					counted := testutil.ToFloat64(watchHistory.WithLabelValues(from))
					checkHistory(t, ctx, s, kv.WatchOptions{Resource: "pods", Namespace: "ns", After: start, Pred: tc.pred}, tc.want)
					if got := testutil.ToFloat64(watchHistory.WithLabelValues(from)) - counted; got != 1 {
						t.Fatalf("tabula_sql_watch_history_total{from=%q} rose by %v; want 1", from, got)
					}
				})
			}
		}
	})
}

// checkHistory opens a watch with opts and checks its first events.
func checkHistory(t *testing.T, ctx context.Context, s *Store, opts kv.WatchOptions, want []string) {
	t.Helper()
	w, err := s.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for len(got) < len(want) {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended after %v: %v", got, w.Err())
			}
			got = append(got, fmt.Sprintf("%s %s %s", ev.Type, ev.Name, ev.Value))
		case <-ctx.Done():
			t.Fatalf("got %v, waiting for %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestWatchHistoryQuietResource: a resource written rarely keeps its
// recent history in memory while another is written past the hub's
// bound, so its watch from a recent revision does not read the log.
func TestWatchHistoryQuietResource(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		value := func(v []byte) kv.Encoder {
			return func(int64) (kv.Entry, error) { return kv.Entry{Value: v}, nil }
		}
		cur, err := s.CurrentRev(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 5 {
			name := fmt.Sprintf("p%d", i)
			if _, err := s.Create(ctx, kv.Key{Resource: "pods", Namespace: "ns", Name: name}, value([]byte("v"))); err != nil {
				t.Fatal(err)
			}
			want = append(want, "ADDED "+name+" v")
		}
		// A busy neighbour: four times the byte bound in Leases.
		big := make([]byte, 64<<10)
		busyFrom := cur + 5
		for i := range 4 * recentBytes / len(big) {
			if _, err := s.Create(ctx, kv.Key{Resource: "leases", Namespace: "ns", Name: fmt.Sprintf("l%d", i)}, value(big)); err != nil {
				t.Fatal(err)
			}
		}
		s.hub.mu.Lock()
		_, busyHeld := s.hub.recent.since(busyFrom, kv.Key{Resource: "leases"})
		s.hub.mu.Unlock()
		if busyHeld {
			t.Fatal("every Lease row is still held: the bound was not reached")
		}
		counted := testutil.ToFloat64(watchHistory.WithLabelValues("memory"))
		checkHistory(t, ctx, s, kv.WatchOptions{Resource: "pods", Namespace: "ns", After: cur}, want)
		if got := testutil.ToFloat64(watchHistory.WithLabelValues("memory")) - counted; got != 1 {
			t.Fatalf("tabula_sql_watch_history_total{from=\"memory\"} rose by %v; want 1", got)
		}
	})
}

// TestWatchFromMemoryAsksNothing: a watch from a revision whose history
// the hub holds (an informer's watch after its list) starts without
// reading the revisions; one from further back, one from a revision the
// hub has not delivered, or one from a revision this store compacted
// still reads them, and the compacted one is refused.
func TestWatchFromMemoryAsksNothing(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cur, err := s.CurrentRev(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		var revs []int64
		for i := range 3 {
			name := fmt.Sprintf("c%d", i)
			r, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: name},
				func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte("v")}, nil })
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, "ADDED "+name+" v")
			revs = append(revs, r.Rev)
		}
		asked := revsQueries(t, s)
		checkHistory(t, ctx, s, kv.WatchOptions{Resource: "configmaps", Namespace: "ns", After: cur}, want)
		if n := revsQueries(t, s) - asked; n != 0 {
			t.Fatalf("a watch from a held revision read the revisions %d times; want none", n)
		}

		// A revision the hub has not delivered (here, none has it):
		// checked against the database.
		asked = revsQueries(t, s)
		w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", Namespace: "ns", After: revs[2] + 5})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		if n := revsQueries(t, s) - asked; n != 1 {
			t.Fatalf("a watch from a revision the hub has not delivered read the revisions %d times; want 1", n)
		}

		// History before the hub's: read from the log, after the check.
		s.hub.mu.Lock()
		s.hub.recent.reset(s.hub.last)
		s.hub.mu.Unlock()
		asked = revsQueries(t, s)
		checkHistory(t, ctx, s, kv.WatchOptions{Resource: "configmaps", Namespace: "ns", After: cur}, want)
		if n := revsQueries(t, s) - asked; n != 1 {
			t.Fatalf("a watch from before the hub's history read the revisions %d times; want 1", n)
		}

		// Held again, but compacted here: refused as before.
		r, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: "c3"},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte("v")}, nil })
		if err != nil {
			t.Fatal(err)
		}
		s.hub.mu.Lock()
		_, held := s.hub.recent.since(revs[2], kv.Key{Resource: "configmaps"})
		s.hub.mu.Unlock()
		if !held {
			t.Fatal("the hub does not hold the newest create")
		}
		if err := s.Compact(ctx, r.Rev); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", Namespace: "ns", After: revs[2]}); !errors.Is(err, kv.ErrCompacted) {
			t.Fatalf("watch from revision %d, compacted to %d: err %v; want ErrCompacted", revs[2], r.Rev, err)
		}
	})
}

// revsQueries is how often stores of s's dialect have read the newest
// and compacted revisions.
func revsQueries(t *testing.T, s *Store) uint64 {
	var m dto.Metric
	if err := queryDuration.WithLabelValues(s.d.name(), "revs").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
