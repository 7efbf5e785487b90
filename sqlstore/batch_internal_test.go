package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestBatchSeesItsOwnWrites: one transaction holding creates, updates and
// deletes of the same keys gives every write the answer it would get alone
// and in order, and leaves the log, its history and the live rows as
// separate transactions would.
func TestBatchSeesItsOwnWrites(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "sqlite://:memory:" },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) { testBatchSeesItsOwnWrites(t, url(t)) })
	}
}

func testBatchSeesItsOwnWrites(t *testing.T, url string) {
	ctx := context.Background()
	s, err := Open(ctx, url, Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := func(n string) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "ns", Name: n} }
	val := func(v string) kv.Encoder {
		return func(int64) (kv.Entry, error) {
			return kv.Entry{Value: []byte(v), Labels: map[string]string{"v": v}}, nil
		}
	}
	b0, err := s.Create(ctx, key("b"), val("b0"))
	if err != nil {
		t.Fatal(err)
	}
	c0, err := s.Create(ctx, key("c"), val("c0"))
	if err != nil {
		t.Fatal(err)
	}
	start := c0.Rev
	boom := errors.New("encoder failed")
	req := func(op int, n string, expect int64, enc kv.Encoder) *writeReq {
		return &writeReq{ctx: ctx, op: op, key: key(n), expect: expect, enc: enc}
	}
	r := start
	batch := []*writeReq{
		req(opCreate, "a", 0, val("a1")),         // r+1
		req(opUpdate, "a", r+1, val("a2")),       // r+2, supersedes a row of this batch
		req(opCreate, "a", 0, val("dup")),        // exists
		req(opDelete, "a", r+2, val("a2")),       // r+3
		req(opUpdate, "a", r+3, val("gone")),     // not found
		req(opCreate, "a", 0, val("a3")),         // r+4, re-created
		req(opUpdate, "b", b0.Rev, val("b1")),    // r+5, supersedes an older row
		req(opUpdate, "b", b0.Rev, val("stale")), // conflict
		req(opDelete, "c", c0.Rev, val("c0")),    // r+6
		req(opCreate, "d", 0, func(int64) (kv.Entry, error) { return kv.Entry{}, boom }),
		req(opCreate, "c", 0, val("c1")),   // r+7, re-created after a delete in the batch
		req(opCreate, "e", 0, val("e1")),   // r+8
		req(opDelete, "e", r+8, val("e1")), // r+9, created and deleted in the batch
	}
	// Watchers open before the batch get its events from the committer;
	// the selector's events depend on the labels of each key's previous
	// row, read before the batch (b, c) or written in it (a).
	sel, _ := labels.Parse("v in (a2,b0,c0)")
	watch := func(p kv.Predicate) kv.Watcher {
		w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: r, Pred: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	liveAll, liveSel := watch(kv.Predicate{}), watch(kv.Predicate{Label: sel})
	results, err := s.runBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	s.hub.mu.Lock()
	delivered := s.hub.last
	s.hub.mu.Unlock()
	if delivered != r+9 {
		t.Fatalf("hub delivered up to %d after the commit; want %d (the committer hands over its rows)", delivered, r+9)
	}
	var got []string
	for _, res := range results {
		switch {
		case res.err != nil:
			got = append(got, res.err.Error())
		default:
			got = append(got, fmt.Sprintf("%d/%d", res.rec.Rev-r, res.rec.CreatedRev-r))
		}
	}
	want := []string{"1/1", "2/1", kv.ErrExists.Error(), "3/1", kv.ErrNotFound.Error(), "4/4",
		fmt.Sprintf("5/%d", b0.Rev-r), kv.ErrConflict.Error(), fmt.Sprintf("6/%d", c0.Rev-r), boom.Error(), "7/7", "8/8", "9/8"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("answers (revision/created, relative to %d):\n got %v\nwant %v", r, got, want)
	}
	if cur, _ := s.CurrentRev(ctx); cur != r+9 {
		t.Fatalf("current revision %d; want %d (failed writes take none)", cur, r+9)
	}

	// Every revision of the batch reads as the state after that write.
	snapshots := map[int64]string{
		r:     "[b=b0 c=c0]",
		r + 1: "[a=a1 b=b0 c=c0]",
		r + 2: "[a=a2 b=b0 c=c0]",
		r + 3: "[b=b0 c=c0]",
		r + 4: "[a=a3 b=b0 c=c0]",
		r + 5: "[a=a3 b=b1 c=c0]",
		r + 6: "[a=a3 b=b1]",
		r + 7: "[a=a3 b=b1 c=c1]",
		r + 8: "[a=a3 b=b1 c=c1 e=e1]",
		r + 9: "[a=a3 b=b1 c=c1]",
		0:     "[a=a3 b=b1 c=c1]",
	}
	for at, want := range snapshots {
		res, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: "ns", Rev: at})
		if err != nil {
			t.Fatal(err)
		}
		var items []string
		for _, it := range res.Items {
			items = append(items, it.Name+"="+string(it.Value))
		}
		if fmt.Sprint(items) != want {
			t.Errorf("list at %d: %v; want %s", at, items, want)
		}
	}
	// The label index holds the batch's rows: a3 is found, a1 is not live.
	for sel, want := range map[string]string{"v=a3": "[a]", "v=a1": "[]", "v=e1": "[]", "v in (b1,c1)": "[b c]"} {
		ls, _ := labels.Parse(sel)
		res, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: "ns", Pred: kv.Predicate{Label: ls}})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range res.Items {
			names = append(names, it.Name)
		}
		if fmt.Sprint(names) != want {
			t.Errorf("list %s: %v; want %s", sel, names, want)
		}
	}
	// Watchers see the batch as separate events, in order, whether they
	// were open during the commit or replay it from history.
	events := func(w kv.Watcher, n int) string {
		var got []string
		// The bound only turns a missing event into a failure.
		timeout := time.After(10 * time.Second)
		for len(got) < n {
			select {
			case ev := <-w.Events():
				got = append(got, fmt.Sprintf("%s %s=%s", ev.Type, ev.Name, ev.Value))
			case <-timeout:
				return fmt.Sprint(got) + " and then nothing"
			}
		}
		return fmt.Sprint(got)
	}
	wantAll := "[ADDED a=a1 MODIFIED a=a2 DELETED a=a2 ADDED a=a3 MODIFIED b=b1 DELETED c=c0 ADDED c=c1 ADDED e=e1 DELETED e=e1]"
	// b leaves the selector: DELETED as it was before (b0).
	wantSel := "[ADDED a=a2 DELETED a=a2 DELETED b=b0 DELETED c=c0]"
	for name, c := range map[string]struct {
		w    kv.Watcher
		n    int
		want string
	}{
		"live":              {liveAll, 9, wantAll},
		"live selector":     {liveSel, 4, wantSel},
		"replayed":          {watch(kv.Predicate{}), 9, wantAll},
		"replayed selector": {watch(kv.Predicate{Label: sel}), 4, wantSel},
	} {
		if got := events(c.w, c.n); got != c.want {
			t.Errorf("%s events:\n got %s\nwant %s", name, got, c.want)
		}
	}
	// Compacting to the batch's last revision leaves only the live rows.
	if err := s.Compact(ctx, r+9); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM tabula_log").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 {
		t.Fatalf("%d log rows after compaction; want the 3 live objects' rows", rows)
	}
}

// TestPipelinedBatchFailure: on PostgreSQL, where a batch goes in two
// pipelined round trips, a write the database rejects (a NUL byte in a
// name's text, which Create refuses before it gets here) fails alone: the batch is rolled back and retried write by write,
// the others commit with dense revisions, and the connection stays usable.
func TestPipelinedBatchFailure(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.Postgres(t), Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start, err := s.CurrentRev(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, label string) *writeReq {
		return &writeReq{ctx: ctx, op: opCreate, key: kv.Key{Resource: "configmaps", Namespace: "ns", Name: name},
			enc: func(int64) (kv.Entry, error) {
				return kv.Entry{Value: []byte(`{}`), Labels: map[string]string{"l": label}}, nil
			}, done: make(chan writeResult, 1)}
	}
	batch := []*writeReq{mk("a", "ok"), mk("b\x00", "ok"), mk("c", "ok")}
	s.commitBatch(batch)
	var got []string
	for _, r := range batch {
		res := <-r.done
		if res.err != nil {
			got = append(got, "error")
			continue
		}
		got = append(got, fmt.Sprint(res.rec.Rev-start))
	}
	if fmt.Sprint(got) != "[1 error 2]" {
		t.Fatalf("results %v; want [1 error 2] (revisions relative to %d)", got, start)
	}
	if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: "d"},
		func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil }); err != nil {
		t.Fatalf("a write after the failed batch: %v", err)
	}
	res, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range res.Items {
		names = append(names, it.Name)
	}
	if fmt.Sprint(names) != "[a c d]" {
		t.Fatalf("stored %v; want [a c d]", names)
	}
}

// TestWritersOnOneCoreShareCommits: on a single core, writers that each
// work a while before writing (as a request is decoded, admitted and its
// fields tracked before it is stored) share a transaction. The committer
// used to commit the first write of a burst as soon as it arrived, before
// the others could run, then each few that finished while it synced: on
// one core a busy server's writes went in batches of 1.07 (32 clients),
// each paying a transaction and an fsync.
func TestWritersOnOneCoreShareCommits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	s, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "one.db"), Options{CompactInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commits, writes := batchTotals(t)
	const writers = 32
	start := make(chan struct{})
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			<-start
			work()
			_, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: fmt.Sprint("w", i)},
				func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil })
			errs <- err
		}()
	}
	close(start) // a burst: every writer is ready to run at once
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c, w := batchTotals(t)
	if w-writes != writers {
		t.Fatalf("%d writes committed, want %d", w-writes, writers)
	}
	// One, or two when the scheduler's fairness check resumes the
	// committer before every writer has run.
	if c-commits > 2 {
		t.Errorf("a burst of %d writers on one core took %d commits, want at most 2", writers, c-commits)
	}
}

// work stands for a request's work before its write: about 100 µs of
// CPU.
func work() {
	sum := sha256.Sum256(nil)
	for range 500 {
		sum = sha256.Sum256(sum[:])
	}
	_ = sum
}

// batchTotals reads the group-commit histogram: transactions committed
// and the writes in them, over every Store of the process.
func batchTotals(t *testing.T) (commits, writes uint64) {
	var m dto.Metric
	if err := batchSize.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), uint64(m.GetHistogram().GetSampleSum())
}

// TestShapedStatementsPreparedOnce: on SQLite a batch's inserts, updates
// of superseded rows and key lookup run as statements of 16, 8, 4, 2 and
// 1 rows, each prepared once, after the first transaction that ran it:
// batches of every size up to 40 leave a bounded set of statements, after
// which no batch runs one unprepared, and each batch's rows all land.
func TestShapedStatementsPreparedOnce(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteFile(t, filepath.Join(t.TempDir(), "db.sqlite"))
	enc := func(v string) kv.Encoder {
		return func(int64) (kv.Entry, error) {
			return kv.Entry{Value: []byte(v), Labels: map[string]string{"v": v}}, nil
		}
	}
	// batch writes n keys of round: created, or updated when they exist
	// (superseding their rows).
	batch := func(round, n int, update bool) {
		t.Helper()
		var reqs []*writeReq
		for i := range n {
			k := kv.Key{Resource: "configmaps", Namespace: fmt.Sprintf("ns%d", i%3), Name: fmt.Sprintf("r%d-%d", round, i)}
			r := &writeReq{ctx: ctx, op: opCreate, key: k, enc: enc(fmt.Sprint(i))}
			if update {
				got, err := s.Get(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				r.op, r.expect = opUpdate, got.Rev
			}
			reqs = append(reqs, r)
		}
		results, err := s.runBatch(reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range results {
			if res.err != nil {
				t.Fatalf("batch of %d, write %d: %v", n, i, res.err)
			}
		}
	}
	for n := 1; n <= 40; n++ {
		batch(n, n, false)
		batch(n, n, true)
		s.prepareKept()
	}
	prepared := 0
	s.stmts.Range(func(k, _ any) bool {
		if k.(stmtKey).db == s.write {
			prepared++
		}
		return true
	})
	// The one-write statements prepared at start, and five sizes of each
	// shaped statement: the log's, the index's, the live rows', the
	// superseded rows' and the key lookup.
	if most := len(s.writeStatements()) + 5*5; prepared > most {
		t.Fatalf("%d statements prepared on the write pool; want at most %d", prepared, most)
	}
	for _, n := range []int{13, 37} {
		batch(100+n, n, false)
		batch(100+n, n, true)
		s.keptMu.Lock()
		kept := s.kept
		s.keptMu.Unlock()
		if len(kept) > 0 {
			t.Fatalf("a batch of %d ran %d statements unprepared after every size had run: %q", n, len(kept), kept)
		}
	}
	l, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	// Keys i%3 == 1 of rounds 1..40 (sizes 1..40) and of 113 and 137.
	want := (13+1)/3 + (37+1)/3
	for n := 1; n <= 40; n++ {
		want += (n + 1) / 3
	}
	if len(l.Items) != want {
		t.Fatalf("ns1 holds %d objects; want %d", len(l.Items), want)
	}
}

// TestRowBytesOwned: the dialects that say their driver gives each row's
// bytes a buffer of their own (rowBytesOwner: lists keep the
// sql.RawBytes they scan) do: every value kept from a query stays as it
// was read after the rows that followed, their close, and another query.
func TestRowBytesOwned(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteFile(t, filepath.Join(t.TempDir(), "db.sqlite"))
	if _, ok := s.d.(rowBytesOwner); !ok {
		t.Fatalf("the SQLite dialect does not say its rows' bytes are owned; this test holds it to that")
	}
	want := map[string]string{}
	for i := range 50 {
		name := fmt.Sprintf("o%02d", i)
		// Sizes on both sides of SQLite's overflow pages.
		v := strings.Repeat(string(rune('a'+i%26)), 100+i*200)
		want[name] = v
		if _, err := s.Create(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: name},
			func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(v)}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string][]byte {
		rows, err := s.read.QueryContext(ctx, "SELECT name, value FROM tabula_log ORDER BY rev")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		kept := map[string][]byte{}
		// One destination for every row, as listAt scans.
		var name string
		var value sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&name, &value); err != nil {
				t.Fatal(err)
			}
			kept[name] = value
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return kept
	}
	kept := read()
	read()
	if len(kept) != len(want) {
		t.Fatalf("read %d values; want %d", len(kept), len(want))
	}
	for name, v := range want {
		if string(kept[name]) != v {
			t.Fatalf("%s's value changed after later rows: %.20q…, want %.20q…", name, kept[name], v)
		}
	}
	// And a list, which keeps them, answers each object's own value.
	l, err := s.List(ctx, kv.ListOptions{Resource: "configmaps", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Items {
		if string(r.Value) != want[r.Name] {
			t.Fatalf("listed %s with %.20q…; want %.20q…", r.Name, r.Value, want[r.Name])
		}
	}
	// And gets, which keep them too: each value as it was after every
	// other get.
	got := map[string][]byte{}
	for name := range want {
		r, err := s.Get(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		got[name] = r.Value
	}
	for name, v := range want {
		if string(got[name]) != v {
			t.Fatalf("got %s as %.20q… after later gets; want %.20q…", name, got[name], v)
		}
	}
	if _, err := s.Get(ctx, kv.Key{Resource: "configmaps", Namespace: "ns", Name: "absent"}); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get of an absent object: %v; want kv.ErrNotFound", err)
	}
}
