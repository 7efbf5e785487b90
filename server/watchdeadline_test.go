package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestWatchClientThatStopsReading: a watcher that never reads is closed
// once a frame cannot be written within the write timeout, long before
// its own timeoutSeconds, and the server's goroutines and open watches
// return to where they were.
func TestWatchClientThatStopsReading(t *testing.T) {
	metrics := prometheus.NewRegistry()
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Metrics: metrics, WatchWriteTimeout: time.Second})
	ts := httptest.NewUnstartedServer(srv.Handler())
	var closedConns atomic.Int32
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closedConns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}

	openWatches := func() float64 {
		mfs, err := metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "apiserver_longrunning_requests" {
				for _, m := range mf.GetMetric() {
					n += m.GetGauge().GetValue()
				}
			}
		}
		return n
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=300 HTTP/1.1\r\nHost: tabula\r\n\r\n")
	// Read the status line only: the watch is open, then nothing more.
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("watch answered %q, %v", status, err)
	}
	h.waitFor("the watch counted", func() bool { return openWatches() == 1 })

	// Far more than the socket buffers hold.
	big := strings.Repeat("x", 512*1024)
	start := time.Now()
	for i := 0; i < 64; i++ {
		h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-%d"},"data":{"k":"%s"}}`, i, big), http.StatusCreated)
	}
	h.waitFor("the stuck watch closed", func() bool { return openWatches() == 0 })
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("the stuck watch lasted %v after the writes began", took)
	}
	h.waitFor("goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= baseline+2 })
	// The server let go of the connection too (its kernel may still be
	// sending what it had queued).
	h.waitFor("the stuck connection closed by the server", func() bool { return closedConns.Load() >= 1 })
}

// TestWatchSlowReaderOfLargeList: a client that reads steadily but slowly
// receives a watch's initial events in full even when that takes several
// write timeouts: the deadline follows progress, it does not bound the
// whole burst.
func TestWatchSlowReaderOfLargeList(t *testing.T) {
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), WatchWriteTimeout: 2 * time.Second})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	big := strings.Repeat("x", 512*1024)
	const n = 40
	for i := 0; i < n; i++ {
		h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-%d"},"data":{"k":"%s"}}`, i, big), http.StatusCreated)
	}
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=60 HTTP/1.1\r\nHost: tabula\r\n\r\n")
	// At most 64 KiB per 10 ms (about 6.5 MB/s): the ~20 MB of initial
	// events take longer than the 2 s timeout, each frame well under it.
	took := slowRead(t, conn, 64<<10, 10*time.Millisecond, n)
	if took < 3*time.Second {
		t.Logf("the reader was faster than meant (%v); the test proves less", took)
	}
}

// TestWatchSlowReaderOfLargeObject: one frame that takes longer than the
// write timeout to reach a slow but steady reader is not cut either:
// progress within the frame moves the deadline on. Both sockets' buffers
// are small, so the server's writes wait for the reader.
func TestWatchSlowReaderOfLargeObject(t *testing.T) {
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), WatchWriteTimeout: 2 * time.Second})
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	defer ts.Close()
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"`+strings.Repeat("x", 900*1024)+`"}}`, http.StatusCreated)
	// Its ADDED marker comes only after the whole big frame.
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"small"}}`, http.StatusCreated)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	fmt.Fprintf(conn, "GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=60 HTTP/1.1\r\nHost: tabula\r\n\r\n")
	// 6 KiB per 20 ms (about 300 KB/s): the 900 KiB frame takes about 3 s,
	// longer than the 2 s timeout; a stall of 1 s is tolerated.
	took := slowRead(t, conn, 6<<10, 20*time.Millisecond, 2)
	if took < 2*time.Second {
		t.Logf("the reader was faster than meant (%v); the test proves less", took)
	}
}

// smallSendBuffers gives each accepted connection a small kernel send
// buffer, so what the server writes waits for the client to read it.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// slowRead reads a watch stream in reads of at most chunk bytes, pausing
// between them, until it has seen n ADDED events; it fails the test if
// the server ends the stream first, and returns how long it took.
func slowRead(t *testing.T, conn net.Conn, chunk int, pause time.Duration, n int) time.Duration {
	t.Helper()
	start := time.Now()
	// One read per tick: the slow reader being tested.
	tick := time.NewTicker(pause)
	defer tick.Stop()
	buf := make([]byte, chunk)
	const marker = `"type":"ADDED"`
	added, tail := 0, ""
	for added < n {
		k, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("after %v and %d of %d events: %v", time.Since(start), added, n, err)
		}
		chunk := tail + string(buf[:k])
		added += strings.Count(chunk, marker)
		// Keep what could begin a marker cut by the next read.
		tail = chunk[max(0, len(chunk)-len(marker)+1):]
		<-tick.C
	}
	return time.Since(start)
}
