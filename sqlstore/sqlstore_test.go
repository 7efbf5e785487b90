package sqlstore_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

func TestSQLiteFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store {
		return storetest.Open(t, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	})
}

func TestSQLiteMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store {
		return storetest.Open(t, "sqlite://:memory:")
	})
}

func TestMain(m *testing.M) {
	if url := os.Getenv(crashWriterEnv); url != "" {
		runCrashWriter(url)
		return
	}
	dbtest.Main(m)
}

func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store { return storetest.Open(t, dbtest.Postgres(t)) })
}

func TestMariaDB(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store { return storetest.Open(t, dbtest.MariaDB(t)) })
}

// Two processes on one database. PostgreSQL's second store polls only
// every hour, so its watcher can only be woken by LISTEN/NOTIFY.
func TestTwoStoresPostgres(t *testing.T) {
	storetest.RunTwoStores(t, func(t *testing.T) string { return dbtest.Postgres(t) }, time.Hour)
}

func TestTwoStoresMariaDB(t *testing.T) {
	storetest.RunTwoStores(t, func(t *testing.T) string { return dbtest.MariaDB(t) }, 100*time.Millisecond)
}

func TestTwoStoresSQLiteFile(t *testing.T) {
	poll := 100 * time.Millisecond
	if runtime.GOOS == "linux" {
		// The WAL file's watch, not polling, must wake the other process.
		poll = time.Hour
	}
	storetest.RunTwoStores(t, func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	}, poll)
}

// Behind a transaction-mode pooler (PgBouncer) prepared statements do not
// survive between transactions; pgx's simple protocol, chosen in the URL,
// must work for everything.
func TestPostgresSimpleProtocol(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store {
		return storetest.Open(t, dbtest.Postgres(t)+"&default_query_exec_mode=simple_protocol")
	})
}
