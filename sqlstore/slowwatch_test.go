package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// slowAndFast writes n objects of value to a store opened with opts while
// one watcher reads every event as it comes and another reads none; it
// returns how many events the slow one still delivers once drained, and
// why it ended.
func slowAndFast(t *testing.T, opts sqlstore.Options, n int, value []byte) (int, error) {
	t.Helper()
	ctx := context.Background()
	s, start, slow := watchedStore(t, opts)
	fast, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	for i := 0; i < n; i++ {
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: fmt.Sprint(i)},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }); err != nil {
			t.Fatal(err)
		}
		// Drain the fast watcher as we go.
		select {
		case ev := <-fast.Events():
			if ev.Rev != start+int64(i)+1 {
				t.Fatalf("fast watcher got rev %d; want %d", ev.Rev, start+int64(i)+1)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("fast watcher starved at event %d", i)
		}
	}
	got := 0
	deadline := time.After(20 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-slow.Events():
			if open {
				got++
			}
		case <-deadline:
			t.Fatal("slow watcher was never closed")
		}
	}
	return got, slow.Err()
}

// TestSlowWatcherIsClosed: a watcher that stops reading is closed once its
// buffer is full, while a reading watcher gets every event.
func TestSlowWatcherIsClosed(t *testing.T) {
	const n = 50
	got, err := slowAndFast(t, sqlstore.Options{WatchBuffer: 10}, n, []byte(`{}`))
	if got >= n || !errors.Is(err, kv.ErrWatchClosed) {
		t.Fatalf("slow watcher delivered %d of %d events and ended with %v; want fewer and ErrWatchClosed", got, n, err)
	}
}

// TestSlowWatcherBoundedInBytes: a watcher that stops reading is closed
// once the events it has not taken exceed its byte budget, long before
// its count budget, and a reading watcher gets every event.
func TestSlowWatcherBoundedInBytes(t *testing.T) {
	const n = 40 // 640 KiB: ten times the budget, a twenty-fifth of the count
	value := []byte(`{"data":"` + strings.Repeat("x", 16<<10) + `"}`)
	got, err := slowAndFast(t, sqlstore.Options{WatchBuffer: 1000, WatchBufferBytes: 64 << 10}, n, value)
	// The budget holds 3 of these events; a few more are in hand between
	// the store and its reader.
	if got >= 20 || !errors.Is(err, kv.ErrWatchClosed) {
		t.Fatalf("slow watcher delivered %d of %d events of 16 KiB with a 64 KiB budget and ended with %v; want it closed after a handful", got, n, err)
	}
}

// TestWatchBehindAndCaughtUp: a watcher read one event at a time, then
// left behind by bursts longer than its handoff, then caught up again,
// gets every event once and in order throughout. (A caught-up watcher is
// handed events by the hub itself; one that fell behind a handoff queues
// them until it has read them all.) A second watch opened with the state
// while the bursts are written starts after its state and skips nothing.
func TestWatchBehindAndCaughtUp(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start, _ := s.CurrentRev(ctx)
	w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := 0
	write := func() int64 {
		t.Helper()
		n++
		r, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: fmt.Sprint(n)},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte("v")}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return r.Rev
	}
	want := start
	read := func(w kv.Watcher, upTo int64) {
		t.Helper()
		for want < upTo {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					t.Fatalf("watch closed at revision %d: %v", want, w.Err())
				}
				if ev.Rev != want+1 {
					t.Fatalf("got revision %d after %d; want %d", ev.Rev, want, want+1)
				}
				want = ev.Rev
			case <-time.After(20 * time.Second):
				t.Fatalf("no event after revision %d (want up to %d)", want, upTo)
			}
		}
	}
	var last int64
	for range 5 {
		read(w, write())
	}
	var initial kv.Watcher
	for round := range 3 {
		for range 40 { // five handoffs' worth, unread
			last = write()
		}
		if round == 1 {
			if initial, err = s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", Initial: true}); err != nil {
				t.Fatal(err)
			}
			defer initial.Stop()
		}
		read(w, last)
		for range 3 {
			read(w, write())
		}
		last = want
	}
	// The watch with the state: its Added objects, then the end of the
	// state, then each later event once, in order.
	var stateAt int64
	seen := map[string]bool{}
	for stateAt == 0 {
		select {
		case ev := <-initial.Events():
			if ev.Type == kv.InitialEnd {
				stateAt = ev.Rev
				break
			}
			if seen[ev.Name] {
				t.Fatalf("the state holds %s twice", ev.Name)
			}
			seen[ev.Name] = true
		case <-time.After(20 * time.Second):
			t.Fatal("the state did not end")
		}
	}
	if int64(len(seen)) != stateAt-start {
		t.Fatalf("the state at revision %d holds %d objects; want %d", stateAt, len(seen), stateAt-start)
	}
	want = stateAt
	read(initial, last)
}

// TestStoppedWatchHasNoProgress: a watcher the hub stopped for falling
// behind lost the events it dropped, so its progress (the revision of its
// bookmarks) must not pass them: it is 0 from the stop on, even once its
// goroutine has handed out all it kept.
func TestStoppedWatchHasNoProgress(t *testing.T) {
	ctx := context.Background()
	s, start, w := watchedStore(t, sqlstore.Options{WatchBuffer: 10})
	for i := range 50 {
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: fmt.Sprint(i)},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	newest := start
	deadline := time.After(20 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-w.Events():
			if open = ok; ok {
				newest = ev.Rev
			}
		case <-deadline:
			t.Fatal("the slow watch was not closed")
		}
	}
	if !errors.Is(w.Err(), kv.ErrWatchClosed) {
		t.Fatalf("the watch ended with %v; want it closed for falling behind", w.Err())
	}
	if p := w.Progress(); p > newest {
		t.Fatalf("progress %d after the stop; the newest event sent was %d", p, newest)
	}
}

// watchedStore opens an in-memory store with opts and a watch of its
// ConfigMaps from its current revision, both closed when t ends.
func watchedStore(t *testing.T, opts sqlstore.Options) (*sqlstore.Store, int64, kv.Watcher) {
	t.Helper()
	ctx := context.Background()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := sqlstore.Open(ctx, "sqlite://:memory:", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	start, _ := s.CurrentRev(ctx)
	w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return s, start, w
}
