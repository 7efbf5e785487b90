package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

var mariaServer lazyServer

// MariaDB returns the URL of a new, empty MariaDB (or MySQL) database for t,
//
//	mysql://root@127.0.0.1:PORT/NAME
//
// on this test binary's MariaDB server, which it starts on first use. The
// database is dropped when t ends. MySQLDSN turns the URL into a DSN for
// github.com/go-sql-driver/mysql.
func MariaDB(t testing.TB) string {
	t.Helper()
	s := mariaServer.get(t, startMariaDB)
	name := databaseName(t)
	newDatabase(t, s, name, "CREATE DATABASE `"+name+"`", func(ctx context.Context) error {
		// A transaction the test left open would hold the drop up
		// indefinitely, so end the database's sessions first.
		rows, err := s.admin.QueryContext(ctx,
			"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", name)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			// It may have ended by itself meanwhile.
			_, _ = s.admin.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
		}
		_, err = s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
		return err
	})
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/%s", s.port, name)
}

// MySQLDSN converts a URL mysql://user:password@host:port/dbname?params
// (scheme mariadb also accepted) into a github.com/go-sql-driver/mysql DSN
// user:password@tcp(host:port)/dbname?parseTime=true&params. The host
// defaults to 127.0.0.1 and the port to 3306; the query parameters keep the
// driver's meaning (unknown ones set session variables), and parseTime is
// true unless the URL says otherwise.
func MySQLDSN(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error would quote the URL, password and all.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", fmt.Errorf("invalid MySQL URL: %v", err)
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return "", fmt.Errorf("MySQL URL %q: scheme must be mysql or mariadb", u.Redacted())
	}
	if u.Opaque != "" {
		return "", fmt.Errorf("MySQL URL %q: want mysql://host/dbname", u.Redacted())
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(dbName, "/") {
		return "", fmt.Errorf("MySQL URL %q: database name contains a slash", u.Redacted())
	}

	// Let the driver parse the parameters, so they mean exactly what they
	// would in a DSN; Encode escapes any '/' in them, which ParseDSN would
	// otherwise take for the database separator.
	query := u.Query()
	if !query.Has("parseTime") {
		query.Set("parseTime", "true")
	}
	cfg, err := mysql.ParseDSN("/?" + query.Encode())
	if err != nil {
		return "", fmt.Errorf("MySQL URL %q: %v", u.Redacted(), err)
	}

	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = dbName
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return cfg.FormatDSN(), nil
}

func startMariaDB() (_ *server, err error) {
	began := time.Now()
	mariadbd, err := findExecutable([]string{"mariadbd", "mysqld"}, []string{"/usr/sbin", "/usr/local/sbin"})
	if err != nil {
		return nil, errors.New("MariaDB server (mariadbd or mysqld) not found in /usr/sbin or $PATH: " +
			"install it with `apt-get install mariadb-server`")
	}
	installDB, err := findExecutable([]string{"mariadb-install-db", "mysql_install_db"}, []string{"/usr/bin", "/usr/local/bin"})
	if err != nil {
		return nil, errors.New("mariadb-install-db (or mysql_install_db) not found in /usr/bin or $PATH: " +
			"install it with `apt-get install mariadb-server`")
	}

	dir, err := os.MkdirTemp("", "tabula-mariadb-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")

	// MariaDB runs as root only when told to with --user=root; as anyone
	// else --user must be left out.
	var asUser []string
	if os.Geteuid() == 0 {
		asUser = []string{"--user=root"}
	}

	installLogPath := filepath.Join(dir, "install-db.log")
	installLog, err := os.Create(installLogPath)
	if err != nil {
		return nil, err
	}
	defer installLog.Close()
	// --no-defaults keeps the system's my.cnf (and its socket, port and
	// datadir) out of it. --auth-root-authentication-method=normal gives
	// root a passwordless login over TCP instead of Debian's unix_socket
	// authentication.
	// Temporary tables go to a folder of this server's own: in a shared
	// /tmp, install-db runs of parallel test binaries have failed to find
	// their own temporary tables.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	args := append([]string{
		"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
	}, asUser...)
	if err := run(command(installLog, nil, dir, installDB, args...), installLogPath); err != nil {
		return nil, err
	}

	initialised := time.Since(began)

	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		kind:    "MariaDB",
		port:    port,
		dir:     dir,
		logPath: filepath.Join(dir, "mariadbd.log"),
		stopSig: syscall.SIGTERM,
	}
	log, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()

	args = append([]string{
		"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "sock"),
		"--pid-file=" + filepath.Join(dir, "pid"),
		// Clients then match root@127.0.0.1, which install-db created
		// without a password, and connecting does no DNS.
		"--skip-name-resolve",
		// Durability buys nothing for a database that lives as long as a
		// test run.
		"--innodb-flush-log-at-trx-commit=2",
		"--skip-log-bin",
		"--max-connections=300",
		// Tabula stores Kubernetes names and keys, which compare byte by
		// byte.
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_bin",
	}, asUser...)
	if err := s.launch(command(log, nil, dir, mariadbd, args...)); err != nil {
		return nil, err
	}
	dsn, err := MySQLDSN(fmt.Sprintf("mysql://root@127.0.0.1:%d/", port))
	if err == nil {
		s.admin, err = sql.Open("mysql", dsn)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := s.waitReady(60*time.Second, func(ctx context.Context) error {
		return s.admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.version)
	}); err != nil {
		return nil, err
	}
	s.initialised, s.started = initialised, time.Since(began)
	return s, nil
}
