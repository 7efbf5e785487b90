package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/tabula-dev/tabula/schema"
)

// objectInterfaces is how plugins make, default and convert x's objects:
// kube's scheme for built-in kinds (the plugins see internal objects);
// for custom resources unstructured objects, the CRD's defaults and its
// conversion (a conversion webhook's, when it has one), as
// apiextensions-apiserver gives them. Both name equivalent resources from
// the served types, so a webhook whose rules name one version of a kind
// is called, with matchPolicy Equivalent, for a write in another. A
// subresource's own built-in kind (a custom resource's autoscaling/v1
// Scale) is a built-in object whatever its resource.
func (x *Resource) objectInterfaces(subresourceKind bool) admission.ObjectInterfaces {
	eq := equivalentResources{types: x.g.types}
	if !x.t.Unstructured || subresourceKind {
		return builtinObjects{ObjectInterfaces: builtinInterfaces, eq: eq}
	}
	return crObjects{g: x.g, t: x.t, eq: eq}
}

type builtinObjects struct {
	admission.ObjectInterfaces
	eq equivalentResources
}

func (o builtinObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper { return o.eq }

// crObjects are the object interfaces of one custom resource.
type crObjects struct {
	g  *Registry
	t  *schema.Type
	eq equivalentResources
}

func (o crObjects) GetObjectCreater() runtime.ObjectCreater                       { return o }
func (o crObjects) GetObjectTyper() runtime.ObjectTyper                           { return o }
func (o crObjects) GetObjectDefaulter() runtime.ObjectDefaulter                   { return o }
func (o crObjects) GetObjectConvertor() runtime.ObjectConvertor                   { return o.t.Convertor }
func (o crObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper { return o.eq }

func (o crObjects) New(gvk runtimeschema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (o crObjects) ObjectKinds(obj runtime.Object) ([]runtimeschema.GroupVersionKind, bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		return nil, false, fmt.Errorf("custom resource without apiVersion and kind")
	}
	return []runtimeschema.GroupVersionKind{gvk}, false, nil
}

func (o crObjects) Recognizes(gvk runtimeschema.GroupVersionKind) bool {
	return gvk.Group == o.t.Group && gvk.Kind == o.t.Kind
}

// Default applies the defaults of the object's version (what a mutating
// webhook's answer is given before the next plugin sees it).
func (o crObjects) Default(obj runtime.Object) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	for _, t := range o.g.types.ByStorage(o.t.StorageResource) {
		if t.Version == gvk.Version && t.Coerce != nil {
			_, _ = t.Coerce(obj)
			return
		}
	}
}

// equivalentResources: the resources served from one stored resource are
// equivalent (every version of a CRD; core and events.k8s.io Events).
type equivalentResources struct{ types *schema.Registry }

func (e equivalentResources) EquivalentResourcesFor(r runtimeschema.GroupVersionResource, _ string) []runtimeschema.GroupVersionResource {
	t, ok := e.types.Lookup(r.Group, r.Version, r.Resource)
	if !ok {
		return nil
	}
	var out []runtimeschema.GroupVersionResource
	for _, o := range e.types.ByStorage(t.StorageResource) {
		out = append(out, runtimeschema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: o.Resource})
	}
	return out
}

// subresourceKinds are the kinds of the built-in subresources whose
// objects are not the resource's own.
var subresourceKinds = map[string]runtimeschema.GroupVersionKind{
	"scale":    {Group: "autoscaling", Version: "v1", Kind: "Scale"},
	"binding":  {Version: "v1", Kind: "Binding"},
	"eviction": {Group: "policy", Version: "v1", Kind: "Eviction"},
	"token":    {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
}

func (e equivalentResources) KindFor(r runtimeschema.GroupVersionResource, subresource string) runtimeschema.GroupVersionKind {
	if k, ok := subresourceKinds[subresource]; ok {
		return k
	}
	t, ok := e.types.Lookup(r.Group, r.Version, r.Resource)
	if !ok {
		return runtimeschema.GroupVersionKind{}
	}
	return t.GroupVersionKind()
}
