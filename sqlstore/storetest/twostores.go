package storetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// RunTwoStores runs the suite for two Tabula processes sharing one
// database: each test opens two Stores (separate pools, pollers and
// committers — everything a second process has) on the URL newURL gives.
// pollInterval is the second store's poll interval: set it long on
// databases that notify, to prove that notifications, not polling, wake
// the other replica.
func RunTwoStores(t *testing.T, newURL func(t *testing.T) string, pollInterval time.Duration) {
	RunTwoStoresWithStandbys(t, newURL, pollInterval, nil)
}

// RunTwoStoresWithStandbys is RunTwoStores with both stores reading from
// the read replicas standbys gives for the database's URL.
func RunTwoStoresWithStandbys(t *testing.T, newURL func(t *testing.T) string, pollInterval time.Duration, standbys func(t *testing.T, url string) []string) {
	open := func(t *testing.T, url string, poll time.Duration) *sqlstore.Store {
		opts := sqlstore.Options{PollInterval: poll, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if standbys != nil {
			opts.Standbys = standbys(t, url)
		}
		s, err := sqlstore.Open(context.Background(), url, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// pair opens two stores on one new database, and a watch of
	// ConfigMaps on the second from its current revision.
	pair := func(t *testing.T) (a, b *sqlstore.Store, start int64, w kv.Watcher) {
		t.Helper()
		url := newURL(t)
		a, b = open(t, url, 0), open(t, url, pollInterval)
		start, _ = b.CurrentRev(ctx(t))
		w, err := b.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: start})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return a, b, start, w
	}
	t.Run("WritersOnBothDenseInOrder", func(t *testing.T) {
		t.Parallel()
		a, b, start, w := pair(t)
		const writers, each = 4, 25
		createAndUpdate(t, []*sqlstore.Store{a, b, a, b, a, b, a, b}[:writers*2], "p", each)
		total := int64(writers * 2 * each * 2)
		for i := int64(1); i <= total; i++ {
			ev := recv(t, w)
			if ev.Rev != start+i {
				t.Fatalf("event %d has rev %d; want %d (dense and in commit order across processes)", i, ev.Rev, start+i)
			}
		}
		ca, _ := a.CurrentRev(ctx(t))
		cb, _ := b.CurrentRev(ctx(t))
		if ca != start+total || cb != ca {
			t.Fatalf("current revs %d and %d; want both %d", ca, cb, start+total)
		}
	})
	// As each kube-apiserver serves its own watch cache's window, whatever
	// etcd compacted: a replica that still holds a history another one
	// compacted serves it; the compacting one refuses it with a 410.
	t.Run("WatchFromHistoryTheOtherReplicaCompacted", func(t *testing.T) {
		t.Parallel()
		a, b, start, w := pair(t)
		var last kv.Record
		for _, name := range []string{"h1", "h2", "h3"} {
			last = mustCreate(t, a, key(name), nil)
		}
		for range 3 {
			recv(t, w) // b has delivered all three
		}
		if err := a.Compact(ctx(t), last.Rev); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: start}); !errors.Is(err, kv.ErrCompacted) {
			t.Fatalf("watch on the compacting replica from %d, compacted to %d: err %v; want ErrCompacted", start, last.Rev, err)
		}
		from, err := b.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: start})
		if err != nil {
			t.Fatalf("watch on the other replica from %d, which it holds: %v", start, err)
		}
		defer from.Stop()
		for i := int64(1); i <= 3; i++ {
			if ev := recv(t, from); ev.Rev != start+i || ev.Type != kv.Added {
				t.Fatalf("event %d = %s@%d; want ADDED@%d", i, ev.Type, ev.Rev, start+i)
			}
		}
	})
	t.Run("OtherReplicaSeesWriteWithoutPolling", func(t *testing.T) {
		t.Parallel()
		a, _, _, w := pair(t)
		r := mustCreate(t, a, key("x"), nil)
		if ev := recv(t, w); ev.Rev != r.Rev || ev.Type != kv.Added {
			t.Fatalf("event = %s@%d; want ADDED@%d", ev.Type, ev.Rev, r.Rev)
		}
	})
	t.Run("ProgressFollowsOtherReplicasWrites", func(t *testing.T) {
		// A watch's progress (its bookmarks' revision) moves with
		// another replica's writes it does not see, as they are told.
		t.Parallel()
		a, _, _, w := pair(t)
		r := mustCreate(t, a, kv.Key{Resource: "secrets", Namespace: "ns1", Name: "s"}, nil)
		deadline := time.Now().Add(20 * time.Second)
		for w.Progress() < r.Rev {
			if time.Now().After(deadline) {
				t.Fatalf("progress %d; want %d (the other replica's write) within 20s", w.Progress(), r.Rev)
			}
			<-time.After(5 * time.Millisecond) // polling with a deadline
		}
		if n := len(w.Events()); n != 0 {
			t.Fatalf("%d events for another resource's write", n)
		}
	})
	t.Run("ConcurrentCreatesAcrossProcessesOneWins", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a, b := open(t, url, 0), open(t, url, pollInterval)
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func(i int, s *sqlstore.Store) {
				defer wg.Done()
				_, errs[i] = s.Create(ctx(t), key("same"), enc("same", nil))
			}(i, s)
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			} else if !errors.Is(err, kv.ErrExists) {
				t.Errorf("create: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d creates won across two processes; want 1", wins)
		}
	})
}
