package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tabula-dev/tabula/sqlstore"
)

// defaultBump is how far a restore moves the revision: far past anything
// the lost history can have issued (etcd's documentation suggests the
// same 10⁹ for --bump-revision).
const defaultBump = 1_000_000_000

// dbFlags are the database flags backup and restore share with serve.
func dbFlags(fs *flag.FlagSet) (db, dataDir *string) {
	db = fs.String("db", envOr(envName("db"), defaultDB), "database `URL` (as for tabula serve)")
	dataDir = fs.String("data-dir", envOr(envName("data-dir"), NewMain().Config.DataDir), "directory a relative SQLite path is in")
	return db, dataDir
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// runBackup is `tabula backup [--db URL] [--data-dir DIR] FILE`: an online,
// consistent copy of an SQLite database, taken while it serves.
func runBackup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tabula backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db, dataDir := dbFlags(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: tabula backup [--db URL] [--data-dir DIR] FILE")
		return 2
	}
	dest, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "tabula backup:", err)
		return 1
	}
	st, err := openStore(*db, *dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "tabula backup:", err)
		return 1
	}
	defer st.Close()
	if err := st.Backup(context.Background(), dest); err != nil {
		fmt.Fprintln(stderr, "tabula backup:", err)
		return 1
	}
	fmt.Fprintln(stdout, "backed up to", dest)
	return 0
}

// runRestore is `tabula restore [--from FILE] [--db URL] [--data-dir DIR]
// [--bump-revision N]`, with every replica stopped: it puts an SQLite
// backup in place (--from), or follows a pg_restore or mysql restore of the
// others, and moves the revision on so that clients' resourceVersions from
// after the backup get 410 Gone.
func runRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tabula restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db, dataDir := dbFlags(fs)
	from := fs.String("from", "", "an SQLite backup `FILE` to restore (for PostgreSQL and MySQL, restore with their tools first)")
	bump := fs.Int64("bump-revision", defaultBump, "how far to move the revision past the backup's")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: tabula restore [--from FILE] [--db URL] [--data-dir DIR] [--bump-revision N]")
		return 2
	}
	if *from != "" {
		path, ok := sqlstore.SQLiteFile(*db, *dataDir)
		if !ok {
			fmt.Fprintln(stderr, "tabula restore: --from restores an SQLite file; restore other databases with their own tools, then run tabula restore without it")
			return 2
		}
		if err := copyInto(*from, path); err != nil {
			fmt.Fprintln(stderr, "tabula restore:", err)
			return 1
		}
	}
	st, err := openStore(*db, *dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "tabula restore:", err)
		return 1
	}
	defer st.Close()
	rev, err := st.BumpRevision(context.Background(), *bump)
	if err != nil {
		fmt.Fprintln(stderr, "tabula restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored; revision now %d, older resourceVersions answer 410 Gone\n", rev)
	return 0
}

func openStore(db, dataDir string) (*sqlstore.Store, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	return sqlstore.Open(context.Background(), db, sqlstore.Options{Dir: dir})
}

// copyInto replaces path with a copy of from, through a temporary file
// renamed into place, and removes the old database's WAL files.
func copyInto(from, path string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return os.Rename(tmp.Name(), path)
}
