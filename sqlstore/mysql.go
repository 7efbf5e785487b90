package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// mysqlDialect serves MySQL and MariaDB. Writes run at READ COMMITTED so
// every statement of a write sees the rows committed before the counter
// lock was granted (set per transaction: MariaDB 10.x and MySQL 8 name the
// session variable differently).
type mysqlDialect struct{}

func (mysqlDialect) name() string           { return "mysql" }
func (mysqlDialect) rebind(q string) string { return q }
func (mysqlDialect) readTx() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

func (mysqlDialect) writeTx() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
}

func (mysqlDialect) lockMigrations(ctx context.Context, conn *sql.Conn) (func(), error) {
	var ok sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('tabula_migrate', 60)").Scan(&ok); err != nil {
		return nil, err
	}
	if ok.Int64 != 1 {
		return nil, fmt.Errorf("sqlstore: timed out waiting for the migration lock")
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK('tabula_migrate')")
	}, nil
}

func (mysqlDialect) tryCompactLock(ctx context.Context, db *sql.DB) (func(), bool, error) {
	// Session locks live on one connection, held until unlock.
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var ok sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('tabula_compact', 0)").Scan(&ok); err != nil {
		conn.Close()
		return nil, false, err
	}
	if ok.Int64 != 1 {
		conn.Close()
		return nil, false, nil
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK('tabula_compact')")
		conn.Close()
	}, true, nil
}

func (mysqlDialect) insertIgnore(table, columns, values string) string {
	return "INSERT IGNORE INTO " + table + " (" + columns + ") VALUES (" + values + ")"
}

// upsert uses VALUES(), which MariaDB and MySQL both accept.
func (mysqlDialect) upsert(_ string, update []string) string {
	set := make([]string, len(update))
	for i, c := range update {
		set[i] = c + " = VALUES(" + c + ")"
	}
	return "ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
}

// reclaim: InnoDB reuses freed pages itself.
func (mysqlDialect) reclaim(context.Context, *sql.DB) error { return nil }

func (mysqlDialect) open(ctx context.Context, u *url.URL) (*sql.DB, *sql.DB, error) {
	dsn, err := MySQLDSN(u)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(16)
	return db, db, nil
}

// MySQLDSN turns mysql://user:pass@host:port/db?params into the
// go-sql-driver form, with the session settings Tabula relies on.
func MySQLDSN(u *url.URL) (string, error) {
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Host == "" {
		cfg.Addr = "127.0.0.1:3306"
	}
	cfg.DBName = trimSlash(u.Path)
	if cfg.DBName == "" {
		return "", fmt.Errorf("sqlstore: mysql URL needs a database name")
	}
	cfg.ParseTime = true
	// Bind parameters client-side: a server-side prepare per query costs
	// two extra round trips.
	cfg.InterpolateParams = true
	cfg.Params = map[string]string{
		"sql_mode": "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
	}
	for k, v := range u.Query() {
		if len(v) > 0 {
			cfg.Params[k] = v[0]
		}
	}
	return cfg.FormatDSN(), nil
}

func trimSlash(s string) string {
	for len(s) > 0 && s[0] == '/' {
		s = s[1:]
	}
	return s
}

func (mysqlDialect) cacheStatements() bool { return false }

// unindexed is the column itself: the planner's statistics pick the index.
func (mysqlDialect) unindexed(col string) string { return col }
