package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// aliceAndRootServer is an in-process server on SQLite with cfg whose
// users are tok-alice (alice) and tok-root (root, in system:masters).
func aliceAndRootServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("tok-alice,alice,1000\ntok-root,root,1001,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{TokenFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Authenticator = storetest.Open(t, "sqlite://:memory:"), a
	return servertest.Server(t, cfg)
}

// TestInflightLimits: with its read-only pool full, a user's read gets
// 429 with Retry-After at once, while writes (their own pool), watches
// (long-running), health probes and system:masters still get through.
func TestInflightLimits(t *testing.T) {
	metrics := prometheus.NewRegistry()
	srv := aliceAndRootServer(t, server.Config{Metrics: metrics, MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, NoPriorityAndFairness: true})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	as := func(token string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
	}

	// A read that waits for a revision far ahead holds the one read-only
	// slot for the 3 s the server waits before answering 504.
	rec := h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-alice"), nil)
	var list map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	rv, _ := strconv.Atoi(fmt.Sprint(refDig(list, "metadata", "resourceVersion")))
	var wg sync.WaitGroup
	wg.Add(1)
	var held int
	go func() {
		defer wg.Done()
		held = h.do("GET", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=NotOlderThan&resourceVersion="+strconv.Itoa(rv+100000), as("tok-alice"), nil).Code
	}()
	// Watched through the gauge, which takes no slot itself.
	h.waitFor("the slot taken", func() bool { return gaugeValue(t, metrics, "apiserver_current_inflight_requests", "readOnly") == 1 })
	rec = h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-alice"), nil)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" || rec.Body.String() != "Too many requests, please try again later.\n" {
		t.Errorf("read with the pool full: %d Retry-After %q %q %q; want kube-apiserver's 429", rec.Code, rec.Header().Get("Retry-After"),
			rec.Header().Get("Content-Type"), rec.Body)
	}
	for what, code := range map[string]int{
		"watch":              h.do("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", as("tok-alice"), nil).Code,
		"healthz":            h.do("GET", "/healthz", nil, nil).Code,
		"read as root":       h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-root"), nil).Code,
		"write (other pool)": h.do("POST", "/api/v1/namespaces/default/configmaps", as("tok-alice"), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"go"}}`)).Code,
	} {
		if code == http.StatusTooManyRequests {
			t.Errorf("%s refused with 429", what)
		}
	}
	wg.Wait()
	if held != http.StatusGatewayTimeout {
		t.Errorf("the held read answered %d; want its 504", held)
	}
	if code := h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-alice"), nil).Code; code != http.StatusOK {
		t.Errorf("read after the slot was freed: %d", code)
	}
	// Counted as kube-apiserver counts them: the 429 too (its filter's
	// RecordDroppedRequest), and the watch once it ended.
	body := h.do("GET", "/metrics", as("tok-root"), nil).Body.String()
	for _, want := range []string{
		`apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="504",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 1`,
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// gaugeValue reads one labelled value of a gauge from a registry.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
