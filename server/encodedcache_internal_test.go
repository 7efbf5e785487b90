package server

import (
	"bytes"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tabula-dev/tabula/schema"
)

func TestEncodedCacheEvictsOldestWithinBudget(t *testing.T) {
	a, b := &schema.Type{Kind: "A"}, &schema.Type{Kind: "B"}
	c := newEncodedCache(64, 16)
	put := func(k encodedKey, v []byte) {
		t.Helper()
		if _, err := c.get(k, func() ([]byte, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(k encodedKey) ([]byte, bool) {
		made := false
		got, _ := c.get(k, func() ([]byte, error) { made = true; return []byte("new"), nil })
		return got, !made
	}
	put(encodedKey{1, a, formProtobuf}, bytes.Repeat([]byte{1}, 3))
	put(encodedKey{1, b, formProtobuf}, bytes.Repeat([]byte{2}, 3)) // same revision, another served type
	put(encodedKey{1, a, formJSON}, bytes.Repeat([]byte{3}, 3))     // same revision and type, another form
	if got, ok := cached(encodedKey{1, a, formProtobuf}); !ok || !bytes.Equal(got, []byte{1, 1, 1}) {
		t.Fatalf("get(1, A, protobuf) = %v, %v; want the cached 1 1 1", got, ok)
	}
	if got, ok := cached(encodedKey{1, b, formProtobuf}); !ok || !bytes.Equal(got, []byte{2, 2, 2}) {
		t.Fatalf("get(1, B, protobuf) = %v, %v; want the cached 2 2 2", got, ok)
	}
	if got, ok := cached(encodedKey{1, a, formJSON}); !ok || !bytes.Equal(got, []byte{3, 3, 3}) {
		t.Fatalf("get(1, A, json) = %v, %v; want the cached 3 3 3", got, ok)
	}
	for rev := int64(2); rev <= 30; rev++ {
		put(encodedKey{rev, a, formProtobuf}, bytes.Repeat([]byte{byte(rev)}, 3))
	}
	if c.reads.size > c.reads.limit {
		t.Fatalf("size %d over the limit %d", c.reads.size, c.reads.limit)
	}
	if _, ok := cached(encodedKey{1, a, formProtobuf}); ok {
		t.Fatal("the oldest entry survived past the budget")
	}
	if got, ok := cached(encodedKey{30, a, formProtobuf}); !ok || got[0] != 30 {
		t.Fatalf("the newest entry is missing: %v, %v", got, ok)
	}
	put(encodedKey{31, a, formProtobuf}, make([]byte, 5)) // more than limit/16: not kept
	if _, ok := cached(encodedKey{31, a, formProtobuf}); ok {
		t.Fatal("an entry larger than a sixteenth of the budget was kept")
	}
	if len(c.items) != len(c.reads.keys)-c.reads.head {
		t.Fatalf("%d items but %d keys in order", len(c.items), len(c.reads.keys)-c.reads.head)
	}
}

// TestEncodedCacheKeepsWritesWithinTheirBudget: encodings kept from
// writes are served like made ones, never replace one already there, and
// are dropped oldest first within a budget of their own, so a stream of
// writes leaves what reads made in place.
func TestEncodedCacheKeepsWritesWithinTheirBudget(t *testing.T) {
	a := &schema.Type{Kind: "A"}
	c := newEncodedCache(64, 32)
	read := encodedKey{1, a, formProtobuf}
	if _, err := c.get(read, func() ([]byte, error) { return []byte("read"), nil }); err != nil {
		t.Fatal(err)
	}
	c.keep(read, []byte("write")) // already made: the made one stays
	got, err := c.get(read, func() ([]byte, error) { return nil, errors.New("made again") })
	if err != nil || string(got) != "read" {
		t.Fatalf("get(1) after keep = %q, %v; want the read's encoding", got, err)
	}
	for rev := int64(2); rev <= 40; rev++ {
		c.keep(encodedKey{rev, a, formProtobuf}, bytes.Repeat([]byte{byte(rev)}, 2))
	}
	if c.writes.size > c.writes.limit {
		t.Fatalf("writes hold %d bytes, over their limit %d", c.writes.size, c.writes.limit)
	}
	made := c.made
	if got, err := c.get(encodedKey{40, a, formProtobuf}, func() ([]byte, error) { return nil, errors.New("made") }); err != nil || got[0] != 40 {
		t.Fatalf("get(40) = %v, %v; want the kept write", got, err)
	}
	if c.made != made {
		t.Fatal("a kept write's encoding was made again")
	}
	if _, ok := c.peek(encodedKey{2, a, formProtobuf}); ok {
		t.Fatal("the oldest kept write survived past the writes' budget")
	}
	if got, ok := c.peek(read); !ok || string(got) != "read" {
		t.Fatalf("the writes pushed out the read's encoding: %q, %v", got, ok)
	}
	c.keep(encodedKey{41, a, formProtobuf}, make([]byte, 3)) // more than a sixteenth of the writes' budget
	if _, ok := c.peek(encodedKey{41, a, formProtobuf}); ok {
		t.Fatal("a write larger than a sixteenth of its budget was kept")
	}
	if len(c.items) != len(c.reads.keys)-c.reads.head+len(c.writes.keys)-c.writes.head {
		t.Fatalf("%d items but %d and %d keys queued", len(c.items), len(c.reads.keys)-c.reads.head, len(c.writes.keys)-c.writes.head)
	}
}

// TestEncodedCacheEncodesOnceForConcurrentCallers: callers asking at once
// for the same encoding share one; a failed encoding is not kept.
func TestEncodedCacheEncodesOnceForConcurrentCallers(t *testing.T) {
	c := newEncodedCache(1<<20, 1<<17)
	k := encodedKey{7, &schema.Type{Kind: "A"}, formJSON}
	var made atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	results := make([][]byte, 50)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.get(k, func() ([]byte, error) {
				made.Add(1)
				<-release
				return []byte("encoded"), nil
			})
		}()
	}
	close(release)
	wg.Wait()
	// Callers that came after the first finished hit the cache; callers
	// that came while it ran waited for it: one encoding either way.
	if n := made.Load(); n != 1 {
		t.Fatalf("encoded %d times for 50 concurrent callers; want 1", n)
	}
	for i, r := range results {
		if string(r) != "encoded" {
			t.Fatalf("caller %d got %q", i, r)
		}
	}
	bad := encodedKey{8, k.t, formJSON}
	if _, err := c.get(bad, func() ([]byte, error) { return nil, errors.New("boom") }); err == nil {
		t.Fatal("a failed encoding returned no error")
	}
	if got, err := c.get(bad, func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(got) != "ok" {
		t.Fatalf("after a failure: %q, %v; want a new encoding", got, err)
	}
}

// TestEncodedCacheWaitersShareTheFirstEncoding: callers that come while
// an encoding is being made wait for it and get its bytes; when it fails,
// each makes its own instead, and nothing is kept.
func TestEncodedCacheWaitersShareTheFirstEncoding(t *testing.T) {
	for _, fail := range []bool{false, true} {
		c := newEncodedCache(1<<20, 1<<17)
		k := encodedKey{9, &schema.Type{Kind: "A"}, formJSON}
		started, release := make(chan struct{}), make(chan struct{})
		first := make(chan []byte, 1)
		go func() {
			b, _ := c.get(k, func() ([]byte, error) {
				close(started)
				<-release
				if fail {
					return nil, errors.New("boom")
				}
				return []byte("first"), nil
			})
			first <- b
		}()
		<-started
		const waiters = 10
		var own atomic.Int32
		got := make(chan []byte, waiters)
		for range waiters {
			go func() {
				b, _ := c.get(k, func() ([]byte, error) {
					own.Add(1)
					return []byte("own"), nil
				})
				got <- b
			}()
		}
		// Each waiter counts a hit, under the lock, before it waits.
		for {
			c.mu.Lock()
			hits := c.hits
			c.mu.Unlock()
			if hits == waiters {
				break
			}
			runtime.Gosched()
		}
		close(release)
		<-first
		want, wantOwn := "first", int32(0)
		if fail {
			want, wantOwn = "own", waiters
		}
		for range waiters {
			if b := <-got; string(b) != want {
				t.Errorf("fail=%v: a waiter got %q; want %q", fail, b, want)
			}
		}
		if n := own.Load(); n != wantOwn {
			t.Errorf("fail=%v: waiters encoded %d times; want %d", fail, n, wantOwn)
		}
		c.mu.Lock()
		_, kept := c.items[k]
		c.mu.Unlock()
		if kept == fail {
			t.Errorf("fail=%v: entry kept = %v", fail, kept)
		}
	}
}

// TestHeldRate: gets ask for the revision alone from the start, stop
// once most recent gets missed, and start again once most were held.
func TestHeldRate(t *testing.T) {
	var h heldRate
	if !h.likely() {
		t.Fatal("a fresh server does not expect held answers")
	}
	misses := 0
	for h.likely() {
		h.saw(false)
		if misses++; misses > 16 {
			t.Fatalf("still expecting held answers after %d misses", misses)
		}
	}
	for range 8 {
		h.saw(true)
		h.saw(false)
	}
	if h.likely() {
		t.Fatal("expecting held answers after half held, half missed, from mostly missed")
	}
	hits := 0
	for !h.likely() {
		h.saw(true)
		if hits++; hits > 16 {
			t.Fatalf("still not expecting held answers after %d held", hits)
		}
	}
}
