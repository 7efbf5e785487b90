package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// A batch is planned in Go and then written table by table. Statements
// take at most these many rows, and a log insert at most logChunkBytes of
// values (MySQL sends parameters inside the statement text, which
// max_allowed_packet bounds); one row alone always goes through.
const (
	chunkRows     = 500
	logChunkBytes = 4 << 20
)

// shapedRows is the most rows a statement takes where the dialect keeps
// prepared statements (SQLite): a batch's rows go in statements of 16, 8,
// 4, 2 and 1 rows, so each table's inserts and the key lookup have five
// texts, each parsed once (see Store.keep) instead of one text per batch
// size parsed every batch.
const shapedRows = 16

// shapedChunk is how many of n rows (n > 0) the next shaped statement
// takes: the largest power of two up to n and shapedRows.
func shapedChunk(n int) int {
	c := shapedRows
	for c > n {
		c /= 2
	}
	return c
}

// liveRow is a key's live revision before the batch, with that row's
// labels and fields as stored (JSON), which its watch event needs when the
// batch changes the key.
type liveRow struct {
	rev, created   int64
	labels, fields string
}

// batchKeys lists the keys a batch writes, in order.
func batchKeys(batch []*writeReq) []kv.Key {
	keys := make([]kv.Key, len(batch))
	for i, r := range batch {
		keys[i] = r.key
	}
	return keys
}

// liveRows reads the live revision of each key that has one.
func (s *Store) liveRows(ctx context.Context, tx *sql.Tx, keys []kv.Key) (map[kv.Key]liveRow, error) {
	out := make(map[kv.Key]liveRow, len(keys))
	for start := 0; start < len(keys); {
		var rows *sql.Rows
		var err error
		if s.d.cacheStatements() {
			n := shapedChunk(len(keys) - start)
			query, args := liveRowsShaped(keys[start : start+n])
			rows, err = s.txQueryKept(ctx, tx, s.q(query), args...)
			start += n
		} else {
			query, args := s.liveRowsQuery(keys[start:min(start+chunkRows, len(keys))])
			rows, err = s.txQuery(ctx, tx, query, args...)
			start += chunkRows
		}
		if err != nil {
			return nil, err
		}
		err = scanLive(rows, out)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// liveRowsQuery reads the live rows of up to chunkRows keys.
func (s *Store) liveRowsQuery(keys []kv.Key) (string, []any) {
	if a, ok := s.d.(arrayBinder); ok {
		return s.q("SELECT c.resource, c.namespace, c.name, c.rev, l.created_rev, l.labels, l.fields FROM " + a.keysTable() +
			" JOIN tabula_current c ON " + keysJoin + " JOIN tabula_log l ON l.rev = c.rev"), keyArrays(keys)
	}
	cond, args := keysCondition("c", keys)
	return s.q(liveRowsSQL(cond)), args
}

// rowScanner is what database/sql's and pgx's result rows share.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}

// scanLive adds liveRowsQuery's rows to out.
func scanLive(rows rowScanner, out map[kv.Key]liveRow) error {
	for rows.Next() {
		var k kv.Key
		var r liveRow
		if err := rows.Scan(&k.Resource, &k.Namespace, &k.Name, &r.rev, &r.created, &r.labels, &r.fields); err != nil {
			return err
		}
		out[k] = r
	}
	return nil
}

func liveRowsSQL(cond string) string {
	return `SELECT c.resource, c.namespace, c.name, c.rev, l.created_rev, l.labels, l.fields
		FROM tabula_current c JOIN tabula_log l ON l.rev = c.rev WHERE ` + cond
}

// liveRowsShaped is liveRowsQuery whose text depends only on the number
// of keys: they go as a VALUES list joined to tabula_current, each a
// primary-key lookup (SQLite's plan), where keysCondition's text also
// depends on how the keys fall into resources and namespaces.
func liveRowsShaped(keys []kv.Key) (string, []any) {
	args := make([]any, 0, 3*len(keys))
	for _, k := range keys {
		args = append(args, k.Resource, k.Namespace, k.Name)
	}
	return liveRowsShapedSQL(len(keys)), args
}

func liveRowsShapedSQL(n int) string {
	return `SELECT c.resource, c.namespace, c.name, c.rev, l.created_rev, l.labels, l.fields
		FROM (VALUES ` + repeatRows("(?, ?, ?)", n) + `) k
		JOIN tabula_current c ON c.resource = k.column1 AND c.namespace = k.column2 AND c.name = k.column3
		JOIN tabula_log l ON l.rev = c.rev`
}

// arrayBinder is the optional power of databases that bind arrays
// (PostgreSQL). A batch's keys then go as three arrays joined to
// tabula_current, so each is a primary-key lookup even before the planner
// has statistics: PostgreSQL reads an IN list on the last key column of a
// young table as a filter over the whole namespace. Rows to insert go as
// one array per column.
type arrayBinder interface {
	// keysTable is a FROM item k(resource, namespace, name) over three
	// bound arrays.
	keysTable() string
	// unnest is a FROM item over one bound array per column type.
	unnest(types []string) string
}

const keysJoin = "c.resource = k.resource AND c.namespace = k.namespace AND c.name = k.name"

func keyArrays(keys []kv.Key) []any {
	r, ns, n := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		r[i], ns[i], n[i] = k.Resource, k.Namespace, k.Name
	}
	return []any{r, ns, n}
}

// keysCondition matches the rows of keys on the key columns of alias
// (empty: unqualified), grouped by resource and namespace so each group is
// an IN list on the primary key.
func keysCondition(alias string, keys []kv.Key) (string, []any) {
	col := func(c string) string {
		if alias == "" {
			return c
		}
		return alias + "." + c
	}
	type group struct{ resource, namespace string }
	var order []group
	names := map[group][]any{}
	seen := map[kv.Key]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		g := group{k.Resource, k.Namespace}
		if _, ok := names[g]; !ok {
			order = append(order, g)
		}
		names[g] = append(names[g], k.Name)
	}
	var b strings.Builder
	var args []any
	for i, g := range order {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(" + col("resource") + " = ? AND " + col("namespace") + " = ? AND " + col("name") + " IN (" + placeholders(len(names[g])) + "))")
		args = append(args, g.resource, g.namespace)
		args = append(args, names[g]...)
	}
	return b.String(), args
}

// batchPlan is every row a batch writes.
type batchPlan struct {
	log []newRow
	// superseded: rows written before this batch that a write replaced,
	// with the revision that replaced them.
	superseded [][2]int64
	// put: live rows to insert or repoint; drop: live rows to delete.
	put  []newRow
	drop []kv.Key
}

// newRow is a row the batch adds to tabula_log.
type newRow struct {
	key          kv.Key
	rev, created int64
	prev         int64
	op           int
	next         sql.NullInt64
	e            kv.Entry
	expires      sql.NullInt64
}

// planBatch applies the writes in order against the keys' live rows,
// starting after revision rev, and returns what to write and each write's
// answer. Later writes in the batch see earlier ones.
func planBatch(batch []*writeReq, live map[kv.Key]liveRow, rev int64) (batchPlan, []writeResult) {
	type keyState struct {
		live         bool
		rev, created int64
		inDB         bool // a tabula_current row existed before the batch
		logIdx       int  // the live row's index in p.log if written here, else -1
		changed      bool
	}
	// Sized for the batch: its rows are large, and growing the slices
	// by doubling made a third of a plan's garbage.
	p := batchPlan{log: make([]newRow, 0, len(batch)), put: make([]newRow, 0, len(batch))}
	results := make([]writeResult, len(batch))
	states := make(map[kv.Key]*keyState, len(batch))
	touched := make([]kv.Key, 0, len(batch))
	for i, r := range batch {
		st := states[r.key]
		if st == nil {
			l, ok := live[r.key]
			st = &keyState{live: ok, rev: l.rev, created: l.created, inDB: ok, logIdx: -1}
			states[r.key] = st
		}
		switch {
		case r.op == opCreate && st.live:
			results[i].err = kv.ErrExists
			continue
		case r.op != opCreate && !st.live:
			results[i].err = kv.ErrNotFound
			continue
		case r.op != opCreate && st.rev != r.expect:
			results[i].err = kv.ErrConflict
			continue
		}
		e, err := encode(r, rev+1)
		if err != nil {
			results[i].err = err
			continue
		}
		rev++
		row := newRow{key: r.key, rev: rev, created: rev, op: r.op, e: e, expires: expiry(e)}
		if st.live {
			row.created, row.prev = st.created, st.rev
			if st.logIdx >= 0 {
				p.log[st.logIdx].next = sql.NullInt64{Int64: rev, Valid: true}
			} else {
				p.superseded = append(p.superseded, [2]int64{st.rev, rev})
			}
		}
		if r.op == opDelete {
			// A tombstone is superseded by itself: compaction then finds
			// every removable row through next_rev alone.
			row.next = sql.NullInt64{Int64: rev, Valid: true}
			st.live, st.rev, st.logIdx = false, 0, -1
		} else {
			st.live, st.rev, st.created, st.logIdx = true, rev, row.created, len(p.log)
		}
		p.log = append(p.log, row)
		if !st.changed {
			st.changed = true
			touched = append(touched, r.key)
		}
		results[i].rec = kv.Record{Key: r.key, Rev: rev, CreatedRev: row.created, Value: e.Value}
	}
	for _, k := range touched {
		st := states[k]
		switch {
		case st.live:
			p.put = append(p.put, p.log[st.logIdx])
		case st.inDB:
			p.drop = append(p.drop, k)
		}
	}
	return p, results
}

// events are the log rows a committed plan added, as the watch poller
// would read them back: each with the labels and fields of the key's
// previous row, taken from the batch itself or from the live row read
// before it.
func (p batchPlan) events(live map[kv.Key]liveRow) []logRow {
	out := make([]logRow, len(p.log))
	first := p.log[0].rev
	for i, r := range p.log {
		out[i] = logRow{rev: r.rev, key: r.key, op: r.op, created: r.created, value: r.e.Value,
			labels: r.e.Labels, fields: r.e.Fields}
		switch {
		case r.prev == 0:
		case r.prev >= first:
			// Revisions in a batch are dense: the previous row is this
			// batch's row r.prev-first.
			prev := p.log[r.prev-first].e
			out[i].hasPrev, out[i].prevLabels, out[i].prevFs = true, prev.Labels, prev.Fields
			out[i].prevRev = r.prev
		default:
			l := live[r.key]
			out[i].hasPrev, out[i].prevRev = true, r.prev
			_ = json.Unmarshal([]byte(l.labels), &out[i].prevLabels)
			_ = json.Unmarshal([]byte(l.fields), &out[i].prevFs)
		}
	}
	return out
}

// execer runs a batch's write statements: at once inside a database/sql
// transaction, or queued to go in one round trip (postgres.go).
// execShaped is exec for a statement whose text is one of a fixed few
// (shapedRows), worth preparing once.
type execer interface {
	exec(query string, args ...any) error
	execShaped(query string, args ...any) error
}

// txExecer runs statements in a database/sql transaction.
type txExecer struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
}

func (x txExecer) exec(query string, args ...any) error {
	_, err := x.s.txExec(x.ctx, x.tx, query, args...)
	return err
}

func (x txExecer) execShaped(query string, args ...any) error {
	_, err := x.s.txExecKept(x.ctx, x.tx, query, args...)
	return err
}

// writePlan writes a planned batch: log rows, their index rows, the
// superseded rows' next_rev, and the live rows.
func (s *Store) writePlan(x execer, p batchPlan) error {
	for start := 0; start < len(p.log); {
		end, size := start, 0
		for end < len(p.log) && end-start < chunkRows && (end == start || size+len(p.log[end].e.Value) <= logChunkBytes) {
			size += len(p.log[end].e.Value)
			end++
		}
		t := tableRows{table: "tabula_log", cols: logColumns, types: logTypes}
		for _, r := range p.log[start:end] {
			labels, err := mapJSON(r.e.Labels)
			if err != nil {
				return err
			}
			fields, err := mapJSON(r.e.Fields)
			if err != nil {
				return err
			}
			stored, err := s.seal(r.key, r.e.Value)
			if err != nil {
				return err
			}
			t.add(r.rev, r.key.Resource, r.key.Namespace, r.key.Name, int64(r.op), r.created, r.prev, r.next,
				labels, fields, r.expires, stored)
		}
		if err := s.insertRows(x, t, ""); err != nil {
			return err
		}
		start = end
	}
	index := tableRows{table: "tabula_index", cols: indexColumns, types: indexTypes}
	for _, r := range p.log {
		if r.op == opDelete {
			continue
		}
		for _, row := range indexRows(r.e) {
			if index.add(r.rev, row[0], row[1], r.key.Resource, r.key.Namespace); len(index.rows) == chunkRows {
				if err := s.insertRows(x, index, ""); err != nil {
					return err
				}
				index.rows = index.rows[:0]
			}
		}
	}
	if err := s.insertRows(x, index, ""); err != nil {
		return err
	}
	for start := 0; start < len(p.superseded); start += chunkRows {
		if err := s.supersede(x, p.superseded[start:min(start+chunkRows, len(p.superseded))]); err != nil {
			return err
		}
	}
	put := tableRows{table: "tabula_current", cols: currentColumns, types: currentTypes}
	upsert := s.currentSuffix
	for _, r := range p.put {
		if put.add(r.key.Resource, r.key.Namespace, r.key.Name, r.rev, r.expires); len(put.rows) == chunkRows {
			if err := s.insertRows(x, put, upsert); err != nil {
				return err
			}
			put.rows = put.rows[:0]
		}
	}
	if err := s.insertRows(x, put, upsert); err != nil {
		return err
	}
	for start := 0; start < len(p.drop); start += chunkRows {
		chunk := p.drop[start:min(start+chunkRows, len(p.drop))]
		var query string
		var args []any
		if a, ok := s.d.(arrayBinder); ok {
			query, args = "DELETE FROM tabula_current c USING "+a.keysTable()+" WHERE "+keysJoin, keyArrays(chunk)
		} else {
			var cond string
			cond, args = keysCondition("", chunk)
			query = "DELETE FROM tabula_current WHERE " + cond
		}
		if err := x.exec(s.q(query), args...); err != nil {
			return err
		}
	}
	return nil
}

// mapJSON is a labels or fields column's JSON: json.Marshal's, with the
// empty map (most objects' fields, many objects' labels) made without it.
func mapJSON(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// The columns a batch writes, with their types for array binding.
var (
	logColumns     = []string{"rev", "resource", "namespace", "name", "op", "created_rev", "prev_rev", "next_rev", "labels", "fields", "expires_at", "value"}
	logTypes       = []string{"bigint", "text", "text", "text", "bigint", "bigint", "bigint", "bigint", "text", "text", "bigint", "bytea"}
	indexColumns   = []string{"rev", "name", "value", "resource", "namespace"}
	indexTypes     = []string{"bigint", "text", "text", "text", "text"}
	currentColumns = []string{"resource", "namespace", "name", "rev", "expires_at"}
	currentTypes   = []string{"text", "text", "text", "bigint", "bigint"}
)

// putCurrentSuffix makes the insert of live rows repoint the rows of
// keys that already have one.
func (s *Store) putCurrentSuffix() string {
	return s.d.upsert("resource, namespace, name", []string{"rev", "expires_at"})
}

// tableRows is rows for one INSERT. types are the columns' SQL types
// (bigint, text or bytea), for databases that bind a column as an array.
type tableRows struct {
	table       string
	cols, types []string
	rows        [][]any
}

func (t *tableRows) add(vals ...any) { t.rows = append(t.rows, vals) }

// insertRows inserts t's rows, if any, with one statement; suffix follows
// the rows (an upsert clause).
//
// Where the database binds arrays (PostgreSQL) each column goes as one
// array through unnest, so the statement's text is the same whatever the
// number of rows and the driver's prepared statement is reused; elsewhere
// it is a multi-row VALUES.
func (s *Store) insertRows(x execer, t tableRows, suffix string) error {
	if len(t.rows) == 0 {
		return nil
	}
	if a, ok := s.d.(arrayBinder); ok {
		query := "INSERT INTO " + t.table + " (" + strings.Join(t.cols, ", ") + ") SELECT * FROM " + a.unnest(t.types) + " " + suffix
		return x.exec(s.q(query), columnArrays(t.types, t.rows)...)
	}
	if s.d.cacheStatements() {
		for start := 0; start < len(t.rows); {
			n := shapedChunk(len(t.rows) - start)
			args := make([]any, 0, len(t.cols)*n)
			for _, r := range t.rows[start : start+n] {
				args = append(args, r...)
			}
			if err := x.execShaped(s.shapedInsert(t.table, t.cols, n, suffix), args...); err != nil {
				return err
			}
			start += n
		}
		return nil
	}
	args := make([]any, 0, len(t.cols)*len(t.rows))
	for _, r := range t.rows {
		args = append(args, r...)
	}
	return x.exec(s.q(insertValuesSQL(t.table, t.cols, len(t.rows), suffix)), args...)
}

// shapedInsert is insertValuesSQL's text, rebound for the dialect, of a
// shaped statement (a few per table, see shapedRows): made once each, not
// once a batch, where building it was a tenth of a one-row batch's
// allocations.
func (s *Store) shapedInsert(table string, cols []string, n int, suffix string) string {
	key := shapedKey{table, suffix, n}
	if q, ok := s.shapedSQL.Load(key); ok {
		return q.(string)
	}
	q := s.q(insertValuesSQL(table, cols, n, suffix))
	s.shapedSQL.Store(key, q)
	return q
}

// shapedKey names a shaped insert: a table's columns are always the same.
type shapedKey struct {
	table, suffix string
	n             int
}

// insertValuesSQL inserts n rows as a multi-row VALUES.
func insertValuesSQL(table string, cols []string, n int, suffix string) string {
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES " +
		repeatRows("("+placeholders(len(cols))+")", n) + " " + suffix
}

// supersede points rows written before this batch at the rows that
// replaced them: pairs of (rev, next).
func (s *Store) supersede(x execer, pairs [][2]int64) error {
	if a, ok := s.d.(arrayBinder); ok {
		revs, nexts := make([]int64, len(pairs)), make([]int64, len(pairs))
		for i, p := range pairs {
			revs[i], nexts[i] = p[0], p[1]
		}
		return x.exec(s.q("UPDATE tabula_log l SET next_rev = v.next FROM "+
			a.unnest([]string{"bigint", "bigint"})+" AS v(rev, next) WHERE l.rev = v.rev"), revs, nexts)
	}
	if s.d.cacheStatements() {
		for start := 0; start < len(pairs); {
			n := shapedChunk(len(pairs) - start)
			if err := x.execShaped(s.q(supersedeSQL(n)), supersedeArgs(pairs[start:start+n])...); err != nil {
				return err
			}
			start += n
		}
		return nil
	}
	return x.exec(s.q(supersedeSQL(len(pairs))), supersedeArgs(pairs)...)
}

// supersedeArgs are supersedeSQL's arguments for pairs.
func supersedeArgs(pairs [][2]int64) []any {
	args := make([]any, 0, 3*len(pairs))
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	for _, p := range pairs {
		args = append(args, p[0])
	}
	return args
}

// supersedeSQL is supersede's statement for n pairs; its arguments are
// the n (rev, next) pairs, then the n revs again.
func supersedeSQL(n int) string {
	return "UPDATE tabula_log SET next_rev = CASE rev" + strings.Repeat(" WHEN ? THEN ?", n) +
		" END WHERE rev IN (" + placeholders(n) + ")"
}

func repeatRows(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// columnArrays turns rows into one typed slice per column, NULLs included.
func columnArrays(types []string, rows [][]any) []any {
	out := make([]any, len(types))
	for j, typ := range types {
		switch typ {
		case "bigint":
			col := make([]*int64, len(rows))
			for i, r := range rows {
				switch v := r[j].(type) {
				case int64:
					col[i] = &v
				case sql.NullInt64:
					if v.Valid {
						col[i] = &v.Int64
					}
				default:
					panic(fmt.Sprintf("sqlstore: bigint column given %T", v))
				}
			}
			out[j] = col
		case "text":
			col := make([]string, len(rows))
			for i, r := range rows {
				col[i] = r[j].(string)
			}
			out[j] = col
		case "bytea":
			col := make([][]byte, len(rows))
			for i, r := range rows {
				col[i] = r[j].([]byte)
			}
			out[j] = col
		}
	}
	return out
}

// txQuery runs a query inside tx, prepared when the dialect caches
// statements.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, s.write, query, true); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}
