package registry

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	admissionregistrationv1informers "k8s.io/client-go/informers/admissionregistration/v1"
	admissionregistrationv1listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tabula-dev/tabula/schema"
)

// What kube's ValidatingAdmissionPolicy plugin reads: its policies and
// bindings from watch-fed caches, the kinds named by paramKind through a
// RESTMapper over the served types, and the parameter objects from a
// cache of their resource, started when a policy first names it.

func (a liveAdmissionregistrationV1) ValidatingAdmissionPolicies() admissionregistrationv1informers.ValidatingAdmissionPolicyInformer {
	return cached(a.g, admissionregistrationGroup, "validatingadmissionpolicies", admissionregistrationv1listers.NewValidatingAdmissionPolicyLister)
}

func (a liveAdmissionregistrationV1) ValidatingAdmissionPolicyBindings() admissionregistrationv1informers.ValidatingAdmissionPolicyBindingInformer {
	return cached(a.g, admissionregistrationGroup, "validatingadmissionpolicybindings", admissionregistrationv1listers.NewValidatingAdmissionPolicyBindingLister)
}

// RemoveEventHandler: handlers live as long as the cache (the policy
// source removes its own only when the server stops).
func (i cachedInformer) RemoveEventHandler(cache.ResourceEventHandlerRegistration) error { return nil }

// ForResource gives a policy's parameters: the objects of a served
// resource, from a cache of it. A resource whose cache keeps no objects
// (one fed to handlers only) is refused.
func (f liveInformers) ForResource(gvr runtimeschema.GroupVersionResource) (informers.GenericInformer, error) {
	if _, ok := f.g.Lookup(gvr.Group, gvr.Version, gvr.Resource); !ok {
		return nil, fmt.Errorf("%v is not served", gvr)
	}
	c := f.g.Cache(gvr.Group, gvr.Version, gvr.Resource, true)
	if c.Indexer() == nil {
		return nil, fmt.Errorf("%v has no object cache", gvr)
	}
	return cachedGeneric{cachedInformer{c: c}, gvr.GroupResource()}, nil
}

// Start: the caches run from RunCaches (or from their making).
func (liveInformers) Start(<-chan struct{}) {}

type cachedGeneric struct {
	cachedInformer
	gr runtimeschema.GroupResource
}

func (i cachedGeneric) Informer() cache.SharedIndexInformer { return i.cachedInformer }
func (i cachedGeneric) Lister() cache.GenericLister {
	return cache.NewGenericLister(i.c.Indexer(), i.gr)
}

// noDynamicClient is the dynamic client the policy plugin requires: its
// parameters come from ForResource, which serves every served resource
// but those whose cache keeps no objects (Pods, for one); for those the
// plugin's own informer over this client lists nothing and says why.
type noDynamicClient struct{ dynamic.Interface }

func (noDynamicClient) Resource(gvr runtimeschema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return unservedParams{gvr: gvr}
}

type unservedParams struct {
	dynamic.NamespaceableResourceInterface
	gvr runtimeschema.GroupVersionResource
}

func (u unservedParams) Namespace(string) dynamic.ResourceInterface { return u }

func (u unservedParams) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return nil, fmt.Errorf("%v cannot be an admission policy's parameter here: its cache keeps no objects", u.gvr)
}

func (u unservedParams) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("%v cannot be an admission policy's parameter here: its cache keeps no objects", u.gvr)
}

// restMapper maps kinds to the served resources and back.
type restMapper struct {
	types *schema.Registry
}

func (m restMapper) RESTMappings(gk runtimeschema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	var out []*meta.RESTMapping
	for _, t := range m.types.Types() {
		if t.Group != gk.Group || t.Kind != gk.Kind {
			continue
		}
		if len(versions) > 0 && versions[0] != "" && !slices.Contains(versions, t.Version) {
			continue
		}
		scope := meta.RESTScopeRoot
		if t.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		out = append(out, &meta.RESTMapping{
			Resource:         runtimeschema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource},
			GroupVersionKind: t.GroupVersionKind(), Scope: scope,
		})
	}
	if len(out) == 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return out, nil
}

func (m restMapper) RESTMapping(gk runtimeschema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	all, err := m.RESTMappings(gk, versions...)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// ValidatingAdmissionPolicies is the watch-fed informer of the policies
// (for the controller that writes their type-checking status).
func (g *Registry) ValidatingAdmissionPolicies() admissionregistrationv1informers.ValidatingAdmissionPolicyInformer {
	return liveAdmissionregistrationV1{g: g}.ValidatingAdmissionPolicies()
}

// RESTMapper maps kinds to the served resources.
func (g *Registry) RESTMapper() meta.RESTMapper { return restMapper{types: g.types} }

// matches reports whether t serves gvr, where an empty version matches
// any (as RESTMapper partial resources).
func matches(t *schema.Type, gvr runtimeschema.GroupVersionResource) bool {
	return t.Group == gvr.Group && t.Resource == gvr.Resource && (gvr.Version == "" || gvr.Version == t.Version)
}

func (m restMapper) KindsFor(gvr runtimeschema.GroupVersionResource) ([]runtimeschema.GroupVersionKind, error) {
	var out []runtimeschema.GroupVersionKind
	for _, t := range m.types.Types() {
		if matches(t, gvr) {
			out = append(out, t.GroupVersionKind())
		}
	}
	if len(out) == 0 {
		return nil, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	return out, nil
}

func (m restMapper) KindFor(gvr runtimeschema.GroupVersionResource) (runtimeschema.GroupVersionKind, error) {
	all, err := m.KindsFor(gvr)
	if err != nil {
		return runtimeschema.GroupVersionKind{}, err
	}
	return all[0], nil
}

func (m restMapper) ResourcesFor(gvr runtimeschema.GroupVersionResource) ([]runtimeschema.GroupVersionResource, error) {
	var out []runtimeschema.GroupVersionResource
	for _, t := range m.types.Types() {
		if matches(t, gvr) {
			out = append(out, runtimeschema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource})
		}
	}
	if len(out) == 0 {
		return nil, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	return out, nil
}

func (m restMapper) ResourceFor(gvr runtimeschema.GroupVersionResource) (runtimeschema.GroupVersionResource, error) {
	all, err := m.ResourcesFor(gvr)
	if err != nil {
		return runtimeschema.GroupVersionResource{}, err
	}
	return all[0], nil
}

func (m restMapper) ResourceSingularizer(resource string) (string, error) {
	for _, t := range m.types.Types() {
		if t.Resource == resource {
			return t.Singular, nil
		}
	}
	return "", fmt.Errorf("no singular of %q", resource)
}
