package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// concatKeys is the optional power of dialects whose per-row cost in the
// driver is far above the database's own (modernc's SQLite: each column
// of each row is a call into SQLite under its connection mutex, a type
// check and, for a name, a Go string; database/sql adds its locks and a
// Scan). A warm list reads only keys and revisions, so there it asks for
// each batch as one row: the keys joined with "/", which no name or
// namespace may contain (kube's path-segment rule, every kind's names
// included).
type concatKeys interface{ concatKeys() }

// keyBatch is how many keys one concatenated row holds: the row is ~25
// bytes a key, and a query costs ~50 µs besides its rows.
const keyBatch = 5000

// readKeyBatch reads one batch of a latest list's keys and revisions
// (listQuery q with noValues, no predicate) as one concatenated row, and
// appends them to items in key order. It returns how many rows the batch
// had; ok is false, with items as they were, when the row cannot be split
// back into keys (a name with a "/" in it, which the store itself does not
// refuse): the caller reads that batch row by row instead.
func (s *Store) readKeyBatch(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, q string, args []any, cols listCols, items *[]kv.Record) (n int, ok bool, err error) {
	k := "rev || '/' || name"
	if cols.namespace {
		k = "rev || '/' || namespace || '/' || name"
	}
	var joined sql.NullString
	// The keys come in the inner query's order in practice; each batch is
	// checked (and sorted if need be) below rather than trusted.
	err = tx.QueryRowContext(ctx, "SELECT count(*), group_concat("+k+", '/') FROM ("+q+")", args...).Scan(&n, &joined)
	if err != nil {
		return 0, false, unavailable(err)
	}
	start := len(*items)
	*items = growItems(*items, n)
	rest := joined.String
	next := func() string {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			f := rest
			rest = ""
			return f
		}
		f := rest[:i]
		rest = rest[i+1:]
		return f
	}
	for range n {
		r := kv.Record{Key: kv.Key{Resource: opts.Resource, Namespace: opts.Namespace}}
		rev, err := strconv.ParseInt(next(), 10, 64)
		if err != nil {
			*items = (*items)[:start]
			return 0, false, nil
		}
		r.Rev = rev
		if cols.namespace {
			r.Namespace = next()
		}
		r.Name = next()
		*items = append(*items, r)
	}
	if rest != "" {
		*items = (*items)[:start]
		return 0, false, nil
	}
	batch := (*items)[start:]
	byKey := func(a, b kv.Record) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	if !slices.IsSortedFunc(batch, byKey) {
		slices.SortFunc(batch, byKey)
	}
	return n, true, nil
}

// growItems makes room for n more items, doubling: a whole list's items
// grow batch by batch, and append's own growth for a large slice (a
// quarter at a time) allocated five times the final slice over a list of
// 20,000 keys.
func growItems(items []kv.Record, n int) []kv.Record {
	if len(items)+n <= cap(items) {
		return items
	}
	grown := make([]kv.Record, len(items), max(2*cap(items), len(items)+n))
	copy(grown, items)
	return grown
}
