package registry

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
)

// Plugins that act only when something is configured — webhooks and
// policy bindings — are passed over while nothing is: kube's webhook
// plugins otherwise convert every object for their reinvocation
// bookkeeping, a cost on every write with nothing to do. What they would
// read is this replica's watch-fed caches, so passing over is what the
// plugin would decide. ResourceQuota is not passed over: when its cache
// holds no quota for a namespace it reads the store (kube's live look-up),
// which is what keeps a quota just made on another replica from being
// overrun before this replica's watch brings it.

// idleWhen wraps the named plugin with its idle test (admission.Decorator).
func idleWhen(g *Registry) admission.DecoratorFunc {
	return func(h admission.Interface, name string) admission.Interface {
		var idle func(admission.Attributes) bool
		emptyIn := func(version, resource string) func(admission.Attributes) bool {
			c := g.Cache(admissionregistrationGroup, version, resource, true)
			return func(admission.Attributes) bool { return !configured(c) }
		}
		empty := func(resource string) func(admission.Attributes) bool { return emptyIn("v1", resource) }
		switch name {
		case "MutatingAdmissionWebhook":
			g.mutatingConfigs = g.Cache(admissionregistrationGroup, "v1", "mutatingwebhookconfigurations", true)
			idle = empty("mutatingwebhookconfigurations")
		case "ValidatingAdmissionWebhook":
			idle = empty("validatingwebhookconfigurations")
		case "ValidatingAdmissionPolicy":
			idle = empty("validatingadmissionpolicybindings")
		case "MutatingAdmissionPolicy":
			// Without its API (beta, off by default) the plugin is off too.
			if _, ok := g.types.Lookup(admissionregistrationGroup, "v1beta1", "mutatingadmissionpolicybindings"); !ok {
				return h
			}
			idle = emptyIn("v1beta1", "mutatingadmissionpolicybindings")
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

// mutatingWebhooks reports whether any mutating webhook is configured.
func (g *Registry) mutatingWebhooks() bool {
	return g.mutatingConfigs != nil && configured(g.mutatingConfigs)
}
