package registry

import (
	"errors"

	"k8s.io/client-go/discovery"
	admissionregistrationv1beta1informers "k8s.io/client-go/informers/admissionregistration/v1beta1"
	admissionregistrationv1beta1listers "k8s.io/client-go/listers/admissionregistration/v1beta1"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/tools/cache"
)

// What kube's MutatingAdmissionPolicy plugin (beta in kube 1.35, on with
// its feature gate and admissionregistration.k8s.io/v1beta1) reads
// besides what ValidatingAdmissionPolicy reads: its policies and bindings
// from watch-fed caches, and the served OpenAPI documents, from which it
// builds the type converters that merge an ApplyConfiguration mutation
// into an object.

func (a liveAdmissionregistration) V1beta1() admissionregistrationv1beta1informers.Interface {
	return liveAdmissionregistrationV1beta1{g: a.g}
}

type liveAdmissionregistrationV1beta1 struct {
	admissionregistrationv1beta1informers.Interface
	g *Registry
}

func (a liveAdmissionregistrationV1beta1) MutatingAdmissionPolicies() admissionregistrationv1beta1informers.MutatingAdmissionPolicyInformer {
	return cachedV1beta1(a.g, "mutatingadmissionpolicies", admissionregistrationv1beta1listers.NewMutatingAdmissionPolicyLister)
}

func (a liveAdmissionregistrationV1beta1) MutatingAdmissionPolicyBindings() admissionregistrationv1beta1informers.MutatingAdmissionPolicyBindingInformer {
	return cachedV1beta1(a.g, "mutatingadmissionpolicybindings", admissionregistrationv1beta1listers.NewMutatingAdmissionPolicyBindingLister)
}

func cachedV1beta1[L any](g *Registry, resource string, newLister func(cache.Indexer) L) cachedTyped[L] {
	return cachedTyped[L]{cachedInformer{c: g.Cache(admissionregistrationGroup, "v1beta1", resource, true)}, newLister}
}

// Discovery gives the plugins the served OpenAPI v3 documents only.
func (c registryClient) Discovery() discovery.DiscoveryInterface {
	return openAPIDiscovery{openapi: c.g.admissionCfg.OpenAPIV3}
}

type openAPIDiscovery struct {
	discovery.DiscoveryInterface
	openapi openapi.Client
}

func (d openAPIDiscovery) OpenAPIV3() openapi.Client {
	if d.openapi == nil {
		return noOpenAPI{}
	}
	return d.openapi
}

// noOpenAPI serves no documents (a registry built without them, in tests).
type noOpenAPI struct{}

func (noOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	return nil, errors.New("no OpenAPI documents are served")
}
