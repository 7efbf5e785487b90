package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// refreshPage is how many live rows one refresh step reads.
const refreshPage = 500

// RefreshFields brings the selectable fields stored with resource's live
// objects up to date, for objects written before their kind selected by
// the fields it does now (an upgrade that adds field selectors). stale
// says, from the fields stored, whether a row needs new ones; fields
// computes them from the object. Rows are rewritten in place — their
// fields column and index rows, not their revision or value — so no
// watcher is sent anything: the object did not change, only what it is
// found by. It returns how many rows it rewrote.
func (s *Store) RefreshFields(ctx context.Context, resource string, stale func(stored map[string]string) bool,
	fields func(kv.Record) (map[string]string, error)) (int, error) {
	defer s.observe("refresh_fields", time.Now())
	done := 0
	afterNS, afterName := "", ""
	started := false
	for {
		type row struct {
			rec    kv.Record
			labels map[string]string
		}
		var todo []row
		n := 0
		err := func() error {
			ctx, cancel := s.bound(ctx)
			defer cancel()
			q := `SELECT l.rev, l.namespace, l.name, l.labels, l.fields FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev WHERE c.resource = ?`
			args := []any{resource}
			if started {
				q += " AND (c.namespace > ? OR (c.namespace = ? AND c.name > ?))"
				args = append(args, afterNS, afterNS, afterName)
			}
			q += " ORDER BY c.namespace, c.name LIMIT ?"
			args = append(args, refreshPage)
			rows, err := s.readQuery(ctx, s.q(q), args...)
			if err != nil {
				return unavailable(err)
			}
			defer rows.Close()
			for rows.Next() {
				n++
				var r row
				var labels, flds string
				r.rec.Resource = resource
				if err := rows.Scan(&r.rec.Rev, &r.rec.Namespace, &r.rec.Name, &labels, &flds); err != nil {
					return err
				}
				afterNS, afterName, started = r.rec.Namespace, r.rec.Name, true
				var stored map[string]string
				_ = json.Unmarshal([]byte(flds), &stored)
				if stale(stored) {
					_ = json.Unmarshal([]byte(labels), &r.labels)
					todo = append(todo, r)
				}
			}
			return unavailable(rows.Err())
		}()
		if err != nil {
			return done, err
		}
		if len(todo) > 0 {
			recs := make([]kv.Record, len(todo))
			for i, r := range todo {
				recs[i] = r.rec
			}
			if err := s.readValues(ctx, recs); err != nil {
				return done, err
			}
			tx, err := s.write.BeginTx(ctx, nil)
			if err != nil {
				return done, unavailable(err)
			}
			x := txExecer{s: s, ctx: ctx, tx: tx}
			index := tableRows{table: "tabula_index", cols: indexColumns, types: indexTypes}
			for i, r := range todo {
				f, err := fields(recs[i])
				if err != nil {
					tx.Rollback()
					return done, err
				}
				b, err := mapJSON(f)
				if err != nil {
					tx.Rollback()
					return done, err
				}
				if err := x.exec(s.q("UPDATE tabula_log SET fields = ? WHERE rev = ?"), b, r.rec.Rev); err != nil {
					tx.Rollback()
					return done, unavailable(err)
				}
				if err := x.exec(s.q("DELETE FROM tabula_index WHERE rev = ?"), r.rec.Rev); err != nil {
					tx.Rollback()
					return done, unavailable(err)
				}
				for _, ir := range indexRows(kv.Entry{Labels: r.labels, Fields: f}) {
					index.add(r.rec.Rev, ir[0], ir[1], r.rec.Resource, r.rec.Namespace)
				}
			}
			if err := s.insertRows(x, index, ""); err != nil {
				tx.Rollback()
				return done, unavailable(err)
			}
			if err := tx.Commit(); err != nil {
				return done, unavailable(err)
			}
			if s.hub != nil {
				s.hub.forgetRecent()
			}
			done += len(todo)
		}
		if n < refreshPage {
			if done > 0 {
				if err := s.rewroteInPlace(ctx); err != nil {
					return done, err
				}
			}
			return done, nil
		}
	}
}

// readValues fills the Value of recs (Key and Rev set) from the log.
func (s *Store) readValues(ctx context.Context, recs []kv.Record) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.read.BeginTx(ctx, s.d.readTx())
	if err != nil {
		return unavailable(err)
	}
	defer tx.Rollback()
	revs := make([]int64, len(recs))
	keys := make(map[int64]kv.Key, len(recs))
	for i, r := range recs {
		revs[i], keys[r.Rev] = r.Rev, r.Key
	}
	got, err := s.fetchValues(ctx, tx, revs, keys)
	if err != nil {
		return err
	}
	for i := range recs {
		recs[i].Value = got[recs[i].Rev]
	}
	return nil
}
