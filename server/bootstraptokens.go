package server

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/registry"
)

// bootstrapTokenSecrets keeps the bootstrap token Secrets of kube-system
// (bootstrap-token-<id>), fed by a watch of Secrets that keeps nothing
// else, for the authenticator: a bearer token of the bootstrap form that
// names no Secret is refused without a read of the database, as
// kube-apiserver's informer-fed lister refuses it.
type bootstrapTokenSecrets struct {
	mu      sync.RWMutex
	secrets map[string]*corev1.Secret
}

// bootstrapTokenPrefix is the name every bootstrap token Secret has.
const bootstrapTokenPrefix = "bootstrap-token-"

func newBootstrapTokenSecrets(api *registry.Registry) *bootstrapTokenSecrets {
	b := &bootstrapTokenSecrets{secrets: map[string]*corev1.Secret{}}
	api.Cache("", "v1", "secrets", false, registry.CacheHandler{
		Set: func(obj runtime.Object) {
			s, ok := obj.(*corev1.Secret)
			if !ok || s.Namespace != "kube-system" || !strings.HasPrefix(s.Name, bootstrapTokenPrefix) {
				return
			}
			b.mu.Lock()
			b.secrets[s.Name] = s
			b.mu.Unlock()
		},
		Delete: func(namespace, name string, _ runtime.Object) {
			if namespace != "kube-system" {
				return
			}
			b.mu.Lock()
			delete(b.secrets, name)
			b.mu.Unlock()
		},
	})
	return b
}

// get returns the Secret, or kube's NotFound; the authenticator checks
// its type and data.
func (b *bootstrapTokenSecrets) get(name string) (*corev1.Secret, error) {
	b.mu.RLock()
	s := b.secrets[name]
	b.mu.RUnlock()
	if s == nil {
		return nil, apierrors.NewNotFound(runtimeschema.GroupResource{Resource: "secrets"}, name)
	}
	return s, nil
}
