package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// A positive selector term drives a list from tabula_index (its matches'
// rows read and sorted) instead of the walk in key order with the term
// checked per row, while its M matches are sparse in the range the walk
// would cover. The walk of an unlimited list reads every row of the range
// (N); a page of L matches reads about L·N/M rows; the index reads the M
// matches in the range (with the history of updated objects), each
// costing about indexLookupCost rows of the walk (BenchmarkSparseSelector,
// 1% of 50,000 and 200,000 objects: 23 to 54 on SQLite, 45 to 116 on
// PostgreSQL). So the index drives while N exceeds
// indexLookupCost·M·max(1, M/L), which a count of the range stopped at
// that many rows tells. The garbage collector's lookup of an
// owner's dependents is the extreme case: nearly always no match, and no
// count. A million objects with a 1% label (10,000 matches) is the other:
// the walk of the million took 9 s on SQLite (`make bench-scale`).
//
// indexDrivenMax is how many of a term's entries are read before they are
// only counted (up to indexScanMax, the most candidates held).
const (
	indexDrivenMax  = 2000
	indexLookupCost = 32
	indexScanMax    = 100_000
	// indexCountMin: a term with at most this many matches drives the
	// list without the range being counted.
	indexCountMin = 256
)

// listByIndex answers a list whose selector has a positive term sparse in
// the listed range, reading only that term's entries' rows. It
// does not depend on the planner choosing the index (SQLite prefers the key
// order that ORDER BY asks for, and scans), so the cost is the same on
// every database. ok is false when no term is selective enough.
//
// When it does not answer, probe says how the walk should check the
// terms: row by row (the walk's range holds fewer rows than a term has
// matches) rather than against every match at once.
func (s *Store) listByIndex(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, atRev int64,
	afterNS, afterName string, started bool) (res kv.ListResult, ok, probe bool, err error) {
	if s.indexMax < 0 {
		return res, false, true, nil // tests: the walk alone
	}
	var revs []int64
	found := false
	for _, t := range indexTerms(opts.Pred) {
		if t.negate {
			continue
		}
		got, err := s.termRevs(ctx, tx, t, opts, s.indexMax+1)
		if err != nil {
			return res, false, false, err
		}
		m := len(got)
		if m > s.indexMax {
			// A range smaller than lookupCost times what was read is
			// walked, whatever the term's full count: skip counting it.
			n, large, err := s.sparseIn(ctx, tx, m, kv.ListOptions{Resource: opts.Resource, Namespace: opts.Namespace})
			if err != nil {
				return res, false, false, err
			}
			if !large {
				probe = probe || n < m
				continue
			}
			if m, err = s.termCount(ctx, tx, t, opts); err != nil {
				return res, false, false, err
			}
		}
		n, drives, err := s.sparseIn(ctx, tx, m, opts)
		if err != nil {
			return res, false, false, err
		}
		if n < m {
			probe = true
		}
		if !drives || m > indexScanMax {
			continue
		}
		if len(got) > s.indexMax {
			if got, err = s.termRevs(ctx, tx, t, opts, indexScanMax+1); err != nil {
				return res, false, false, err
			}
		}
		if !found {
			revs, found = got, true
		} else {
			revs = intersectSorted(revs, got)
		}
	}
	if !found {
		return res, false, probe, nil
	}
	s.indexLists.Add(1)

	// The candidates' keys, labels and fields; values only for the page.
	type candidate struct {
		rec            kv.Record
		labels, fields string
	}
	var cands []candidate
	err = s.forRevs(ctx, tx, `SELECT l.rev, l.created_rev, l.resource, l.namespace, l.name, l.op, l.next_rev, l.labels, l.fields
		FROM tabula_log l WHERE l.rev IN `, revs, func(rows *sql.Rows) error {
		var c candidate
		var op int
		var next sql.NullInt64
		if err := rows.Scan(&c.rec.Rev, &c.rec.CreatedRev, &c.rec.Resource, &c.rec.Namespace, &c.rec.Name, &op, &next, &c.labels, &c.fields); err != nil {
			return err
		}
		// Visible at atRev: written by then, not yet replaced, not a
		// deletion; the same rule as the history scan's.
		if c.rec.Resource != opts.Resource || c.rec.Rev > atRev || (next.Valid && next.Int64 <= atRev) || op == opDelete {
			return nil
		}
		if opts.Namespace != "" && c.rec.Namespace != opts.Namespace {
			return nil
		}
		if started && cmp.Or(cmp.Compare(c.rec.Namespace, afterNS), cmp.Compare(c.rec.Name, afterName)) <= 0 {
			return nil
		}
		if !matchesRaw(opts.Pred, c.labels, c.fields) {
			return nil
		}
		cands = append(cands, c)
		return nil
	})
	if err != nil {
		return res, true, false, err
	}
	// Keys compare bytewise on every database (binary collations), as here.
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.rec.Namespace, b.rec.Namespace), cmp.Compare(a.rec.Name, b.rec.Name))
	})
	if opts.Limit > 0 && len(cands) > opts.Limit {
		cands, res.More = cands[:opts.Limit], true
	}
	res.Items = make([]kv.Record, len(cands))
	at := make(map[int64]int, len(cands))
	page := make([]int64, len(cands))
	for i, c := range cands {
		res.Items[i] = c.rec
		at[c.rec.Rev] = i
		page[i] = c.rec.Rev
	}
	if opts.Shared {
		return res, true, false, nil // resolveShared reads the values
	}
	err = s.forRevs(ctx, tx, `SELECT l.rev, l.value FROM tabula_log l WHERE l.rev IN `, page, func(rows *sql.Rows) error {
		var rev int64
		var value sql.RawBytes
		if err := rows.Scan(&rev, &value); err != nil {
			return err
		}
		if i, ok := at[rev]; ok {
			v, _, err := s.openRow(res.Items[i].Key, value)
			res.Items[i].Value = v
			return err
		}
		return nil
	})
	if err != nil {
		return res, true, false, err
	}
	return res, true, false, encodeAll(opts, res.Items)
}

// termCount counts t's index entries in the listed range, up to
// indexScanMax+1.
func (s *Store) termCount(ctx context.Context, tx *sql.Tx, t indexTerm, opts kv.ListOptions) (int, error) {
	q, args := termQuery(t, opts, "1", indexScanMax+1)
	var m int
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM ("+q+") AS m"), args...).Scan(&m); err != nil {
		return 0, unavailable(err)
	}
	return m, nil
}

// sparseIn reports whether m matches are sparse enough in the range opts
// lists for the index to drive (see indexLookupCost): whether the range
// holds at least lookupCost·m·max(1, m/L) rows; n is the range's rows,
// counted up to that.
func (s *Store) sparseIn(ctx context.Context, tx *sql.Tx, m int, opts kv.ListOptions) (n int, sparse bool, err error) {
	threshold := s.lookupCost * m
	if opts.Limit > 0 && m > opts.Limit {
		threshold = s.lookupCost * m / opts.Limit * m
	}
	if m <= s.countMin {
		// So few matches cost less to read than the range costs to
		// count (BenchmarkList's 1% of 20,000: the count made the list
		// a third slower); GC's lookups of dependents match none.
		return m, true, nil
	}
	q := "SELECT 1 FROM tabula_current WHERE resource = ?"
	args := []any{opts.Resource}
	if opts.Namespace != "" {
		q += " AND namespace = ?"
		args = append(args, opts.Namespace)
	}
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM ("+q+" LIMIT ?) AS n"), append(args, threshold)...).Scan(&n); err != nil {
		return 0, false, unavailable(err)
	}
	return n, n >= threshold, nil
}

// termQuery selects cols of up to limit index entries satisfying t in the
// range opts lists.
func termQuery(t indexTerm, opts kv.ListOptions, cols string, limit int) (string, []any) {
	cond, args := termCondition(t, opts.Resource, opts.Namespace)
	return "SELECT " + cols + " FROM tabula_index x WHERE " + cond + " LIMIT ?", append(args, limit)
}

// termCondition is t as a condition on tabula_index x, within resource and,
// if not empty, namespace. The lookup index holds (name, value, resource,
// namespace, rev): with a value, it reads only the range's entries.
func termCondition(t indexTerm, resource, namespace string) (string, []any) {
	q := "x.name = ?"
	args := []any{t.name}
	if len(t.values) > 0 {
		q += " AND x.value IN (" + placeholders(len(t.values)) + ")"
		for _, v := range t.values {
			args = append(args, truncateIndexValue(v))
		}
	}
	q += " AND x.resource = ?"
	args = append(args, resource)
	if namespace != "" {
		q += " AND x.namespace = ?"
		args = append(args, namespace)
	}
	return q, args
}

// termRevs returns, in order, the revisions whose index entries satisfy t
// in the listed range, reading at most limit of them.
func (s *Store) termRevs(ctx context.Context, tx *sql.Tx, t indexTerm, opts kv.ListOptions, limit int) ([]int64, error) {
	q, args := termQuery(t, opts, "x.rev", limit)
	revs, err := column[int64](tx.QueryContext(ctx, s.q(q), args...))
	if err != nil {
		return nil, err
	}
	slices.Sort(revs)
	return slices.Compact(revs), nil
}

// revChunks are the sizes "rev IN (…)" lists are padded to, so a handful
// of statement texts serve every candidate count.
var revChunks = []int{1, 16, 128}

// forRevs runs prefix + "(?, …)" over revs in padded chunks, calling each
// for every row.
func (s *Store) forRevs(ctx context.Context, tx *sql.Tx, prefix string, revs []int64, each func(*sql.Rows) error) error {
	for len(revs) > 0 {
		size := revChunks[len(revChunks)-1]
		for _, c := range revChunks {
			if c >= len(revs) {
				size = c
				break
			}
		}
		n := min(size, len(revs))
		args := make([]any, size)
		for i := range size {
			// Padding repeats the last revision; IN ignores duplicates.
			args[i] = revs[min(i, n-1)]
		}
		revs = revs[n:]
		rows, err := tx.QueryContext(ctx, s.q(prefix+"("+placeholders(size)+")"), args...)
		if err != nil {
			return unavailable(err)
		}
		for rows.Next() {
			if err := each(rows); err != nil {
				rows.Close()
				return err
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// intersectSorted returns the values present in both sorted slices.
func intersectSorted(a, b []int64) []int64 {
	var out []int64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// ResourcesWithField returns the resources that have a live object whose
// indexed field equals value, in one index lookup. The garbage collector
// asks it which resources hold an owner's dependents before listing them,
// instead of asking every resource (nearly always none holds any).
func (s *Store) ResourcesWithField(ctx context.Context, field, value string) ([]string, error) {
	defer s.observe("resources_with_field", time.Now())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if hasNUL(value) {
		// Such values have no index entries (indexRows): every resource
		// with a live object may hold one.
		return column[string](s.readQuery(ctx, s.q(`SELECT DISTINCT resource FROM tabula_current`)))
	}
	// Driven by tabula_index (name, value): nothing constrains the log rows
	// but their primary key, so every planner starts from the index.
	return column[string](s.readQuery(ctx, s.q(`SELECT DISTINCT l.resource FROM tabula_index x JOIN tabula_log l ON l.rev = x.rev
		WHERE x.name = ? AND x.value = ? AND l.next_rev IS NULL AND l.op <> ?`), "f:"+field, truncateIndexValue(value), opDelete))
}

// column reads a one-column result; it takes a query's two results so a
// call reads as the query it runs.
func column[T any](rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, unavailable(rows.Err())
}
