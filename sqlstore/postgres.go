package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// postgresDialect: one pgx pool for reads and writes; PostgreSQL handles
// concurrent writers and the counter row lock orders them. The pool is
// pgxpool's (health checks, idle and lifetime limits, pool_* settings
// from the URL), served to the store through database/sql.
type postgresDialect struct {
	pool *pgxpool.Pool
}

func (*postgresDialect) name() string           { return "postgres" }
func (*postgresDialect) rebind(q string) string { return rebindDollar(q) }
func (*postgresDialect) textWithoutNUL()        {}
func (*postgresDialect) readTx() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

func (*postgresDialect) writeTx() *sql.TxOptions { return nil }

// migrationLockID is an arbitrary constant naming Tabula's advisory lock.
const migrationLockID = 0x7461_6275_6c61 // "tabula"

func (*postgresDialect) lockMigrations(ctx context.Context, conn *sql.Conn) (func(), error) {
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
		return nil, err
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLockID)
	}, nil
}

// compactLockID names the advisory lock held by the one compacting replica.
const compactLockID = 0x7461_6275_6c62

func (*postgresDialect) tryCompactLock(ctx context.Context, db *sql.DB) (func(), bool, error) {
	// Session locks live on one connection, held until unlock.
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", compactLockID).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, err
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", compactLockID)
		conn.Close()
	}, true, nil
}

func (*postgresDialect) insertIgnore(table, columns, values string) string {
	return "INSERT INTO " + table + " (" + columns + ") VALUES (" + values + ") ON CONFLICT DO NOTHING"
}

func (*postgresDialect) upsert(key string, update []string) string {
	return onConflictUpsert(key, update)
}

func (*postgresDialect) keysTable() string {
	return "unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[])) AS k(resource, namespace, name)"
}

func (*postgresDialect) unnest(types []string) string {
	casts := make([]string, len(types))
	for i, t := range types {
		casts[i] = "CAST(? AS " + t + "[])"
	}
	return "unnest(" + strings.Join(casts, ", ") + ")"
}

// reclaim: autovacuum returns space on PostgreSQL.
func (*postgresDialect) reclaim(context.Context, *sql.DB) error { return nil }

// defaultPoolSize is the pool size unless the URL sets pool_max_conns.
const defaultPoolSize = 32

func (d *postgresDialect) open(ctx context.Context, u *url.URL) (*sql.DB, *sql.DB, error) {
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, nil, err
	}
	if !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = defaultPoolSize
	}
	d.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(d.pool)
	return db, db, nil
}

// openReplica opens a pool on a hot standby, sized as the primary's.
func (d *postgresDialect) openReplica(ctx context.Context, u *url.URL) (*sql.DB, func(), error) {
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, nil, err
	}
	if !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = defaultPoolSize
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return stdlib.OpenDBFromPool(pool), pool.Close, nil
}

// isRecoveryConflict: a standby cancelled a query whose rows replay was
// about to remove (serialization_failure); the standby itself is fine.
func isRecoveryConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// isPermissionDenied: insufficient_privilege.
func isPermissionDenied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// notReplayedYet: the standby has no table the primary's migrations just
// created (undefined_table): it is behind.
func notReplayedYet(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// close closes the pool, after the store closed its *sql.DB.
func (d *postgresDialect) close() {
	if d.pool != nil {
		d.pool.Close()
	}
}

// notifyChannel is the LISTEN/NOTIFY channel that tells other replicas a
// batch committed.
const notifyChannel = "tabula_log"

// notifySQL is run inside every writing transaction; PostgreSQL delivers
// the notification when (and only if) the transaction commits.
// The payload is the batch's newest revision, so that the process that
// wrote it, which delivers its own commits, can ignore it.
func (*postgresDialect) notifySQL() string {
	return "SELECT pg_notify('" + notifyChannel + "', $1)"
}

// listen holds one connection in LISTEN and calls wake for every
// notification until ctx ends or the connection fails.
func (*postgresDialect) listen(ctx context.Context, db *sql.DB, listening func(), wake func(rev int64)) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
			return err
		}
		listening()
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				return err
			}
			rev, _ := strconv.ParseInt(n.Payload, 10, 64)
			wake(rev)
		}
	})
}

func (*postgresDialect) cacheStatements() bool { return false }

// unindexed is the column itself: the planner's statistics pick the index.
func (*postgresDialect) unindexed(col string) string { return col }

// runBatchPipelined is runBatch on PostgreSQL in two round trips, with
// pgx sending each group of statements at once: the first begins, locks
// the counter and reads the keys' live rows; the second writes every
// table, moves the counter, notifies and commits. The statements and the
// invariant are runBatch's.
func (s *Store) runBatchPipelined(ctx context.Context, batch []*writeReq) ([]writeResult, error) {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	defer conn.Close()
	var results []writeResult
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		var live map[kv.Key]liveRow
		var rev int64
		err := func() error {
			keys := batchKeys(batch)
			b := &pgx.Batch{}
			b.Queue("BEGIN")
			b.Queue("UPDATE tabula_rev SET rev = rev WHERE id = 1 RETURNING rev")
			chunks := 0
			for start := 0; start < len(keys); start += chunkRows {
				query, args := s.liveRowsQuery(keys[start:min(start+chunkRows, len(keys))])
				b.Queue(query, args...)
				chunks++
			}
			br := pc.SendBatch(ctx, b)
			defer br.Close()
			if _, err := br.Exec(); err != nil {
				return unavailable(err)
			}
			if err := br.QueryRow().Scan(&rev); err != nil {
				return unavailable(err)
			}
			live = make(map[kv.Key]liveRow, len(keys))
			for range chunks {
				rows, err := br.Query()
				if err != nil {
					return err
				}
				err = scanLive(rows, live)
				if rows.Close(); err == nil {
					err = rows.Err()
				}
				if err != nil {
					return err
				}
			}
			return br.Close()
		}()
		if err != nil {
			return rollback(ctx, pc, err)
		}
		p, res := planBatch(batch, live, rev)
		results = res
		if len(p.log) == 0 {
			return rollback(ctx, pc, nil)
		}
		q := &pgxQueue{b: &pgx.Batch{}}
		if err := s.writePlan(q, p); err != nil {
			return rollback(ctx, pc, err)
		}
		q.b.Queue(s.q("UPDATE tabula_rev SET rev = ? WHERE id = 1"), p.log[len(p.log)-1].rev)
		q.b.Queue(s.d.(notifier).notifySQL(), strconv.FormatInt(p.log[len(p.log)-1].rev, 10))
		q.b.Queue("COMMIT")
		br := pc.SendBatch(ctx, q.b)
		for range q.b.Len() {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return rollback(ctx, pc, fmt.Errorf("sqlstore: commit: %w", unavailable(err)))
			}
		}
		if err := br.Close(); err != nil {
			return rollback(ctx, pc, fmt.Errorf("sqlstore: commit: %w", unavailable(err)))
		}
		s.hub.committed(p.log[0].rev, p.log[len(p.log)-1].rev, func() []logRow { return p.events(live) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// pgxQueue queues a batch's write statements for one round trip.
type pgxQueue struct{ b *pgx.Batch }

func (q *pgxQueue) exec(query string, args ...any) error {
	q.b.Queue(query, args...)
	return nil
}

// execShaped is exec: pgx prepares and caches every statement it runs.
func (q *pgxQueue) execShaped(query string, args ...any) error { return q.exec(query, args...) }

// rollback ends a pipelined transaction that failed (or wrote nothing)
// and returns err. A connection that cannot roll back is dropped from the
// pool rather than handed on mid-transaction.
func rollback(ctx context.Context, pc *pgx.Conn, err error) error {
	if _, rerr := pc.Exec(ctx, "ROLLBACK"); rerr != nil {
		if err == nil {
			err = unavailable(rerr)
		}
		return errors.Join(err, driver.ErrBadConn)
	}
	return err
}
