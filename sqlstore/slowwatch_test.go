package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestSlowWatcherIsClosed: a watcher that stops reading is closed once its
// buffer is full, while a reading watcher gets every event.
func TestSlowWatcherIsClosed(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{WatchBuffer: 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start, _ := s.CurrentRev(ctx)
	slow, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 50
	for i := 0; i < n; i++ {
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: fmt.Sprint(i)},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil }); err != nil {
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
	if got >= n || !errors.Is(slow.Err(), kv.ErrWatchClosed) {
		t.Fatalf("slow watcher delivered %d of %d events and ended with %v; want fewer and ErrWatchClosed", got, n, slow.Err())
	}
}
