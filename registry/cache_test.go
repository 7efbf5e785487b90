package registry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

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
		return mustNew(registry.Config{Store: st, Types: schema.NewBuiltin()})
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
	events := a.Cache("", "v1", "persistentvolumes", false, registry.CacheHandler{
		Set: func(obj k8sruntime.Object) {
			mu.Lock()
			heard[obj.(*corev1.PersistentVolume).Name] = true
			mu.Unlock()
		},
		Delete: func(_, name string, _ k8sruntime.Object) {
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

	pvs := a.MustLookup("", "v1", "persistentvolumes")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/team"}}}}
	if _, err := pvs.Create(ctx, "", pv, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ok := heard["team"]
	mu.Unlock()
	if !ok {
		t.Error("a handlers-only cache's handler did not hear a create before it returned")
	}
}

// BenchmarkRBACCacheMemory: the heap the RBAC caches take for 10,000
// RoleBindings (each binding one ServiceAccount to a ClusterRole in one of
// 100 namespaces), and how long a cache takes to load them.
//
//	go test ./registry -run '^$' -bench RBACCacheMemory -benchtime 1x
func BenchmarkRBACCacheMemory(b *testing.B) {
	const bindings, namespaces = 10_000, 100
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "t.db"), sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	writer := mustNew(registry.Config{Store: st, Types: schema.NewBuiltin()})
	rbs := writer.MustLookup("rbac.authorization.k8s.io", "v1", "rolebindings")
	nsx := writer.MustLookup("", "v1", "namespaces")
	for i := range namespaces {
		if _, err := nsx.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%03d", i)}}, registry.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range bindings {
		ns := fmt.Sprintf("ns-%03d", i%namespaces)
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rb-%05d", i)},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: fmt.Sprintf("sa-%05d", i), Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}}
		if _, err := rbs.Create(ctx, ns, rb, registry.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g := mustNew(registry.Config{Store: st, Types: schema.NewBuiltin()})
		r := g.RBAC()
		start := time.Now()
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		g.RunCaches(cctx, func(ctx context.Context, _ string, fn func(context.Context) error) {
			go func() { _ = fn(ctx); done <- struct{}{} }()
		})
		if err := r.WaitSynced(ctx); err != nil {
			b.Fatal(err)
		}
		loaded := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		got, err := r.RoleBindings.List(labels.Everything())
		if err != nil || len(got) != bindings {
			b.Fatalf("cached %d bindings (%v), want %d", len(got), err, bindings)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/bindings, "B/binding")
		b.ReportMetric(loaded.Seconds()*1000, "ms-to-sync")
		cancel()
		for range 4 { // the four RBAC caches' watches end
			<-done
		}
	}
}
