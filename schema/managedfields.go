package schema

import (
	"fmt"
	"reflect"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	openapibuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	generated "github.com/tabula-dev/tabula/schema/openapi"
)

// ManagedFields is what field management (managedFields, Server-Side
// Apply) needs of a kind: the structured-merge-diff types of its
// versions, built from their OpenAPI schemas, and the conversions and
// defaults kube-apiserver's field manager runs.
type ManagedFields struct {
	// Types turns objects of every version of the kind into typed values.
	Types managedfields.TypeConverter
	// Convertor converts between the kind's versions through Hub.
	Convertor runtime.ObjectConvertor
	Defaulter runtime.ObjectDefaulter
	Creater   runtime.ObjectCreater
	// Hub is the version conversions go through: kube's internal version
	// for built-in kinds, the served version for custom resources.
	Hub schema.GroupVersion
	// Custom selects the custom resource field manager, which accepts
	// fields a schema leaves open (x-kubernetes-preserve-unknown-fields).
	Custom bool
}

// builtinManagedFields is the field management of a built-in kind:
// kube's own conversions and defaults, and types from the generated
// OpenAPI definitions (one converter for every built-in kind, built the
// first time any object is written).
func builtinManagedFields(t *Type) func() (*ManagedFields, error) {
	hub := schema.GroupVersion{Group: t.Group, Version: runtime.APIVersionInternal}
	return func() (*ManagedFields, error) {
		types, err := builtinTypeConverter()
		if err != nil {
			return nil, err
		}
		return &ManagedFields{
			Types:     types,
			Convertor: runtime.UnsafeObjectConvertor(legacyscheme.Scheme),
			Defaulter: legacyscheme.Scheme,
			Creater:   legacyscheme.Scheme,
			Hub:       hub,
		}, nil
	}
}

// The scale subresource's Scale is applied to as a kind of its own.
func init() {
	ScaleKind.ManagedFields = builtinManagedFields(ScaleKind)
	TokenRequestKind.ManagedFields = builtinManagedFields(TokenRequestKind)
}

// builtinTypeConverter knows every definition of schema/openapi; each
// kind's definition carries the group-version-kinds legacyscheme
// registers its Go type as.
var builtinTypeConverter = sync.OnceValues(buildBuiltinTypeConverter)

func buildBuiltinTypeConverter() (managedfields.TypeConverter, error) {
	gvks := map[string][]interface{}{}
	for gvk, rt := range legacyscheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := modelName(rt)
		gvks[name] = append(gvks[name], map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	defs := generated.GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	models, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitions: generated.GetOpenAPIDefinitions,
		GetDefinitionName: func(name string) (string, spec.Extensions) {
			if list, ok := gvks[name]; ok {
				return name, spec.Extensions{"x-kubernetes-group-version-kind": list}
			}
			return name, nil
		},
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("field management types: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("field management types: %w", err)
	}
	return tc, nil
}

// modelName is the OpenAPI definition name of a Go type, as its
// OpenAPIModelName method gives it.
func modelName(rt reflect.Type) string {
	if n, ok := reflect.New(rt).Interface().(interface{ OpenAPIModelName() string }); ok {
		return n.OpenAPIModelName()
	}
	return ""
}

// customManagedFields is the field management of a custom resource
// version: types from the OpenAPI documents of every version of its CRD
// (with the ObjectMeta definitions they refer to), conversion by
// apiVersion alone (conversion strategy None), defaults from the
// version's structural schema.
func customManagedFields(types func() (managedfields.TypeConverter, error), t *Type) func() (*ManagedFields, error) {
	return func() (*ManagedFields, error) {
		tc, err := types()
		if err != nil {
			return nil, err
		}
		return &ManagedFields{
			Types:     tc,
			Convertor: t.Convertor, // the CRD's conversion (its webhook's, if it has one)
			Defaulter: defaulterFunc(func(obj runtime.Object) { _, _ = t.Coerce(obj) }),
			Creater:   unstructuredCreater{},
			Hub:       t.GroupVersion(),
			Custom:    true,
		}, nil
	}
}

// customTypeConverter builds the types of every version of a CRD, as
// kube-apiserver does for its custom resource handlers: each version's
// OpenAPI document joined with the ObjectMeta definitions.
func customTypeConverter(crd *apiextensionsv1.CustomResourceDefinition) func() (managedfields.TypeConverter, error) {
	return sync.OnceValues(func() (managedfields.TypeConverter, error) {
		meta, err := objectMetaModels()
		if err != nil {
			return nil, err
		}
		all := make(map[string]*spec.Schema, len(meta)+2*len(crd.Spec.Versions))
		for k, v := range meta {
			all[k] = v
		}
		for _, v := range crd.Spec.Versions {
			doc, err := openapibuilder.BuildOpenAPIV3(crd, v.Name, openapibuilder.Options{})
			if err != nil {
				return nil, err
			}
			if doc.Components != nil {
				for k, s := range doc.Components.Schemas {
					all[k] = s
				}
			}
		}
		return managedfields.NewTypeConverter(all, crd.Spec.PreserveUnknownFields)
	})
}

// objectMetaModels are the definitions a custom resource's documents
// refer to (ObjectMeta and what it holds).
var objectMetaModels = sync.OnceValues(func() (map[string]*spec.Schema, error) {
	return builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitions:    generated.GetOpenAPIDefinitions,
		GetDefinitionName: func(name string) (string, spec.Extensions) { return name, nil },
	}, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
})

// apiVersionConvertor converts custom resources between versions that
// differ only in their apiVersion.
type apiVersionConvertor struct{ group string }

func (c apiVersionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource conversion: unexpected %T", in)
	}
	from := u.GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok || to.Group != c.group {
		return nil, fmt.Errorf("%v cannot be converted to %v", from, target)
	}
	if to == from {
		return u, nil
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(to)
	return out, nil
}

// Convert converts an unstructured object into another's version.
func (c apiVersionConvertor) Convert(in, out, context interface{}) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("custom resource conversion: unexpected %T to %T", in, out)
	}
	gvk := o.GroupVersionKind()
	converted, err := c.ConvertToVersion(u.DeepCopy(), gvk.GroupVersion())
	if err != nil {
		return err
	}
	o.SetUnstructuredContent(converted.(*unstructured.Unstructured).UnstructuredContent())
	return nil
}

// APIVersionConvertor converts a group's custom resources between
// versions that differ only in their apiVersion (conversion None).
func APIVersionConvertor(group string) runtime.ObjectConvertor {
	return apiVersionConvertor{group: group}
}

func (c apiVersionConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("custom resource conversion: field labels are not supported")
}

type defaulterFunc func(runtime.Object)

func (f defaulterFunc) Default(obj runtime.Object) { f(obj) }

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
