package registry

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/util/proxy"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration"
	admissionregistrationv1informers "k8s.io/client-go/informers/admissionregistration/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking"
	networkingv1informers "k8s.io/client-go/informers/networking/v1"
	nodeinformers "k8s.io/client-go/informers/node"
	nodev1informers "k8s.io/client-go/informers/node/v1"
	storagev1informers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	admissionregistrationv1listers "k8s.io/client-go/listers/admissionregistration/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoveryv1listers "k8s.io/client-go/listers/discovery/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
	nodev1listers "k8s.io/client-go/listers/node/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

// What kube's webhook admission plugins read, given as they expect it:
// webhook configurations and namespaces from informers (here this
// replica's watch-fed Caches, so a configuration written on any replica
// takes effect here when the watch delivers it), a client for the
// namespace a cache has not seen yet, and a resolver from a Service to
// the address a webhook is called at.

// cachedInformer is a Cache seen as a client-go informer: handlers, the
// store and the synced state (what kube's configuration managers use).
type cachedInformer struct {
	cache.SharedIndexInformer
	c *Cache
}

func (i cachedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	// The object each key last had, so an update is told with the one
	// it replaces: kube's handlers (API Priority and Fairness' config
	// controller among them) act only when old and new differ. Fed from
	// the cache's one goroutine; a cache that keeps no objects keeps none
	// here either, and tells an update with the new object twice.
	known := map[string]runtime.Object{}
	keep := i.c.indexer != nil
	i.c.addHandler(CacheHandler{
		Set: func(obj runtime.Object) {
			acc, _ := meta.Accessor(obj)
			k := cacheKey(acc.GetNamespace(), acc.GetName())
			old, ok := known[k]
			if keep {
				known[k] = obj
			} else {
				known[k], old = nil, obj
			}
			if ok {
				h.OnUpdate(old, obj)
				return
			}
			h.OnAdd(obj, false)
		},
		Delete: func(namespace, name string, obj runtime.Object) {
			k := cacheKey(namespace, name)
			delete(known, k)
			if obj == nil {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: k})
				return
			}
			h.OnDelete(obj)
		},
	})
	return cachedRegistration{i.c}, nil
}

// AddEventHandlerWithResyncPeriod also tells h of every object again
// each period (kube's availability checks re-probe on it) until the
// caches stop.
func (i cachedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, period time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := i.AddEventHandler(h)
	if err != nil || period <= 0 || i.c.indexer == nil {
		return reg, err
	}
	g := i.c.x.g
	g.cachesMu.Lock()
	ctx := g.cachesCtx
	g.cachesMu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for _, o := range i.c.indexer.List() {
					h.OnUpdate(o, o)
				}
			}
		}
	}()
	return reg, nil
}

func (i cachedInformer) HasSynced() bool           { return i.c.HasSynced() }
func (i cachedInformer) GetStore() cache.Store     { return i.c.Indexer() }
func (i cachedInformer) GetIndexer() cache.Indexer { return i.c.Indexer() }

type cachedRegistration struct{ c *Cache }

func (r cachedRegistration) HasSynced() bool { return r.c.HasSynced() }

// Namespaces come from the registry's namespace cache.
func (c liveCoreV1) Namespaces() corev1informers.NamespaceInformer {
	return cachedTyped[corev1listers.NamespaceLister]{cachedInformer{c: c.g.namespaces}, corev1listers.NewNamespaceLister}
}

// cachedTyped is a Cache as one kind's typed informer: L is its lister.
type cachedTyped[L any] struct {
	cachedInformer
	newLister func(cache.Indexer) L
}

func (i cachedTyped[L]) Informer() cache.SharedIndexInformer { return i.cachedInformer }
func (i cachedTyped[L]) Lister() L                           { return i.newLister(i.c.Indexer()) }

// CachedInformer is the registry's watch-fed cache of a resource as a
// typed client-go informer (L its lister), for kube's controllers.
func CachedInformer[L any](g *Registry, group, version, resource string, newLister func(cache.Indexer) L) interface {
	Informer() cache.SharedIndexInformer
	Lister() L
} {
	return cachedTyped[L]{cachedInformer{c: g.Cache(group, version, resource, true)}, newLister}
}

// cached is the typed informer of the cache of group/v1/resource.
func cached[L any](g *Registry, group, resource string, newLister func(cache.Indexer) L) cachedTyped[L] {
	return cachedTyped[L]{cachedInformer{c: g.Cache(group, "v1", resource, true)}, newLister}
}

func (f liveInformers) Admissionregistration() admissionregistrationinformers.Interface {
	return liveAdmissionregistration{g: f.g}
}

type liveAdmissionregistration struct {
	admissionregistrationinformers.Interface
	g *Registry
}

func (a liveAdmissionregistration) V1() admissionregistrationv1informers.Interface {
	return liveAdmissionregistrationV1{g: a.g}
}

type liveAdmissionregistrationV1 struct {
	admissionregistrationv1informers.Interface
	g *Registry
}

const admissionregistrationGroup = "admissionregistration.k8s.io"

func (a liveAdmissionregistrationV1) MutatingWebhookConfigurations() admissionregistrationv1informers.MutatingWebhookConfigurationInformer {
	return cached(a.g, admissionregistrationGroup, "mutatingwebhookconfigurations", admissionregistrationv1listers.NewMutatingWebhookConfigurationLister)
}

func (a liveAdmissionregistrationV1) ValidatingWebhookConfigurations() admissionregistrationv1informers.ValidatingWebhookConfigurationInformer {
	return cached(a.g, admissionregistrationGroup, "validatingwebhookconfigurations", admissionregistrationv1listers.NewValidatingWebhookConfigurationLister)
}

// registryClient is the client plugins read through when a cache lags
// (the namespace matcher's fallback): reads of the registry, nothing else.
type registryClient struct {
	kubernetes.Interface
	g *Registry
}

func (c registryClient) CoreV1() corev1client.CoreV1Interface { return registryCoreV1{g: c.g} }

type registryCoreV1 struct {
	corev1client.CoreV1Interface
	g *Registry
}

func (c registryCoreV1) Namespaces() corev1client.NamespaceInterface {
	return registryNamespaces{g: c.g}
}

type registryNamespaces struct {
	corev1client.NamespaceInterface
	g *Registry
}

func (c registryNamespaces) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	return getAs[*corev1.Namespace](ctx, c.g.MustLookup("", "v1", "namespaces"), "", name)
}

// getAs reads one object of x as its Go type.
func getAs[T runtime.Object](ctx context.Context, x *Resource, namespace, name string) (T, error) {
	var zero T
	obj, _, err := x.Get(ctx, namespace, name)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, apierrors.NewInternalError(fmt.Errorf("%s %s is a %T", x.t.GroupResource(), name, obj))
	}
	return t, nil
}

// listAs lists a namespace's objects of x (live) as values of their Go
// type, for a typed client's List.
func listAs[T any](x *Resource, namespace string) ([]T, error) {
	objs, err := liveIndexer{x: x}.list(namespace)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, *t)
		}
	}
	return out, nil
}

// ServiceResolver finds where a webhook (admission or conversion) named
// by a Service is called. By default a ready endpoint of the Service, as
// kube-apiserver does with --enable-aggregator-routing: Tabula usually
// runs off the cluster's service network, where cluster IPs do not
// route. ClusterIP routing is kube-apiserver's default.
type ServiceResolver struct {
	g         *Registry
	clusterIP bool
	// cached: this replica's watch-fed caches, read once synced (nil:
	// always live).
	cached *resolverCaches
}

// resolverCaches are the Service and EndpointSlice caches, made on first
// use.
type resolverCaches struct {
	once             sync.Once
	services, slices *Cache
}

// ResolveEndpoint implements kube's webhook.ServiceResolver.
func (r ServiceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	var servicesX, slicesX cache.Indexer
	if c := r.cached; c != nil {
		c.once.Do(func() {
			c.services, c.slices = r.g.Cache("", "v1", "services", true), r.g.Cache("discovery.k8s.io", "v1", "endpointslices", true)
		})
		if c.services.HasSynced() && c.services.Indexer() != nil {
			servicesX = c.services.Indexer()
		}
		if c.slices.HasSynced() && c.slices.Indexer() != nil {
			slicesX = c.slices.Indexer()
		}
	}
	if servicesX == nil {
		servicesX = liveIndexer{x: r.g.MustLookup("", "v1", "services")}
	}
	services := corev1listers.NewServiceLister(servicesX)
	if r.clusterIP {
		return proxy.ResolveCluster(services, namespace, name, port)
	}
	if slicesX == nil {
		slicesX = liveIndexer{x: r.g.MustLookup("discovery.k8s.io", "v1", "endpointslices")}
	}
	getter, err := proxy.NewEndpointSliceListerGetter(discoveryv1listers.NewEndpointSliceLister(slicesX))
	if err != nil {
		return nil, err
	}
	return proxy.ResolveEndpoint(services, getter, namespace, name, port)
}

// ServiceResolver is the registry's resolver of webhook Services.
func (g *Registry) ServiceResolver() ServiceResolver {
	return ServiceResolver{g: g, clusterIP: g.admissionCfg.ClusterIPRouting}
}

// CachedServiceResolver resolves from this replica's caches of Services
// and EndpointSlices (kept, as kube-aggregator's informers are, only once
// it is first used: when an APIService names a Service), reading live
// until they are synced: the aggregator resolves on every request it
// relays, and its availability checks every 30 seconds.
func (g *Registry) CachedServiceResolver() ServiceResolver {
	r := g.ServiceResolver()
	r.cached = &resolverCaches{}
	return r
}

// LimitRanges, StorageClasses and IngressClasses are read on every write
// of the kinds they govern (a list per Pod, claim or Ingress): from
// watch-fed caches, not the database. RuntimeClasses are read by name,
// live.
func (c liveCoreV1) LimitRanges() corev1informers.LimitRangeInformer {
	return cached(c.g, "", "limitranges", corev1listers.NewLimitRangeLister)
}

func (s liveStorageV1) StorageClasses() storagev1informers.StorageClassInformer {
	return cached(s.g, "storage.k8s.io", "storageclasses", storagev1listers.NewStorageClassLister)
}

func (f liveInformers) Networking() networkinginformers.Interface { return liveNetworking{g: f.g} }

type liveNetworking struct {
	networkinginformers.Interface
	g *Registry
}

func (n liveNetworking) V1() networkingv1informers.Interface { return liveNetworkingV1{g: n.g} }

type liveNetworkingV1 struct {
	networkingv1informers.Interface
	g *Registry
}

func (n liveNetworkingV1) IngressClasses() networkingv1informers.IngressClassInformer {
	return cached(n.g, "networking.k8s.io", "ingressclasses", networkingv1listers.NewIngressClassLister)
}

func (f liveInformers) Node() nodeinformers.Interface { return liveNode{g: f.g} }

type liveNode struct {
	nodeinformers.Interface
	g *Registry
}

func (n liveNode) V1() nodev1informers.Interface { return liveNodeV1{g: n.g} }

type liveNodeV1 struct {
	nodev1informers.Interface
	g *Registry
}

func (n liveNodeV1) RuntimeClasses() nodev1informers.RuntimeClassInformer {
	return live(n.g, "node.k8s.io", "runtimeclasses", nodev1listers.NewRuntimeClassLister)
}

// LimitRanges lists a namespace's LimitRanges (LimitRanger's look-up when
// its cache has none, for a namespace just written).
func (c registryCoreV1) LimitRanges(namespace string) corev1client.LimitRangeInterface {
	return registryLimitRanges{g: c.g, namespace: namespace}
}

type registryLimitRanges struct {
	corev1client.LimitRangeInterface
	g         *Registry
	namespace string
}

func (c registryLimitRanges) List(ctx context.Context, _ metav1.ListOptions) (*corev1.LimitRangeList, error) {
	items, err := listAs[corev1.LimitRange](c.g.MustLookup("", "v1", "limitranges"), c.namespace)
	return &corev1.LimitRangeList{Items: items}, err
}

// NodeV1 reads RuntimeClasses (the RuntimeClass plugin's look-up when its
// lister misses; the lister here reads the registry already).
func (c registryClient) NodeV1() nodev1client.NodeV1Interface { return registryNodeV1{g: c.g} }

type registryNodeV1 struct {
	nodev1client.NodeV1Interface
	g *Registry
}

func (c registryNodeV1) RuntimeClasses() nodev1client.RuntimeClassInterface {
	return registryRuntimeClasses{g: c.g}
}

type registryRuntimeClasses struct {
	nodev1client.RuntimeClassInterface
	g *Registry
}

func (c registryRuntimeClasses) Get(ctx context.Context, name string, _ metav1.GetOptions) (*nodev1.RuntimeClass, error) {
	return getAs[*nodev1.RuntimeClass](ctx, c.g.MustLookup("node.k8s.io", "v1", "runtimeclasses"), "", name)
}

// KeyPair is a client certificate and its key in PEM, as client-go's
// transports take them (the front proxy's, for aggregated API servers
// and the checks of their availability).
type KeyPair struct {
	CertPEM, KeyPEM []byte
}
