package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// kube's webhook plugins build their CEL environments (for
// matchConditions) when made: ~1.1 MiB of a fresh server's ~9 MiB live
// heap, held for a cluster that may never configure a webhook. Here each
// is made, initialized and validated on its first call, which idleWhen
// lets through only once a webhook configuration exists. Its
// configuration, and the kubeconfig it names (kubeConfigFile: the
// credentials for calling webhooks), are read at start-up only, as kube
// reads them: a bad one still stops the server there, and the plugin is
// made with what was read then.

// lazyWebhook is a webhook plugin not made yet.
type lazyWebhook struct {
	*admission.Handler
	name  string
	build func(io.Reader) (admission.Interface, error)
	// auth is the credentials for calling webhooks, from the
	// kubeconfig the configuration named, read at start-up.
	auth webhookutil.AuthenticationInfoResolver
	// inits are the chain's initializers, set once newAdmission has
	// them (before any write).
	inits *admission.PluginInitializers
	// configs is the cache of the plugin's webhook configurations.
	configs *Cache

	mu     sync.Mutex
	plugin atomic.Pointer[admission.Interface]
}

// registerLazyWebhooks registers kube's two webhook plugins under their
// names, made on first use with inits; g.webhooks lists them.
func (g *Registry) registerLazyWebhooks(plugins *admission.Plugins, inits *admission.PluginInitializers) {
	lazy := func(name, configs string, build func(io.Reader) (admission.Interface, error), wrap func(*lazyWebhook) admission.Interface) {
		plugins.Register(name, func(config io.Reader) (admission.Interface, error) {
			l := &lazyWebhook{Handler: admission.NewHandler(admission.Connect, admission.Create, admission.Delete, admission.Update),
				name: name, build: build, inits: inits, configs: g.Cache(admissionregistrationGroup, "v1", configs, true)}
			// What kube's constructor reads, read now; what it would
			// refuse, refused now.
			kubeconfig, err := webhookconfig.LoadConfig(config)
			if err != nil {
				return nil, err
			}
			if l.auth, err = webhookutil.NewDefaultAuthenticationInfoResolver(kubeconfig); err != nil {
				return nil, err
			}
			g.webhooks = append(g.webhooks, l)
			return wrap(l), nil
		})
	}
	lazy(mutatingwebhook.PluginName, "mutatingwebhookconfigurations", func(r io.Reader) (admission.Interface, error) { return mutatingwebhook.NewMutatingWebhook(r) },
		func(l *lazyWebhook) admission.Interface { return lazyMutating{l} })
	lazy(validatingwebhook.PluginName, "validatingwebhookconfigurations", func(r io.Reader) (admission.Interface, error) {
		return validatingwebhook.NewValidatingAdmissionWebhook(r)
	},
		func(l *lazyWebhook) admission.Interface { return lazyValidating{l} })
}

// made reports whether the plugin has been made.
func (l *lazyWebhook) made() bool { return l.plugin.Load() != nil }

// get makes the plugin once, as kube's chain would have at start-up.
// It is nil while no webhook is configured. idleWhen lets a call through
// before the configurations' cache has synced (a write at start-up),
// and kube's plugin waits for that, up to 10 s, before it looks at
// them; so does get, and it makes the plugin only if one is there.
// Past the wait it refuses the write as not ready, with kube's words.
func (l *lazyWebhook) get(ctx context.Context, a admission.Attributes) (admission.Interface, error) {
	if p := l.plugin.Load(); p != nil {
		return *p, nil
	}
	wait, cancel := context.WithTimeout(ctx, webhookReadyWait)
	err := l.configs.WaitSynced(wait)
	cancel()
	if err != nil {
		return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	if !configured(l.configs) {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.plugin.Load(); p != nil {
		return *p, nil
	}
	// No configuration: the plugin reads no file; the credentials read
	// at start-up replace its default ones.
	p, err := l.build(nil)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: %w", l.name, err))
	}
	l.inits.Initialize(p)
	withAuth, ok := p.(interface {
		SetAuthenticationInfoResolverWrapper(webhookutil.AuthenticationInfoResolverWrapper)
	})
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: %T takes no webhook credentials", l.name, p))
	}
	withAuth.SetAuthenticationInfoResolverWrapper(func(webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver { return l.auth })
	if err := admission.ValidateInitialization(p); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s: %w", l.name, err))
	}
	l.plugin.Store(&p)
	return p, nil
}

// call passes a's call to the plugin once made; webhook configurations
// are never sent to webhooks, nor wait for them (kube's Dispatch lets
// them through first).
func (l *lazyWebhook) call(ctx context.Context, a admission.Attributes, f func(admission.Interface) error) error {
	if rules.IsExemptAdmissionConfigurationResource(a) {
		return nil
	}
	p, err := l.get(ctx, a)
	if err != nil || p == nil {
		return err
	}
	return f(p)
}

type lazyMutating struct{ *lazyWebhook }

func (l lazyMutating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return l.call(ctx, a, func(p admission.Interface) error { return p.(admission.MutationInterface).Admit(ctx, a, o) })
}

type lazyValidating struct{ *lazyWebhook }

func (l lazyValidating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return l.call(ctx, a, func(p admission.Interface) error { return p.(admission.ValidationInterface).Validate(ctx, a, o) })
}

// webhookReadyWait is how long kube's webhook plugins wait for their
// configurations to be read (generic.Webhook's WaitForReady).
const webhookReadyWait = 10 * time.Second
