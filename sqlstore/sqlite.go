package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sqliteDialect: WAL mode, one writer connection (SQLite has one writer at
// a time; queuing in Go beats SQLITE_BUSY retries), a pool of readers.
type sqliteDialect struct {
	// dir is what a relative file path is relative to (Options.Dir).
	dir string
	// writeWait bounds the writer's wait for another process's write
	// lock on the file (its busy_timeout): see Store.beginWrite.
	writeWait time.Duration
}

// sqliteBusyTimeout is the readers' busy_timeout, and the writer's most.
const sqliteBusyTimeout = 10 * time.Second

// sqliteWriteWait is the writer's busy_timeout for a query timeout
// (Options.QueryTimeout: 0 is its default, negative none): the timeout,
// up to sqliteBusyTimeout, which bounded the wait before either way.
func sqliteWriteWait(queryTimeout time.Duration) time.Duration {
	if queryTimeout == 0 {
		queryTimeout = defaultQueryTimeout
	}
	if queryTimeout < 0 || queryTimeout > sqliteBusyTimeout {
		return sqliteBusyTimeout
	}
	// busy_timeout counts milliseconds, and 0 would not wait at all.
	return max(queryTimeout, time.Millisecond)
}

func (sqliteDialect) name() string           { return "sqlite" }
func (sqliteDialect) ownsRowBytes()          {}
func (sqliteDialect) readsNeverWait()        {}
func (sqliteDialect) writesNeverWait()       {}
func (sqliteDialect) writeLockedAtBegin()    {}
func (sqliteDialect) concatKeys()            {}
func (sqliteDialect) rebind(q string) string { return q }
func (sqliteDialect) readTx() *sql.TxOptions { return &sql.TxOptions{ReadOnly: true} }

func (sqliteDialect) writeTx() *sql.TxOptions { return nil }

// tryCompactLock: one file has one writer at a time; processes sharing a
// file compact in turn, which is harmless.
func (sqliteDialect) tryCompactLock(context.Context, *sql.DB) (func(), bool, error) {
	return func() {}, true, nil
}

func (sqliteDialect) insertIgnore(table, columns, values string) string {
	return "INSERT OR IGNORE INTO " + table + " (" + columns + ") VALUES (" + values + ")"
}

func (sqliteDialect) upsert(key string, update []string) string { return onConflictUpsert(key, update) }

// reclaim checkpoints the WAL into the main file and truncates it, then
// returns free pages to the file system (incremental auto-vacuum), so the
// files stay bounded under steady churn without a blocking VACUUM.
func (sqliteDialect) reclaim(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "PRAGMA incremental_vacuum(2000)"); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// checkpoint runs a PASSIVE checkpoint: the pages no reader still needs
// are copied and the file synced; neither readers nor the writer wait.
func (sqliteDialect) checkpoint(ctx context.Context, db *sql.DB) (logPages, copied int64, err error) {
	var busy int64
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &copied)
	return logPages, copied, err
}

// backup copies the database at one snapshot into a new file with
// VACUUM INTO, which reads in one transaction beside the writers (WAL).
func (sqliteDialect) backup(ctx context.Context, db *sql.DB, dest string) error {
	_, err := db.ExecContext(ctx, "VACUUM INTO ?", dest)
	return err
}

// lockMigrations: the writer connection is the only writer, and
// BEGIN IMMEDIATE in each migration serializes processes sharing a file.
func (sqliteDialect) lockMigrations(context.Context, *sql.Conn) (func(), error) {
	return func() {}, nil
}

// sqlitePath is the file a sqlite:// URL names: sqlite:///abs/file.db is
// absolute, sqlite://file.db and sqlite://sub/file.db are relative to dir.
// ":memory:" and "" stand for an in-memory database.
func sqlitePath(u *url.URL, dir string) string {
	path := u.Host + u.Path
	if u.Opaque != "" {
		path = u.Opaque
	}
	if path == ":memory:" || path == "" || filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// sqlitePragmas: WAL for concurrent readers, FULL sync for durability of
// acknowledged writes, and incremental auto-vacuum (effective for files
// created with it) so compaction can give space back.
var sqlitePragmas = sqlitePragmasWaiting(sqliteBusyTimeout)

// sqlitePragmasWaiting is sqlitePragmas with busy_timeout wait.
func sqlitePragmasWaiting(wait time.Duration) string {
	return "_pragma=auto_vacuum(INCREMENTAL)&_pragma=busy_timeout(" + strconv.FormatInt(wait.Milliseconds(), 10) +
		")&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)"
}

func (d sqliteDialect) open(ctx context.Context, u *url.URL) (*sql.DB, *sql.DB, error) {
	path := sqlitePath(u, d.dir)
	if path == ":memory:" || path == "" {
		// A named shared-cache in-memory database lives as long as one
		// connection is open; a single connection also avoids shared-cache
		// table locks between readers and the writer.
		var b [8]byte
		_, _ = rand.Read(b[:])
		dsn := "file:tabula-" + hex.EncodeToString(b[:]) + "?mode=memory&cache=shared&_pragma=busy_timeout(10000)&_txlock=immediate"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db, db, nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("sqlstore: create database directory: %w", err)
		}
	}
	base := "file:" + path + "?" + sqlitePragmas
	// The writer checkpoints only as a backstop (checkpoint.go), and
	// waits for another process's write lock no longer than writeWait
	// (set by dialectFor).
	writer := "file:" + path + "?" + sqlitePragmasWaiting(d.writeWait)
	w, err := sql.Open("sqlite", writer+"&_txlock=immediate&_pragma=wal_autocheckpoint("+strconv.Itoa(checkpointBackstopPages)+")")
	if err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", base)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	return r, w, nil
}

func (sqliteDialect) cacheStatements() bool { return true }

// directPool opens the direct gets' connections to the file (see
// directReads); an in-memory database has its one connection, which an
// interruption does not discard.
func (d sqliteDialect) directPool(u *url.URL, read *sql.DB) (*sql.DB, error) {
	path := sqlitePath(u, d.dir)
	if path == ":memory:" || path == "" {
		return read, nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return db, nil
}

// changeProbe answers, on one connection kept for it, whether any
// connection (this process's or another's) committed since the last
// call: SQLite's data_version moves on every commit made by any other
// connection to the file, and reading it is a pragma, not a query of the
// log. The poller's idle ticks ask it first, so an idle server reads
// nothing (the log query was most of its idle CPU). On Linux the WAL
// file is watched as well (sqlite_linux.go), and the ticks are rare.
//
// The pragma still begins a read transaction (locks, the WAL index): on
// an idle server, its code and data cold after 100 ms, about 0.2 ms a
// time and most of what the server did. Every commit writes the WAL
// file, so while its size and modification time stay as they were
// nothing was committed, and a stat answers; the pragma is asked when
// they moved, and every probeVerify-th time regardless, for the rare
// commit a stat cannot see (the WAL restarted at its start, within the
// file system's timestamp granularity).
func (sqliteDialect) changeProbe(db *sql.DB) (probe func(context.Context) (bool, error), release func()) {
	var conn *sql.Conn
	var stmt *sql.Stmt // prepared once: parsing it was half the probe's cost
	last := int64(-1)
	var wal string // the WAL file's path ("": stat not used)
	var walSeen os.FileInfo
	asked := 0
	drop := func() {
		if stmt != nil {
			_ = stmt.Close()
		}
		if conn != nil {
			_ = conn.Close()
		}
		conn, stmt, last, walSeen = nil, nil, -1, nil
	}
	probe = func(ctx context.Context) (bool, error) {
		asked++
		if walSeen != nil && asked%probeVerify != 0 {
			fi, err := os.Stat(wal)
			if err == nil && fi.Size() == walSeen.Size() && fi.ModTime().Equal(walSeen.ModTime()) {
				return false, nil
			}
		}
		if conn == nil {
			c, err := db.Conn(ctx)
			if err != nil {
				return true, err
			}
			st, err := c.PrepareContext(ctx, "PRAGMA data_version")
			if err != nil {
				_ = c.Close()
				return true, err
			}
			conn, stmt = c, st
			wal = walPath(ctx, c)
		}
		// The WAL's state before the pragma: a commit between the two is
		// then seen by the next stat.
		walSeen = nil
		if wal != "" {
			walSeen, _ = os.Stat(wal)
		}
		var v int64
		if err := stmt.QueryRowContext(ctx).Scan(&v); err != nil {
			drop()
			return true, err
		}
		changed := v != last
		last = v
		return changed, nil
	}
	return probe, drop
}

// probeVerify: every this many probes the pragma is asked even when the
// WAL file looks untouched (once a second at the 100 ms poll, every 50 s
// while the file is watched).
const probeVerify = 10

// walPath is the WAL file of the database c is connected to, or "" when
// it has none (in memory).
func walPath(ctx context.Context, c *sql.Conn) string {
	rows, err := c.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return ""
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var name, file string
		if rows.Scan(&seq, &name, &file) == nil && name == "main" && file != "" {
			return file + "-wal"
		}
	}
	return ""
}

// unindexed uses SQLite's unary plus, which keeps a term from driving an
// index: without statistics SQLite prefers an equality on an index prefix
// to a short rowid range, and would scan a resource's whole history.
func (sqliteDialect) unindexed(col string) string { return "+" + col }
