package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The watch-memory workloads reproduce what a hostile or merely large set
// of watchers costs a server: a namespace of large objects, then many
// watches that each start with its whole state (watch=1 without a
// resourceVersion, or sendInitialEvents=true), opened at once by clients
// that read a few bytes and reset the connection, that never read, or
// that read everything. Each reports the server's RSS before, its peak,
// and how soon after the clients leave it comes back. A last workload
// holds many ordinary (client-go, HTTP/2) watches on an empty namespace.

// watchMemOptions are the watchmem flags.
type watchMemOptions struct {
	objects, size, watchers, idleWatchers int
	modes                                 []string
	hold, settle                          time.Duration
}

// releaseMargin is how close to its starting RSS a server must come back
// for its memory to count as released.
const releaseMargin = 128 << 20

func (b *bench) watchMem(ctx context.Context) error {
	o := b.o.watchMem
	if b.o.pid <= 0 {
		return errors.New("watchmem measures the server's memory: it needs --pid")
	}
	ns := b.ns + "-big"
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Deleted without waiting: nothing after this is measured against it,
	// and a server without kube-controller-manager never finishes.
	defer b.deleteNamespace(ns)
	for i := 0; i < o.objects; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%03d", i)},
			Data: map[string]string{"v": strings.Repeat(string(rune('a'+i%26)), o.size)}}
		if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	cfg, err := restConfig(b.o)
	if err != nil {
		return err
	}
	raw, err := newRawWatcher(cfg)
	if err != nil {
		return err
	}
	for _, mode := range o.modes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var run func(ctx context.Context) (string, error)
		path := "/api/v1/namespaces/" + ns + "/configmaps?watch=1"
		switch mode {
		case "reset":
			// Read a few bytes, then reset: the trial of issue 27.
			run = func(ctx context.Context) (string, error) {
				return raw.many(ctx, o.watchers, path, func(c net.Conn, r *bufio.Reader) error {
					_, err := io.ReadFull(r, make([]byte, 4096))
					return err
				}, 0)
			}
		case "noread":
			run = func(ctx context.Context) (string, error) {
				return raw.many(ctx, o.watchers, path, nil, o.hold)
			}
		case "initial":
			// A streaming list (client-go's WatchList) read to its end.
			p := path + "&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
			run = func(ctx context.Context) (string, error) {
				return raw.many(ctx, o.watchers, p, func(c net.Conn, r *bufio.Reader) error {
					return readUntilInitialEnd(r, o.objects)
				}, 0)
			}
		case "idle":
			run = func(ctx context.Context) (string, error) { return b.idleWatchers(ctx, o.idleWatchers, o.hold) }
		default:
			return fmt.Errorf("unknown watchmem mode %q", mode)
		}
		if err := b.memoryRun(ctx, mode, run); err != nil {
			return err
		}
	}
	return nil
}

// memoryRun measures one burst: RSS (and the Go heap the server reports
// on /metrics) before, at peak and after the clients leave.
func (b *bench) memoryRun(ctx context.Context, mode string, run func(ctx context.Context) (string, error)) error {
	o := b.o.watchMem
	pid := b.o.pid
	before := readRSS(pid)
	heapBefore := b.heapInuse(ctx)
	stop := make(chan struct{})
	var peak, heapPeak int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		n := 0
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			v := readRSS(pid)
			var h int64
			if n++; n%10 == 0 {
				h = b.heapInuse(ctx)
			}
			mu.Lock()
			peak, heapPeak = max(peak, v), max(heapPeak, h)
			mu.Unlock()
		}
	}()
	started := time.Now()
	note, err := run(ctx)
	elapsed := time.Since(started)
	left := time.Now()
	close(stop)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("%s: %w", mode, err)
	}
	released := time.Duration(-1)
	var after int64
	for {
		after = readRSS(pid)
		if released < 0 && after <= before+releaseMargin {
			released = time.Since(left)
		}
		if time.Since(left) >= o.settle || ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	peak = max(peak, before)
	n := o.watchers
	if mode == "idle" {
		n = o.idleWatchers
	}
	r := Result{Name: fmt.Sprintf("watchmem %s watchers=%d", mode, n), Ops: n, PerSecond: float64(n) / elapsed.Seconds()}
	rel := "never"
	if released >= 0 {
		rel = released.Round(100 * time.Millisecond).String()
	}
	r.Note = fmt.Sprintf("rss %s → peak %s (+%s, %s/watcher); %s after leaving: %s; within %s of start after %s",
		mib(before), mib(peak), mib(peak-before), kib((peak-before)/int64(n)), o.settle, mib(after), mib(releaseMargin), rel)
	if heapPeak > 0 {
		r.Note += fmt.Sprintf("; heap in use %s → peak %s", mib(heapBefore), mib(heapPeak))
	}
	if note != "" {
		r.Note += "; " + note
	}
	b.results = append(b.results, r)
	return nil
}

func (b *bench) deleteNamespace(ns string) {
	_ = b.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
}

func kib(b int64) string { return fmt.Sprintf("%.0f KiB", float64(b)/1024) }

// heapInuse reads go_memstats_heap_inuse_bytes from the server's
// /metrics (0 when it has none).
func (b *bench) heapInuse(ctx context.Context) int64 {
	body, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("go_memstats_heap_inuse_bytes ")); ok {
			f, _ := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return int64(f)
		}
	}
	return 0
}

// idleWatchers opens n client-go watches (HTTP/2, spread over
// connections) on an empty namespace and holds them.
func (b *bench) idleWatchers(ctx context.Context, n int, hold time.Duration) (string, error) {
	ns := b.ns + "-idle"
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	defer b.deleteNamespace(ns)
	clients, err := b.watchClients(n)
	if err != nil {
		return "", err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < n; i++ {
		w, err := clients[i/watchersPerConn].CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{LabelSelector: "bench=idle"})
		if err != nil {
			return "", fmt.Errorf("open watcher %d: %w", i, err)
		}
		defer w.Stop()
	}
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	return "", nil
}

// rawWatcher opens watches on TLS connections of their own, speaking
// HTTP/1.1 by hand, so a client can stop reading or reset the connection
// mid-stream.
type rawWatcher struct {
	addr, host string
	tls        *tls.Config
	token      string
}

func newRawWatcher(cfg *rest.Config) (*rawWatcher, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	tc, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tc == nil {
		tc = &tls.Config{}
	}
	tc = tc.Clone()
	tc.NextProtos = []string{"http/1.1"}
	return &rawWatcher{addr: u.Host, host: u.Hostname(), tls: tc, token: cfg.BearerToken}, nil
}

// many opens n watches of path at once. Each reads as read says (nil: not
// at all), for at least hold, then resets its connection.
func (w *rawWatcher) many(ctx context.Context, n int, path string, read func(net.Conn, *bufio.Reader) error, hold time.Duration) (string, error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	opened := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := w.open(ctx, path)
			if err != nil {
				errs <- err
				opened <- struct{}{}
				return
			}
			defer reset(c)
			opened <- struct{}{}
			if read != nil {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Minute))
				resp, err := http.ReadResponse(bufio.NewReaderSize(c, 32<<10), nil)
				if err != nil {
					errs <- err
					return
				}
				if resp.StatusCode != http.StatusOK {
					errs <- errors.New("watch answered " + resp.Status)
					return
				}
				if err := read(c, bufio.NewReaderSize(resp.Body, 32<<10)); err != nil {
					errs <- err
					return
				}
			}
			if hold > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(hold):
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	var first error
	for err := range errs {
		if failed++; first == nil {
			first = err
		}
	}
	if failed == n {
		return "", first
	}
	if failed > 0 {
		return fmt.Sprintf("%d of %d watches failed (first: %v)", failed, n, first), nil
	}
	return "", nil
}

func (w *rawWatcher) open(ctx context.Context, path string) (net.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 30 * time.Second}, Config: w.tls}
	c, err := d.DialContext(ctx, "tcp", w.addr)
	if err != nil {
		return nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + w.host + "\r\nAccept: application/json\r\nUser-Agent: tabula-bench/watchmem\r\n"
	if w.token != "" {
		req += "Authorization: Bearer " + w.token + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// reset closes c with a TCP reset, as a client that crashes or is killed
// does.
func reset(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		if nc, ok := tc.NetConn().(*net.TCPConn); ok {
			_ = nc.SetLinger(0)
		}
	}
	_ = c.Close()
}

// readUntilInitialEnd reads a JSON watch stream (chunked) until the
// initial-events-end bookmark, checking that every object came first.
func readUntilInitialEnd(r *bufio.Reader, objects int) error {
	marker := []byte(`"k8s.io/initial-events-end":"true"`)
	added := []byte(`{"type":"ADDED"`)
	seen := 0
	window := make([]byte, 0, 64<<10)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		// The tail kept from the last read was counted then.
		seen -= bytes.Count(window, added)
		window = append(window, buf[:n]...)
		seen += bytes.Count(window, added)
		if bytes.Contains(window, marker) {
			if seen < objects {
				return fmt.Errorf("initial-events-end after %d of %d objects", seen, objects)
			}
			return nil
		}
		if err != nil {
			return err
		}
		// Keep a tail long enough for a marker split across reads.
		if k := len(window) - len(marker); k > 0 {
			window = append(window[:0], window[k:]...)
		}
	}
}
