package codecs

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelMin is the least number of items worth spreading over cores:
// below it the hand-offs cost more than they save.
const parallelMin = 256

// eachBlock is how many items an Each worker takes at a time: few enough
// that a worker whose core is busy with something else (the client
// beside the server, a collection) leaves the rest to the others, many
// enough that taking them costs nothing beside the items.
const eachBlock = 32

// Each calls fn(i) for i in [0, n), spread over the process's cores when
// n is large, and returns the first error (by index). A large list
// answered as a Table or metadata is decoding and row making, independent
// per item and pure CPU: one core did it all while the others waited.
// Workers take blocks of items in turn rather than a fixed share each:
// with the list split in halves, a half on a core that something else
// was using finished last, and the list with it.
func Each(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/parallelMin)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	firstAt := n
	// Blocks are taken in order and a worker stops only between blocks,
	// so every item before a failing one is visited: the error kept is
	// the one a loop in order would return.
	work := func() {
		for !failed.Load() {
			lo := int(next.Add(eachBlock)) - eachBlock
			if lo >= n {
				return
			}
			for i := lo; i < min(n, lo+eachBlock); i++ {
				if err := fn(i); err != nil {
					mu.Lock()
					if i < firstAt {
						first, firstAt = err, i
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return first
}
