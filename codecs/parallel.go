package codecs

import (
	"runtime"
	"sync"
)

// parallelMin is the least number of items worth spreading over cores:
// below it the hand-offs cost more than they save.
const parallelMin = 256

// Each calls fn(i) for i in [0, n), spread over the process's cores in
// contiguous chunks when n is large, and returns the first error (by
// index). A large list answered as a Table or metadata is decoding and
// row making, independent per item and pure CPU: one core did it all
// while the others waited.
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
	errs := make([]error, workers)
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min(n, (w+1)*chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
