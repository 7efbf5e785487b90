package sqlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteChangeProbe: the probe the watch poller asks on its idle ticks
// says "changed" after a commit by this store (another connection of its
// pools) or by another process's store on the same file, and "unchanged"
// while nothing was committed, so an idle server does not read the log;
// a commit its cheap stat of the WAL file misses is seen within
// probeVerify probes.
func TestSQLiteChangeProbe(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	a, b := openSQLiteFile(t, path), openSQLiteFile(t, path)
	probe, release := sqliteDialect{}.changeProbe(a.read)
	defer release()
	ask := func(want bool, after string) {
		t.Helper()
		changed, err := probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if changed != want {
			t.Errorf("after %s: changed = %v; want %v", after, changed, want)
		}
	}
	ask(true, "the first question") // nothing to compare with yet
	ask(false, "nothing")
	ask(false, "nothing, again")
	createEmpty(t, b, "by-the-other-store")
	ask(true, "a commit by another store on the file")
	ask(false, "nothing since")
	createEmpty(t, a, "by-this-store")
	ask(true, "a commit by this store's writer")
	ask(false, "nothing since")

	// A commit the WAL file's stat cannot show — the WAL restarted at its
	// start and written to the same size, its time put back — is still
	// seen, by the pragma asked every probeVerify-th time.
	wal := path + "-wal"
	var before os.FileInfo
	var err error
	// The WAL restarts only when no reader holds its end (the stores'
	// own pollers read it too): try again until it did.
	for attempt := 1; ; attempt++ {
		for changed := true; changed; {
			if changed, err = probe(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if before, err = os.Stat(wal); err != nil {
			t.Fatal(err)
		}
		var busy, frames, done int
		if err := b.write.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &frames, &done); err != nil {
			t.Fatal(err)
		}
		createEmpty(t, b, fmt.Sprintf("after-restart-%d", attempt))
		after, err := os.Stat(wal)
		if err != nil {
			t.Fatal(err)
		}
		if busy == 0 && after.Size() == before.Size() {
			break
		}
		if attempt == 100 {
			t.Fatalf("setup: the WAL did not restart in place in %d attempts (%d bytes, was %d)", attempt, after.Size(), before.Size())
		}
	}
	if err := os.Chtimes(wal, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		changed, err := probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if changed {
			t.Logf("seen at the %d. probe", n)
			break
		}
		if n == probeVerify {
			t.Fatalf("a commit hidden from stat not seen in %d probes", n)
		}
	}
	ask(false, "nothing since")
}
