package server_test

import (
	"bufio"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
)

// TestWatchesGiveBackTheirSeats: under priority and fairness a watch pays
// seats only while it opens (kube charges its initialisation): once its
// stream has started, or its initial events are sent, the seats are
// free again. With thirty watches of an ordinary user open (plain and
// sendInitialEvents ones), her priority level executes nothing (kube's
// dump_priority_levels), her reads are served,
// and every answer names its FlowSchema and priority level.
func TestWatchesGiveBackTheirSeats(t *testing.T) {
	srv := aliceAndRootServer(t, server.Config{MaxRequestsInflight: 40, MaxMutatingRequestsInflight: 20})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	getAs := func(token, path string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	get := func(path string) *http.Response { return getAs("tok-alice", path) }
	const cms = "/api/v1/namespaces/default/configmaps"
	for i := 0; i < 30; i++ {
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
	// Seats are given back once the signal reaches the dispatcher: wait
	// for global-default to execute nothing.
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	h.waitFor("global-default executing nothing", func() bool {
		resp := getAs("tok-root", "/debug/api_priority_and_fairness/dump_priority_levels")
		defer resp.Body.Close()
		rows, err := csv.NewReader(resp.Body).ReadAll()
		if err != nil || len(rows) < 2 {
			return false
		}
		col := map[string]int{}
		for i, name := range rows[0] {
			col[strings.TrimSpace(name)] = i
		}
		for _, row := range rows[1:] {
			if strings.TrimSpace(row[0]) == "global-default" {
				return strings.TrimSpace(row[col["ExecutingRequests"]]) == "0" && strings.TrimSpace(row[col["WaitingRequests"]]) == "0"
			}
		}
		return false
	})
	for i := 0; i < 5; i++ {
		resp := get(cms)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d with thirty watches open: %d", i, resp.StatusCode)
		}
		if resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == "" || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
			t.Errorf("read %d names no FlowSchema or priority level: %v", i, resp.Header)
		}
	}
}
