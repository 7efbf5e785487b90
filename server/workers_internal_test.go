package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// poolServer serves h through a worker pool over HTTP/2 with TLS (http2
// true) or HTTP/1.1.
func poolServer(t *testing.T, h http.Handler, http2 bool) (*workerPool, *httptest.Server) {
	t.Helper()
	stop := make(chan struct{})
	p := newWorkerPool(4, stop)
	srv := httptest.NewUnstartedServer(p.wrap(h))
	srv.EnableHTTP2 = http2
	srv.StartTLS()
	t.Cleanup(func() { srv.Close(); close(stop) })
	return p, srv
}

func get(t *testing.T, srv *httptest.Server, path string) (string, error) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.Proto + " " + string(b), err
}

// TestWorkerPoolReusesGoroutines: HTTP/2 requests one after another are
// all served by one worker, which stays idle between them; a handler that
// aborts its stream (http.ErrAbortHandler), panics or calls
// runtime.Goexit cuts that request off as without the pool, and the pool
// goes on serving.
func TestWorkerPoolReusesGoroutines(t *testing.T) {
	p, srv := poolServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/abort":
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "/panic":
			panic("boom")
		case "/goexit":
			runtime.Goexit()
		}
		io.WriteString(w, "ok")
	}), true)
	for i := range 50 {
		got, err := get(t, srv, "/")
		if err != nil || got != "HTTP/2.0 ok" {
			t.Fatalf("request %d: %q, %v", i, got, err)
		}
	}
	if n := p.idleWorkers(); n != 1 {
		t.Fatalf("%d idle workers after 50 requests in turn; want the one reused", n)
	}
	for _, path := range []string{"/abort", "/panic", "/goexit"} {
		if got, err := get(t, srv, path); err == nil {
			t.Fatalf("%s: %q without an error; want the stream cut off", path, got)
		}
		if got, err := get(t, srv, "/"); err != nil || got != "HTTP/2.0 ok" {
			t.Fatalf("after %s: %q, %v", path, got, err)
		}
	}
	// The panics were recovered on the worker and raised again for
	// net/http: that worker went on, until it called Goexit; the next
	// request started the one worker left.
	if n := p.idleWorkers(); n != 1 {
		t.Fatalf("%d idle workers; want one", n)
	}
}

// TestWorkerPoolConcurrentAndBounded: requests at once each get a worker
// of their own; no more than the pool's bound stay idle afterwards.
func TestWorkerPoolConcurrentAndBounded(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	p, srv := poolServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	}), true)
	errs := make(chan error, 10)
	for range 10 {
		go func() {
			got, err := get(t, srv, "/")
			if err == nil && got != "HTTP/2.0 ok" {
				err = io.ErrUnexpectedEOF
			}
			errs <- err
		}()
	}
	for range 10 {
		<-arrived // all ten run at once, each on its own goroutine
	}
	close(release)
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := p.idleWorkers(); n != 4 {
		t.Fatalf("%d idle workers; want the bound, 4", n)
	}
}

// TestWorkerPoolTrim: workers idle past the cutoff stop, newer ones stay;
// after the final trim requests are still served, by workers that stop
// once done.
func TestWorkerPoolTrim(t *testing.T) {
	p := &workerPool{maxIdle: 8}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	serveOne := func() {
		rec := httptest.NewRecorder()
		p.serve(h, rec, httptest.NewRequest("GET", "/", nil))
		if rec.Body.String() != "ok" {
			t.Fatalf("answer %q", rec.Body)
		}
	}
	// Two workers: a request while another one is being served.
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { close(started); <-release })
	go func() { p.serve(slow, httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)); close(done) }()
	<-started
	serveOne()
	close(release)
	<-done
	if n := p.idleWorkers(); n != 2 {
		t.Fatalf("%d idle workers; want 2", n)
	}
	p.mu.Lock()
	p.idle[0].idleSince = time.Now().Add(-time.Hour) // the one idle longest
	younger := p.idle[1]
	p.mu.Unlock()
	p.trim(time.Now().Add(-time.Minute), false)
	if n := p.idleWorkers(); n != 1 || p.idle[0] != younger {
		t.Fatalf("%d idle workers after the trim; want the younger one alone", n)
	}
	p.trim(time.Time{}, true)
	if n := p.idleWorkers(); n != 0 {
		t.Fatalf("%d idle workers after the final trim", n)
	}
	serveOne()
	if n := p.idleWorkers(); n != 0 {
		t.Fatalf("%d idle workers after a request once stopped", n)
	}
}

// TestWorkerPoolLeavesHTTP1 alone: HTTP/1.1 requests run on net/http's
// connection goroutine, which is reused already.
func TestWorkerPoolLeavesHTTP1(t *testing.T) {
	p, srv := poolServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), false)
	got, err := get(t, srv, "/")
	if err != nil || !strings.HasPrefix(got, "HTTP/1.1 ") {
		t.Fatalf("%q, %v", got, err)
	}
	if n := p.idleWorkers(); n != 0 {
		t.Fatalf("%d idle workers after an HTTP/1.1 request", n)
	}
}

// TestWorkerPoolServeAllocates: a request handed to an idle worker
// costs the pool no allocation (its job and answer channel are reused).
func TestWorkerPoolServeAllocates(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	p := newWorkerPool(4, stop)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	w, r := httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)
	p.serve(h, w, r) // starts the worker
	if n := testing.AllocsPerRun(200, func() { p.serve(h, w, r) }); n >= 1 {
		t.Errorf("%v allocations per request served on an idle worker; want none", n)
	}
	if p.idleWorkers() != 1 {
		t.Errorf("%d idle workers after requests one at a time; want 1", p.idleWorkers())
	}
}
