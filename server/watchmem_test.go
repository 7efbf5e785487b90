package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// bigNamespace fills namespace ns with n ConfigMaps of size bytes of data
// and returns the bytes stored for them.
func bigNamespace(t testing.TB, h http.Handler, ns string, n, size int) int {
	t.Helper()
	do := func(method, path, body string) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`)
	total := 0
	for i := range n {
		body := fmt.Sprintf(`{"metadata":{"name":"big-%03d"},"data":{"v":"%s"}}`, i, strings.Repeat(string(rune('a'+i%26)), size))
		do("POST", "/api/v1/namespaces/"+ns+"/configmaps", body)
		total += len(body)
	}
	return total
}

// heapAllocs is the bytes the process has allocated so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestManyWatchersShareInitialEvents: 1,000 watches that ask for the state
// of a namespace of 6 MB (sendInitialEvents=true) at once each receive
// every object exactly once, then the initial-events-end bookmark; the
// server reads each value from the database once for all of them and
// sends the same bytes to each, so what it allocates stays a small
// fraction of one copy per watcher (6 GB).
func TestManyWatchersShareInitialEvents(t *testing.T) {
	const objects, size, watchers = 60, 100_000, 1000
	store := storetest.Open(t, "sqlite://:memory:")
	srv := servertest.Server(t, server.Config{Store: store})
	stored := bigNamespace(t, srv.Handler(), "big", objects, size)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}
	defer tr.CloseIdleConnections()

	readBefore, allocsBefore := store.SharedReadBytes(), heapAllocs()
	var wg sync.WaitGroup
	errs := make(chan error, watchers)
	for range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- readInitialEvents(tr, hs.URL+"/api/v1/namespaces/big/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", objects)
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed++; failed <= 3 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d watchers did not get the state exactly once", failed, watchers)
	}
	read, allocated := store.SharedReadBytes()-readBefore, heapAllocs()-allocsBefore
	// The namespace's kube-root-ca.crt is small; its value counts too.
	if read < int64(stored)*9/10 || read > int64(stored)*11/10 {
		t.Errorf("%d watchers of %d bytes of objects read %d bytes of values from the database; want each value read once", watchers, stored, read)
	}
	perWatcher := allocated / watchers
	t.Logf("allocated %d MiB in all, %d KiB per watcher, for %d MiB of objects sent %d times", allocated>>20, perWatcher>>10, stored>>20, watchers)
	if perWatcher > uint64(stored)/10 {
		t.Errorf("allocated %d bytes per watcher sent %d bytes of objects; want far less than a copy each", perWatcher, stored)
	}
}

// readInitialEvents reads a JSON watch stream until the initial-events-end
// bookmark, checking that each of the n objects came once before it.
func readInitialEvents(tr *http.Transport, url string, n int) error {
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: %d", resp.StatusCode)
	}
	seen := map[string]int{}
	r := bufio.NewReaderSize(resp.Body, 16<<10)
	added := []byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"`)
	for {
		line, err := r.ReadSlice('\n')
		head := line[:min(len(line), 512)]
		if bytes.HasPrefix(head, []byte(`{"type":"BOOKMARK"`)) && bytes.Contains(line, []byte(`"k8s.io/initial-events-end":"true"`)) {
			for i := range n {
				if c := seen[fmt.Sprintf("big-%03d", i)]; c != 1 {
					return fmt.Errorf("big-%03d sent %d times before the bookmark; want once", i, c)
				}
			}
			return nil
		}
		if name, ok := bytes.CutPrefix(head, added); ok {
			if i := bytes.IndexByte(name, '"'); i > 0 {
				seen[string(name[:i])]++
			}
		} else if err == nil || err == bufio.ErrBufferFull {
			return fmt.Errorf("unexpected event %.200s", head)
		}
		for err == bufio.ErrBufferFull { // the rest of a large event
			_, err = r.ReadSlice('\n')
		}
		if err != nil {
			return fmt.Errorf("stream ended before the initial-events-end bookmark: %v", err)
		}
	}
}

// TestVanishedWatchersReleaseAtOnce: watches whose clients stop reading
// mid-state, or read a few bytes and reset, are ended as soon as their
// connections go, not when the write deadline (here 10 minutes) passes;
// none is left open.
func TestVanishedWatchersReleaseAtOnce(t *testing.T) {
	store := storetest.Open(t, "sqlite://:memory:")
	reg := prometheus.NewRegistry()
	srv := servertest.Server(t, server.Config{Store: store, Metrics: reg, WatchWriteTimeout: 10 * time.Minute})
	bigNamespace(t, srv.Handler(), "big", 60, 100_000)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	open := func() float64 { return gaugeValue(t, reg, "apiserver_longrunning_requests", "configmaps") }
	addr := strings.TrimPrefix(hs.URL, "http://")
	var conns []net.Conn
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /api/v1/namespaces/big/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// Half read a few bytes; the others never read.
			if _, err := io.ReadFull(c, make([]byte, 4096)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "all 40 watches open", func() bool { return open() == 40 })
	for _, c := range conns {
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset
	}
	waitUntil(t, "every watch ended after its client reset", func() bool { return open() == 0 })
}

// TestWatchesPerUser: a user may hold MaxWatchesPerUser watches; one more
// gets kube's 429 with Retry-After, an administrator is not counted, and
// a watch that ends frees its place.
func TestWatchesPerUser(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("tok-alice,alice,1000\ntok-bob,bob,1001\ntok-root,root,1002,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{TokenFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Authenticator: a, MaxWatchesPerUser: 2})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close) // after the watches' own cleanups end them
	watch := func(token string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := watch("tok-alice"), watch("tok-alice")
	if first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("alice's two watches: %d, %d; want 200", first.StatusCode, second.StatusCode)
	}
	third := watch("tok-alice")
	body, _ := io.ReadAll(third.Body)
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") != "1" || string(body) != "Too many requests, please try again later.\n" {
		t.Fatalf("alice's third watch: %d Retry-After %q %q; want kube-apiserver's 429", third.StatusCode, third.Header.Get("Retry-After"), body)
	}
	for _, token := range []string{"tok-bob", "tok-root", "tok-root", "tok-root"} {
		if resp := watch(token); resp.StatusCode != http.StatusOK {
			t.Fatalf("a watch of %s while alice is at her ceiling: %d; want 200", token, resp.StatusCode)
		}
	}
	first.Body.Close()
	waitUntil(t, "alice's place freed once her watch ended", func() bool {
		resp := watch("tok-alice")
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitUntil polls ok until it holds, failing after 15 s.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		<-time.After(20 * time.Millisecond) // polling with a deadline
	}
}
