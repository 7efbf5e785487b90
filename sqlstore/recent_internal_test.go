package sqlstore

import (
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestRecentLogBounds: the hub's recent rows are bounded by count and by
// the bytes of their values; a watch from a revision whose rows were
// dropped is told to read the log, one from a later revision gets every
// row of its key after it, in order.
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
	if n := len(l.rows) - l.head; n != recentRows {
		t.Fatalf("%d rows held, want %d", n, recentRows)
	}
	if l.base != last-recentRows {
		t.Fatalf("base %d, want %d", l.base, last-recentRows)
	}
	if _, ok := l.since(l.base-1, kv.Key{Resource: "configmaps"}); ok {
		t.Fatal("a revision before the held rows was served from them")
	}
	rows, ok := l.since(last-10, kv.Key{Resource: "configmaps", Namespace: "a"})
	if !ok {
		t.Fatal("the last ten revisions were not held")
	}
	var got []int64
	for _, r := range rows {
		got = append(got, r.rev)
	}
	want := []int64{last - 9, last - 7, last - 5, last - 3, last - 1}
	if last%2 == 1 {
		want = []int64{last - 8, last - 6, last - 4, last - 2, last}
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
	if rows, ok := l.since(last, kv.Key{Resource: "configmaps"}); !ok || len(rows) != 0 {
		t.Fatalf("after the last revision: %d rows, held %v", len(rows), ok)
	}
	if rows, ok := l.since(last-10, kv.Key{Resource: "secrets"}); !ok || len(rows) != 0 {
		t.Fatalf("another resource: %d rows, held %v", len(rows), ok)
	}

	// Large values: the byte bound drops rows first.
	big := make([]byte, recentBytes/4+1) // three fit
	for rev := last + 1; rev <= last+8; rev++ {
		l.add(logRow{rev: rev, key: key(rev), value: big})
	}
	if l.bytes > recentBytes {
		t.Fatalf("%d bytes held, bound %d", l.bytes, recentBytes)
	}
	if n := len(l.rows) - l.head; n != 3 {
		t.Fatalf("%d large rows held, want 3", n)
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
