package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Get returns the live object at key; kv.ErrNotFound if there is none.
func (s *Store) Get(ctx context.Context, key kv.Key) (kv.Record, error) {
	r, _, err := s.get(ctx, key, nil)
	return r, err
}

// GetKnown is Get for a caller that may hold what it needs of the live
// revision already (an encoding of it): known is asked with the live
// revision, and when it says so the record carries the revision alone
// (no Value, no CreatedRev) and skipped is true. A get of a large object
// then reads and copies none of it. Only stores that read a key's
// revision apart from its row (SQLite's direct gets) ask; the others
// return the whole record, as Get.
func (s *Store) GetKnown(ctx context.Context, key kv.Key, known func(rev int64) bool) (r kv.Record, skipped bool, err error) {
	return s.get(ctx, key, known)
}

// liveRevSQL reads one key's live revision, and logRowSQL a revision's
// row (getDirect's two steps when the caller may hold the revision).
const (
	liveRevSQL = `SELECT rev FROM tabula_current WHERE resource = ? AND namespace = ? AND name = ?`
	logRowSQL  = `SELECT created_rev, value FROM tabula_log WHERE rev = ?`
)

func (s *Store) get(ctx context.Context, key kv.Key, known func(rev int64) bool) (kv.Record, bool, error) {
	if s.unstorable(key.Namespace, key.Name) {
		return kv.Record{Key: key}, false, kv.ErrNotFound
	}
	defer s.observe("get", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r := kv.Record{Key: key}
	if len(s.standbys) > 0 {
		need, err := s.primaryRev(ctx)
		if err != nil {
			return r, false, err
		}
		var found bool
		served, err := s.onStandby(ctx, need, func(ctx context.Context, db *sql.DB) error {
			return s.getOnStandby(ctx, db, key, need, &r, &found)
		})
		if served {
			if err == nil && !found {
				err = kv.ErrNotFound
			}
			if err == nil && s.opts.Values != nil {
				r.Value, r.Stale, err = s.openStale(key, r.Value)
			}
			return r, false, unavailable(err)
		}
	}
	if s.directGets != nil {
		found, skipped, err := s.getDirect(ctx, key, &r, known)
		if err != nil {
			return r, false, unavailable(err)
		}
		if !found {
			return r, false, kv.ErrNotFound
		}
		if skipped {
			getsHeld.Inc()
			return r, true, nil
		}
		r.Value, r.Stale, err = s.openRow(key, r.Value)
		return r, false, err
	}
	rows, err := s.readQuery(ctx, s.q(getSQL), key.Resource, key.Namespace, key.Name)
	if err != nil {
		return r, false, unavailable(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return r, false, unavailable(err)
		}
		return r, false, kv.ErrNotFound
	}
	// Scanned without a copy and opened before the rows close (openRow:
	// kept where the driver owns its rows' bytes, else copied).
	var v sql.RawBytes
	if err := rows.Scan(&r.Rev, &r.CreatedRev, &v); err != nil {
		return r, false, unavailable(err)
	}
	if r.Value, r.Stale, err = s.openRow(key, v); err != nil {
		return r, false, err
	}
	if err := rows.Close(); err != nil {
		return r, false, unavailable(err)
	}
	return r, false, nil
}

// getSQL reads one key's live row.
const getSQL = `SELECT l.rev, l.created_rev, l.value FROM tabula_current c
		JOIN tabula_log l ON l.rev = c.rev
		WHERE c.resource = ? AND c.namespace = ? AND c.name = ?`

// listBatch is how many rows one query reads while filling a page; it
// bounds memory when a selector skips most rows.
const listBatch = 500

// List returns one page of objects in (namespace, name) order, as they were
// at opts.Rev (or now). Every page of a paginated list passes the first
// page's revision, so pages form one consistent snapshot.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	defer s.observe("list", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// A revision this process compacted is refused by the primary; a
	// standby may not have replayed the compaction yet.
	if len(s.standbys) > 0 && (opts.Rev == 0 || opts.Rev > s.Compaction().Revision) {
		need, err := s.need(ctx, opts.Rev, opts.MinRev)
		if err != nil {
			return kv.ListResult{}, err
		}
		var res kv.ListResult
		var listErr error
		served, err := s.onStandby(ctx, need, func(ctx context.Context, db *sql.DB) error {
			var err error
			res, err = s.listOn(ctx, db, opts, need)
			if errors.Is(err, errBehind) || errors.Is(err, kv.ErrUnavailable) {
				return err
			}
			// Any other error (compacted, a bad value) is the answer.
			listErr = err
			return nil
		})
		if served {
			return res, errors.Join(err, listErr)
		}
	}
	return s.listOn(ctx, s.read, opts, 0)
}

// listOn lists from db, which must have replayed need (errBehind if not).
func (s *Store) listOn(ctx context.Context, db *sql.DB, opts kv.ListOptions, need int64) (kv.ListResult, error) {
	var res kv.ListResult
	tx, err := db.BeginTx(ctx, s.d.readTx())
	if err != nil {
		return res, unavailable(err)
	}
	defer tx.Rollback()
	var cur, compacted int64
	if err := tx.QueryRowContext(ctx, "SELECT rev, compact_rev FROM tabula_rev WHERE id = 1").Scan(&cur, &compacted); err != nil {
		return res, unavailable(err)
	}
	if cur < need {
		return res, errBehind
	}
	atRev := opts.Rev
	if atRev == 0 {
		atRev = cur
	} else if atRev > cur {
		return res, &kv.FutureRevError{Requested: atRev, Current: cur}
	} else if atRev < compacted {
		return res, &kv.CompactedError{Requested: atRev, Compacted: compacted}
	}
	if res, err = s.listAt(ctx, tx, opts, atRev, cur, compacted); err != nil || !opts.Shared {
		return res, err
	}
	if err := s.resolveShared(ctx, tx, res.Items); err != nil {
		return res, err
	}
	return res, encodeAll(opts, res.Items)
}

// listAt reads one page at atRev in tx; with opts.Shared the items come
// without values (resolveShared adds them).
func (s *Store) listAt(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, atRev, cur, compacted int64) (kv.ListResult, error) {
	if s.unstorable(opts.Namespace) {
		return kv.ListResult{Rev: atRev}, nil // a namespace nothing can be stored in
	}
	if s.unstorable(opts.AfterNamespace) {
		// Not a key this database listed: a continue token from elsewhere.
		return kv.ListResult{}, fmt.Errorf("%w: continue after namespace %q", kv.ErrInvalidKey, opts.AfterNamespace)
	}
	if s.unstorable(opts.AfterName) {
		// The names after it are exactly those after what precedes its
		// NUL, as none holds one here.
		opts.AfterName, _, _ = strings.Cut(opts.AfterName, "\x00")
	}
	// A warm whole list at the latest revision: from its kept keys if
	// they can be brought forward (keptlists.go), else read and kept.
	if opts.Cached != nil && !opts.Shared && atRev == cur && opts.Limit == 0 && opts.Pred.Empty() &&
		opts.AfterNamespace == "" && opts.AfterName == "" {
		res, ok, err := s.listKept(ctx, tx, opts, cur, compacted)
		if ok || err != nil {
			return res, err
		}
		if res, err = s.walk(ctx, tx, opts, atRev, cur); err == nil {
			listKeys.WithLabelValues("read").Inc()
			s.keptKeys.keepItems(keptListID{opts.Resource, opts.Namespace}, cur, res.Items)
		}
		return res, err
	}
	return s.walk(ctx, tx, opts, atRev, cur)
}

// walk reads one page at atRev in tx from the database.
func (s *Store) walk(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, atRev, cur int64) (kv.ListResult, error) {
	res := kv.ListResult{Rev: atRev}
	afterNS, afterName, started := opts.AfterNamespace, opts.AfterName, opts.AfterNamespace != "" || opts.AfterName != ""
	probe := false
	if !opts.Pred.Empty() {
		byIndex, ok, p, err := s.listByIndex(ctx, tx, opts, atRev, afterNS, afterName, started)
		probe = p
		if ok || err != nil {
			byIndex.Rev = atRev
			return byIndex, err
		}
	}
	// keysFirst: rows are read without their values, which are then
	// fetched only for the items the caller has no encoding of. It stays
	// on while most of a batch was cached.
	keysFirst := opts.Cached != nil && !opts.Shared
	_, concat := s.d.(concatKeys)
	for {
		want := listBatch
		if opts.Limit > 0 && opts.Pred.Empty() {
			want = opts.Limit - len(res.Items) + 1
		}
		// A warm whole list reads its keys a batch to a row (concatKeys).
		// The first batch is of the usual size: a cold list (most items
		// not cached) goes on with values after it, as it does row by row.
		joined := concat && keysFirst && atRev == cur && opts.Limit == 0 && opts.Pred.Empty()
		if joined && len(res.Items) > 0 {
			want = keyBatch
		}
		q, args, cols := s.listQuery(opts, atRev == cur, atRev, afterNS, afterName, started, want, false, keysFirst, probe)
		var misses []int // items of this batch whose values are still to read
		var raw []int    // items of this batch holding values still to encode
		if joined {
			start := len(res.Items)
			n, ok, err := s.readKeyBatch(ctx, tx, opts, q, args, cols, &res.Items)
			if err != nil {
				return res, err
			}
			if !ok {
				concat = false // this batch again, and the rest, row by row
				continue
			}
			for i := start; i < len(res.Items); i++ {
				r := &res.Items[i]
				if r.Value, r.Cached = opts.Cached(*r); !r.Cached {
					misses = append(misses, i)
				}
			}
			if n > 0 {
				last := res.Items[len(res.Items)-1]
				afterNS, afterName, started = last.Namespace, last.Name, true
			}
			if err := s.finishMisses(ctx, tx, opts, res.Items, misses); err != nil {
				return res, err
			}
			if len(misses) > n/2 {
				keysFirst = false
			}
			if n < want {
				return res, nil
			}
			continue
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return res, unavailable(err)
		}
		res.Items = growItems(res.Items, want)
		var r kv.Record
		var labels, fields string
		var value sql.RawBytes // kept, copied or encoded below (openRow)
		dest := cols.dest(&r, &labels, &fields, &value)
		n := 0
		for rows.Next() {
			n++
			r = kv.Record{Key: kv.Key{Resource: opts.Resource, Namespace: opts.Namespace}}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return res, err
			}
			afterNS, afterName, started = r.Namespace, r.Name, true
			if !opts.Pred.Empty() && !matchesRaw(opts.Pred, labels, fields) {
				continue
			}
			if opts.Limit > 0 && len(res.Items) == opts.Limit {
				res.More = true
				rows.Close()
				if err := s.finishBatch(ctx, tx, opts, res.Items, misses, raw); err != nil {
					return res, err
				}
				if opts.Pred.Empty() && !opts.Shared {
					// Like kube-apiserver, only unfiltered lists say how
					// many items remain: an index-only range count.
					last := res.Items[len(res.Items)-1]
					q, args, _ := s.listQuery(opts, atRev == cur, atRev, last.Namespace, last.Name, true, 0, true, false, false)
					if err := tx.QueryRowContext(ctx, q, args...).Scan(&res.Remaining); err != nil {
						return res, unavailable(err)
					}
				}
				return res, nil
			}
			switch {
			case opts.Shared:
			case keysFirst:
				if r.Value, r.Cached = opts.Cached(r); !r.Cached {
					misses = append(misses, len(res.Items))
				}
			default:
				// Kept (openRow: copied where the driver's bytes last
				// only until the next row), encoded with the rest of the
				// batch.
				if r.Value, _, err = s.openRow(r.Key, value); err != nil {
					rows.Close()
					return res, err
				}
				if opts.Encode != nil {
					raw = append(raw, len(res.Items))
				}
			}
			res.Items = append(res.Items, r)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return res, unavailable(err)
		}
		rows.Close()
		if err := s.finishBatch(ctx, tx, opts, res.Items, misses, raw); err != nil {
			return res, err
		}
		if keysFirst && len(misses) > n/2 {
			// A cold list: the rest is read with its values at once.
			keysFirst = false
		}
		if n < want {
			return res, nil
		}
	}
}

// finishBatch completes a batch of listed items: reads, in tx, the values
// of those at the indexes misses (read without them, see listAt's
// keysFirst), then passes those and the ones at raw (read with their
// values) to Encode, if there is one.
func (s *Store) finishBatch(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, items []kv.Record, misses, raw []int) error {
	if err := s.readMisses(ctx, tx, items, misses); err != nil {
		return err
	}
	return encodeEach(opts, items, append(misses, raw...))
}

// finishMisses reads and encodes the values of items at misses (listed
// keys first) a listBatch at a time, so a large batch of keys holds no
// more values at once than a small one.
func (s *Store) finishMisses(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, items []kv.Record, misses []int) error {
	for at := misses; len(at) > 0; {
		part := at[:min(len(at), listBatch)]
		at = at[len(part):]
		if err := s.finishBatch(ctx, tx, opts, items, part, nil); err != nil {
			return err
		}
	}
	return nil
}

// encodeParallelMin is the fewest items per core worth encoding on
// several cores.
const encodeParallelMin = 64

// encodeEach replaces the values of items at the indexes at (each the
// item's own copy) with opts.Encode's bytes, on every core for a large
// batch: decoding a stored object and encoding it again is most of a cold
// list's time, and the client waits for the whole list.
func encodeEach(opts kv.ListOptions, items []kv.Record, at []int) error {
	if opts.Encode == nil || len(at) == 0 {
		return nil
	}
	encode := func(i int) (err error) {
		items[i].Value, err = opts.Encode(items[i])
		return err
	}
	workers := min(runtime.GOMAXPROCS(0), len(at)/encodeParallelMin)
	if workers <= 1 {
		for _, i := range at {
			if err := encode(i); err != nil {
				return err
			}
		}
		return nil
	}
	var g errgroup.Group
	chunk := (len(at) + workers - 1) / workers
	for lo := 0; lo < len(at); lo += chunk {
		part := at[lo:min(lo+chunk, len(at))]
		g.Go(func() error {
			for _, i := range part {
				if err := encode(i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// encodeAll is encodeEach over every item.
func encodeAll(opts kv.ListOptions, items []kv.Record) error {
	if opts.Encode == nil {
		return nil
	}
	all := make([]int, len(items))
	for i := range all {
		all[i] = i
	}
	return encodeEach(opts, items, all)
}

// readMisses reads, in tx, the values of the items at the indexes misses
// (read without them, see listAt's keysFirst).
func (s *Store) readMisses(ctx context.Context, tx *sql.Tx, items []kv.Record, misses []int) error {
	if len(misses) == 0 {
		return nil
	}
	revs := make([]int64, len(misses))
	keys := make(map[int64]kv.Key, len(misses))
	for i, at := range misses {
		revs[i] = items[at].Rev
		keys[revs[i]] = items[at].Key
	}
	values, err := s.fetchValues(ctx, tx, revs, keys)
	if err != nil {
		return err
	}
	for _, at := range misses {
		items[at].Value = values[items[at].Rev] // opened and copied: the item's own
	}
	return nil
}

// listCols says which of a list row's columns a query selects beyond the
// revision and name: each column costs the driver a few calls into SQLite
// per row, each taking the connection's mutex (15 % of a warm Protobuf
// list's CPU when seven were read), so a list reads only what it uses.
type listCols struct {
	// created: the created revision, read with values (items listed by
	// key alone go without it, see kv.ListOptions.Cached).
	created bool
	// namespace, for lists across namespaces (else it is the one asked).
	namespace bool
	// meta: labels and fields, read only to filter by.
	meta  bool
	value bool
}

// sql is the select list, of the table named t.
func (c listCols) sql(t string) string {
	cols := t + ".rev"
	if c.created {
		cols += ", " + t + ".created_rev"
	}
	if c.namespace {
		cols += ", " + t + ".namespace"
	}
	cols += ", " + t + ".name"
	if c.meta {
		cols += ", " + t + ".labels, " + t + ".fields"
	}
	if c.value {
		cols += ", " + t + ".value"
	}
	return cols
}

// dest is the Scan destinations for the columns, in sql's order.
func (c listCols) dest(r *kv.Record, labels, fields *string, value *sql.RawBytes) []any {
	dest := []any{&r.Rev}
	if c.created {
		dest = append(dest, &r.CreatedRev)
	}
	if c.namespace {
		dest = append(dest, &r.Namespace)
	}
	dest = append(dest, &r.Name)
	if c.meta {
		dest = append(dest, labels, fields)
	}
	if c.value {
		dest = append(dest, value)
	}
	return dest
}

// listQuery builds the page query from constant fragments; every value
// travels as a bound argument.
// probe: check selector terms row by row (see predicateSQL).
func (s *Store) listQuery(opts kv.ListOptions, latest bool, atRev int64, afterNS, afterName string, started bool, limit int, count, noValues, probe bool) (string, []any, listCols) {
	var b strings.Builder
	var args []any
	c := listCols{
		created:   true,
		namespace: opts.Namespace == "",
		meta:      !opts.Pred.Empty(),
		value:     !opts.Shared && !noValues,
	}
	cols := c.sql("l")
	if count {
		cols = "COUNT(*)"
	}
	// t is the table whose (resource, namespace, name) drive the order.
	t := "l"
	if latest {
		t = "c"
		switch {
		case count:
			b.WriteString(`SELECT COUNT(*) FROM tabula_current c WHERE c.resource = ?`)
		case noValues && opts.Pred.Empty():
			// Nothing of the log is needed: the keys and revisions come
			// from the current table alone (its primary key's order),
			// without a lookup into the log per row. Items go without
			// their created revision (see kv.ListOptions.Cached).
			c.created = false
			b.WriteString(`SELECT ` + c.sql("c") + ` FROM tabula_current c WHERE c.resource = ?`)
		default:
			b.WriteString(`SELECT ` + cols + ` FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev WHERE c.resource = ?`)
		}
	} else {
		b.WriteString(`SELECT ` + cols + ` FROM tabula_log l WHERE l.resource = ? AND l.rev <= ? AND (l.next_rev IS NULL OR l.next_rev > ?) AND l.op <> 3`)
	}
	args = append(args, opts.Resource)
	if !latest {
		args = append(args, atRev, atRev)
	}
	if opts.Namespace != "" {
		b.WriteString(" AND " + t + ".namespace = ?")
		args = append(args, opts.Namespace)
		if started {
			b.WriteString(" AND " + t + ".name > ?")
			args = append(args, afterName)
		}
	} else if started {
		b.WriteString(" AND (" + t + ".namespace > ? OR (" + t + ".namespace = ? AND " + t + ".name > ?))")
		args = append(args, afterNS, afterNS, afterName)
	}
	if !count && !opts.Pred.Empty() {
		cond, cargs := predicateSQL(opts.Pred, opts.Resource, opts.Namespace, t+".rev", probe)
		b.WriteString(cond)
		args = append(args, cargs...)
	}
	if !count {
		b.WriteString(" ORDER BY " + t + ".namespace, " + t + ".name LIMIT ?")
		args = append(args, limit)
	}
	return s.q(b.String()), args, c
}

func matchesRaw(p kv.Predicate, labels, fields string) bool {
	var l, f map[string]string
	_ = json.Unmarshal([]byte(labels), &l)
	_ = json.Unmarshal([]byte(fields), &f)
	return p.Matches(l, f)
}

// CountByResource counts the live objects of each resource (kube's
// apiserver_storage_objects), in one pass over the live keys.
func (s *Store) CountByResource(ctx context.Context) (map[string]int64, error) {
	defer s.observe("count_by_resource", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.read.QueryContext(ctx, "SELECT resource, count(*) FROM tabula_current GROUP BY resource")
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var r string
		var n int64
		if err := rows.Scan(&r, &n); err != nil {
			return nil, unavailable(err)
		}
		out[r] = n
	}
	return out, unavailable(rows.Err())
}
