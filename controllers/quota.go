package controllers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/tools/cache"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

// The resource quota controller of kube-controller-manager: each
// ResourceQuota's status.hard follows its spec and status.used is
// recounted, with kube's evaluators over the stored objects, when a quota
// is created or its limits change, when a namespace with quotas loses an
// object or an update changes what it uses (kube's update filter: a Pod
// finished, terminating or resized, a Service's type, a claim's
// storage), and every five minutes.
// Admission adds to status.used as it admits; this controller is what
// gives room back. Every replica runs it on the writes it makes; status
// writes are conditional, so replicas recounting at once cannot undo
// each other.

// quotaResync is kube-controller-manager's --resource-quota-sync-period;
// quotaRetry how long a namespace whose recount failed waits.
const (
	quotaResync = 5 * time.Minute
	quotaRetry  = 5 * time.Second
	// quotaRecheck is how soon a count that gave usage back is made again.
	quotaRecheck = 5 * time.Second
)

// quotaState is the namespaces waiting for a recount.
type quotaState struct {
	cacheOnce sync.Once
	cache     *registry.Cache

	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func newQuotaState() *quotaState {
	return &quotaState{pending: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// nudgeQuota asks for namespace ns's quotas to be recounted.
func (m *Manager) nudgeQuota(ns string) {
	q := m.quotas
	q.mu.Lock()
	q.pending[ns] = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// quotaWritten decides whether a write changes what quotas count: a
// quota created or given new limits, or an update kube's update filter
// says changes usage (a Pod that finished, became terminating or was
// resized; a Service of another type; a claim whose storage changed).
func (m *Manager) quotaWritten(t *schema.Type, obj, old metav1.Object) {
	if !m.enabled(ResourceQuotaController) || !t.Namespaced {
		return
	}
	if o, ok := obj.(*corev1.ResourceQuota); ok {
		// Status writes (admission's and this controller's) are not news.
		if prev, ok := old.(*corev1.ResourceQuota); !ok || !equality.Semantic.DeepEqual(prev.Spec, o.Spec) ||
			!equality.Semantic.DeepEqual(o.Spec.Hard, o.Status.Hard) {
			m.nudgeQuota(o.Namespace)
		}
		return
	}
	if old == nil || t.Group != "" || !quotaUpdated[t.Resource] || !m.hasQuotas(obj.GetNamespace()) {
		return
	}
	if quotaUpdateFilter(runtimeschema.GroupVersionResource{Version: t.Version, Resource: t.Resource}, old, obj) {
		m.nudgeQuota(obj.GetNamespace())
	}
}

// quotaUpdateFilter is kube-controller-manager's; quotaUpdated the
// resources it looks at (it type-asserts their objects).
var (
	quotaUpdateFilter = quotainstall.DefaultUpdateFilter()
	quotaUpdated      = map[string]bool{"pods": true, "services": true, "persistentvolumeclaims": true}
)

// quotaDeleted: a namespace with quotas lost an object.
func (m *Manager) quotaDeleted(t *schema.Type, obj metav1.Object) {
	if m.enabled(ResourceQuotaController) && t.Namespaced && m.hasQuotas(obj.GetNamespace()) {
		m.nudgeQuota(obj.GetNamespace())
	}
}

// quotaCache is the quotas' watch-fed cache (looked up once: every
// delete asks it).
func (m *Manager) quotaCache() *registry.Cache {
	m.quotas.cacheOnce.Do(func() { m.quotas.cache = m.api.Cache("", "v1", "resourcequotas", true) })
	return m.quotas.cache
}

func (m *Manager) hasQuotas(ns string) bool {
	items, err := m.quotaCache().Indexer().ByIndex(cache.NamespaceIndex, ns)
	return err == nil && len(items) > 0
}

func (m *Manager) quotaController(ctx context.Context) error {
	c := m.quotaCache()
	if err := c.WaitSynced(ctx); err != nil {
		return nil
	}
	evaluators := newQuotaEvaluators(m.api)
	resync := time.NewTicker(quotaResync)
	defer resync.Stop()
	all := func() {
		for _, k := range c.Indexer().ListIndexFuncValues(cache.NamespaceIndex) {
			m.nudgeQuota(k)
		}
	}
	all()
	for {
		m.quotas.mu.Lock()
		pending := m.quotas.pending
		m.quotas.pending = map[string]bool{}
		m.quotas.mu.Unlock()
		for ns := range pending {
			if err := m.recountQuotas(ctx, evaluators, ns); err != nil && ctx.Err() == nil {
				m.log.Warn("resource quota not recounted", "namespace", ns, "err", err)
				time.AfterFunc(quotaRetry, func() { m.nudgeQuota(ns) })
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.quotas.wake:
		case <-resync.C:
			all()
		}
	}
}

// recountQuotas writes the status of every quota of ns.
func (m *Manager) recountQuotas(ctx context.Context, ev *quotaEvaluators, ns string) error {
	quotas := m.api.MustLookup("", "v1", "resourcequotas")
	items, err := m.quotaCache().Indexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range items {
		name := it.(*corev1.ResourceQuota).Name
		for attempt := 0; attempt < 5; attempt++ {
			obj, _, err := quotas.Get(ctx, ns, name)
			if apierrors.IsNotFound(err) {
				break
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			q := obj.(*corev1.ResourceQuota)
			used, err := quota.CalculateUsage(ns, q.Spec.Scopes, q.Spec.Hard, ev.evaluatorsFor(q.Spec.Hard), q.Spec.ScopeSelector)
			if err != nil {
				errs = append(errs, err)
				break
			}
			status := corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
			if equality.Semantic.DeepEqual(q.Status, status) {
				break
			}
			lowered := usageLowered(q.Status.Used, used)
			q.Status = status
			_, _, err = quotas.Update(ctx, ns, name, func(runtime.Object) (runtime.Object, error) { return q, nil },
				registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerControllerManager}})
			if apierrors.IsConflict(err) && attempt < 4 {
				continue // admission counted something meanwhile: recount
			}
			if err == nil && lowered {
				// Admission charges a quota before the object it admits
				// is stored, so a count made between the two gives that
				// usage back, and a create is no news to this controller
				// (nor to kube-controller-manager's): look again shortly,
				// when the object has been stored or its write has failed.
				time.AfterFunc(quotaRecheck, func() { m.nudgeQuota(ns) })
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			break
		}
	}
	return errors.Join(errs...)
}

// usageLowered: some resource of before is counted lower in after.
func usageLowered(before, after corev1.ResourceList) bool {
	for name, was := range before {
		if now, ok := after[name]; ok && now.Cmp(was) < 0 {
			return true
		}
	}
	return false
}

// quotaEvaluators are kube's evaluators over the stored objects, with an
// object count evaluator added for each count/<resource>.<group> a quota
// names (kube-controller-manager adds them for every discovered resource).
type quotaEvaluators struct {
	api      *registry.Registry
	mu       sync.Mutex
	registry quota.Registry
}

func newQuotaEvaluators(api *registry.Registry) *quotaEvaluators {
	cfg := quotainstall.NewQuotaConfigurationForControllers(api.LiveLister, nil)
	return &quotaEvaluators{api: api, registry: generic.NewRegistry(cfg.Evaluators())}
}

func hasVerbs(verbs []string, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(verbs, v) {
			return false
		}
	}
	return true
}

func (e *quotaEvaluators) evaluatorsFor(hard corev1.ResourceList) quota.Registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name := range hard {
		rest, ok := strings.CutPrefix(string(name), "count/")
		if !ok {
			continue
		}
		resource, group, _ := strings.Cut(rest, ".")
		gr := runtimeschema.GroupResource{Group: group, Resource: resource}
		if e.registry.Get(gr) != nil {
			continue
		}
		// As kube-controller-manager's discovery of what to count: kinds
		// in namespaces that can be created, listed, watched and deleted,
		// not those quota ignores (events, reviews).
		x, ok := e.api.LookupResource(gr)
		if _, ignored := quotainstall.DefaultIgnoredResources()[gr]; !ok || ignored || !x.Type().Namespaced ||
			!hasVerbs(x.Type().Verbs, "create", "list", "watch", "delete") {
			continue
		}
		gvr := runtimeschema.GroupVersionResource{Group: group, Version: x.Type().Version, Resource: resource}
		e.registry.Add(generic.NewObjectCountEvaluator(gr, generic.ListResourceUsingListerFunc(e.api.LiveLister, gvr), ""))
	}
	return e.registry
}
