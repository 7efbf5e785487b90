package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
)

// backuper is the power of databases Tabula can copy online itself
// (SQLite); the others have their own tools (pg_dump, mysqldump).
type backuper interface {
	backup(ctx context.Context, db *sql.DB, dest string) error
}

// Backup writes a consistent snapshot of the database to dest while it
// serves: the state at one revision, as a database file that opens on its
// own. dest must not exist.
func (s *Store) Backup(ctx context.Context, dest string) error {
	b, ok := s.d.(backuper)
	if !ok {
		return fmt.Errorf("sqlstore: a %s database is backed up with its own tools (pg_dump, mysqldump), not tabula backup", s.d.name())
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("sqlstore: backup: %s exists", dest)
	}
	return b.backup(ctx, s.read, dest)
}

// BumpRevision moves the revision counter n ahead and marks everything
// before it compacted, for a database restored from a backup: clients
// still holding resourceVersions the lost history issued get 410 Gone and
// re-list, instead of revisions that mean other states (etcdutl snapshot
// restore's --bump-revision with --mark-compacted). Run it with every
// replica stopped. It returns the new revision.
func (s *Store) BumpRevision(ctx context.Context, n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("sqlstore: bump revision by %d: want a positive amount", n)
	}
	// compact_rev first: MySQL assigns left to right, with rev's new value
	// seen by later assignments; the others use the old value throughout.
	if _, err := s.write.ExecContext(ctx, s.q("UPDATE tabula_rev SET compact_rev = rev + ?, rev = rev + ? WHERE id = 1"), n, n); err != nil {
		return 0, err
	}
	cur, compacted, err := s.revs(ctx)
	if err != nil {
		return 0, err
	}
	if cur != compacted {
		return 0, fmt.Errorf("sqlstore: bump revision: revision %d, compacted %d; want them equal", cur, compacted)
	}
	return cur, nil
}

// SQLiteFile is the file an sqlite:// URL names, relative paths resolved
// in dir; ok is false for other databases and in-memory SQLite.
func SQLiteFile(rawURL, dir string) (path string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "sqlite" {
		return "", false
	}
	p := sqlitePath(u, dir)
	return p, p != "" && p != ":memory:"
}
