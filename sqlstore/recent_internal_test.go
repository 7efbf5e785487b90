package sqlstore

import (
	"slices"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// held is the number of rows ring g holds.
func (g *recentRing) held() int { return len(g.rows) - g.head }

// revsOf returns the revisions of rows.
func revsOf(rows []logRow) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r.rev)
	}
	return out
}

// TestRecentLogBounds: the hub's recent rows are bounded by count and by
// the bytes they hold, over all resources; a watch from a revision whose
// rows were dropped is told to read the log, one from a later revision
// gets every row of its key after it, in order.
func TestRecentLogBounds(t *testing.T) {
	var l recentLog
	l.reset(10)
	key := func(rev int64) kv.Key {
		ns := "a"
		if rev%2 == 0 {
			ns = "b"
		}
		return kv.Key{Resource: "configmaps", Namespace: ns, Name: "x"}
	}
	// Three times the count bound, so the held rows slide down.
	last := int64(10 + 3*recentRows)
	for rev := int64(11); rev <= last; rev++ {
		l.add(logRow{rev: rev, key: key(rev), value: []byte("v")})
	}
	cms := l.rings["configmaps"]
	if n := cms.held(); n > recentRows || n < recentRows-recentRows/recentSlack || n != l.rows {
		t.Fatalf("%d rows held (%d counted), want %d to %d", n, l.rows, recentRows-recentRows/recentSlack, recentRows)
	}
	if cms.base != last-int64(cms.held()) {
		t.Fatalf("base %d, want %d", cms.base, last-int64(cms.held()))
	}
	if _, ok := l.since(cms.base-1, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("a revision before the held rows was served from them")
	}
	if rows, ok := l.since(cms.base, kv.Key{Resource: "configmaps"}); !ok || len(rows) != cms.held() {
		t.Fatalf("from the base: %d rows, held %v; want all %d", len(rows), ok, cms.held())
	}
	rows, ok := l.since(last-10, kv.Key{Resource: "configmaps", Namespace: "a"})
	if !ok {
		t.Fatal("the last ten revisions were not held")
	}
	want := []int64{last - 9, last - 7, last - 5, last - 3, last - 1}
	if last%2 == 1 {
		want = []int64{last - 8, last - 6, last - 4, last - 2, last}
	}
	if got := revsOf(rows); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if rows, ok := l.since(last, kv.Key{Resource: "configmaps"}); !ok || len(rows) != 0 {
		t.Fatalf("after the last revision: %d rows, held %v", len(rows), ok)
	}
	// A resource with no row since the reset has all of its (none).
	if rows, ok := l.since(last-10, kv.Key{Resource: "secrets"}); !ok || len(rows) != 0 {
		t.Fatalf("another resource: %d rows, held %v", len(rows), ok)
	}
	if _, ok := l.since(9, kv.Key{Resource: "secrets"}); ok {
		t.Fatal("a revision before the reset was served")
	}
	if _, ok := l.since(last-10, kv.Key{}); ok {
		t.Fatal("a watch of no resource was served")
	}

	// Large values: the byte bound drops rows first.
	big := make([]byte, recentBytes/4+1) // three fit
	for rev := last + 1; rev <= last+8; rev++ {
		l.add(logRow{rev: rev, key: key(rev), value: big})
	}
	if l.bytes > recentBytes {
		t.Fatalf("%d bytes held, bound %d", l.bytes, recentBytes)
	}
	if n := cms.held(); n != 3 || l.rows != 3 {
		t.Fatalf("%d large rows held (%d counted), want 3", n, l.rows)
	}
	if _, ok := l.since(last+5, kv.Key{Resource: "configmaps"}); !ok {
		t.Fatal("the newest large rows were not held")
	}
	if _, ok := l.since(last+4, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("a dropped large row was served")
	}

	// reset (a gap in the log the hub delivered) holds nothing before it.
	l.reset(last + 100)
	if _, ok := l.since(last+8, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("rows before a reset were served")
	}
	if rows, ok := l.since(last+100, kv.Key{Resource: "configmaps"}); !ok || len(rows) != 0 {
		t.Fatalf("after a reset: %d rows, held %v", len(rows), ok)
	}
}

// TestRecentLogQuietResource: a busy resource's writes take the room of
// the largest ring, its own, so a quiet resource keeps its history; when
// the busy one quietens, another's writes take its room back and its slots
// are given back too.
func TestRecentLogQuietResource(t *testing.T) {
	var l recentLog
	l.reset(0)
	rev := int64(0)
	put := func(resource string, n int) {
		for range n {
			rev++
			l.add(logRow{rev: rev, key: kv.Key{Resource: resource, Namespace: "ns", Name: "x"}, value: []byte("v")})
		}
	}
	put("leases", 5)
	put("configmaps", 10*recentRows)
	rows, ok := l.since(0, kv.Key{Resource: "leases"})
	if got := revsOf(rows); !ok || len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("the quiet resource's rows: %v, held %v; want 1..5", got, ok)
	}
	if n := l.rings["configmaps"].held(); n+5 != l.rows || l.rows > recentRows {
		t.Fatalf("busy ring holds %d, %d in all, bound %d", n, l.rows, recentRows)
	}

	// Now secrets are busy: configmaps give up rows until the two hold
	// as many, give or take the rows added since the last trim.
	cms := l.rings["configmaps"]
	peak := cap(cms.rows)
	put("secrets", 10*recentRows)
	secrets := l.rings["secrets"]
	if d := secrets.held() - cms.held(); d < -1 || d > recentRows/recentSlack+1 {
		t.Fatalf("configmaps hold %d, secrets %d: want the room shared", cms.held(), secrets.held())
	}
	if c := cap(cms.rows); c >= peak {
		t.Fatalf("configmaps keep %d slots for %d rows, as many as at their peak", c, cms.held())
	}
	if _, ok := l.since(0, kv.Key{Resource: "leases"}); !ok {
		t.Fatal("the quiet resource's rows were dropped")
	}
	if _, ok := l.since(cms.base-1, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("a dropped configmaps row was served")
	}
	if rows, ok := l.since(cms.base, kv.Key{Resource: "configmaps"}); !ok || len(rows) != cms.held() {
		t.Fatalf("configmaps from their base: %d rows, held %v; want %d", len(rows), ok, cms.held())
	}
}

// TestRecentLogTrimsByBytes: over the byte bound, the ring holding the
// most bytes gives up rows, not the one holding the most rows; a ring
// emptied goes, and a watch of its resource from before its last row is
// sent to the log.
func TestRecentLogTrimsByBytes(t *testing.T) {
	var l recentLog
	l.reset(0)
	rev := int64(0)
	put := func(resource string, size int) {
		rev++
		l.add(logRow{rev: rev, key: kv.Key{Resource: resource, Namespace: "ns", Name: "x"}, value: make([]byte, size)})
	}
	// Many small rows, interleaved with a few large ones.
	for i := range 400 {
		put("leases", 10)
		if i%100 == 0 {
			put("secrets", recentBytes/8)
		}
	}
	// The large rows' ring gives up its oldest: more rows over the bound.
	for range 8 {
		put("secrets", recentBytes/8)
	}
	if l.bytes > recentBytes {
		t.Fatalf("%d bytes held, bound %d", l.bytes, recentBytes)
	}
	leases := l.rings["leases"]
	if leases.held() != 400 {
		t.Fatalf("the small rows' ring holds %d of 400: it was trimmed for the large rows' bytes", leases.held())
	}
	if rows, ok := l.since(0, kv.Key{Resource: "leases"}); !ok || len(rows) != 400 {
		t.Fatalf("leases from the start: %d rows, held %v", len(rows), ok)
	}
	if _, ok := l.since(0, kv.Key{Resource: "secrets"}); ok {
		t.Fatal("a dropped secrets row was served")
	}

	// One row larger than the bound empties its ring: the ring goes, and
	// no watch of its resource from before that row is served from memory.
	put("configmaps", 2*recentBytes)
	if _, ok := l.rings["configmaps"]; ok {
		t.Fatal("the emptied ring was kept")
	}
	if _, ok := l.since(rev-1, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("a watch from before the dropped row was served from memory")
	}
	if rows, ok := l.since(rev, kv.Key{Resource: "configmaps"}); !ok || len(rows) != 0 {
		t.Fatalf("after the dropped row: %d rows, held %v", len(rows), ok)
	}
	if rows, ok := l.since(0, kv.Key{Resource: "leases"}); !ok || len(rows) != 400 {
		t.Fatalf("leases after another ring went: %d rows, held %v", len(rows), ok)
	}
}
