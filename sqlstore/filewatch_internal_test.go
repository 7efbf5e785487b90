//go:build linux

package sqlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestFileWatchWaitsWhileTold: the WAL file's watch tells changes as
// they come when the news cannot wait. When it can (changed says for how
// long), the commits made meanwhile are not told until that is over, then
// they are; a watch waiting so ends with its context.
func TestFileWatchWaitsWhileTold(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	// The watch under test is another store's on the same file: that
	// store's own watch and poller play no part.
	writer, watched := openSQLiteFile(t, path), openSQLiteFile(t, path)
	n := 0
	create := func() {
		n++
		createEmpty(t, writer, fmt.Sprint("c", n))
	}
	// watch runs a watch whose changed reports each call on told and
	// answers quiet(the call's number, from 1); it returns the watch's
	// end.
	watch := func(ctx context.Context, quiet func(call int) time.Duration, told chan<- struct{}) <-chan error {
		ready, done := make(chan struct{}), make(chan error, 1)
		calls := 0
		go func() {
			done <- sqliteDialect{}.watchChanges(ctx, watched.read, func() { close(ready) }, func() time.Duration {
				calls++
				told <- struct{}{}
				return quiet(calls)
			})
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("watch: %v", err)
		}
		return done
	}

	// The news cannot wait: the watch keeps telling, commit after commit
	// (a commit's dozen writes may be told more than once).
	ctx1, cancel1 := context.WithCancel(ctx)
	told := make(chan struct{}, 1000)
	done := watch(ctx1, func(int) time.Duration { return 0 }, told)
	for range 5 {
		create()
		<-told
	}
	cancel1()
	<-done

	// The news can wait an hour: after the first commit is told, the
	// next twenty are not while the watch waits, and the waiting watch
	// ends with its context.
	ctx2, cancel2 := context.WithCancel(ctx)
	told = make(chan struct{}, 1000)
	done = watch(ctx2, func(int) time.Duration { return time.Hour }, told)
	create()
	<-told
	for range 20 {
		create()
	}
	if got := len(told); got != 0 {
		t.Errorf("while the news could wait: told %d more times; want none", got)
	}
	cancel2()
	if err := <-done; err != context.Canceled {
		t.Errorf("waiting watch ended with %v; want context.Canceled", err)
	}

	// The news can wait a moment: the commits made meanwhile are told
	// after it.
	ctx3, cancel3 := context.WithCancel(ctx)
	told = make(chan struct{}, 1000)
	done = watch(ctx3, func(call int) time.Duration {
		if call == 1 {
			return 20 * time.Millisecond
		}
		return 0
	}, told)
	create()
	<-told
	for range 20 {
		create()
	}
	<-told
	cancel3()
	<-done
}

// TestFileChangedHolds: the poller's answer to a changed file is how long
// until it reads the log for it: the rest of holdGap after this process's
// last commit, and nothing to wait for when it has not committed lately.
func TestFileChangedHolds(t *testing.T) {
	h := openSQLiteFile(t, filepath.Join(t.TempDir(), "state.db")).hub
	if q := h.fileChanged(); q > 0 {
		t.Errorf("no commit here yet: news can wait %v; want none", q)
	}
	at := time.Now()
	h.localAt.Store(at.UnixNano())
	q := h.fileChanged()
	since := time.Since(at)
	if gap := h.holdGap(); q > gap || q < gap-since {
		t.Errorf("just after a commit here: news can wait %v; want between %v and %v", q, gap-since, gap)
	}
	h.localAt.Store(at.Add(-h.holdGap()).UnixNano())
	if q := h.fileChanged(); q > 0 {
		t.Errorf("holdGap after the last commit here: news can wait %v; want none", q)
	}
}
