package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Open opens a Store on url for a test, logging nothing; it closes when t
// ends.
func Open(t testing.TB, url string) *sqlstore.Store {
	t.Helper()
	return OpenWith(t, url, sqlstore.Options{})
}

// OpenWith is Open with options (its Logger is replaced).
func OpenWith(t testing.TB, url string, opts sqlstore.Options) *sqlstore.Store {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := sqlstore.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Factory opens a Store on a fresh, empty database for one test.
type Factory func(t *testing.T) *sqlstore.Store

// Run runs the whole suite against stores made by open.
func Run(t *testing.T, open Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *sqlstore.Store)
	}{
		{"CreateGet", testCreateGet},
		{"GetKnown", testGetKnown},
		{"CreateExists", testCreateExists},
		{"UpdateCAS", testUpdateCAS},
		{"DeleteAndRecreate", testDeleteAndRecreate},
		{"ListPagesOneSnapshot", testListPagesOneSnapshot},
		{"ListSelectors", testListSelectors},
		{"ListFutureRev", testListFutureRev},
		{"ListFieldSelectors", testListFieldSelectors},
		{"KeysAreBytes", testKeysAreBytes},
		{"NULCharacters", testNULCharacters},
		{"CountByResource", testCountByResource},
		{"ListValuesAndEncode", testListValuesAndEncode},
		{"ListCachedSkipsValues", testListCachedSkipsValues},
		{"WatchReplayThenLive", testWatchReplayThenLive},
		{"WatchReplayOneNamespaceOrName", testWatchReplayOneNamespaceOrName},
		{"WatchSelectorTransitions", testWatchSelectorTransitions},
		{"WatchProgress", testWatchProgress},
		{"WatchInitialState", testWatchInitialState},
		{"WatchInitialStateSharesValues", testWatchInitialStateSharesValues},
		{"RefreshFields", testRefreshFields},
		{"ConcurrentCreatesOneWins", testConcurrentCreatesOneWins},
		{"ConcurrentWritersDenseRevisions", testConcurrentWritersDense},
		{"CompactDiscardsHistory", testCompact},
		{"CompactKeepsWatchTransitions", testCompactKeepsTransitions},
		{"Expired", testExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			tc.fn(t, s)
		})
	}
}

func key(name string) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "ns1", Name: name} }

// enc stores a small JSON document that carries its own revision, as the
// server's encoders do.
func enc(name string, lbls map[string]string) kv.Encoder {
	return func(rev int64) (kv.Entry, error) {
		return kv.Entry{
			Value:  []byte(fmt.Sprintf(`{"name":%q,"rev":%d}`, name, rev)),
			Labels: lbls,
			Fields: map[string]string{"metadata.name": name, "metadata.namespace": "ns1"},
		}, nil
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustCreate(t *testing.T, s *sqlstore.Store, k kv.Key, l map[string]string) kv.Record {
	t.Helper()
	r, err := s.Create(ctx(t), k, enc(k.Name, l))
	if err != nil {
		t.Fatalf("create %v: %v", k, err)
	}
	return r
}

func testCreateGet(t *testing.T, s *sqlstore.Store) {
	r := mustCreate(t, s, key("a"), nil)
	if r.Rev <= 0 || r.CreatedRev != r.Rev {
		t.Fatalf("create returned rev %d created %d; want equal and positive", r.Rev, r.CreatedRev)
	}
	got, err := s.Get(ctx(t), key("a"))
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Rev != r.Rev || string(got.Value) != string(r.Value) {
		t.Fatalf("get = rev %d %s; want rev %d %s", got.Rev, got.Value, r.Rev, r.Value)
	}
	want := fmt.Sprintf(`{"name":"a","rev":%d}`, r.Rev)
	if string(got.Value) != want {
		t.Fatalf("stored value %s; want %s (encoder must see the write's revision)", got.Value, want)
	}
	if _, err := s.Get(ctx(t), key("missing")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get missing: err %v; want ErrNotFound", err)
	}
	cur, err := s.CurrentRev(ctx(t))
	if err != nil || cur != r.Rev {
		t.Fatalf("CurrentRev = %d, %v; want %d", cur, err, r.Rev)
	}
}

// testGetKnown: GetKnown asks only with the live revision, answers as
// Get when the caller does not hold it, and when the caller does, either
// leaves the value out (stores that read the revision apart) or answers
// as Get; missing and deleted keys are not found, with nothing asked.
func testGetKnown(t *testing.T, s *sqlstore.Store) {
	c := mustCreate(t, s, key("a"), nil)
	u, err := s.Update(ctx(t), key("a"), c.Rev, enc("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	var asked []int64
	ask := func(holds bool) func(int64) bool {
		return func(rev int64) bool { asked = append(asked, rev); return holds }
	}
	whole, err := s.Get(ctx(t), key("a"))
	if err != nil {
		t.Fatal(err)
	}

	r, skipped, err := s.GetKnown(ctx(t), key("a"), ask(false))
	if err != nil || skipped || r.Rev != u.Rev || r.CreatedRev != c.Rev || string(r.Value) != string(whole.Value) {
		t.Fatalf("GetKnown, revision not held: %+v skipped %v, %v; want Get's %+v", r, skipped, err, whole)
	}
	for _, rev := range asked {
		if rev != u.Rev {
			t.Fatalf("asked about revision %d; the live one is %d", rev, u.Rev)
		}
	}

	asked = nil
	r, skipped, err = s.GetKnown(ctx(t), key("a"), ask(true))
	switch {
	case err != nil:
		t.Fatal(err)
	case skipped && (r.Rev != u.Rev || r.Value != nil || len(asked) != 1):
		t.Fatalf("GetKnown, revision held: %+v after asking about %v; want revision %d alone, asked once", r, asked, u.Rev)
	case !skipped && (r.Rev != u.Rev || string(r.Value) != string(whole.Value)):
		t.Fatalf("GetKnown, revision held, not skipped: %+v; want Get's %+v", r, whole)
	}

	mustCreate(t, s, key("b"), nil)
	b, err := s.Get(ctx(t), key("b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx(t), key("b"), b.Rev, enc("b", nil)); err != nil {
		t.Fatal(err)
	}
	asked = nil
	for _, k := range []kv.Key{key("b"), key("missing")} {
		if _, _, err := s.GetKnown(ctx(t), k, ask(true)); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("GetKnown of %s: %v; want ErrNotFound", k.Name, err)
		}
	}
	if len(asked) != 0 {
		t.Fatalf("asked about %v for keys without a live object", asked)
	}
}

func testCreateExists(t *testing.T, s *sqlstore.Store) {
	mustCreate(t, s, key("a"), nil)
	before, _ := s.CurrentRev(ctx(t))
	if _, err := s.Create(ctx(t), key("a"), enc("a", nil)); !errors.Is(err, kv.ErrExists) {
		t.Fatalf("second create: err %v; want ErrExists", err)
	}
	after, _ := s.CurrentRev(ctx(t))
	if after != before {
		t.Fatalf("failed create moved the revision from %d to %d; want unchanged", before, after)
	}
}

func testUpdateCAS(t *testing.T, s *sqlstore.Store) {
	r := mustCreate(t, s, key("a"), nil)
	u, err := s.Update(ctx(t), key("a"), r.Rev, enc("a", nil))
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if u.Rev <= r.Rev || u.CreatedRev != r.Rev {
		t.Fatalf("update rev %d created %d; want > %d and created %d", u.Rev, u.CreatedRev, r.Rev, r.Rev)
	}
	if _, err := s.Update(ctx(t), key("a"), r.Rev, enc("a", nil)); !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("stale update: err %v; want ErrConflict", err)
	}
	if _, err := s.Update(ctx(t), key("nope"), 1, enc("nope", nil)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("update missing: err %v; want ErrNotFound", err)
	}
	got, _ := s.Get(ctx(t), key("a"))
	if got.Rev != u.Rev {
		t.Fatalf("get after update rev %d; want %d", got.Rev, u.Rev)
	}
}

func testDeleteAndRecreate(t *testing.T, s *sqlstore.Store) {
	r := mustCreate(t, s, key("a"), nil)
	if _, err := s.Delete(ctx(t), key("a"), r.Rev+100, enc("a", nil)); !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("delete with wrong rev: err %v; want ErrConflict", err)
	}
	d, err := s.Delete(ctx(t), key("a"), r.Rev, enc("a", nil))
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.Get(ctx(t), key("a")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get after delete: err %v; want ErrNotFound", err)
	}
	if _, err := s.Delete(ctx(t), key("a"), d.Rev, enc("a", nil)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("second delete: err %v; want ErrNotFound", err)
	}
	r2 := mustCreate(t, s, key("a"), nil)
	if r2.CreatedRev <= d.Rev {
		t.Fatalf("re-created object has created rev %d; want > delete rev %d", r2.CreatedRev, d.Rev)
	}
	// The list at the revision before the delete still shows the old object.
	l, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1", Rev: r.Rev})
	if err != nil || len(l.Items) != 1 || l.Items[0].Rev != r.Rev {
		t.Fatalf("list at rev %d = %+v, %v; want the first incarnation", r.Rev, l.Items, err)
	}
	l, err = s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1", Rev: d.Rev})
	if err != nil || len(l.Items) != 0 {
		t.Fatalf("list at delete rev = %+v, %v; want empty", l.Items, err)
	}
}

func names(rs []kv.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func testListPagesOneSnapshot(t *testing.T, s *sqlstore.Store) {
	for _, ns := range []string{"b", "a"} {
		for _, n := range []string{"y", "x", "z"} {
			if _, err := s.Create(ctx(t), kv.Key{Resource: "configmaps", Namespace: ns, Name: n}, enc(n, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another resource must never show up.
	if _, err := s.Create(ctx(t), kv.Key{Resource: "secrets", Namespace: "a", Name: "s"}, enc("s", nil)); err != nil {
		t.Fatal(err)
	}
	p1, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(names(p1.Items)), "[a/x a/y a/z b/x]"; got != want || !p1.More || p1.Remaining != 2 {
		t.Fatalf("page 1 = %s more=%v remaining=%d; want %s more=true remaining=2", got, p1.More, p1.Remaining, want)
	}
	// Changes after the first page must not show in later pages.
	last := p1.Items[len(p1.Items)-1]
	if _, err := s.Create(ctx(t), kv.Key{Resource: "configmaps", Namespace: "b", Name: "xa"}, enc("xa", nil)); err != nil {
		t.Fatal(err)
	}
	by, _ := s.Get(ctx(t), kv.Key{Resource: "configmaps", Namespace: "b", Name: "y"})
	if _, err := s.Delete(ctx(t), kv.Key{Resource: "configmaps", Namespace: "b", Name: "y"}, by.Rev, enc("y", nil)); err != nil {
		t.Fatal(err)
	}
	p2, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Limit: 4, Rev: p1.Rev, AfterNamespace: last.Namespace, AfterName: last.Name})
	if err != nil {
		t.Fatal(err)
	}
	p15, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Limit: 1, Rev: p1.Rev, AfterNamespace: last.Namespace, AfterName: last.Name})
	if err != nil || p15.Remaining != 1 {
		t.Fatalf("page at the snapshot after b/x: remaining=%d, %v; want 1 (counted at the snapshot, not now)", p15.Remaining, err)
	}
	if got, want := fmt.Sprint(names(p2.Items)), "[b/y b/z]"; got != want || p2.More || p2.Rev != p1.Rev {
		t.Fatalf("page 2 = %s more=%v rev=%d; want %s more=false rev=%d", got, p2.More, p2.Rev, want, p1.Rev)
	}
	now, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(names(now.Items)), "[b/x b/xa b/z]"; got != want {
		t.Fatalf("latest list = %s; want %s", got, want)
	}
}

func testListSelectors(t *testing.T, s *sqlstore.Store) {
	for i, l := range []map[string]string{{"app": "web"}, {"app": "db"}, {"app": "web", "tier": "gold"}, nil} {
		mustCreate(t, s, key(fmt.Sprintf("o%d", i)), l)
	}
	cases := []struct {
		sel   string
		field string
		limit int
		want  string
		more  bool
	}{
		{sel: "app=web", want: "[ns1/o0 ns1/o2]"},
		{sel: "app!=web", want: "[ns1/o1 ns1/o3]"},
		{sel: "app in (db,web),tier", want: "[ns1/o2]"},
		{sel: "!app", want: "[ns1/o3]"},
		{sel: "app notin (web)", want: "[ns1/o1 ns1/o3]"},
		{sel: "tier", want: "[ns1/o2]"},
		{sel: "app=nope", want: "[]"},
		{sel: "app=web", limit: 1, want: "[ns1/o0]", more: true},
		{field: "metadata.name=o1", want: "[ns1/o1]"},
		{field: "metadata.name!=o1", sel: "app", want: "[ns1/o0 ns1/o2]"},
	}
	for _, c := range cases {
		var p kv.Predicate
		if c.sel != "" {
			sel, err := labels.Parse(c.sel)
			if err != nil {
				t.Fatal(err)
			}
			p.Label = sel
		}
		if c.field != "" {
			f, err := fields.ParseSelector(c.field)
			if err != nil {
				t.Fatal(err)
			}
			p.Field = f
		}
		res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1", Pred: p, Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(names(res.Items)); got != c.want || res.More != c.more {
			t.Errorf("list %q %q limit %d = %s more=%v; want %s more=%v", c.sel, c.field, c.limit, got, res.More, c.want, c.more)
		}
	}
}

func testListFutureRev(t *testing.T, s *sqlstore.Store) {
	r := mustCreate(t, s, key("a"), nil)
	_, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Rev: r.Rev + 10})
	var fe *kv.FutureRevError
	if !errors.As(err, &fe) || fe.Current != r.Rev {
		t.Fatalf("list at a future revision: err %v; want FutureRevError with current %d", err, r.Rev)
	}
}

func recv(t *testing.T, w kv.Watcher) kv.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch closed: %v", w.Err())
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event within 20s")
	}
	return kv.Event{}
}

func testWatchReplayThenLive(t *testing.T, s *sqlstore.Store) {
	a := mustCreate(t, s, key("a"), nil)
	b := mustCreate(t, s, key("b"), nil)
	mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns1", Name: "s"}, nil)
	u, err := s.Update(ctx(t), key("a"), a.Rev, enc("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: a.Rev})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	d, err := s.Delete(ctx(t), key("b"), b.Rev, enc("b", nil))
	if err != nil {
		t.Fatal(err)
	}
	c := mustCreate(t, s, key("c"), nil)
	want := []struct {
		typ kv.EventType
		rev int64
	}{{kv.Added, b.Rev}, {kv.Modified, u.Rev}, {kv.Deleted, d.Rev}, {kv.Added, c.Rev}}
	for i, wnt := range want {
		ev := recv(t, w)
		if ev.Type != wnt.typ || ev.Rev != wnt.rev {
			t.Fatalf("event %d = %s@%d; want %s@%d", i, ev.Type, ev.Rev, wnt.typ, wnt.rev)
		}
	}
}

// testWatchReplayOneNamespaceOrName: a watch from a past revision on one
// namespace (or one name) replays exactly that key range's history among
// other namespaces' and resources' writes, then goes on live.
func testWatchReplayOneNamespaceOrName(t *testing.T, s *sqlstore.Store) {
	start, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	other := func(name string) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "ns2", Name: name} }
	var wantNS, wantName []int64
	for i := range 5 {
		mustCreate(t, s, other(fmt.Sprint("x", i)), nil)
		mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns1", Name: fmt.Sprint("s", i)}, nil)
		r := mustCreate(t, s, key(fmt.Sprint("r", i)), nil)
		wantNS = append(wantNS, r.Rev)
		if i == 3 {
			wantName = append(wantName, r.Rev)
		}
	}
	byNS, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer byNS.Stop()
	byName, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", Name: "r3", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer byName.Stop()
	mustCreate(t, s, other("live"), nil)
	live := mustCreate(t, s, key("live"), nil)
	wantNS = append(wantNS, live.Rev)
	for i, rev := range wantNS {
		if ev := recv(t, byNS); ev.Rev != rev || ev.Namespace != "ns1" {
			t.Fatalf("namespace watch, event %d: %s/%s@%d; want ns1@%d", i, ev.Namespace, ev.Name, ev.Rev, rev)
		}
	}
	r3, err := s.Get(ctx(t), key("r3"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Update(ctx(t), key("r3"), r3.Rev, enc("r3", nil))
	if err != nil {
		t.Fatal(err)
	}
	wantName = append(wantName, u.Rev)
	for i, rev := range wantName {
		if ev := recv(t, byName); ev.Rev != rev || ev.Name != "r3" {
			t.Fatalf("name watch, event %d: %s@%d; want r3@%d", i, ev.Name, ev.Rev, rev)
		}
	}
}

func testWatchSelectorTransitions(t *testing.T, s *sqlstore.Store) {
	start, _ := s.CurrentRev(ctx(t))
	sel, _ := labels.Parse("app=web")
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", After: start, Pred: kv.Predicate{Label: sel}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r := mustCreate(t, s, key("a"), map[string]string{"app": "db"})
	r, err = s.Update(ctx(t), key("a"), r.Rev, enc("a", map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Update(ctx(t), key("a"), r.Rev, enc("a", map[string]string{"app": "web", "x": "y"}))
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Update(ctx(t), key("a"), r2.Rev, enc("a", map[string]string{"app": "db"}))
	if err != nil {
		t.Fatal(err)
	}
	for i, wnt := range []struct {
		typ kv.EventType
		rev int64
	}{{kv.Added, r.Rev}, {kv.Modified, r2.Rev}, {kv.Deleted, r3.Rev}} {
		ev := recv(t, w)
		if ev.Type != wnt.typ || ev.Rev != wnt.rev {
			t.Fatalf("event %d = %s@%d; want %s@%d", i, ev.Type, ev.Rev, wnt.typ, wnt.rev)
		}
		// Leaving the selector, the object is shown as it was before:
		// never with the labels (or data) the selector excludes.
		wantValue, wantValueRev := fmt.Sprintf(`{"name":"a","rev":%d}`, ev.Rev), int64(0)
		if ev.Type == kv.Deleted {
			wantValue, wantValueRev = fmt.Sprintf(`{"name":"a","rev":%d}`, r2.Rev), r2.Rev
		}
		if string(ev.Value) != wantValue || ev.ValueRev != wantValueRev {
			t.Errorf("event %d carries %s (written at %d); want %s (%d)", i, ev.Value, ev.ValueRev, wantValue, wantValueRev)
		}
	}
}

// testWatchProgress: a watch's progress moves with writes it does not
// see (another resource, an object outside its selector), and whenever it
// reaches a revision, the watch's events up to it are on its channel
// already: a bookmark there never runs ahead of an event.
func testWatchProgress(t *testing.T, s *sqlstore.Store) {
	web := map[string]string{"app": "web"}
	p := mustCreate(t, s, key("p"), web)
	sel, _ := labels.Parse("app=web")
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", After: p.Rev, Pred: kv.Predicate{Label: sel}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// reach waits for the watch's progress to reach rev.
	reach := func(rev int64) int64 {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if got := w.Progress(); got >= rev {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("progress %d; want %d within 20s", w.Progress(), rev)
			}
			<-time.After(5 * time.Millisecond) // polling with a deadline
		}
	}
	mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns1", Name: "s"}, web)
	other := mustCreate(t, s, key("q"), map[string]string{"app": "db"})
	reach(other.Rev)
	if n := len(w.Events()); n != 0 {
		t.Fatalf("%d events for writes the watch does not see", n)
	}
	// More updates than the channel holds, unread: the rest wait in the
	// watch's queue, which progress must not pass.
	var revs []int64
	rev := p.Rev
	for range 20 {
		u, err := s.Update(ctx(t), key("p"), rev, enc("p", web))
		if err != nil {
			t.Fatal(err)
		}
		rev = u.Rev
		revs = append(revs, rev)
	}
	upTo := w.Progress()
	onChannel := map[int64]bool{}
	for n := len(w.Events()); n > 0; n-- {
		onChannel[(<-w.Events()).Rev] = true
	}
	for _, r := range revs {
		if r <= upTo && !onChannel[r] {
			t.Fatalf("progress was %d while the event at %d was not on the channel", upTo, r)
		}
	}
	for _, r := range revs {
		if onChannel[r] {
			continue
		}
		if ev := recv(t, w); ev.Type != kv.Modified || ev.Rev != r {
			t.Fatalf("event %s@%d; want MODIFIED@%d", ev.Type, ev.Rev, r)
		}
	}
	reach(rev)
}

func testConcurrentCreatesOneWins(t *testing.T, s *sqlstore.Store) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = s.Create(ctx(t), key("same"), enc("same", nil))
		}(i)
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, kv.ErrExists):
		default:
			t.Errorf("create: unexpected error %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent creates succeeded; want exactly 1", wins)
	}
}

// createAndUpdate runs one writer per entry of stores at once; each creates
// and then updates each objects of its own.
func createAndUpdate(t *testing.T, stores []*sqlstore.Store, prefix string, each int) {
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func(i int, s *sqlstore.Store) {
			defer wg.Done()
			for j := 0; j < each; j++ {
				k := key(fmt.Sprintf("%s%d-%d", prefix, i, j))
				r, err := s.Create(ctx(t), k, enc(k.Name, nil))
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				if _, err := s.Update(ctx(t), k, r.Rev, enc(k.Name, nil)); err != nil {
					t.Errorf("update: %v", err)
					return
				}
			}
		}(i, s)
	}
	wg.Wait()
}

// testConcurrentWritersDense: many writers at once; a watcher started
// before them must see every revision exactly once, in order, with no gap.
func testConcurrentWritersDense(t *testing.T, s *sqlstore.Store) {
	start, _ := s.CurrentRev(ctx(t))
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: start})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const writers, each = 8, 25
	stores := make([]*sqlstore.Store, writers)
	for i := range stores {
		stores[i] = s
	}
	createAndUpdate(t, stores, "w", each)
	for i := int64(1); i <= writers*each*2; i++ {
		ev := recv(t, w)
		if ev.Rev != start+i {
			t.Fatalf("event %d has rev %d; want %d (dense, in order)", i, ev.Rev, start+i)
		}
	}
	if cur, _ := s.CurrentRev(ctx(t)); cur != start+writers*each*2 {
		t.Fatalf("current rev %d; want %d", cur, start+writers*each*2)
	}
}

func testCompact(t *testing.T, s *sqlstore.Store) {
	a := mustCreate(t, s, key("a"), nil)
	b := mustCreate(t, s, key("b"), nil)
	a2, err := s.Update(ctx(t), key("a"), a.Rev, enc("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx(t), key("b"), b.Rev, enc("b", nil)); err != nil {
		t.Fatal(err)
	}
	c := mustCreate(t, s, key("c"), nil)
	if err := s.Compact(ctx(t), a2.Rev); err != nil {
		t.Fatalf("compact: %v", err)
	}
	if st := s.Compaction(); st.Revision != a2.Rev {
		t.Fatalf("Compaction().Revision = %d; want %d", st.Revision, a2.Rev)
	}
	_, err = s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Rev: a.Rev})
	var ce *kv.CompactedError
	if !errors.As(err, &ce) {
		t.Fatalf("list below the compacted revision: err %v; want CompactedError", err)
	}
	if _, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: a.Rev}); !errors.Is(err, kv.ErrCompacted) {
		t.Fatalf("watch below the compacted revision: err %v; want ErrCompacted", err)
	}
	l, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Rev: a2.Rev})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(names(l.Items)), "[ns1/a ns1/b]"; got != want {
		t.Fatalf("list at the compacted revision = %s; want %s", got, want)
	}
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: a2.Rev})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := recv(t, w); ev.Type != kv.Deleted || ev.Name != "b" {
		t.Fatalf("first event after compaction = %s %s; want DELETED b", ev.Type, ev.Name)
	}
	if ev := recv(t, w); ev.Type != kv.Added || ev.Rev != c.Rev {
		t.Fatalf("second event = %s@%d; want ADDED@%d", ev.Type, ev.Rev, c.Rev)
	}
	// Compacting everything leaves the live objects.
	cur, _ := s.CurrentRev(ctx(t))
	if err := s.Compact(ctx(t), cur); err != nil {
		t.Fatal(err)
	}
	l, err = s.List(ctx(t), kv.ListOptions{Resource: "configmaps"})
	if err != nil || fmt.Sprint(names(l.Items)) != "[ns1/a ns1/c]" {
		t.Fatalf("latest list after full compaction = %v, %v; want [ns1/a ns1/c]", names(l.Items), err)
	}
	if got, _ := s.Get(ctx(t), key("a")); got.Rev != a2.Rev {
		t.Fatalf("get a after compaction: rev %d; want %d", got.Rev, a2.Rev)
	}
	if err := s.Compact(ctx(t), cur+5); !errors.Is(err, kv.ErrFutureRev) {
		t.Fatalf("compact past the newest revision: err %v; want ErrFutureRev", err)
	}
}

// testCompactKeepsTransitions: a watcher that starts right at the compacted
// revision still sees selector transitions correctly, because the previous
// row of any row after the compacted revision survives compaction.
func testCompactKeepsTransitions(t *testing.T, s *sqlstore.Store) {
	r := mustCreate(t, s, key("a"), map[string]string{"app": "web"})
	if err := s.Compact(ctx(t), r.Rev); err != nil {
		t.Fatal(err)
	}
	sel, _ := labels.Parse("app=web")
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: r.Rev, Pred: kv.Predicate{Label: sel}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	u, err := s.Update(ctx(t), key("a"), r.Rev, enc("a", map[string]string{"app": "db"}))
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, w); ev.Type != kv.Deleted || ev.Rev != u.Rev || ev.ValueRev != r.Rev || string(ev.Value) != fmt.Sprintf(`{"name":"a","rev":%d}`, r.Rev) {
		t.Fatalf("event = %s@%d with %s; want DELETED@%d (stopped matching) with the value of %d", ev.Type, ev.Rev, ev.Value, u.Rev, r.Rev)
	}
}

func testExpired(t *testing.T, s *sqlstore.Store) {
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	withExpiry := func(name string, at time.Time) kv.Encoder {
		return func(rev int64) (kv.Entry, error) {
			e, _ := enc(name, nil)(rev)
			e.ExpiresAt = at
			return e, nil
		}
	}
	for name, at := range map[string]time.Time{"old": past, "new": future, "forever": {}} {
		if _, err := s.Create(ctx(t), key(name), withExpiry(name, at)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Expired(ctx(t), "configmaps", time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names(got)) != "[ns1/old]" {
		t.Fatalf("Expired = %v; want [ns1/old]", names(got))
	}
	// An update that renews the expiry takes the object off the list.
	if _, err := s.Update(ctx(t), key("old"), got[0].Rev, withExpiry("old", future)); err != nil {
		t.Fatal(err)
	}
	got, err = s.Expired(ctx(t), "configmaps", time.Now(), 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("Expired after renewal = %v, %v; want none", names(got), err)
	}
	if got, _ := s.Expired(ctx(t), "configmaps", future.Add(time.Second), 10); len(got) != 2 {
		t.Fatalf("Expired an hour later = %v; want old and new", names(got))
	}
}

// testKeysAreBytes: names, namespaces and selector values are byte
// strings, as Kubernetes compares them: a trailing space, a case or an
// accent makes another key (RBAC names may hold any of them); a name that
// is not ASCII may be asked for, and stored; a name may be longer than
// 253 bytes; lists are in byte order; a negated field selector keeps a
// value that differs from its own by a trailing space.
func testKeysAreBytes(t *testing.T, s *sqlstore.Store) {
	k := func(name string) kv.Key { return kv.Key{Resource: "clusterroles", Name: name} }
	long := strings.Repeat("r", 600)
	all := []string{"a", "a ", "A", "b", "café", "p\x01", long}
	for _, n := range all {
		n := n
		if _, err := s.Create(ctx(t), k(n), func(rev int64) (kv.Entry, error) {
			return kv.Entry{Value: []byte(fmt.Sprintf(`{"name":%q}`, n)), Fields: map[string]string{"metadata.name": n, "reason": "Started" + strings.TrimPrefix(n, "a")}}, nil
		}); err != nil {
			t.Fatalf("create %q: %v", n, err)
		}
	}
	for _, n := range all {
		got, err := s.Get(ctx(t), k(n))
		if err != nil || string(got.Value) != fmt.Sprintf(`{"name":%q}`, n) || got.Name != n {
			t.Errorf("get %.20q = %q %s, %v; want its own object", n, got.Name, got.Value, err)
		}
	}
	for _, n := range []string{"b ", "cafe", "ñ", "a  "} {
		if _, err := s.Get(ctx(t), k(n)); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("get %q: %v; want ErrNotFound", n, err)
		}
	}
	if _, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ñs"}); err != nil {
		t.Errorf("list in namespace ñs: %v; want an empty list", err)
	}
	want := append([]string(nil), all...)
	sort.Strings(want)
	var listed []string
	after := ""
	for {
		page, err := s.List(ctx(t), kv.ListOptions{Resource: "clusterroles", Limit: 2, AfterName: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			listed = append(listed, r.Name)
		}
		if !page.More {
			break
		}
		after = page.Items[len(page.Items)-1].Name
	}
	if !slices.Equal(listed, want) {
		t.Errorf("paged list = %.120q; want byte order %.120q", listed, want)
	}
	f, err := fields.ParseSelector("reason!=Started")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx(t), kv.ListOptions{Resource: "clusterroles", Pred: kv.Predicate{Field: f}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Items {
		if r.Name == "a" {
			t.Errorf("reason!=Started listed a, whose reason is Started")
		}
	}
	if len(res.Items) != len(all)-1 {
		t.Errorf("reason!=Started = %d objects %.120q; want every one but a (\"Started \" differs)", len(res.Items), names(res.Items))
	}
}

// testCountByResource: the live objects of each resource are counted;
// deleted ones are not.
func testCountByResource(t *testing.T, s *sqlstore.Store) {
	a := mustCreate(t, s, key("a"), nil)
	mustCreate(t, s, key("b"), nil)
	mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns2", Name: "s"}, nil)
	if _, err := s.Delete(ctx(t), key("a"), a.Rev, enc("a", nil)); err != nil {
		t.Fatal(err)
	}
	got, err := s.CountByResource(ctx(t))
	if err != nil || fmt.Sprint(got) != "map[configmaps:1 secrets:1]" {
		t.Errorf("CountByResource = %v, %v; want configmaps 1, secrets 1", got, err)
	}
}

// testNULCharacters: a NUL character, which kube stores in any string
// (an Event's reason, an RBAC object's name), is stored and selected
// exactly where the database can hold it. PostgreSQL's text cannot: there
// a name holding one is refused as invalid, nothing can be found under
// one, and selector values holding one are still stored and matched.
func testNULCharacters(t *testing.T, s *sqlstore.Store) {
	start, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for name, reason := range map[string]string{"nul": "a\x00b", "plain": "a", "tail": "a\x00"} {
		reason := reason
		r, err := s.Create(ctx(t), key(name), func(rev int64) (kv.Entry, error) {
			e, _ := enc(name, map[string]string{"app": "x"})(rev)
			e.Fields["reason"] = reason
			return e, nil
		})
		if err != nil {
			t.Fatalf("create %s with reason %q: %v", name, reason, err)
		}
		last = max(last, r.Rev)
	}
	// Watches of a namespace and a name holding NUL, from before the
	// writes: their replay finds nothing.
	var watches []kv.Watcher
	for _, o := range []kv.WatchOptions{{Namespace: "n\x00s"}, {Namespace: "ns1", Name: "p\x00q"}} {
		o.Resource, o.After = "configmaps", start
		w, err := s.Watch(ctx(t), o)
		if err != nil {
			t.Fatalf("watch %+v: %v", o, err)
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	for i, w := range watches {
		deadline := time.Now().Add(20 * time.Second)
		for w.Progress() < last && w.Err() == nil && time.Now().Before(deadline) {
			<-time.After(5 * time.Millisecond) // polling with a deadline
		}
		if w.Progress() < last || len(w.Events()) != 0 || w.Err() != nil {
			t.Errorf("watch %d: progress %d (want %d), %d events (want none), err %v", i, w.Progress(), last, len(w.Events()), w.Err())
		}
	}
	for _, c := range []struct{ sel, want string }{
		{"reason=a\x00b", "[ns1/nul]"},
		{"reason=a", "[ns1/plain]"},
		{"reason=a\x00", "[ns1/tail]"},
		{"reason!=a\x00b", "[ns1/plain ns1/tail]"},
		{"reason!=a", "[ns1/nul ns1/tail]"},
		{"reason=a\x00c", "[]"},
		{"metadata.name=p\x00q", "[]"},
		{"metadata.name!=p\x00q,reason!=a", "[ns1/nul ns1/tail]"},
	} {
		f, err := fields.ParseSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []labels.Selector{nil, labels.SelectorFromSet(labels.Set{"app": "x"})} {
			res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1", Pred: kv.Predicate{Field: f, Label: l}})
			if err != nil {
				t.Errorf("list %q: %v", c.sel, err)
				continue
			}
			if got := fmt.Sprint(names(res.Items)); got != c.want {
				t.Errorf("list %q (labels %v) = %s; want %s", c.sel, l, got, c.want)
			}
		}
	}
	if got, err := s.ResourcesWithField(ctx(t), "reason", "a\x00b"); err != nil || fmt.Sprint(got) != "[configmaps]" {
		t.Errorf("ResourcesWithField(reason, a\\x00b) = %v, %v; want [configmaps]", got, err)
	}

	k := kv.Key{Resource: "clusterroles", Name: "p\x00q"}
	if _, err := s.Get(ctx(t), kv.Key{Resource: "clusterroles", Name: "p\x00r"}); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("get of a name holding NUL: %v; want ErrNotFound", err)
	}
	if res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "n\x00s"}); err != nil || len(res.Items) != 0 {
		t.Errorf("list in namespace n\\x00s = %v, %v; want an empty list", names(res.Items), err)
	}
	if res, err := s.List(ctx(t), kv.ListOptions{Resource: "clusterroles", AfterName: "p\x00q"}); err != nil || len(res.Items) != 0 {
		t.Errorf("list after p\\x00q = %v, %v; want an empty list", names(res.Items), err)
	}
	_, err = s.Create(ctx(t), k, func(rev int64) (kv.Entry, error) {
		return kv.Entry{Value: []byte(`{"name":"p\u0000q"}`), Fields: map[string]string{"metadata.name": k.Name}}, nil
	})
	if s.Dialect() == "postgres" {
		if !errors.Is(err, kv.ErrInvalidKey) {
			t.Fatalf("create of a name holding NUL on PostgreSQL: %v; want ErrInvalidKey", err)
		}
		if _, err := s.Get(ctx(t), k); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("get after the refused create: %v; want ErrNotFound", err)
		}
		if _, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", AfterNamespace: "n\x00s", AfterName: "x"}); !errors.Is(err, kv.ErrInvalidKey) {
			t.Errorf("list after namespace n\\x00s: %v; want ErrInvalidKey (no such continue token is made here)", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("create of a name holding NUL: %v", err)
	}
	if got, err := s.Get(ctx(t), k); err != nil || got.Name != k.Name {
		t.Errorf("get %q = %q, %v; want the object", k.Name, got.Name, err)
	}
	if res, err := s.List(ctx(t), kv.ListOptions{Resource: "clusterroles", AfterName: "p"}); err != nil || fmt.Sprintf("%q", names(res.Items)) != `["/p\x00q"]` {
		t.Errorf("list after p = %q, %v; want [p\\x00q]", names(res.Items), err)
	}
}

// testListFieldSelectors: field selectors on indexed fields, including
// values longer than the index keeps, give exactly the matching objects.
func testListFieldSelectors(t *testing.T, s *sqlstore.Store) {
	long := strings.Repeat("x", 300)
	values := map[string]string{"a": "Opaque", "b": "kubernetes.io/tls", "c": long + "1", "d": long + "2"}
	for name, v := range values {
		v := v
		name := name
		if _, err := s.Create(ctx(t), key(name), func(rev int64) (kv.Entry, error) {
			e, _ := enc(name, nil)(rev)
			e.Fields["type"] = v
			return e, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ sel, want string }{
		{"type=Opaque", "[ns1/a]"},
		{"type!=Opaque", "[ns1/b ns1/c ns1/d]"},
		{"type=" + long + "1", "[ns1/c]"},
		{"type!=" + long + "1", "[ns1/a ns1/b ns1/d]"},
		{"type=kubernetes.io/tls,metadata.name=b", "[ns1/b]"},
		{"metadata.namespace=ns1,metadata.name!=a,type!=kubernetes.io/tls", "[ns1/c ns1/d]"},
	}
	for _, c := range cases {
		f, err := fields.ParseSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Pred: kv.Predicate{Field: f}})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(names(res.Items)); got != c.want {
			t.Errorf("fieldSelector %.40q = %s; want %s", c.sel, got, c.want)
		}
	}
}

// testListValuesAndEncode: list items hold their stored values intact
// (the driver's buffers are copied out, across many rows), and with
// Encode they hold exactly Encode's bytes, computed from each returned
// item's stored value and only for returned items, on the scan and the
// index paths alike.
func testListValuesAndEncode(t *testing.T, s *sqlstore.Store) {
	const n = 300
	revs := map[string]int64{}
	for i := range n {
		l := map[string]string{"app": "db"}
		if i%100 == 0 {
			l["app"] = "web"
		}
		name := fmt.Sprintf("o%03d", i)
		revs[name] = mustCreate(t, s, key(name), l).Rev
	}
	stored := func(name string) string { return fmt.Sprintf(`{"name":%q,"rev":%d}`, name, revs[name]) }
	res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != n {
		t.Fatalf("%d items; want %d", len(res.Items), n)
	}
	for _, it := range res.Items {
		if string(it.Value) != stored(it.Name) {
			t.Fatalf("item %s holds %s; want %s", it.Name, it.Value, stored(it.Name))
		}
	}
	web, _ := labels.Parse("app=web")
	for _, c := range []struct {
		name  string
		opts  kv.ListOptions
		calls int
	}{
		{"all", kv.ListOptions{}, n},
		{"page", kv.ListOptions{Limit: 7}, 7},
		{"selector", kv.ListOptions{Pred: kv.Predicate{Label: web}}, 3},
	} {
		var calls atomic.Int64 // Encode runs on several goroutines
		c.opts.Resource, c.opts.Namespace = "configmaps", "ns1"
		c.opts.Encode = func(r kv.Record) ([]byte, error) {
			calls.Add(1)
			if string(r.Value) != stored(r.Name) {
				t.Errorf("%s: Encode got %s for %s; want %s", c.name, r.Value, r.Name, stored(r.Name))
			}
			return []byte("encoded " + string(r.Value)), nil
		}
		res, err := s.List(ctx(t), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != int64(c.calls) || len(res.Items) != c.calls {
			t.Fatalf("%s: %d Encode calls, %d items; want %d of each", c.name, calls.Load(), len(res.Items), c.calls)
		}
		for _, it := range res.Items {
			if string(it.Value) != "encoded "+stored(it.Name) {
				t.Fatalf("%s: item %s holds %s", c.name, it.Name, it.Value)
			}
		}
	}
	boom := errors.New("encode failed")
	if _, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1",
		Encode: func(kv.Record) ([]byte, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Fatalf("a failing Encode: list error %v; want %v", err, boom)
	}
}

// testListCachedSkipsValues: with Cached, an item the caller holds an
// encoding of comes back with those bytes and is never passed to Encode;
// the others are encoded from their stored values, read apart — on whole
// lists, pages, lists at an older revision, and cold lists that span
// several batches (where the store goes back to reading values at once).
func testListCachedSkipsValues(t *testing.T, s *sqlstore.Store) {
	const n = 1100 // more than two of the store's batches of 500
	revs := map[string]int64{}
	for i := range n {
		name := fmt.Sprintf("o%04d", i)
		revs[name] = mustCreate(t, s, key(name), nil).Rev
	}
	old, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// A later write: the list at old must still see o0000's first value.
	if _, err := s.Update(ctx(t), key("o0000"), revs["o0000"], enc("o0000-new", nil)); err != nil {
		t.Fatal(err)
	}
	stored := func(name string) string { return fmt.Sprintf(`{"name":%q,"rev":%d}`, name, revs[name]) }
	for _, c := range []struct {
		name   string
		opts   kv.ListOptions
		cached func(i int) bool
		items  int
	}{
		{"warm", kv.ListOptions{Rev: old}, func(i int) bool { return i%3 != 0 }, n},
		{"page", kv.ListOptions{Rev: old, Limit: 7}, func(i int) bool { return i%2 == 0 }, 7},
		{"cold", kv.ListOptions{Rev: old}, func(int) bool { return false }, n},
		{"latest", kv.ListOptions{Namespace: "ns1"}, func(i int) bool { return i != 0 }, n},
		// Without Encode the items not cached hold their stored values.
		{"plain", kv.ListOptions{Rev: old}, func(i int) bool { return i%4 != 0 }, n},
	} {
		var encoded atomic.Int64 // Encode runs on several goroutines
		c.opts.Resource, c.opts.Namespace = "configmaps", "ns1"
		index := func(name string) int {
			var i int
			fmt.Sscanf(name, "o%04d", &i)
			return i
		}
		c.opts.Cached = func(r kv.Record) ([]byte, bool) {
			if !c.cached(index(r.Name)) {
				return nil, false
			}
			return []byte("cached " + r.Name), true
		}
		encode := func(r kv.Record) ([]byte, error) {
			encoded.Add(1)
			want := stored(r.Name)
			if c.name == "latest" && r.Name == "o0000" {
				want = fmt.Sprintf(`{"name":"o0000-new","rev":%d}`, r.Rev)
			}
			if c.cached(index(r.Name)) {
				t.Errorf("%s: Encode called for %s, which is cached", c.name, r.Name)
			}
			if string(r.Value) != want {
				t.Errorf("%s: Encode got %s for %s; want %s", c.name, r.Value, r.Name, want)
			}
			return []byte("encoded " + r.Name), nil
		}
		if c.name != "plain" {
			c.opts.Encode = encode
		}
		res, err := s.List(ctx(t), c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(res.Items) != c.items {
			t.Fatalf("%s: %d items; want %d", c.name, len(res.Items), c.items)
		}
		misses := 0
		for i, it := range res.Items {
			if want := fmt.Sprintf("o%04d", i); it.Name != want {
				t.Fatalf("%s: item %d is %s; want %s", c.name, i, it.Name, want)
			}
			want := "cached " + it.Name
			if !c.cached(i) {
				want = "encoded " + it.Name
				if c.opts.Encode == nil {
					want = stored(it.Name)
				}
				misses++
			}
			if string(it.Value) != want || it.Cached != c.cached(i) {
				t.Fatalf("%s: item %s holds %q (cached %v); want %q", c.name, it.Name, it.Value, it.Cached, want)
			}
		}
		if c.opts.Encode != nil && encoded.Load() != int64(misses) {
			t.Fatalf("%s: %d Encode calls; want one for each of the %d items not cached", c.name, encoded.Load(), misses)
		}
	}
}
