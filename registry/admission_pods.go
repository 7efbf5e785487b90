package registry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	schedulinginformers "k8s.io/client-go/informers/scheduling"
	schedulingv1informers "k8s.io/client-go/informers/scheduling/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	schedulingv1listers "k8s.io/client-go/listers/scheduling/v1"
)

// What kube's ServiceAccount and Priority plugins read: service accounts
// and PriorityClasses from watch-fed caches, as kube's informers (every
// Pod create reads its account twice); an account the cache lacks is read
// live (a namespace's default account is made by a controller right after
// the namespace, and the plugin looks again for it).

func (c liveCoreV1) ServiceAccounts() corev1informers.ServiceAccountInformer {
	return cached(c.g, "", "serviceaccounts", corev1listers.NewServiceAccountLister)
}

func (f liveInformers) Scheduling() schedulinginformers.Interface { return liveScheduling{g: f.g} }

type liveScheduling struct {
	schedulinginformers.Interface
	g *Registry
}

func (s liveScheduling) V1() schedulingv1informers.Interface { return liveSchedulingV1{g: s.g} }

type liveSchedulingV1 struct {
	schedulingv1informers.Interface
	g *Registry
}

func (s liveSchedulingV1) PriorityClasses() schedulingv1informers.PriorityClassInformer {
	return cached(s.g, "scheduling.k8s.io", "priorityclasses", schedulingv1listers.NewPriorityClassLister)
}

// ServiceAccounts reads an account (the ServiceAccount plugin's retried
// look-up of a default account not made yet).
func (c registryCoreV1) ServiceAccounts(namespace string) corev1client.ServiceAccountInterface {
	return registryServiceAccounts{g: c.g, namespace: namespace}
}

type registryServiceAccounts struct {
	corev1client.ServiceAccountInterface
	g         *Registry
	namespace string
}

func (c registryServiceAccounts) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.ServiceAccount, error) {
	return getAs[*corev1.ServiceAccount](ctx, c.g.MustLookup("", "v1", "serviceaccounts"), c.namespace, name)
}
