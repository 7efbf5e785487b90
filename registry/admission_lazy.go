package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// kube's webhook plugins build their CEL environments (for
// matchConditions) when made: ~1.1 MiB of a fresh server's ~9 MiB live
// heap, held for a cluster that may never configure a webhook. Here each
// is made, initialized and validated on its first call, which idleWhen
// lets through only once a webhook configuration exists. Its
// configuration (kubeConfigFile) is read at start-up as kube does, so a
// bad one still stops the server there; the kubeconfig it names is read
// again when the plugin is made.

// lazyWebhook is a webhook plugin not made yet.
type lazyWebhook struct {
	*admission.Handler
	name   string
	config []byte // nil: none given
	build  func(io.Reader) (admission.Interface, error)
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
			if config != nil {
				b, err := io.ReadAll(config)
				if err != nil {
					return nil, err
				}
				l.config = b
			}
			// What kube's constructor would refuse, refused now.
			kubeconfig, err := webhookconfig.LoadConfig(l.reader())
			if err != nil {
				return nil, err
			}
			if _, err := webhookutil.NewDefaultAuthenticationInfoResolver(kubeconfig); err != nil {
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

func (l *lazyWebhook) reader() io.Reader {
	if l.config == nil {
		return nil
	}
	return bytes.NewReader(l.config)
}

// made reports whether the plugin has been made.
func (l *lazyWebhook) made() bool { return l.plugin.Load() != nil }

// get makes the plugin once, as kube's chain would have at start-up.
// It is nil while no webhook is configured: idleWhen lets a call through
// before the configurations' cache has synced (a write at start-up),
// and kube's plugin would wait for that, up to 10 s, before it looked
// at them; so does get, and makes the plugin only if one is there, or
// if the cache is still not synced (the plugin then refuses the write
// as not ready, as kube's does).
func (l *lazyWebhook) get(ctx context.Context) (admission.Interface, error) {
	if p := l.plugin.Load(); p != nil {
		return *p, nil
	}
	wait, cancel := context.WithTimeout(ctx, webhookReadyWait)
	err := l.configs.WaitSynced(wait)
	cancel()
	if err == nil && !configured(l.configs) {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.plugin.Load(); p != nil {
		return *p, nil
	}
	p, err := l.build(l.reader())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	l.inits.Initialize(p)
	if err := admission.ValidateInitialization(p); err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	l.plugin.Store(&p)
	return p, nil
}

type lazyMutating struct{ *lazyWebhook }

func (l lazyMutating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	p, err := l.get(ctx)
	if err != nil || p == nil {
		return asInternal(err)
	}
	return p.(admission.MutationInterface).Admit(ctx, a, o)
}

type lazyValidating struct{ *lazyWebhook }

func (l lazyValidating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	p, err := l.get(ctx)
	if err != nil || p == nil {
		return asInternal(err)
	}
	return p.(admission.ValidationInterface).Validate(ctx, a, o)
}

// webhookReadyWait is how long kube's webhook plugins wait for their
// configurations to be read (generic.Webhook's WaitForReady).
const webhookReadyWait = 10 * time.Second

func asInternal(err error) error {
	if err == nil {
		return nil
	}
	return apierrors.NewInternalError(err)
}
