package server_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestWatchesGiveBackTheirSeats: under priority and fairness a watch pays
// seats only while it opens (kube charges its initialisation): once its
// stream has started, or its initial events are sent, the seats are
// free again. With a server of three seats, ten open watches of an
// ordinary user (plain and sendInitialEvents ones) leave her reads served,
// and every answer names its FlowSchema and priority level.
func TestWatchesGiveBackTheirSeats(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("tok-alice,alice,1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{TokenFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Authenticator: a,
		MaxRequestsInflight: 2, MaxMutatingRequestsInflight: 1})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	get := func(path string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok-alice")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	for i := 0; i < 10; i++ {
		path := cms + "?watch=1&timeoutSeconds=60"
		if i%2 == 1 {
			path += "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
		}
		resp := get(path)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d: %d", i, resp.StatusCode)
		}
		if i%2 == 1 {
			// Its initial events end with the annotated bookmark.
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !strings.Contains(sc.Text(), "k8s.io/initial-events-end") {
			}
		}
	}
	for i := 0; i < 5; i++ {
		resp := get(cms)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d with ten watches open: %d", i, resp.StatusCode)
		}
		if resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == "" || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
			t.Errorf("read %d names no FlowSchema or priority level: %v", i, resp.Header)
		}
	}
}
