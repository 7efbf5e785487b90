package registry

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"
)

// Plugins that act only when something is configured — webhooks, policy
// bindings, quotas — are passed over while nothing is: kube's webhook
// plugins otherwise convert every object for their reinvocation
// bookkeeping, and its quota plugin hands every write to a worker, a cost
// on every write with nothing to do. What they would read is this
// replica's watch-fed caches, so passing over is what the plugin would
// decide. For quotas, as kube's plugin does when its informer holds none
// for a namespace, the database is asked too, and its empty answer trusted
// for 30 seconds (kube's live look-up TTL): a quota just made on another
// replica binds here once the watch brings it (milliseconds), as it binds
// on a kube-apiserver once its informer does. A quota configuration
// (limitedResources, which refuse writes where no quota covers them)
// keeps the plugin always on.

// idleWhen wraps the named plugin with its idle test (admission.Decorator).
func idleWhen(g *Registry) admission.DecoratorFunc {
	return func(h admission.Interface, name string) admission.Interface {
		var idle func(admission.Attributes) bool
		emptyIn := func(version, resource string) (*Cache, func(admission.Attributes) bool) {
			c := g.Cache(admissionregistrationGroup, version, resource, true)
			return c, func(admission.Attributes) bool { return !configured(c) }
		}
		empty := func(resource string) func(admission.Attributes) bool { _, idle := emptyIn("v1", resource); return idle }
		switch name {
		case "MutatingAdmissionWebhook":
			var c *Cache
			c, idle = emptyIn("v1", "mutatingwebhookconfigurations")
			g.mutators = append(g.mutators, c)
		case "ValidatingAdmissionWebhook":
			idle = empty("validatingwebhookconfigurations")
		case "ValidatingAdmissionPolicy":
			idle = empty("validatingadmissionpolicybindings")
		case "ResourceQuota":
			if g.quotaConfigured {
				// limitedResources: some writes need a quota to exist.
				return h
			}
			idle = newQuotaless(g).idle
		case "MutatingAdmissionPolicy":
			// Without its API (beta, off by default) the plugin is off too.
			if _, ok := g.types.Lookup(admissionregistrationGroup, "v1beta1", "mutatingadmissionpolicybindings"); !ok {
				return h
			}
			var c *Cache
			c, idle = emptyIn("v1beta1", "mutatingadmissionpolicybindings")
			g.mutators = append(g.mutators, c)
		default:
			return h
		}
		return idlePlugin{Interface: h, idle: idle}
	}
}

// idlePlugin is a plugin passed over while idle says so.
type idlePlugin struct {
	admission.Interface
	idle func(admission.Attributes) bool
}

func (p idlePlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := p.Interface.(admission.MutationInterface)
	if !ok || p.idle(a) {
		return nil
	}
	return m.Admit(ctx, a, o)
}

func (p idlePlugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := p.Interface.(admission.ValidationInterface)
	if !ok || p.idle(a) {
		return nil
	}
	return v.Validate(ctx, a, o)
}

// configured reports whether a configuration cache holds anything (or
// has not synced yet, when the plugin must run to wait for it).
func configured(c *Cache) bool {
	return len(c.Indexer().ListKeys()) > 0 || !c.HasSynced()
}

// mutationsConfigured reports whether any mutating webhook or mutating
// admission policy binding is configured.
func (g *Registry) mutationsConfigured() bool {
	for _, c := range g.mutators {
		if configured(c) {
			return true
		}
	}
	return false
}

// quotaLiveTTL is how long a namespace found without quotas in the
// database is trusted to have none (kube's quota plugin's liveTTL).
const quotaLiveTTL = 30 * time.Second

// quotaless tells the namespaces without a ResourceQuota.
type quotaless struct {
	g     *Registry
	cache *Cache
	// checked holds the namespaces recently found without quotas in the
	// database, each for quotaLiveTTL (bounded, as kube's live look-ups).
	checked *utilcache.LRUExpireCache
}

func newQuotaless(g *Registry) *quotaless {
	return &quotaless{g: g, cache: g.Cache("", "v1", "resourcequotas", true), checked: utilcache.NewLRUExpireCache(4096)}
}

func (q *quotaless) idle(a admission.Attributes) bool {
	ns := a.GetNamespace()
	if ns == "" {
		return true // quotas are namespaced
	}
	if !q.cache.HasSynced() {
		return false
	}
	if held, _ := q.cache.Indexer().ByIndex(cache.NamespaceIndex, ns); len(held) > 0 {
		return false
	}
	if _, ok := q.checked.Get(ns); ok {
		return true
	}
	items, err := listAs[corev1.ResourceQuota](q.g.MustLookup("", "v1", "resourcequotas"), ns)
	if err != nil || len(items) > 0 {
		return false // the plugin decides, reading the database itself
	}
	q.checked.Add(ns, struct{}{}, quotaLiveTTL)
	return true
}
