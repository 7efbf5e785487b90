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
// decides; it reads the Secret through the registry, as it would through
// kube-apiserver's informer (so a token works as soon as its Secret is
// written, and stops as soon as it is gone).

// bootstrapToken checks token as a bootstrap token; tokens not of its
// form are passed over (ok false, no error), as in kube.
func (a *Authenticator) bootstrapToken(ctx context.Context, token string) (*User, bool, error) {
	resp, ok, err := bootstrap.NewTokenAuthenticator(kubeSystemSecrets{ctx, a.legacy}).AuthenticateToken(ctx, token)
	if !ok {
		return nil, false, err
	}
	return userOf(resp.User), true, nil
}

// kubeSystemSecrets is kube-system's Secrets as the bootstrap token
// authenticator reads them (a lister: Get only).
type kubeSystemSecrets struct {
	ctx     context.Context
	objects LegacyTokenObjects
}

func (s kubeSystemSecrets) Get(name string) (*corev1.Secret, error) {
	return s.objects.Secret(s.ctx, "kube-system", name)
}

// List is not used by the authenticator.
func (s kubeSystemSecrets) List(labels.Selector) ([]*corev1.Secret, error) { return nil, nil }

var _ corev1listers.SecretNamespaceLister = kubeSystemSecrets{}
