package codecs_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/codecs"
)

// TestEach: every index is visited exactly once, small and large counts
// alike, and the error returned is the one of the lowest failing index,
// as a loop in order would return.
func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 1000, 10_007} {
		seen := make([]atomic.Int32, n)
		if err := codecs.Each(n, func(i int) error { seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, c)
			}
		}
	}
	err := codecs.Each(10_000, func(i int) error {
		if i == 7000 || i == 9000 || i == 4321 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	if err == nil || err.Error() != "item 4321" {
		t.Fatalf("err = %v; want item 4321's", err)
	}
}

// TestEachLeavesABusyWorkersShare: a worker held up (here by its first
// item, until most of the others are done) does not hold up the items it
// would have been given in a fixed share: the other workers take them.
func TestEachLeavesABusyWorkersShare(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const n = 10_000
	var visited atomic.Int32
	others := make(chan struct{})
	err := codecs.Each(n, func(i int) error {
		if i == 0 {
			// With halves, the other worker has only n/2 items.
			select {
			case <-others:
				return nil
			case <-time.After(time.Minute):
				return fmt.Errorf("item 0 waited a minute: %d others visited", visited.Load())
			}
		}
		if visited.Add(1) == n/2+1 {
			close(others)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := visited.Load(); got != n-1 {
		t.Fatalf("%d items visited besides the first; want %d", got, n-1)
	}
}
