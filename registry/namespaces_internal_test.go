package registry

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	Storage
	namespaceGets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key kv.Key) (kv.Record, error) {
	if key.Resource == "namespaces" {
		s.namespaceGets.Add(1)
	}
	return s.Storage.Get(ctx, key)
}

// TestCreatesUseTheNamespaceCache: once the watch has seen a namespace,
// creates in it do not read it; a namespace deleted through this registry
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
	cs := &countingStore{Storage: st}
	g := New(Config{Store: cs, Types: schema.NewBuiltin()})
	watchDone := make(chan error, 1)
	go func() { watchDone <- g.WatchNamespaces(ctx) }()
	defer func() { cancel(); <-watchDone }()

	namespaces := g.MustLookup("", "v1", "namespaces")
	configmaps := g.MustLookup("", "v1", "configmaps")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cached"}}
	if _, err := namespaces.Create(ctx, "", ns, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		changed := g.NamespacesChanged() // taken before the check, so no change is missed
		if g.NamespaceActive("cached") {
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
