package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// SQLite appends every commit to its write-ahead log and copies the log's
// pages back into the database file in a checkpoint. Left to itself it
// runs that checkpoint inside the commit that takes the log past
// wal_autocheckpoint pages (1,000 by default): about one commit in two
// hundred then copied and synced a thousand pages before it returned,
// milliseconds during which that write, every write queued behind it and
// every watcher of them waited. The store checkpoints in the background
// instead, on a reader connection, each time its commits have written
// about checkpointPages: a PASSIVE checkpoint waits for no reader and no
// writer. The next write starts the log over if the checkpoint copied all
// of it; under steady writes one usually lands meanwhile, so the log grows
// until the writer's own checkpoint, left at checkpointBackstopPages,
// copies the few pages the last background one did not and starts it
// over (a commit in a few hundred pays for ~checkpointPages/2 pages then,
// not a thousand).
const (
	// checkpointPages is how many pages of log (estimated, see
	// pagesWritten) start a background checkpoint.
	checkpointPages = 1000
	// checkpointBackstopPages is the writer's wal_autocheckpoint: 16 MiB
	// of log at most between restarts, where SQLite's default allows 4.
	checkpointBackstopPages = 4096
	// sqlitePageSize is the page size of files Tabula creates (SQLite's
	// default).
	sqlitePageSize = 4096
)

// checkpointer is the optional power of databases whose log the store
// checkpoints itself (SQLite in a file).
type checkpointer interface {
	// checkpoint copies what it can of the log into the database file
	// without waiting for readers or the writer; it reports the log's
	// pages and how many of them are now in the file.
	checkpoint(ctx context.Context, db *sql.DB) (logPages, copied int64, err error)
}

// checkpointResult is what one background checkpoint did (for tests).
type checkpointResult struct {
	logPages, copied int64
	err              error
}

// pagesWritten estimates the log pages a committed plan wrote: its values
// over the page size, and for each row the pages of the log's and the
// current table's b-trees and indexes it rewrote (four, from 1 KiB
// creates one at a time writing about six pages).
func pagesWritten(p batchPlan) int64 {
	n := int64(4 * len(p.log))
	for _, r := range p.log {
		n += int64(len(r.e.Value)) / sqlitePageSize
	}
	return n
}

// wroteLog counts what a commit added to the log and wakes the
// checkpointer once it comes to checkpointPages.
func (s *Store) wroteLog(p batchPlan) {
	if s.checkpointWake == nil {
		return
	}
	if s.logPages.Add(pagesWritten(p)) >= checkpointPages {
		select {
		case s.checkpointWake <- struct{}{}:
		default: // one is pending already
		}
	}
}

// runCheckpointer checkpoints the log each time the writer asks, until the
// store closes.
func (s *Store) runCheckpointer(c checkpointer) {
	for {
		select {
		case <-s.closed:
			return
		case <-s.checkpointWake:
		}
		s.logPages.Store(0)
		ctx, cancel := context.WithTimeout(s.closedCtx, time.Minute)
		logPages, copied, err := c.checkpoint(ctx, s.read)
		cancel()
		switch {
		case err != nil:
			checkpoints.WithLabelValues("failed").Inc()
			s.log.Debug("background checkpoint failed", "err", err)
		case copied < logPages:
			checkpoints.WithLabelValues("partial").Inc()
		default:
			checkpoints.WithLabelValues("done").Inc()
		}
		select {
		case s.checkpointed <- checkpointResult{logPages, copied, err}:
		default: // nobody (but a test) waits for it
		}
	}
}
