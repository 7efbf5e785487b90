package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage"
	storagev1informers "k8s.io/client-go/informers/storage/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Admission plugins read other objects through client-go listers from an
// informer factory. Theirs read the database (a key read each), so they
// see every replica's writes at once and hold no objects in memory: the
// factory below gives just the listers NodeRestriction asks for; any
// other informer panics at start-up (ValidateInitialization), not later.

type liveInformers struct {
	informers.SharedInformerFactory // only Core and Storage are given
	g                               *Registry
}

func (f liveInformers) Core() coreinformers.Interface { return liveCore{g: f.g} }
func (f liveInformers) Storage() storageinformers.Interface {
	return liveStorage{g: f.g}
}

type liveCore struct {
	coreinformers.Interface
	g *Registry
}

func (c liveCore) V1() corev1informers.Interface { return liveCoreV1{g: c.g} }

type liveCoreV1 struct {
	corev1informers.Interface
	g *Registry
}

func (c liveCoreV1) Pods() corev1informers.PodInformer {
	return live(c.g, "", "pods", corev1listers.NewPodLister)
}
func (c liveCoreV1) Nodes() corev1informers.NodeInformer {
	return live(c.g, "", "nodes", corev1listers.NewNodeLister)
}

func (c liveCoreV1) PersistentVolumeClaims() corev1informers.PersistentVolumeClaimInformer {
	return live(c.g, "", "persistentvolumeclaims", corev1listers.NewPersistentVolumeClaimLister)
}
func (c liveCoreV1) PersistentVolumes() corev1informers.PersistentVolumeInformer {
	return live(c.g, "", "persistentvolumes", corev1listers.NewPersistentVolumeLister)
}

type liveStorage struct {
	storageinformers.Interface
	g *Registry
}

func (s liveStorage) V1() storagev1informers.Interface { return liveStorageV1{g: s.g} }

type liveStorageV1 struct {
	storagev1informers.Interface
	g *Registry
}

func (s liveStorageV1) CSIDrivers() storagev1informers.CSIDriverInformer {
	return live(s.g, "storage.k8s.io", "csidrivers", storagev1listers.NewCSIDriverLister)
}

// liveInformer has no informer of its own (nothing to start, always
// synced); its lister reads the registry.
type liveInformer struct {
	g               *Registry
	group, resource string
}

func (liveInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }

// syncedInformer is the informer of a live lister: synced from the start.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }

func (i liveInformer) indexer() cache.Indexer {
	return liveIndexer{x: i.g.MustLookup(i.group, "v1", i.resource)}
}

// liveTyped is one kind's typed informer over the registry: L is its
// lister.
type liveTyped[L any] struct {
	liveInformer
	newLister func(cache.Indexer) L
}

func (i liveTyped[L]) Lister() L { return i.newLister(i.indexer()) }

func live[L any](g *Registry, group, resource string, newLister func(cache.Indexer) L) liveTyped[L] {
	return liveTyped[L]{liveInformer{g: g, group: group, resource: resource}, newLister}
}

// liveIndexer answers a lister's reads from the registry: GetByKey (a
// lister's Get), List and the namespace index (a lister's List). Writes
// to it are refused: nothing feeds it.
type liveIndexer struct {
	cache.Indexer
	x *Resource
}

// readTimeout bounds a plugin's read (listers take no context).
const readTimeout = 30 * time.Second

func (l liveIndexer) GetByKey(key string) (any, bool, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	obj, _, err := l.x.Get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return obj, true, nil
}

func (l liveIndexer) list(namespace string) ([]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var out []any
	opts := kv.ListOptions{Resource: l.x.StorageType().Resource, Namespace: namespace}
	for {
		page, err := l.x.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Items {
			obj, err := l.x.Decode(rec)
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
		if !page.More || len(page.Items) == 0 {
			return out, nil
		}
		last := page.Items[len(page.Items)-1]
		opts.AfterNamespace, opts.AfterName, opts.Rev = last.Key.Namespace, last.Key.Name, page.Rev
	}
}

func (l liveIndexer) List() []any {
	out, _ := l.list("")
	return out
}

func (l liveIndexer) ByIndex(index, value string) ([]any, error) {
	if index != cache.NamespaceIndex {
		return nil, errors.New("only the namespace index is served")
	}
	return l.list(value)
}

// Index serves the namespace index (what a namespaced lister's List asks).
func (l liveIndexer) Index(index string, obj any) ([]any, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return l.ByIndex(index, acc.GetNamespace())
}

// LiveLister lists a served resource from the store (kube's quota
// evaluators count objects through it).
func (g *Registry) LiveLister(gvr runtimeschema.GroupVersionResource) (cache.GenericLister, error) {
	x, ok := g.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	if !ok {
		return nil, fmt.Errorf("%v is not served", gvr)
	}
	return cache.NewGenericLister(liveIndexer{x: x}, gvr.GroupResource()), nil
}

// LookupResource finds a served version of a group and resource.
func (g *Registry) LookupResource(gr runtimeschema.GroupResource) (*Resource, bool) {
	for _, t := range g.types.Types() {
		if t.Group == gr.Group && t.Resource == gr.Resource {
			return g.For(t), true
		}
	}
	return nil, false
}
