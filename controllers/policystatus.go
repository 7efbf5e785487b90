package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	admissionregistrationv1apply "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema/openapi"
)

// The validatingadmissionpolicy-status-controller of
// kube-controller-manager, kube's own: each ValidatingAdmissionPolicy's
// expressions are type-checked against the kinds it matches (built-in
// kinds and CRDs, from their OpenAPI definitions; custom resources, from
// their CRDs' schemas) and the warnings written to
// status.typeChecking with status.observedGeneration.

func (m *Manager) policyStatusController(ctx context.Context) error {
	checker := &validating.TypeChecker{
		SchemaResolver: &lazySchemaResolver{custom: customResourceSchemas{m.api}},
		RestMapper:     m.api.RESTMapper(),
	}
	x := m.api.MustLookup("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
	c, err := validatingadmissionpolicystatus.NewController(m.api.ValidatingAdmissionPolicies(), policyStatusClient{x: x}, checker)
	if err != nil {
		return err
	}
	c.Run(ctx, 1)
	return nil
}

// lazySchemaResolver builds kube's resolver over every built-in kind's
// OpenAPI definitions when a policy is first checked: the definitions are
// about 6 MiB kept for the server's life, which a cluster without
// ValidatingAdmissionPolicies never needs (kube-controller-manager builds
// them at start; an idle Tabula is smaller without them).
// As kube-controller-manager's, it knows CustomResourceDefinitions too,
// and custom resources through their CRDs' schemas (custom).
type lazySchemaResolver struct {
	once   sync.Once
	r      resolver.SchemaResolver
	custom resolver.SchemaResolver
}

func (l *lazySchemaResolver) ResolveSchema(gvk runtimeschema.GroupVersionKind) (*spec.Schema, error) {
	l.once.Do(func() {
		l.r = resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, clientscheme.Scheme, apiextensionsscheme.Scheme).Combine(l.custom)
	})
	return l.r.ResolveSchema(gvk)
}

// customResourceSchemas resolves a custom resource's schema from the
// OpenAPI document its CRD publishes, as kube-controller-manager's
// discovery resolver reads it from /openapi/v3.
type customResourceSchemas struct{ api *registry.Registry }

func (c customResourceSchemas) ResolveSchema(gvk runtimeschema.GroupVersionKind) (*spec.Schema, error) {
	mapping, err := c.api.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, resolver.ErrSchemaNotFound)
	}
	x, ok := c.api.Lookup(gvk.Group, gvk.Version, mapping.Resource.Resource)
	if !ok || !x.Type().Unstructured || x.Type().OpenAPIV3 == nil {
		return nil, fmt.Errorf("no custom resource %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	doc, err := x.Type().OpenAPIV3()
	if err != nil {
		return nil, err
	}
	if doc.Components == nil {
		return nil, fmt.Errorf("no schemas for %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	for name, s := range doc.Components.Schemas {
		var gvks []runtimeschema.GroupVersionKind
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil || !slices.Contains(gvks, gvk) {
			continue
		}
		return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
			s, ok := doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
			return s, ok
		}, name)
	}
	return nil, fmt.Errorf("no schema names %v: %w", gvk, resolver.ErrSchemaNotFound)
}

// policyStatusClient applies a policy's status through the registry.
type policyStatusClient struct {
	admissionregistrationv1client.ValidatingAdmissionPolicyInterface
	x *registry.Resource
}

func (c policyStatusClient) ApplyStatus(ctx context.Context, cfg *admissionregistrationv1apply.ValidatingAdmissionPolicyApplyConfiguration, opts metav1.ApplyOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	if cfg == nil || cfg.Name == nil {
		return nil, fmt.Errorf("apply: a policy without a name")
	}
	patch, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	res, _, err := c.x.Apply(ctx, "", *cfg.Name, patch, registry.ApplyOptions{Subresource: "status", Force: opts.Force,
		WriteOptions: registry.WriteOptions{Manager: opts.FieldManager}})
	if err != nil {
		return nil, err
	}
	p, ok := res.Obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok {
		return nil, fmt.Errorf("apply: a %T", res.Obj)
	}
	return p, nil
}
