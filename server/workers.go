package server

import (
	"net/http"
	"sync"
	"time"
)

// HTTP/2 starts a new goroutine for every request, and a goroutine starts
// with a small stack: Tabula's request path (the middlewares, kube's
// authentication and field management, SQLite's interpreter in Go) grows
// it several times over, copying it each time — about a tenth of the
// server's CPU under small gets and creates (issue 26's profiles). HTTP/2
// requests are therefore run on goroutines kept from one request to the
// next, whose stacks have grown already. HTTP/1.1 serves a connection's
// requests on one goroutine already and is left as it is.

// workerPool runs handlers on reused goroutines. The most recently used
// idle worker is taken first (its stack and caches are warm); a worker
// idle for a whole trim period stops, so a burst leaves no crowd behind.
type workerPool struct {
	mu      sync.Mutex
	idle    []*worker // by the time they went idle, oldest first
	maxIdle int
	stopped bool
}

type worker struct {
	jobs      chan *workerJob
	idleSince time.Time
}

type workerJob struct {
	h    http.Handler
	w    http.ResponseWriter
	r    *http.Request
	done chan any // receives the handler's panic value, or nil
}

// maxIdleWorkers bounds the workers kept idle; requests beyond them start
// goroutines of their own, as without the pool.
const maxIdleWorkers = 256

// workerIdleTimeout is how long a worker waits for a request before it
// stops (checked once per period).
const workerIdleTimeout = 10 * time.Second

// newWorkerPool starts the pool's trimming, which ends with stop.
func newWorkerPool(maxIdle int, stop <-chan struct{}) *workerPool {
	p := &workerPool{maxIdle: maxIdle}
	go p.trimLoop(stop)
	return p
}

// wrap serves h's HTTP/2 requests on the pool's workers.
func (p *workerPool) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			h.ServeHTTP(w, r)
			return
		}
		p.serve(h, w, r)
	})
}

// serve runs h on a worker and waits for it. A panic in h (such as
// http.ErrAbortHandler, which cuts the stream) is raised again here, on
// the goroutine net/http recovers it on.
func (p *workerPool) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	job := workerJobs.Get().(*workerJob)
	job.h, job.w, job.r = h, w, r
	p.take().jobs <- job
	v := <-job.done
	// The worker is done with the job once it has answered: the job and
	// its channel serve another request.
	*job = workerJob{done: job.done}
	workerJobs.Put(job)
	if v != nil {
		panic(v)
	}
}

// workerJobs keeps jobs, each with its answer channel, from one request
// to the next (three allocations of every HTTP/2 request: the job, the
// channel and its buffer).
var workerJobs = sync.Pool{New: func() any { return &workerJob{done: make(chan any, 1)} }}

// take returns the most recently idle worker, or a new one.
func (p *workerPool) take() *worker {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		wk := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return wk
	}
	p.mu.Unlock()
	wk := &worker{jobs: make(chan *workerJob, 1)}
	go p.run(wk)
	return wk
}

// put makes wk idle; false when it should stop instead.
func (p *workerPool) put(wk *worker) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || len(p.idle) >= p.maxIdle {
		return false
	}
	wk.idleSince = now
	p.idle = append(p.idle, wk)
	return true
}

func (p *workerPool) run(wk *worker) {
	for job := range wk.jobs {
		if !p.runJob(wk, job) {
			return
		}
	}
}

// runJob runs one job and reports its end on job.done: nil, or what the
// handler panicked with (recovered here, so the worker goes on). The
// worker is made idle before the waiter hears of it, so a client's next
// request finds it; kept says whether it was.
func (p *workerPool) runJob(wk *worker, job *workerJob) (kept bool) {
	returned := false
	defer func() {
		v := recover()
		if v == nil && !returned {
			// runtime.Goexit: this goroutine ends after its deferred
			// calls; the request it served is cut off.
			v = http.ErrAbortHandler
		} else {
			kept = p.put(wk)
		}
		job.done <- v
	}()
	job.h.ServeHTTP(job.w, job.r)
	returned = true
	return
}

// trimLoop stops the workers idle for workerIdleTimeout, each period, and
// all idle ones once stop closes.
func (p *workerPool) trimLoop(stop <-chan struct{}) {
	t := time.NewTicker(workerIdleTimeout)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.trim(time.Time{}, true)
			return
		case now := <-t.C:
			p.trim(now.Add(-workerIdleTimeout), false)
		}
	}
}

// trim stops the idle workers that went idle before cutoff (all of them
// when final, after which workers stop as they finish).
func (p *workerPool) trim(cutoff time.Time, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.idle) && (final || p.idle[n].idleSince.Before(cutoff)) {
		close(p.idle[n].jobs)
		p.idle[n] = nil
		n++
	}
	p.idle = p.idle[n:]
	if final {
		p.stopped = true
	}
}

// idleWorkers is how many workers wait for requests.
func (p *workerPool) idleWorkers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
