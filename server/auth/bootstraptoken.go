package auth

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authenticator/token/bootstrap"
)

// Bootstrap tokens (kube-apiserver's --enable-bootstrap-token-auth) are
// the "<id>.<secret>" tokens kubeadm join and kubelet TLS bootstrap
// present: each is a bootstrap.kubernetes.io/token Secret named
// bootstrap-token-<id> in kube-system, valid for authentication while it
// says so and has not expired, for the user system:bootstrap:<id> in
// system:bootstrappers and the groups it adds. kube's own authenticator
// decides; it reads the Secret from what the server keeps of those
// Secrets (SetBootstrapTokenSecrets), fed by the watch as kube-apiserver's
// informer feeds its lister: a token works as soon as its Secret is
// written, stops once it is gone, and one that names no Secret costs no
// read of the database.

// BootstrapTokenSecret returns the kube-system Secret of that name if
// it is a bootstrap token's, or a NotFound error.
type BootstrapTokenSecret func(name string) (*corev1.Secret, error)

// BootstrapTokens says whether bootstrap tokens are accepted.
func (a *Authenticator) BootstrapTokens() bool { return a != nil && a.bootstrapTokens }

// SetBootstrapTokenSecrets gives the authenticator the bootstrap token
// Secrets; call it before serving. Without it bootstrap tokens are
// refused.
func (a *Authenticator) SetBootstrapTokenSecrets(get BootstrapTokenSecret) {
	if a != nil {
		a.bootstrapSecrets = get
	}
}

// bootstrapToken checks token as a bootstrap token; tokens not of its
// form are passed over (ok false, no error), as in kube.
func (a *Authenticator) bootstrapToken(ctx context.Context, token string) (*User, bool, error) {
	resp, ok, err := bootstrap.NewTokenAuthenticator(kubeSystemSecrets{a.bootstrapSecrets}).AuthenticateToken(ctx, token)
	if !ok {
		return nil, false, err
	}
	return userOf(resp.User), true, nil
}

// kubeSystemSecrets is kube-system's bootstrap token Secrets as the
// authenticator reads them (a lister: Get only).
type kubeSystemSecrets struct{ get BootstrapTokenSecret }

func (s kubeSystemSecrets) Get(name string) (*corev1.Secret, error) { return s.get(name) }

// List is not used by the authenticator.
func (s kubeSystemSecrets) List(labels.Selector) ([]*corev1.Secret, error) { return nil, nil }

var _ corev1listers.SecretNamespaceLister = kubeSystemSecrets{}
