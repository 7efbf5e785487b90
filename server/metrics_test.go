package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/sqlstore"
)

func TestMetrics(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(context.Background(), "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sqlstore.Collectors()...)
	srv, err := server.New(server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	if r := get("/api/v1/namespaces/default/configmaps/missing"); r.Code != http.StatusNotFound {
		t.Fatalf("get missing: %d", r.Code)
	}
	m := get("/metrics")
	body := m.Body.String()
	for _, want := range []string{
		`apiserver_request_total{code="404",group="",resource="configmaps",subresource="",verb="get"} 1`,
		`tabula_sql_query_duration_seconds_count{dialect="sqlite",query="get"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestProfiling: with Profiling set, Go's profiles are served under
// /debug/pprof/ as on kube-apiserver; without it the paths do not exist.
func TestProfiling(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(context.Background(), "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, on := range []bool{true, false} {
		srv, err := server.New(server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet, Profiling: on})
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile", "/debug/pprof/goroutine?debug=1": "goroutine profile"} {
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			switch {
			case on && (rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want)):
				t.Errorf("profiling on: GET %s = %d %.200s; want 200 with %q", path, rec.Code, rec.Body, want)
			case !on && rec.Code != http.StatusNotFound:
				t.Errorf("profiling off: GET %s = %d; want 404", path, rec.Code)
			}
		}
	}
}
