package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestEveryWorkloadReports runs each workload briefly against an
// in-process Tabula on SQLite and checks that each reports the rows the
// issue asks for, with operations counted and the RSS sampled.
func TestEveryWorkloadReports(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The namespace controller empties the namespaces each workload drops.
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://"+filepath.Join(t.TempDir(), "bench.db"))})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	kubeconfig := writeKubeconfig(t, hs.URL)
	allowCBOR() // as main does
	results, err := run(ctx, options{
		kubeconfig: kubeconfig,
		workloads:  []string{"create", "get", "update", "list", "watch", "rewatch", "churn", "encodings"},
		duration:   300 * time.Millisecond,
		clients:    []int{2},
		objects:    []int{600},
		watchers:   []int{2},
		pid:        os.Getpid(),
		protobuf:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range results {
		got[r.Name] = r
	}
	for _, name := range []string{
		"create 1KiB clients=2", "create 10KiB clients=2", "get clients=2", "update 1 object clients=2",
		"fill 600 objects clients=32", "list 600 whole", "list 600 in pages of 500", "list 600: one page of 500",
		"list 600 selective 1%", "watch delivery watchers=2", "rewatch 10 events clients=2", "churn clients=2",
		"list 600 whole, json", "list 600 whole, protobuf", "list 600 whole, cbor",
		"list 600 in pages of 500, cbor", "watch replay of 600, json", "watch replay of 600, protobuf", "watch replay of 600, cbor",
	} {
		r, ok := got[name]
		if !ok {
			t.Errorf("no result %q", name)
			continue
		}
		if r.Ops == 0 {
			t.Errorf("%s: no operations", name)
		}
	}
	// 2 watchers × 50 events, every one delivered.
	if r := got["watch delivery watchers=2"]; r.Ops != 100 {
		t.Errorf("watch delivered %d events; want 100", r.Ops)
	}
	// Two pages of 500 per paged run, five runs.
	if r := got["list 600: one page of 500"]; r.Ops != 10 {
		t.Errorf("%d pages timed; want 10", r.Ops)
	}
	// The rise of the server's memory during each whole list, against
	// the size of its answer (the server is this process).
	for _, list := range []string{"list 600 whole", "list 600 whole, JSON", "list 600 whole, Table"} {
		for _, when := range []string{"first", "again"} {
			r, ok := got[list+", memory, "+when]
			if !ok || !strings.Contains(r.Note, " MiB answer") || strings.Contains(r.Note, "over a 0.0 MiB") || r.Ratio < 0 {
				t.Errorf("%s, memory, %s: %+v; want the rise over a sized answer", list, when, r)
			}
		}
	}
	// The server's CPU per operation of each timed run (the server is
	// this process, whose CPU the load adds to; more than none).
	for _, name := range []string{"create 1KiB clients=2", "create 10KiB clients=2", "get clients=2", "update 1 object clients=2", "rewatch 10 events clients=2", "churn clients=2"} {
		if r := got[name]; r.CPUPerOp <= 0 || !strings.Contains(r.Note, "server CPU ") {
			t.Errorf("%s: %+v; want the server's CPU per operation", name, r)
		}
	}
	for _, name := range []string{"rss idle", "rss peak during create", "rss peak during list", "rss peak during churn"} {
		if r, ok := got[name]; !ok || !strings.HasSuffix(r.Note, " MiB") || strings.HasPrefix(r.Note, "0.0") {
			t.Errorf("%s: %+v; want a sampled size", name, r)
		}
	}
}

// TestServersSpreadLoad: with -servers, clients and watchers are spread
// over the replicas (two servers on one SQLite file here), and every
// watcher, whichever replica it is on, gets every event.
func TestServersSpreadLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "bench.db")
	var urls []string
	var hits []*atomic.Int64
	for range 2 {
		srv := servertest.Server(t, server.Config{Store: storetest.Open(t, db)})
		n := new(atomic.Int64)
		h := srv.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		urls = append(urls, hs.URL)
		hits = append(hits, n)
	}
	// The kubeconfig's own server is never used: -servers replaces it.
	kubeconfig := writeKubeconfig(t, "http://127.0.0.1:1")
	results, err := run(ctx, options{
		kubeconfig: kubeconfig,
		servers:    urls,
		workloads:  []string{"create", "get", "watch"},
		duration:   300 * time.Millisecond,
		clients:    []int{2},
		watchers:   []int{4},
		protobuf:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range results {
		got[r.Name] = r
	}
	if r := got["watch delivery watchers=4"]; r.Ops != 200 {
		t.Errorf("watch delivered %d events across replicas; want 200", r.Ops)
	}
	for _, name := range []string{"create 1KiB clients=2", "get clients=2"} {
		if got[name].Ops == 0 {
			t.Errorf("%s: no operations", name)
		}
	}
	for i, n := range hits {
		if n.Load() < 10 {
			t.Errorf("server %d served %d requests; want its share", i, n.Load())
		}
	}
}

// writeKubeconfig writes an anonymous kubeconfig for server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: "`+server+`"}}]
contexts: [{name: t, context: {cluster: t, user: t}}]
users: [{name: t, user: {}}]
current-context: t
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
