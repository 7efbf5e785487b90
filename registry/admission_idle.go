package registry

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"
)

// Plugins that act only when something is configured — webhooks, policy
// bindings, quotas in the namespace — are passed over while nothing is:
// kube's webhook plugins otherwise convert every object for reinvocation
// bookkeeping, and quota admission hands every write to a worker, which
// together cost a create about a tenth of its time with nothing to do.
// What they would read is this replica's watch-fed caches, so passing
// over is what the plugin would decide; kube-apiserver's quota plugin, like
// this, sees a quota made on another server once its informer has it.

// idleWhen wraps the named plugin with its idle test (admission.Decorator).
func idleWhen(g *Registry) admission.DecoratorFunc {
	return func(h admission.Interface, name string) admission.Interface {
		var idle func(admission.Attributes) bool
		empty := func(resource string) func(admission.Attributes) bool {
			c := g.Cache(admissionregistrationGroup, "v1", resource, true)
			return func(admission.Attributes) bool { return len(c.Indexer().ListKeys()) == 0 && c.Synced() }
		}
		switch name {
		case "MutatingAdmissionWebhook":
			idle = empty("mutatingwebhookconfigurations")
		case "ValidatingAdmissionWebhook":
			idle = empty("validatingwebhookconfigurations")
		case "ValidatingAdmissionPolicy":
			idle = empty("validatingadmissionpolicybindings")
		case "ResourceQuota":
			c := g.Cache("", "v1", "resourcequotas", true)
			idle = func(a admission.Attributes) bool {
				if !c.Synced() {
					return false
				}
				items, err := c.Indexer().ByIndex(cache.NamespaceIndex, a.GetNamespace())
				return err == nil && len(items) == 0
			}
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
