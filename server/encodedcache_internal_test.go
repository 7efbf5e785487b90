package server

import (
	"bytes"
	"testing"

	"github.com/tabula-dev/tabula/schema"
)

func TestProtoCacheEvictsOldestWithinBudget(t *testing.T) {
	a, b := &schema.Type{Kind: "A"}, &schema.Type{Kind: "B"}
	c := newProtoCache(64)
	c.put(1, a, bytes.Repeat([]byte{1}, 3))
	c.put(1, b, bytes.Repeat([]byte{2}, 3)) // same revision, another served type
	if got, ok := c.get(1, a); !ok || !bytes.Equal(got, []byte{1, 1, 1}) {
		t.Fatalf("get(1, A) = %v, %v", got, ok)
	}
	if got, ok := c.get(1, b); !ok || !bytes.Equal(got, []byte{2, 2, 2}) {
		t.Fatalf("get(1, B) = %v, %v", got, ok)
	}
	for rev := int64(2); rev <= 30; rev++ {
		c.put(rev, a, bytes.Repeat([]byte{byte(rev)}, 3))
	}
	if c.size > c.limit {
		t.Fatalf("size %d over the limit %d", c.size, c.limit)
	}
	if _, ok := c.get(1, a); ok {
		t.Fatal("the oldest entry survived past the budget")
	}
	if got, ok := c.get(30, a); !ok || got[0] != 30 {
		t.Fatalf("the newest entry is missing: %v, %v", got, ok)
	}
	c.put(31, a, make([]byte, 5)) // more than limit/16: not kept
	if _, ok := c.get(31, a); ok {
		t.Fatal("an entry larger than a sixteenth of the budget was kept")
	}
	if len(c.items) != len(c.order)-c.head {
		t.Fatalf("%d items but %d keys in order", len(c.items), len(c.order)-c.head)
	}
}
