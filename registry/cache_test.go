package registry_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
)

// runCaches feeds g's caches until the test ends.
func runCaches(t *testing.T, g *registry.Registry) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	g.RunCaches(ctx, func(ctx context.Context, _ string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_ = fn(ctx)
			}
		}()
	})
}

// TestCacheFollowsWrites: a cache holds what was stored before it ran,
// shows a write made through its registry as soon as the write returns,
// and one made through another registry on the same database (another
// replica) once the watch delivers it; a handlers-only cache tells its
// handlers the same changes.
func TestCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "t.db")
	open := func() *registry.Registry {
		st, err := sqlstore.Open(ctx, dsn, sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return registry.New(registry.Config{Store: st, Types: schema.NewBuiltin()})
	}
	a, b := open(), open()
	roles := func(g *registry.Registry) *registry.Resource {
		return g.MustLookup("rbac.authorization.k8s.io", "v1", "clusterroles")
	}
	role := func(name string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	}
	if _, err := roles(a).Create(ctx, "", role("before"), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	heard := map[string]bool{}
	c := a.Cache("rbac.authorization.k8s.io", "v1", "clusterroles", true)
	events := a.Cache("", "v1", "namespaces", false, registry.CacheHandler{
		Set: func(obj runtime.Object) {
			mu.Lock()
			heard[obj.(*corev1.Namespace).Name] = true
			mu.Unlock()
		},
		Delete: func(_, name string, _ runtime.Object) {
			mu.Lock()
			heard[name] = false
			mu.Unlock()
		},
	})
	runCaches(t, a)
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := events.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if events.Indexer() != nil {
		t.Error("a handlers-only cache has an indexer")
	}
	has := func(name string) bool {
		_, ok, _ := c.Indexer().GetByKey(name)
		return ok
	}
	if !has("before") {
		t.Fatalf("the cache lacks a role stored before it ran: %v", c.Indexer().ListKeys())
	}

	// Through this registry: in the cache when the write returns.
	if _, err := roles(a).Create(ctx, "", role("here"), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !has("here") {
		t.Error("a role created through the registry is not cached when the create returns")
	}
	if _, err := roles(a).Delete(ctx, "", "before", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if has("before") {
		t.Error("a role deleted through the registry is still cached when the delete returns")
	}

	// Through another replica: once the watch delivers it. A write through
	// this registry afterwards is ordered after it, so waiting for that
	// write waits for the other one too.
	if _, err := roles(b).Create(ctx, "", role("there"), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := roles(a).Create(ctx, "", role("marker"), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := c.Indexer().ListKeys()
	slices.Sort(got)
	if want := []string{"here", "marker", "there"}; !slices.Equal(got, want) {
		t.Errorf("cached roles %v, want %v", got, want)
	}

	ns := a.MustLookup("", "v1", "namespaces")
	if _, err := ns.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ok := heard["team"]
	mu.Unlock()
	if !ok {
		t.Error("a handlers-only cache's handler did not hear a create before it returned")
	}
}
