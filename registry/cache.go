package registry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Cache is one resource's objects as this process's watch last delivered
// them, for the readers kube-apiserver serves from informers: policy
// (RBAC, the node graph) and admission lookups (PriorityClasses). Every
// replica keeps its own, fed by the shared event log, so a change made on
// one replica reaches the others within the watch's latency; a write made
// through this registry is in the cache before the write returns.
//
// The objects are held in a client-go Indexer (keys namespace/name, the
// namespace index), so kube's listers and authorizers read it as they
// read an informer's store. A cache made with Handlers only keeps no
// objects: the handlers hear every change and the cache remembers keys.
type Cache struct {
	x *Resource
	// indexer is nil for a handlers-only cache.
	indexer cache.Indexer
	// handlers are guarded by hmu: one may be added while the cache runs.
	hmu      sync.Mutex
	handlers []CacheHandler

	mu     sync.Mutex
	synced bool
	// everSynced: the cache held a complete view once (informers, whose
	// synced state never goes back, report this; a restarting watch
	// leaves the last view in place meanwhile).
	everSynced bool
	seen       int64
	keys       map[string]bool // handlers-only: the keys present
	wake       chan struct{}   // closed and replaced at every change of seen
}

// CacheHandler hears a Cache's changes, in revision order, from the one
// goroutine that feeds it. Set receives an added or changed object; Delete
// the namespace and name of a removed one (obj is its last state, or nil
// when a re-list found it gone).
type CacheHandler struct {
	Set    func(obj runtime.Object)
	Delete func(namespace, name string, obj runtime.Object)
}

// Cache returns the cache of a served resource, made on first use; keep
// says whether it holds the objects (an Indexer) or only feeds handlers.
// Caches are fed by RunCaches, so every one that shares a resource with
// another must be asked for before it; one made later (the parameters
// of an admission policy) starts at once. Handlers given for a cache
// already running first hear what it holds.
func (g *Registry) Cache(group, version, resource string, keep bool, handlers ...CacheHandler) *Cache {
	x := g.MustLookup(group, version, resource)
	g.cachesMu.Lock()
	defer g.cachesMu.Unlock()
	c := g.caches[x.t.StorageResource]
	running := c != nil && g.cachesRun != nil
	if c == nil {
		c = &Cache{x: x, wake: make(chan struct{})}
		g.caches[x.t.StorageResource] = c
		if g.cachesRun != nil {
			defer func() { go g.cachesRun(g.cachesCtx, c.x.t.GroupResource().String()+" cache", c.run) }()
		}
	}
	// A running handlers-only cache cannot start keeping objects (its
	// view would start empty): its Indexer stays nil.
	if keep && c.indexer == nil && !running {
		c.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	for _, h := range handlers {
		c.addHandler(h)
	}
	return c
}

// addHandler adds a handler; one added to a running cache first hears
// the objects it holds (as a late informer handler does), and may hear
// one of them twice.
func (c *Cache) addHandler(h CacheHandler) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if c.indexer != nil && h.Set != nil {
		for _, o := range c.indexer.List() {
			if obj, ok := o.(runtime.Object); ok {
				h.Set(obj)
			}
		}
	}
	c.handlers = append(c.handlers, h)
}

func (c *Cache) handlersNow() []CacheHandler {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	return c.handlers
}

// RunCaches feeds every cache until ctx ends; run restarts a cache's watch
// when it fails (run is the controllers' restart loop).
func (g *Registry) RunCaches(ctx context.Context, run func(ctx context.Context, name string, fn func(context.Context) error)) {
	g.cachesMu.Lock()
	defer g.cachesMu.Unlock()
	g.cachesCtx, g.cachesRun = ctx, run
	for _, c := range g.caches {
		go run(ctx, c.x.t.GroupResource().String()+" cache", c.run)
	}
}

// CachesSynced reports whether every cache holds a complete view.
func (g *Registry) CachesSynced() bool {
	g.cachesMu.Lock()
	defer g.cachesMu.Unlock()
	for _, c := range g.caches {
		if !c.Synced() {
			return false
		}
	}
	return true
}

// Indexer is the cache's store, for kube's listers; nil for a
// handlers-only cache.
func (c *Cache) Indexer() cache.Indexer { return c.indexer }

// Synced reports whether the cache holds a complete view.
func (c *Cache) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// HasSynced reports whether the cache ever held a complete view: what
// a client-go informer's HasSynced means.
func (c *Cache) HasSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.everSynced
}

// WaitSynced waits until the cache holds a complete view or ctx ends.
func (c *Cache) WaitSynced(ctx context.Context) error {
	for {
		c.mu.Lock()
		synced, wake := c.synced, c.wake
		c.mu.Unlock()
		if synced {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// caughtUpWait bounds how long a write waits for its own revision to
// reach the cache; past it (a watch restarting) the write returns anyway
// and the cache converges when the watch is back.
const caughtUpWait = 5 * time.Second

// waitFor waits until the cache has applied rev, when it is synced.
func (c *Cache) waitFor(ctx context.Context, rev int64) {
	ctx, cancel := context.WithTimeout(ctx, caughtUpWait)
	defer cancel()
	for {
		c.mu.Lock()
		done, wake := !c.synced || c.seen >= rev, c.wake
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// advance records that the cache shows rev; c.mu is not held.
func (c *Cache) advance(rev int64, synced bool) {
	c.mu.Lock()
	if rev > c.seen {
		c.seen = rev
	}
	c.synced = synced
	c.everSynced = c.everSynced || synced
	close(c.wake)
	c.wake = make(chan struct{})
	c.mu.Unlock()
}

// run opens a watch that starts with the current objects, replaces the
// cache's content with them, then applies every change.
func (c *Cache) run(ctx context.Context) error {
	defer c.advance(0, false)
	w, err := c.x.Watch(ctx, kv.WatchOptions{Initial: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	var initial []runtime.Object
	listing := true
	for {
		var ev kv.Event
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			ev = e
		}
		if ev.Type == kv.InitialEnd {
			c.replace(initial)
			initial, listing = nil, false
			c.advance(ev.Rev, true)
			continue
		}
		obj, err := c.x.Decode(ev.Record)
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", c.x.t.GroupResource(), ev.Namespace, ev.Name, err)
		}
		if listing {
			initial = append(initial, obj)
			continue
		}
		if ev.Type == kv.Deleted {
			c.remove(ev.Namespace, ev.Name, obj)
		} else {
			c.set(obj)
		}
		c.advance(ev.Rev, true)
	}
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func (c *Cache) set(obj runtime.Object) {
	if c.indexer != nil {
		_ = c.indexer.Add(obj) // the key function cannot fail on an object
	} else {
		acc, _ := meta.Accessor(obj)
		c.keys[cacheKey(acc.GetNamespace(), acc.GetName())] = true
	}
	for _, h := range c.handlersNow() {
		if h.Set != nil {
			h.Set(obj)
		}
	}
}

func (c *Cache) remove(namespace, name string, obj runtime.Object) {
	if c.indexer != nil {
		if obj != nil {
			_ = c.indexer.Delete(obj)
		} else if old, ok, _ := c.indexer.GetByKey(cacheKey(namespace, name)); ok {
			_ = c.indexer.Delete(old)
			obj, _ = old.(runtime.Object) // handlers hear the last state known
		}
	} else {
		delete(c.keys, cacheKey(namespace, name))
	}
	for _, h := range c.handlersNow() {
		if h.Delete != nil {
			h.Delete(namespace, name, obj)
		}
	}
}

// replace makes objs the cache's content: handlers hear every object of
// the new view, and a delete for every key the old view had that the new
// one lacks.
func (c *Cache) replace(objs []runtime.Object) {
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		acc, _ := meta.Accessor(o)
		present[cacheKey(acc.GetNamespace(), acc.GetName())] = true
	}
	var old []string
	if c.indexer != nil {
		old = c.indexer.ListKeys()
	} else {
		for k := range c.keys {
			old = append(old, k)
		}
	}
	for _, k := range old {
		if !present[k] {
			ns, name, _ := cache.SplitMetaNamespaceKey(k)
			c.remove(ns, name, nil)
		}
	}
	if c.indexer == nil && c.keys == nil {
		c.keys = make(map[string]bool, len(objs))
	}
	for _, o := range objs {
		c.set(o)
	}
}

// cachedStore is the store as the registry writes through it: a write to
// a cached resource returns once this process's cache shows it, so a
// RoleBinding authorizes, and a PriorityClass admits, from the next
// request on.
type cachedStore struct {
	Storage
	g *Registry
}

func (s cachedStore) settle(ctx context.Context, key kv.Key, rec kv.Record, err error) (kv.Record, error) {
	if err != nil {
		return rec, err
	}
	s.g.cachesMu.Lock()
	c := s.g.caches[key.Resource]
	s.g.cachesMu.Unlock()
	if c != nil {
		c.waitFor(ctx, rec.Rev)
	}
	return rec, nil
}

// GetKnown is the store's GetKnown, where it has one (an embedded
// interface hides it), else its Get.
func (s cachedStore) GetKnown(ctx context.Context, key kv.Key, known func(rev int64) bool) (kv.Record, bool, error) {
	if g, ok := s.Storage.(knownGetter); ok {
		return g.GetKnown(ctx, key, known)
	}
	rec, err := s.Storage.Get(ctx, key)
	return rec, false, err
}

func (s cachedStore) Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error) {
	rec, err := s.Storage.Create(ctx, key, enc)
	return s.settle(ctx, key, rec, err)
}

func (s cachedStore) Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	rec, err := s.Storage.Update(ctx, key, expect, enc)
	return s.settle(ctx, key, rec, err)
}

func (s cachedStore) Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error) {
	rec, err := s.Storage.Delete(ctx, key, expect, enc)
	return s.settle(ctx, key, rec, err)
}
