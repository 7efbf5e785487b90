package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

func TestNamespaceCacheAnswersOnlyWhatTheWatchConfirmed(t *testing.T) {
	c := newNamespaceCache()
	if c.isActive("a") {
		t.Fatal("an unsynced cache answered Active")
	}
	c.reset(map[string]bool{"a": true}, 5)
	if !c.isActive("a") || c.isActive("b") {
		t.Fatal("after reset: want a Active, b unknown")
	}
	c.wrote("a", 7) // this server changed a at revision 7
	if c.isActive("a") {
		t.Fatal("answered Active for a namespace written here before the watch delivered the write")
	}
	c.observe("b", true, 6)
	if c.isActive("a") || !c.isActive("b") {
		t.Fatal("an older event must not release a's floor; b must be Active")
	}
	c.observe("a", false, 7)
	if c.isActive("a") {
		t.Fatal("a is Terminating at revision 7")
	}
	c.observe("a", true, 9) // deleted and re-created elsewhere
	if !c.isActive("a") {
		t.Fatal("a re-created at revision 9 is Active")
	}
	c.unsync()
	if c.isActive("a") || c.isActive("b") {
		t.Fatal("an unsynced cache answered Active")
	}
}

// countingStore counts namespace reads by key, to see which creates
// needed one.
type countingStore struct {
	Store
	namespaceGets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key kv.Key) (kv.Record, error) {
	if key.Resource == "namespaces" {
		s.namespaceGets.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// TestCreatesUseTheNamespaceCache: once the watch has seen a namespace,
// creates in it do not read it; a namespace deleted through this server
// refuses new content at once, before the watch catches up.
func TestCreatesUseTheNamespaceCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Store: st}
	srv, err := New(Config{Store: cs, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.RunControllers(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.BeginShutdown()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	// The finalizer keeps the namespace Terminating after the namespace
	// controller has emptied it, so the last create below cannot race the
	// namespace's removal and see 404.
	if r := do("POST", "/api/v1/namespaces", `{"metadata":{"name":"cached","finalizers":["tabula.test/hold"]}}`); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	deadline := time.After(10 * time.Second)
	for {
		changed := srv.nsCache.changed() // taken before the check, so no change is missed
		if srv.nsCache.isActive("cached") {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the namespace cache never saw namespace cached")
		}
	}
	before := cs.namespaceGets.Load()
	for _, name := range []string{"a", "b", "c"} {
		if r := do("POST", "/api/v1/namespaces/cached/configmaps", `{"metadata":{"name":"`+name+`"}}`); r.Code != http.StatusCreated {
			t.Fatalf("create configmap %s: %d %s", name, r.Code, r.Body)
		}
	}
	if n := cs.namespaceGets.Load() - before; n != 0 {
		t.Fatalf("three creates in a cached namespace read it %d times; want 0", n)
	}
	if r := do("POST", "/api/v1/namespaces/absent/configmaps", `{"metadata":{"name":"a"}}`); r.Code != http.StatusNotFound {
		t.Fatalf("create in a missing namespace: %d %s; want 404", r.Code, r.Body)
	}

	if r := do("DELETE", "/api/v1/namespaces/cached", ""); r.Code != http.StatusOK {
		t.Fatalf("delete namespace: %d %s", r.Code, r.Body)
	}
	r := do("POST", "/api/v1/namespaces/cached/configmaps", `{"metadata":{"name":"late"}}`)
	if r.Code != http.StatusForbidden || !strings.Contains(r.Body.String(), "because it is being terminated") {
		t.Fatalf("create right after the namespace's delete: %d %s; want 403 NamespaceTerminating", r.Code, r.Body)
	}
}
