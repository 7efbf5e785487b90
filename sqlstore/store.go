package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/migrations"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// defaultPollInterval is Options.PollInterval's default.
const defaultPollInterval = 100 * time.Millisecond

// Options tune a Store; the zero value is usable.
type Options struct {
	// PollInterval is how often the watch poller looks for commits made by
	// other processes when nothing tells it of them (default 100ms).
	// Local commits wake it at once; where the database notifies
	// (PostgreSQL) or its file can be watched (SQLite on Linux), those
	// wake it and it looks only every 5 s as well (or PollInterval, if
	// longer).
	PollInterval time.Duration
	// WatchBuffer is the number of events a watcher may fall behind before
	// it is closed. Default 1000.
	WatchBuffer int
	// WatchBufferBytes bounds the bytes of the events a watcher may fall
	// behind by (one event is always let in). Default 4 MiB.
	WatchBufferBytes int
	// SharedValueBytes is the budget of the cache of values that watches
	// opening with the same state share (kv.ListOptions.Shared). Default
	// 64 MiB.
	SharedValueBytes int
	// CompactWindow is how much history is kept (default 5 minutes, as
	// Kubernetes clusters on etcd); CompactInterval how often the
	// compactor runs (default 1 minute). A negative interval disables the
	// background compactor (tests call Compact directly).
	CompactWindow   time.Duration
	CompactInterval time.Duration
	// SlowQuery is the latency from which a query is logged (default
	// 500ms; negative disables the log).
	SlowQuery time.Duration
	// QueryTimeout bounds each read, write transaction and compaction
	// batch (default 30s; negative means only the caller's context
	// bounds it). It is enforced by cancelling the context, which every
	// driver turns into a cancelled query — unlike a server-side
	// statement_timeout, it needs no session setting a pooler would drop.
	// SQLite's write transactions, whose one wait is for the file's write
	// lock, are bounded by their connection's busy_timeout instead: the
	// query timeout, up to SQLite's 10 s (the writer connection's other
	// lock waits, a checkpoint's, share it). The wait for the pool's
	// connection stays bound by the context.
	QueryTimeout time.Duration
	// Dir is the directory a relative SQLite file path is resolved
	// against (tabula serve passes --data-dir, so sqlite://state.db is
	// <data-dir>/state.db); empty means the working directory.
	Dir    string
	Logger *slog.Logger
	// Standbys are URLs of hot standbys (read replicas) of the
	// database, PostgreSQL only: gets, lists and the watch poller read
	// from them once they have replayed the revision a read needs
	// (StandbyWait at most), else from the primary.
	Standbys    []string
	StandbyWait time.Duration
	// Values, when set, transforms every value on its way to and from the
	// database: encryption at rest (sqlstore/encrypt). Everything above
	// the store sees plain values.
	Values Values
}

// defaultQueryTimeout is Options.QueryTimeout's default.
const defaultQueryTimeout = 30 * time.Second

// Values seals stored values and opens them again; the object's key is
// the authenticated data that binds a sealed value to it.
type Values interface {
	Seal(resource, namespace, name string, plain []byte) ([]byte, error)
	// Open also reports a stale value: one Seal would now store otherwise.
	Open(resource, namespace, name string, stored []byte) (plain []byte, stale bool, err error)
}

// open turns a value read from the database into the plain value; the
// result never aliases v (drivers own the scanned bytes).
func (s *Store) open(key kv.Key, v []byte) ([]byte, error) {
	out, _, err := s.openStale(key, v)
	return out, err
}

// openRow is openStale for a value scanned into sql.RawBytes, valid only
// until the next row: copied, unless the driver gave it a buffer of its
// own (rowBytesOwner) and it needs no opening.
func (s *Store) openRow(key kv.Key, v []byte) ([]byte, bool, error) {
	if _, owned := s.d.(rowBytesOwner); owned && s.opts.Values == nil {
		return v, false, nil
	}
	return s.openStale(key, v)
}

// openStale is open that also says whether the value is stale.
func (s *Store) openStale(key kv.Key, v []byte) ([]byte, bool, error) {
	if s.opts.Values == nil {
		return bytes.Clone(v), false, nil
	}
	out, stale, err := s.opts.Values.Open(key.Resource, key.Namespace, key.Name, v)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: %s %s/%s: %w", key.Resource, key.Namespace, key.Name, err)
	}
	if len(out) > 0 && len(v) > 0 && &out[0] == &v[0] {
		out = bytes.Clone(out)
	}
	return out, stale, nil
}

// seal turns a plain value into the one the database stores.
func (s *Store) seal(key kv.Key, v []byte) ([]byte, error) {
	if s.opts.Values == nil {
		return v, nil
	}
	return s.opts.Values.Seal(key.Resource, key.Namespace, key.Name, v)
}

// Store is the event log on one database.
type Store struct {
	d dialect
	// shapedSQL holds the shaped inserts' texts (shapedInsert), and
	// currentSuffix the upsert clause of tabula_current's.
	shapedSQL     sync.Map
	currentSuffix string
	// noNUL: the database's text cannot hold a NUL (textWithoutNUL).
	noNUL bool
	read  *sql.DB
	write *sql.DB
	opts  Options
	log   *slog.Logger
	hub   *hub
	// shared holds values read for lists that share them; sharedRead
	// counts the bytes read for them.
	shared     *sharedValues
	sharedRead atomic.Int64
	compact    compactState
	writes     chan *writeReq
	// committerDone closes when the group commit loop has exited.
	committerDone chan struct{}
	closed        chan struct{}
	// closedCtx is cancelled when the store closes, for background work.
	closedCtx   context.Context
	cancelClose context.CancelFunc
	wg          sync.WaitGroup
	// closing orders closed against wg.Add: a watch starting while Close
	// waits is refused instead of adding to a WaitGroup being waited on.
	closing sync.RWMutex
	// stmts caches prepared statements by pool and query text, for
	// dialects where preparing is the cost (see dialect.cacheStatements).
	stmts sync.Map
	// kept are statements write transactions ran unprepared, for the
	// committer to prepare (prepareKept).
	keptMu sync.Mutex
	kept   []string
	once   sync.Once
	// indexMax is indexDrivenMax; tests lower it to compare both list paths.
	indexMax int
	// lookupCost is indexLookupCost, countMin indexCountMin; indexLists
	// counts the lists tabula_index drove (all for tests).
	lookupCost int
	countMin   int
	indexLists atomic.Int64
	// keptKeys holds the keys of recent whole lists (keptlists.go);
	// keptListed counts the lists answered from them (for tests).
	keptKeys   keptLists
	keptListed atomic.Int64
	// standbys are the read replicas (standby.go); fence coalesces the
	// primary revision reads that consistent reads on them wait for.
	standbys    []*standby
	nextStandby atomic.Uint32
	fence       fence
	// lsnBarrier: the primary's WAL position after the newest in-place
	// rewrite, which standbys must replay before answering (standby.go).
	lsnBarrier atomic.Pointer[string]
	// checkpointWake asks the background checkpointer to run (nil when
	// there is none); logPages estimates the log written since it last
	// did; checkpointed tells a test what a checkpoint did (checkpoint.go).
	checkpointWake chan struct{}
	logPages       atomic.Int64
	checkpointed   chan checkpointResult
	// directGets: point reads on the driver itself (directget.go), nil
	// where the dialect's reads may wait, on their own pool, directDB.
	directGets *directGets
	directDB   *sql.DB
}

// Open connects to the database named by rawURL (sqlite:///path/file.db,
// sqlite://:memory:, postgres://…, mysql://…), applies pending migrations
// and starts the watch poller.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: parse database URL: %w", err)
	}
	d, err := dialectFor(u, opts)
	if err != nil {
		return nil, err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPollInterval
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 1000
	}
	if opts.WatchBufferBytes <= 0 {
		opts.WatchBufferBytes = 4 << 20
	}
	if opts.SharedValueBytes <= 0 {
		opts.SharedValueBytes = 64 << 20
	}
	if opts.CompactWindow <= 0 {
		opts.CompactWindow = 5 * time.Minute
	}
	if opts.CompactInterval == 0 {
		opts.CompactInterval = time.Minute
	}
	if opts.SlowQuery == 0 {
		opts.SlowQuery = 500 * time.Millisecond
	}
	if opts.QueryTimeout == 0 {
		opts.QueryTimeout = defaultQueryTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StandbyWait == 0 {
		opts.StandbyWait = 10 * time.Millisecond
	}
	r, w, err := d.open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", d.name(), err)
	}
	s := &Store{d: d, read: r, write: w, opts: opts, log: opts.Logger, closed: make(chan struct{}), writes: make(chan *writeReq, maxBatch), committerDone: make(chan struct{}), indexMax: indexDrivenMax, lookupCost: indexLookupCost, countMin: indexCountMin, keptKeys: keptLists{min: keptListMin},
		shared: newSharedValues(opts.SharedValueBytes), checkpointed: make(chan checkpointResult, 1)}
	s.closedCtx, s.cancelClose = context.WithCancel(context.Background())
	s.currentSuffix = s.putCurrentSuffix()
	if dr, ok := d.(directReads); ok {
		if s.directDB, err = dr.directPool(u, r); err != nil {
			r.Close()
			if w != r {
				w.Close()
			}
			return nil, fmt.Errorf("sqlstore: open %s: %w", d.name(), err)
		}
		s.directGets = newDirectGets(s.q)
	}
	_, s.noNUL = d.(textWithoutNUL)
	if err := s.ping(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.prepareWrites(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.openStandbys(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	rev, _, err := s.revs(ctx)
	if err != nil {
		s.closeDBs()
		return nil, err
	}
	s.hub = newHub(s, rev)
	// Compaction lag is measured from start until a run succeeds.
	s.compact.status.LastSuccess = time.Now()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.hub.run()
	}()
	go func() {
		defer s.wg.Done()
		s.runCommitter()
	}()
	if n, ok := d.(notifier); ok {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.hub.runTeller("watch listener", func(ctx context.Context, ready func()) error {
				return n.listen(ctx, s.read, ready, s.hub.notifiedUpTo)
			})
		}()
	}
	// An in-memory database has no file, and no other process.
	if cw, ok := d.(changeWatcher); ok && s.read != s.write {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.hub.runTeller("database file watch", func(ctx context.Context, ready func()) error {
				return cw.watchChanges(ctx, s.read, ready, s.hub.fileChanged)
			})
		}()
	}
	if opts.CompactInterval > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runCompactor()
		}()
	}
	// An in-memory database has no log to checkpoint.
	if c, ok := d.(checkpointer); ok && s.read != s.write {
		s.checkpointWake = make(chan struct{}, 1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runCheckpointer(c)
		}()
	}
	return s, nil
}

// Dialect names the database kind: "sqlite", "postgres" or "mysql".
func (s *Store) Dialect() string { return s.d.name() }

func (s *Store) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.write.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: connect to %s: %w", s.d.name(), err)
	}
	return nil
}

// Ready checks that the database answers a query; /readyz uses it.
func (s *Store) Ready(ctx context.Context) error {
	_, _, err := s.revs(ctx)
	return err
}

// Close stops the poller, ends every watch and closes the database.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closing.Lock()
		close(s.closed)
		s.closing.Unlock()
		s.cancelClose()
	})
	s.wg.Wait()
	s.keptKeys.drop()
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	if s.directGets != nil {
		s.directGets.close()
		if s.directDB != s.read {
			s.directDB.Close()
		}
	}
	s.closeStandbys()
	err := s.read.Close()
	if s.write != s.read {
		err = errors.Join(err, s.write.Close())
	}
	if c, ok := s.d.(interface{ close() }); ok {
		c.close()
	}
	return err
}

func (s *Store) q(query string) string { return s.d.rebind(query) }

// bound limits ctx to the query timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.QueryTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.opts.QueryTimeout)
}

// revs reads the newest and the compacted revision.
func (s *Store) revs(ctx context.Context) (current, compacted int64, err error) {
	defer s.observe("revs", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err = s.readQueryRow(ctx, s.q("SELECT rev, compact_rev FROM tabula_rev WHERE id = 1")).Scan(&current, &compacted)
	if err != nil {
		return 0, 0, unavailable(err)
	}
	return current, compacted, nil
}

// CurrentRev returns the newest revision.
func (s *Store) CurrentRev(ctx context.Context) (int64, error) {
	rev, _, err := s.revs(ctx)
	return rev, err
}

// migrate applies pending migrations, each in its own transaction (MySQL
// commits DDL implicitly, so there a failed migration may stop half-way and
// is retried from its first statement, which is why each statement is
// idempotent or the migration is one statement).
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations.For(s.d.name())
	if err != nil {
		return err
	}
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	unlock, err := s.d.lockMigrations(ctx, conn)
	if err != nil {
		return fmt.Errorf("sqlstore: lock migrations: %w", err)
	}
	defer unlock()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS tabula_migrations (version INTEGER PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(64) NOT NULL)"); err != nil {
		return fmt.Errorf("sqlstore: create migrations table: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM tabula_migrations")
	if err != nil {
		return err
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, stmt := range m.Statements {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("sqlstore: migration %s: %w", m.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO tabula_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
			m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: record migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlstore: commit migration %s: %w", m.Name, err)
		}
		s.log.Info("applied migration", "dialect", s.d.name(), "migration", m.Name)
	}
	return nil
}

// unavailable marks connection-level failures so callers can answer 503.
func unavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
}
