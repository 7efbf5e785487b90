package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

const (
	opCreate = 1
	opUpdate = 2
	opDelete = 3
)

// Create stores a new object; kv.ErrExists if the key is live.
func (s *Store) Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error) {
	var out kv.Record
	err := s.inWriteTx(ctx, func(tx *sql.Tx, rev int64) error {
		if _, err := s.currentRev(ctx, tx, key); err == nil {
			return kv.ErrExists
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		e, err := enc(rev)
		if err != nil {
			return err
		}
		if err := s.appendRow(ctx, tx, key, rev, opCreate, rev, 0, e); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO tabula_current (resource, namespace, name, rev) VALUES (?, ?, ?, ?)"),
			key.Resource, key.Namespace, key.Name, rev); err != nil {
			return err
		}
		out = kv.Record{Key: key, Rev: rev, CreatedRev: rev, Value: e.Value}
		return nil
	})
	return out, err
}

// Update replaces the object whose current revision is expect;
// kv.ErrConflict if it changed, kv.ErrNotFound if it is gone.
func (s *Store) Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	return s.replace(ctx, key, expect, opUpdate, enc)
}

// Delete removes the object whose current revision is expect, appending a
// tombstone holding enc's final state of it.
func (s *Store) Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	return s.replace(ctx, key, expect, opDelete, enc)
}

func (s *Store) replace(ctx context.Context, key kv.Key, expect int64, op int, enc kv.Encoder) (kv.Record, error) {
	var out kv.Record
	err := s.inWriteTx(ctx, func(tx *sql.Tx, rev int64) error {
		cur, err := s.currentRev(ctx, tx, key)
		if err != nil {
			return err
		}
		if cur.rev != expect {
			return kv.ErrConflict
		}
		e, err := enc(rev)
		if err != nil {
			return err
		}
		if err := s.appendRow(ctx, tx, key, rev, op, cur.created, cur.rev, e); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE tabula_log SET next_rev = ? WHERE rev = ?"), rev, cur.rev); err != nil {
			return err
		}
		if op == opDelete {
			_, err = tx.ExecContext(ctx, s.q("DELETE FROM tabula_current WHERE resource = ? AND namespace = ? AND name = ?"),
				key.Resource, key.Namespace, key.Name)
		} else {
			_, err = tx.ExecContext(ctx, s.q("UPDATE tabula_current SET rev = ? WHERE resource = ? AND namespace = ? AND name = ?"),
				rev, key.Resource, key.Namespace, key.Name)
		}
		if err != nil {
			return err
		}
		out = kv.Record{Key: key, Rev: rev, CreatedRev: cur.created, Value: e.Value}
		return nil
	})
	return out, err
}

type current struct{ rev, created int64 }

func (s *Store) currentRev(ctx context.Context, tx *sql.Tx, key kv.Key) (current, error) {
	var c current
	err := tx.QueryRowContext(ctx, s.q(`SELECT c.rev, l.created_rev FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev
		WHERE c.resource = ? AND c.namespace = ? AND c.name = ?`), key.Resource, key.Namespace, key.Name).Scan(&c.rev, &c.created)
	if errors.Is(err, sql.ErrNoRows) {
		return c, kv.ErrNotFound
	}
	return c, err
}

func (s *Store) appendRow(ctx context.Context, tx *sql.Tx, key kv.Key, rev int64, op int, created, prev int64, e kv.Entry) error {
	labels, err := json.Marshal(nonNil(e.Labels))
	if err != nil {
		return err
	}
	fields, err := json.Marshal(nonNil(e.Fields))
	if err != nil {
		return err
	}
	var expires sql.NullInt64
	if !e.ExpiresAt.IsZero() {
		expires = sql.NullInt64{Int64: e.ExpiresAt.Unix(), Valid: true}
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO tabula_log
		(rev, resource, namespace, name, op, created_rev, prev_rev, next_rev, labels, fields, expires_at, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)`),
		rev, key.Resource, key.Namespace, key.Name, op, created, prev, string(labels), string(fields), expires, e.Value)
	return err
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// inWriteTx runs fn in a transaction that owns the next revision.
//
// Invariant: the counter row is locked first, before any other row is read
// or written, and stays locked until commit; this gives every writer the
// same lock order (no deadlocks) and makes revisions commit-ordered.
func (s *Store) inWriteTx(ctx context.Context, fn func(tx *sql.Tx, rev int64) error) error {
	tx, err := s.write.BeginTx(ctx, s.d.writeTx())
	if err != nil {
		return unavailable(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE tabula_rev SET rev = rev + 1 WHERE id = 1"); err != nil {
		return unavailable(err)
	}
	var rev int64
	if err := tx.QueryRowContext(ctx, "SELECT rev FROM tabula_rev WHERE id = 1").Scan(&rev); err != nil {
		return unavailable(err)
	}
	if err := fn(tx, rev); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit: %w", unavailable(err))
	}
	s.hub.notify()
	return nil
}
