package registry

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	kubeinitializer "k8s.io/apiserver/pkg/admission/initializer"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
)

// ResourceQuota admission is kube's plugin: a write that would take a
// namespace past a quota's hard limits is refused, and one that fits
// records its usage in the quota's status.used by a conditional status
// update before it is stored. That update is the database's
// compare-and-swap on the quota's row, so two replicas admitting at once
// cannot both take the last unit: the loser re-reads the quota and is
// checked again. Quotas are read from this replica's watch-fed cache.

func (c liveCoreV1) ResourceQuotas() corev1informers.ResourceQuotaInformer {
	return cached(c.g, "", "resourcequotas", corev1listers.NewResourceQuotaLister)
}

// quotaConfiguration gives the plugin kube's evaluators for admission (as
// kube-apiserver's own initializer does).
type quotaConfiguration struct{ g *Registry }

func (q quotaConfiguration) Initialize(p admission.Interface) {
	if wants, ok := p.(kubeinitializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(quotainstall.NewQuotaConfigurationForAdmission(liveInformers{g: q.g}))
	}
}

func (c registryCoreV1) ResourceQuotas(namespace string) corev1client.ResourceQuotaInterface {
	return registryQuotas{g: c.g, namespace: namespace}
}

type registryQuotas struct {
	corev1client.ResourceQuotaInterface
	g         *Registry
	namespace string
}

func (c registryQuotas) resource() *Resource { return c.g.MustLookup("", "v1", "resourcequotas") }

func (c registryQuotas) List(ctx context.Context, _ metav1.ListOptions) (*corev1.ResourceQuotaList, error) {
	items, err := listAs[corev1.ResourceQuota](c.resource(), c.namespace)
	return &corev1.ResourceQuotaList{Items: items}, err
}

func (c registryQuotas) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.ResourceQuota, error) {
	return getAs[*corev1.ResourceQuota](ctx, c.resource(), c.namespace, name)
}

// UpdateStatus writes q's status if q's resourceVersion is still the
// stored one (409 otherwise), as a status PUT does.
func (c registryQuotas) UpdateStatus(ctx context.Context, q *corev1.ResourceQuota, _ metav1.UpdateOptions) (*corev1.ResourceQuota, error) {
	res, _, err := c.resource().Update(ctx, c.namespace, q.Name, func(runtime.Object) (runtime.Object, error) {
		return q.DeepCopy(), nil
	}, UpdateOptions{Subresource: "status", WriteOptions: WriteOptions{Manager: ManagerAPIServer}})
	if err != nil {
		return nil, err
	}
	q, ok := res.Obj.(*corev1.ResourceQuota)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("resourcequota is a %T", res.Obj))
	}
	return q, nil
}
