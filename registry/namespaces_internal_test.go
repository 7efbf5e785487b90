package registry

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// countingStore counts namespace reads by key, to see which creates
// needed one.
type countingStore struct {
	Storage
	namespaceGets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key kv.Key) (kv.Record, error) {
	if key.Resource == "namespaces" {
		s.namespaceGets.Add(1)
	}
	return s.Storage.Get(ctx, key)
}

// TestCreatesUseTheNamespaceCache: creates in a namespace the watch-fed
// cache holds do not read it; a namespace deleted through this registry
// refuses new content from the next request.
func TestCreatesUseTheNamespaceCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Storage: st}
	g := mustNew(Config{Store: cs, Types: schema.NewBuiltin()})
	g.RunCaches(ctx, func(ctx context.Context, _ string, fn func(context.Context) error) { go fn(ctx) })
	if err := g.namespaces.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	namespaces := g.MustLookup("", "v1", "namespaces")
	configmaps := g.MustLookup("", "v1", "configmaps")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cached"}}
	if _, err := namespaces.Create(ctx, "", ns, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The create returned once the cache showed it.
	if _, ok, _ := g.namespaces.Indexer().GetByKey("cached"); !ok {
		t.Fatal("a namespace created through the registry is not in the cache when the create returns")
	}
	before := cs.namespaceGets.Load()
	for _, name := range []string{"a", "b", "c"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := configmaps.Create(ctx, "cached", cm, WriteOptions{}); err != nil {
			t.Fatalf("create configmap %s: %v", name, err)
		}
	}
	if n := cs.namespaceGets.Load() - before; n != 0 {
		t.Fatalf("three creates in a cached namespace read it %d times; want 0", n)
	}
	_, err = configmaps.Create(ctx, "absent", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, WriteOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: %v; want NotFound", err)
	}

	// No namespace controller runs here: the namespace stays Terminating.
	if _, err := namespaces.Delete(ctx, "", "cached", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = configmaps.Create(ctx, "cached", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, WriteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("create right after the namespace's delete: %v; want 403 NamespaceTerminating", err)
	}
}
