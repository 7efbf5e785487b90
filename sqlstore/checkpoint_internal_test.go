package sqlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestBackgroundCheckpoint: on a SQLite file the writer checkpoints only
// as a backstop, and the store's checkpointer copies the log into the
// file once commits wrote about checkpointPages of it; the next commit
// then starts the log over, so it holds only what came after.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteFile(t, filepath.Join(t.TempDir(), "db.sqlite"))
	var auto int
	if err := s.write.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if auto != checkpointBackstopPages {
		t.Fatalf("the writer's wal_autocheckpoint is %d; want the backstop, %d", auto, checkpointBackstopPages)
	}
	value := []byte(strings.Repeat("v", 1024))
	create := func(name string) {
		t.Helper()
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: name},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// Each create is estimated at four pages: the last of these wakes the
	// checkpointer, and no commit comes while it runs.
	for i := range checkpointPages / 4 {
		create(fmt.Sprintf("o%04d", i))
	}
	var res checkpointResult
	select {
	case res = <-s.checkpointed:
	case <-time.After(30 * time.Second):
		t.Fatal("no background checkpoint after the log grew past its threshold")
	}
	if res.err != nil || res.logPages < checkpointPages || res.copied != res.logPages {
		t.Fatalf("checkpoint: %d of %d log pages copied, err %v; want all of at least %d", res.copied, res.logPages, res.err, checkpointPages)
	}
	create("after")
	var busy, logPages, copied int64
	if err := s.read.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &copied); err != nil {
		t.Fatal(err)
	}
	if logPages == 0 || logPages >= res.logPages/4 {
		t.Fatalf("after one more commit the log holds %d pages (it held %d at the checkpoint); want it started over", logPages, res.logPages)
	}
}
