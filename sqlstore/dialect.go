package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// dialect holds what differs between the databases. Each implementation
// lives in its own file with all of that database's special SQL.
type dialect interface {
	// name is the migrations folder: "sqlite", "postgres" or "mysql".
	name() string
	// open returns the pool for reads and the one for writes (the same
	// pool where the database allows concurrent writers).
	open(ctx context.Context, u *url.URL) (read, write *sql.DB, err error)
	// rebind turns "?" placeholders into the dialect's own.
	rebind(q string) string
	// lockMigrations serializes migrations between processes on conn;
	// the returned function releases the lock.
	lockMigrations(ctx context.Context, conn *sql.Conn) (func(), error)
	// writeTx returns the options for a writing transaction.
	writeTx() *sql.TxOptions
	// tryCompactLock takes the cluster-wide compaction lock without
	// waiting; ok is false when another process holds it. unlock releases
	// it (and any connection it held).
	tryCompactLock(ctx context.Context, db *sql.DB) (unlock func(), ok bool, err error)
	// insertIgnore is an INSERT that does nothing when the key exists.
	insertIgnore(table, columns, values string) string
	// upsert is the clause that ends an INSERT so that, where a row with
	// the same key exists, its update columns take the new values instead.
	upsert(key string, update []string) string
	// reclaim returns freed space to the operating system where the
	// database needs telling (SQLite).
	reclaim(ctx context.Context, db *sql.DB) error
	// cacheStatements says whether preparing each query once pays: true
	// for SQLite, which parses SQL in-process on every call. PostgreSQL's
	// driver caches statements itself (and must not when behind a
	// transaction-mode pooler); MySQL interpolates parameters client-side.
	cacheStatements() bool
	// unindexed wraps a column in a comparison so the planner cannot use an
	// index for it, where a planner without statistics would pick the
	// wrong one (SQLite); elsewhere it is the column itself.
	unindexed(col string) string
	// readTx returns the options for a read-only snapshot transaction.
	readTx() *sql.TxOptions
}

// notifier is the optional power of databases that can wake other
// replicas' pollers the moment a write commits (PostgreSQL LISTEN/NOTIFY).
// Without it (or a changeWatcher), other processes' commits are seen at
// the next poll.
type notifier interface {
	// notifySQL takes one argument, the batch's newest revision, which
	// listen passes to wake (0 when a notification carries none).
	notifySQL() string
	// listen calls listening once the subscription is in place (commits
	// before it are not notified, so the caller polls then).
	listen(ctx context.Context, db *sql.DB, listening func(), wake func(rev int64)) error
}

// writeLockedAtBegin is the optional power of dialects whose write
// transactions hold the database's write lock from their start (SQLite's
// BEGIN IMMEDIATE, _txlock=immediate): no other writer, in this process
// or another on the same file, runs until the commit, so the counter row
// needs no lock of its own (an UPDATE of it was ~17 µs a commit).
type writeLockedAtBegin interface{ writeLockedAtBegin() }

// directReads is the optional power of dialects whose point reads never
// wait on another connection (SQLite in WAL mode: readers are not blocked
// by the writer or by each other), so a get needs no cancellation once it
// has a connection. Such gets run on the driver's connection and
// statement directly (directget.go): database/sql's Stmt and Rows start a
// goroutine per query to watch the context, and modernc's driver another;
// with the pool wait still bounded by the request's context, a bounded
// primary-key lookup needs neither (they were ~10 % of a get's CPU at 32
// clients).
//
// Direct gets have a pool of their own (directPool): a query that is
// interrupted (its request cancelled) leaves modernc's connection unusable,
// and database/sql then closes it, with the direct statements prepared on
// it still open: SQLite keeps such a connection and its file as a zombie,
// and finalizing them later used a freed connection (a crash at Close).
// Direct statements run without a context, so their own connections are
// never interrupted.
type directReads interface {
	readsNeverWait()
	directPool(u *url.URL, read *sql.DB) (*sql.DB, error)
}

// uncancelledWrites is the optional power of dialects whose write
// transaction waits for nothing after its BEGIN (SQLite: BEGIN IMMEDIATE
// takes the file's write lock, the only thing a writer waits for; WAL
// readers never block it), so no statement of it needs a context to
// watch: modernc's driver starts a goroutine to watch one for every
// statement, BEGIN and COMMIT included, and database/sql one more for the
// transaction. The one wait, BEGIN's for another process's write lock, is
// bounded by the write connection's busy_timeout, set to the query
// timeout (Store.beginWrite).
type uncancelledWrites interface{ writesNeverWait() }

// rowBytesOwner is the optional power of drivers that give each row's
// bytes a buffer of their own (modernc's SQLite copies every blob out of
// SQLite's page): sql.RawBytes scanned from them stay valid after the
// next row, so a list keeps them instead of copying them again (a fifth
// of a cold list's time). TestRowBytesOwned holds the driver to it.
type rowBytesOwner interface{ ownsRowBytes() }

// textWithoutNUL is the optional weakness of databases whose text columns
// cannot hold a NUL character (PostgreSQL), which Kubernetes allows in any
// string: such names are refused (kv.ErrInvalidKey) or found nowhere, and
// such selector values are left out of tabula_index (selector.go).
type textWithoutNUL interface{ textWithoutNUL() }

// changeWatcher is the optional power of databases whose files the
// operating system can watch (SQLite on Linux): any process's commit
// writes the file, and the watch wakes the poller without a notification
// being sent.
type changeWatcher interface {
	// watchChanges calls watching once the watch is in place (changes
	// before it were not seen, so the caller polls then) and changed
	// after changes, until ctx ends or the watch fails. changed returns
	// how long news of further changes can wait: the watch may collect
	// them meanwhile and tell them once.
	watchChanges(ctx context.Context, db *sql.DB, watching func(), changed func() time.Duration) error
}

func dialectFor(u *url.URL, opts Options) (dialect, error) {
	switch u.Scheme {
	case "sqlite":
		return sqliteDialect{dir: opts.Dir, writeWait: sqliteWriteWait(opts.QueryTimeout)}, nil
	case "postgres", "postgresql":
		return &postgresDialect{}, nil
	case "mysql", "mariadb":
		return mysqlDialect{}, nil
	}
	return nil, fmt.Errorf("sqlstore: unsupported database URL scheme %q (want sqlite, postgres or mysql)", u.Scheme)
}

// onConflictUpsert is the upsert clause of SQLite and PostgreSQL.
func onConflictUpsert(key string, update []string) string {
	set := make([]string, len(update))
	for i, c := range update {
		set[i] = c + " = excluded." + c
	}
	return "ON CONFLICT (" + key + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// rebindDollar numbers placeholders as $1, $2, … for PostgreSQL.
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
