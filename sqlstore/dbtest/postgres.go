package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// pgUser is the superuser initdb creates; with trust authentication it
// needs no password.
const pgUser = "tabula"

var pgServer lazyServer

// Postgres returns the URL of a new, empty PostgreSQL database for t,
//
//	postgres://tabula@127.0.0.1:PORT/NAME?sslmode=disable
//
// on this test binary's PostgreSQL server, which it starts on first use.
// The database is dropped when t ends. The server binaries are taken from
// $TABULA_PG_BIN, else the newest /usr/lib/postgresql/*/bin, else $PATH.
func Postgres(t testing.TB) string {
	t.Helper()
	s := pgServer.get(t, startPostgres)
	name := databaseName(t)
	newDatabase(t, s, name, `CREATE DATABASE "`+name+`"`, func(ctx context.Context) error {
		// FORCE ends connections the test left open, which would
		// otherwise make the drop fail.
		_, err := s.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		return err
	})
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", pgUser, s.port, name)
}

func startPostgres() (_ *server, err error) {
	began := time.Now()
	bin, cred, dir, err := postgresDir("tabula-postgres-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")

	// Durability buys nothing for a database that lives as long as a test run.
	if err := runTool(cred, dir, filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", pgUser, "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, err
	}

	initialised := time.Since(began)

	s, err := launchPostgres("PostgreSQL", bin, cred, dir, data)
	if err != nil {
		return nil, err
	}
	s.initialised, s.started = initialised, time.Since(began)
	return s, nil
}

// runTool runs a setup tool (initdb, pg_basebackup) in dir to completion,
// its output in dir/<tool>.log.
func runTool(cred *syscall.Credential, dir, path string, args ...string) error {
	logPath := filepath.Join(dir, filepath.Base(path)+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	return run(command(log, cred, dir, path, args...), logPath)
}

// postgresDir finds the server binaries and the user to run them as, and
// makes a temporary directory that user owns and can reach.
func postgresDir(prefix string) (bin string, cred *syscall.Credential, dir string, err error) {
	if bin, err = postgresBinDir(); err != nil {
		return "", nil, "", err
	}
	if cred, err = postgresCredential(); err != nil {
		return "", nil, "", err
	}
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", nil, "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", nil, "", err
		}
		if err := checkSearchable(filepath.Dir(dir), cred); err != nil {
			os.RemoveAll(dir)
			return "", nil, "", err
		}
	}
	return bin, cred, dir, nil
}

// launchPostgres starts the server on the data directory data, with
// settings for tests (and extra ones), and waits until it answers.
func launchPostgres(kind, bin string, cred *syscall.Credential, dir, data string, extra ...string) (*server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		kind:    kind,
		port:    port,
		dir:     dir,
		logPath: filepath.Join(dir, "postgres.log"),
		stopSig: syscall.SIGINT, // "fast" shutdown: does not wait for clients to leave
	}
	log, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()

	postgres := command(log, cred, dir, filepath.Join(bin, "postgres"), append([]string{
		"-D", data,
		"-p", strconv.Itoa(port),
		"-k", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "max_connections=200",
	}, extra...)...)
	if err := s.launch(postgres); err != nil {
		return nil, err
	}
	s.admin, err = sql.Open("pgx", fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", pgUser, port))
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := s.waitReady(60*time.Second, func(ctx context.Context) error {
		return s.admin.QueryRowContext(ctx, "SHOW server_version").Scan(&s.version)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// postgresBinDir finds a directory holding both initdb and postgres.
func postgresBinDir() (string, error) {
	has := func(dir string) bool {
		return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
	}
	if dir := os.Getenv("TABULA_PG_BIN"); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("TABULA_PG_BIN=%s holds no initdb and postgres executables", dir)
		}
		return dir, nil
	}
	// Debian installs each major version side by side and keeps them off
	// $PATH.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return -compareVersions(filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b)))
	})
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	if p, err := findExecutable([]string{"initdb"}, nil); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found in $TABULA_PG_BIN, " +
		"/usr/lib/postgresql/*/bin or $PATH: install them with `apt-get install postgresql`")
}

// compareVersions orders dotted version numbers such as "9.6" and "15".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// postgresCredential returns the user to run PostgreSQL as. PostgreSQL
// refuses to run as root, so root runs it as nobody; anyone else runs it
// as themselves.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and user nobody to run it as is missing: %v", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	// Empty Groups drops root's supplementary groups too.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// checkSearchable reports whether cred may pass through dir and each of its
// parents, as the server must to reach its data directory. A $TMPDIR
// inside root's home, for one, is not, and initdb's own error for that is
// obscure.
func checkSearchable(dir string, cred *syscall.Credential) error {
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		var bit fs.FileMode = 0o001
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case st.Gid == cred.Gid:
			bit = 0o010
		}
		if fi.Mode().Perm()&bit == 0 {
			return fmt.Errorf("PostgreSQL must run as uid %d, which cannot search %s (mode %v): "+
				"point $TMPDIR at a directory it can reach, such as /tmp", cred.Uid, dir, fi.Mode())
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

var pgStandby lazyServer

// PostgresStandby returns the URL of the copy of primaryURL's database (a
// URL from Postgres) on a hot standby of this test binary's PostgreSQL
// server: a second server, started on first use from a base backup of the
// first, that replays its WAL by streaming replication and answers
// read-only queries. It waits until the standby has the database.
//
// The standby is shared: pausing its replay (pg_wal_replay_pause) pauses
// it for every database, so tests that do must not run in parallel with
// other standby tests.
func PostgresStandby(t testing.TB, primaryURL string) string {
	t.Helper()
	primary := pgServer.get(t, startPostgres)
	s := pgStandby.get(t, func() (*server, error) { return startPostgresStandby(primary) })
	u, err := url.Parse(primaryURL)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	// The database was created before this call: once the standby has
	// replayed the primary's WAL as it stands now, it has the database.
	if err := waitReplayed(primary, s, 30*time.Second); err != nil {
		t.Fatalf("dbtest: database %s: %v%s", name, err, logTail(s.logPath))
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", pgUser, s.port, name)
}

// WaitStandby waits until the hot standby (started by PostgresStandby) has
// replayed everything the primary had written when it was called.
func WaitStandby(t testing.TB) {
	t.Helper()
	primary := pgServer.get(t, startPostgres)
	s := pgStandby.get(t, func() (*server, error) { return startPostgresStandby(primary) })
	if err := waitReplayed(primary, s, 30*time.Second); err != nil {
		t.Fatalf("dbtest: %v%s", err, logTail(s.logPath))
	}
}

// waitReplayed polls standby until it has replayed primary's WAL up to
// the position it had at the call (PostgreSQL 15 has no query that
// blocks until then).
func waitReplayed(primary, standby *server, timeout time.Duration) error {
	var lsn string
	if err := primary.admin.QueryRow("SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		var done sql.NullBool
		err := standby.admin.QueryRow("SELECT pg_last_wal_replay_lsn() >= CAST($1 AS pg_lsn)", lsn).Scan(&done)
		if err == nil && done.Bool {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("the standby did not replay the primary's WAL up to %s within %v (err %v)", lsn, timeout, err)
		}
	}
}

// startPostgresStandby takes a base backup of primary and starts it as a
// streaming hot standby (pg_basebackup -R writes standby.signal and the
// primary_conninfo to follow).
func startPostgresStandby(primary *server) (_ *server, err error) {
	began := time.Now()
	bin, cred, dir, err := postgresDir("tabula-postgres-standby-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	// initdb's trust rules admit replication connections from loopback.
	if err := runTool(cred, dir, filepath.Join(bin, "pg_basebackup"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", pgUser,
		"-D", data, "-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		return nil, err
	}
	initialised := time.Since(began)
	s, err := launchPostgres("PostgreSQL hot standby", bin, cred, dir, data,
		"-c", "hot_standby=on",
		// Tells the primary which rows the standby's queries still
		// read, so replay cancels none of them.
		"-c", "hot_standby_feedback=on")
	if err != nil {
		return nil, err
	}
	s.initialised, s.started = initialised, time.Since(began)
	return s, nil
}
