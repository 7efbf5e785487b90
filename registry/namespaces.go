package registry

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// admitCreate checks that a namespaced object's namespace exists and is
// not terminating, as kube-apiserver's NamespaceLifecycle admission does.
func (g *Registry) admitCreate(ctx context.Context, t *schema.Type, acc metav1.Object) error {
	if !t.Namespaced {
		return nil
	}
	namespace := acc.GetNamespace()
	if g.namespaces.isActive(namespace) {
		return nil
	}
	ns, err := g.Namespace(ctx, namespace)
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		st := apierrors.NewForbidden(t.GroupResource(), acc.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
		st.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type:    "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", namespace),
			Field:   "metadata.namespace",
		}}
		return st
	}
	return nil
}

// Namespace reads a namespace; 404 when it does not exist.
func (g *Registry) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	obj, _, err := g.For(g.nsType).Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// NamespaceActive reports whether the namespace cache knows name to be
// Active (false also means "not known yet": read it).
func (g *Registry) NamespaceActive(name string) bool { return g.namespaces.isActive(name) }

// NamespacesChanged returns a channel closed at the namespace cache's
// next change.
func (g *Registry) NamespacesChanged() <-chan struct{} { return g.namespaces.changed() }

// WatchNamespaces fills the namespace cache and keeps it current until
// ctx ends or the watch fails (the caller restarts it).
func (g *Registry) WatchNamespaces(ctx context.Context) error {
	defer g.namespaces.unsync()
	x := g.For(g.nsType)
	res, err := x.List(ctx, kv.ListOptions{})
	if err != nil {
		return err
	}
	active := make(map[string]bool, len(res.Items))
	for _, rec := range res.Items {
		ok, err := x.namespaceActive(rec)
		if err != nil {
			return err
		}
		if ok {
			active[rec.Name] = true
		}
	}
	w, err := x.Watch(ctx, kv.WatchOptions{After: res.Rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	g.namespaces.reset(active, res.Rev)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			ok, err := x.namespaceActive(ev.Record)
			if err != nil {
				return err
			}
			g.namespaces.observe(ev.Name, ok && ev.Type != kv.Deleted, ev.Rev)
		}
	}
}

// namespaceActive reports whether a stored namespace is Active and not
// being deleted.
func (x *Resource) namespaceActive(rec kv.Record) (bool, error) {
	obj, err := x.Decode(rec)
	if err != nil {
		return false, err
	}
	ns := obj.(*corev1.Namespace)
	return ns.Status.Phase == corev1.NamespaceActive && ns.DeletionTimestamp == nil, nil
}

// namespaceCache knows which namespaces are Active from a watch, so a
// create need not read its namespace from the database. kube-apiserver's
// NamespaceLifecycle admission does the same with an informer.
//
// It only ever answers "Active"; an unknown name, a namespace in any other
// state or a cache not (yet) synced sends the caller to a live read. A
// namespace written through this registry is read live until the watch
// has delivered that write, so this server's own deletes are seen at once.
// Another replica's delete is seen when the watch delivers it (NOTIFY or
// the poll interval), the window an informer gives kube-apiserver.
type namespaceCache struct {
	mu     sync.Mutex
	synced bool
	active map[string]bool
	// seen is the newest revision the watch delivered.
	seen int64
	// floor holds, per namespace written here, the revision the watch must
	// deliver before the cache may answer for it again.
	floor map[string]int64
	// changedCh is closed and replaced whenever the content changes.
	changedCh chan struct{}
}

func newNamespaceCache() *namespaceCache {
	return &namespaceCache{floor: map[string]int64{}, changedCh: make(chan struct{})}
}

// changed returns a channel closed at the cache's next change, for
// callers waiting to see a namespace.
func (c *namespaceCache) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changedCh
}

// signal wakes changed's waiters; c.mu is held.
func (c *namespaceCache) signal() {
	close(c.changedCh)
	c.changedCh = make(chan struct{})
}

// isActive reports whether the cache knows name to be Active.
func (c *namespaceCache) isActive(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		return false
	}
	if f, ok := c.floor[name]; ok {
		if f > c.seen {
			return false
		}
		delete(c.floor, name)
	}
	return c.active[name]
}

// wrote records a write of namespace name at rev made through this registry.
func (c *namespaceCache) wrote(name string, rev int64) {
	c.mu.Lock()
	if rev > c.floor[name] {
		c.floor[name] = rev
	}
	c.mu.Unlock()
}

// reset replaces the cache's content with a list read at rev.
func (c *namespaceCache) reset(active map[string]bool, rev int64) {
	c.mu.Lock()
	c.active, c.seen, c.synced = active, rev, true
	c.signal()
	c.mu.Unlock()
}

// observe applies one watched change at rev.
func (c *namespaceCache) observe(name string, active bool, rev int64) {
	c.mu.Lock()
	if active {
		c.active[name] = true
	} else {
		delete(c.active, name)
	}
	c.seen = rev
	c.signal()
	c.mu.Unlock()
}

// unsync makes every lookup live until the next reset.
func (c *namespaceCache) unsync() {
	c.mu.Lock()
	c.synced, c.active = false, nil
	c.mu.Unlock()
}
