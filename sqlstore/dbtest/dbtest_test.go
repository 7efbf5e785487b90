package dbtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// backend describes how a test reaches one kind of server.
type backend struct {
	name   string
	newURL func(testing.TB) string
	driver string
	dsn    func(url string) (string, error)
	// bind returns the placeholder for the n-th (1-based) parameter.
	bind func(n int) string
	// tables counts the tables in the connection's own database.
	tables string
	// current names the connection's database.
	current string
}

var backends = []backend{
	{
		name:    "Postgres",
		newURL:  dbtest.Postgres,
		driver:  "pgx",
		dsn:     func(u string) (string, error) { return u, nil },
		bind:    func(n int) string { return fmt.Sprintf("$%d", n) },
		tables:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
		current: "SELECT current_database()",
	},
	{
		name:    "MariaDB",
		newURL:  dbtest.MariaDB,
		driver:  "mysql",
		dsn:     dbtest.MySQLDSN,
		bind:    func(int) string { return "?" },
		tables:  "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()",
		current: "SELECT DATABASE()",
	},
}

// forEachBackend runs f as a parallel subtest for every backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

func (b backend) open(t testing.TB, rawURL string) *sql.DB {
	t.Helper()
	dsn, err := b.dsn(rawURL)
	if err != nil {
		t.Fatalf("DSN for %s: %v", rawURL, err)
	}
	db, err := sql.Open(b.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (b backend) countTables(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(b.tables).Scan(&n); err != nil {
		t.Fatalf("counting tables: %v", err)
	}
	return n
}

func TestRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		rawURL := b.newURL(t)
		db := b.open(t, rawURL)

		if n := b.countTables(t, db); n != 0 {
			t.Fatalf("new database has %d tables, want none", n)
		}
		var current string
		if err := db.QueryRow(b.current).Scan(&current); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimPrefix(u.Path, "/"); current != want {
			t.Errorf("connected to database %q, want %q from %s", current, want, rawURL)
		}

		if _, err := db.Exec("CREATE TABLE kv (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"a": "eins", "b": "zwei ✓"}
		for k, v := range want {
			if _, err := db.Exec("INSERT INTO kv (k, v) VALUES ("+b.bind(1)+", "+b.bind(2)+")", k, v); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := db.Query("SELECT k, v FROM kv ORDER BY k")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]string{}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			got[k] = v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("read back %v, want %v", got, want)
		}
	})
}

func TestDatabasesAreSeparate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		first, second := b.newURL(t), b.newURL(t)
		if first == second {
			t.Fatalf("two calls returned the same database %s", first)
		}
		if _, err := b.open(t, first).Exec("CREATE TABLE only_in_first (id INT)"); err != nil {
			t.Fatal(err)
		}
		if n := b.countTables(t, b.open(t, second)); n != 0 {
			t.Errorf("second database has %d tables, want none", n)
		}
	})
}

// TestConcurrent has parallel tests create databases at once and the same
// table in each, which would collide if they shared a database.
func TestConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for i := range 6 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				db := b.open(t, b.newURL(t))
				if _, err := db.Exec("CREATE TABLE same_name (id INT)"); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec("INSERT INTO same_name (id) VALUES ("+b.bind(1)+")", i); err != nil {
					t.Fatal(err)
				}
				var n int
				if err := db.QueryRow("SELECT count(*) FROM same_name").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("table has %d rows, want the 1 this test inserted", n)
				}
			})
		}
	})
}

func TestDroppedWhenTestEnds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		outer := t
		var rawURL string
		t.Run("owner", func(t *testing.T) {
			rawURL = b.newURL(t)
			dsn, err := b.dsn(rawURL)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open(b.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			// A transaction left open past the end of its test must not
			// keep the database alive, nor block dropping it.
			outer.Cleanup(func() { db.Close() })
			if _, err := db.Exec("CREATE TABLE t (id INT)"); err != nil {
				t.Fatal(err)
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO t (id) VALUES (1)"); err != nil {
				t.Fatal(err)
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := b.open(t, rawURL).PingContext(ctx)
		if err == nil {
			t.Fatalf("database %s still exists after its test ended", rawURL)
		}
		if msg := err.Error(); !strings.Contains(msg, "does not exist") && !strings.Contains(msg, "Unknown database") {
			t.Fatalf("connecting to dropped database: %v, want a missing-database error", err)
		}
	})
}

func TestMySQLDSN(t *testing.T) {
	for _, tc := range []struct {
		url, want string
	}{
		{"mysql://root@127.0.0.1:3307/db", "root@tcp(127.0.0.1:3307)/db?parseTime=true"},
		{"mysql://u:p%40ss@db.example:3306/tabula?timeout=5s", "u:p@ss@tcp(db.example:3306)/tabula?parseTime=true&timeout=5s"},
		{"mariadb://u@localhost/x", "u@tcp(localhost:3306)/x?parseTime=true"},
		{"mysql://u@[::1]:3306/x?parseTime=false", "u@tcp([::1]:3306)/x"},
		{"mysql:///x", "tcp(127.0.0.1:3306)/x?parseTime=true"},
		{"mysql://u@h/x?time_zone=%27%2B00%3A00%27", "u@tcp(h:3306)/x?parseTime=true&time_zone=%27%2B00%3A00%27"},
	} {
		got, err := dbtest.MySQLDSN(tc.url)
		if err != nil {
			t.Errorf("MySQLDSN(%q): %v", tc.url, err)
			continue
		}
		if got != tc.want {
			t.Errorf("MySQLDSN(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	for _, bad := range []string{"postgres://u@h/x", "mysql://u@h/a/b", "mysql://u@h/x?timeout=soon", "mysql:x"} {
		if got, err := dbtest.MySQLDSN(bad); err == nil {
			t.Errorf("MySQLDSN(%q) = %q, want an error", bad, got)
		}
	}
}

// TestFreePortNeverRepeats: ports asked for one after another, each
// listener closed at once as a server about to bind it would find it,
// are all different, and each is free when handed out.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := dbtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d handed out but not free: %v", p, err)
		}
		l.Close()
	}
}
