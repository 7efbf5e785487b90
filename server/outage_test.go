package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestDatabaseOutageHTTP: with PostgreSQL unreachable, /readyz fails on
// its database check and requests get 503 Status answers quickly; when the
// database is back, Tabula serves again without a restart.
func TestDatabaseOutageHTTP(t *testing.T) {
	u, err := url.Parse(dbtest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := dbtest.NewCutProxy(t, u.Host)
	u.Host = proxy.Addr
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, u.String())})
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	if r := do("GET", "/readyz", ""); r.Code != http.StatusOK {
		t.Fatalf("readyz before the outage: %d %s", r.Code, r.Body)
	}

	proxy.Cut()
	start := time.Now()
	if r := do("GET", "/readyz?verbose", ""); r.Code != http.StatusInternalServerError || !strings.Contains(r.Body.String(), "[-]database failed") {
		t.Fatalf("readyz during the outage: %d %s; want 500 naming the database check", r.Code, r.Body)
	}
	r := do("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"during"}}`)
	var st503 struct {
		Kind   string
		Reason string
		Code   int
	}
	_ = json.Unmarshal(r.Body.Bytes(), &st503)
	if r.Code != http.StatusServiceUnavailable || st503.Kind != "Status" || st503.Reason != "ServiceUnavailable" {
		t.Fatalf("create during the outage: %d %s; want a 503 ServiceUnavailable Status", r.Code, r.Body)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("answering during the outage took %v; want it fast", took)
	}

	proxy.Restore(t)
	deadline := time.Now().Add(30 * time.Second)
	for do("GET", "/readyz", "").Code != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("not ready again within 30s after the database returned")
		}
		<-time.After(100 * time.Millisecond)
	}
	if r := do("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"after"}}`); r.Code != http.StatusCreated {
		t.Fatalf("create after recovery: %d %s", r.Code, r.Body)
	}
}
