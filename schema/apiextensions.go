package schema

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// apiextensions.k8s.io registers into its own scheme on kube-apiserver;
// here it joins the others, for its defaults and conversions.
func init() { apiextensionsinstall.Install(legacyscheme.Scheme) }

// apiextensionsKinds is the CustomResourceDefinition. Validation is the
// apiextensions-apiserver's own (names, versions, structural schemas, CEL
// rules and their estimated cost); controllers/crd.go accepts the names,
// establishes the CRD and serves its resource (CustomResourceTypes).
func apiextensionsKinds() []*kubeKind {
	crd := &kubeKind{Type: cluster("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
		[]string{"crd", "crds"}, []string{"api-extensions"}, "status").conditionalUpdates(), generation: generationOnChange}
	// kube's CRD storage checks a delete's preconditions itself.
	crd.DeletePreconditionsOwn = true
	crd.FirstDeleteMarksOnly = true
	crd.validate, crd.validateUpdate = validator(
		func(c *apiextensions.CustomResourceDefinition) field.ErrorList {
			return apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), c)
		},
		func(c, old *apiextensions.CustomResourceDefinition) field.ErrorList {
			return apiextensionsvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), c, old)
		})
	// Both record the storage version among the stored ones, as the
	// CRD strategy does.
	crd.prepareCreate = func(obj runtime.Object) { recordStoredVersion(obj.(*apiextensions.CustomResourceDefinition)) }
	crd.prepareUpdate = func(obj, _ runtime.Object) { recordStoredVersion(obj.(*apiextensions.CustomResourceDefinition)) }
	crd.warnings = func(obj, old runtime.Object) []string {
		var before []string
		if old != nil {
			before = unrecognizedFormats(old.(*apiextensions.CustomResourceDefinition))
		}
		var out []string
		for _, f := range unrecognizedFormats(obj.(*apiextensions.CustomResourceDefinition)) {
			if !slices.Contains(before, f) { // an update warns of new ones only
				out = append(out, fmt.Sprintf("unrecognized format %q", f))
			}
		}
		return out
	}
	_, status := validator(nil, apiextensionsvalidation.ValidateUpdateCustomResourceDefinitionStatus)
	// kube's CRD status strategy keeps the spec but resets the metadata
	// from the new object itself (ResetObjectMetaForStatus(new, new)), so
	// a status write's label, annotation and finalizer changes stay.
	crd.subresourceUpdates = map[string]kubeSubresourceUpdate{"status": {prepare: func(obj, old runtime.Object) { setField(obj, "Spec", old) }, validate: status}}
	// The first delete only marks the CRD: the cleanup finalizer holds it
	// until controllers/crd.go has removed every custom resource.
	crd.PrepareForDelete = func(obj runtime.Object) {
		c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return
		}
		if !apihelpers.CRDHasFinalizer(c, apiextensionsv1.CustomResourceCleanupFinalizer) {
			c.Finalizers = append(c.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
		}
		apihelpers.SetCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
			Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
		})
	}
	return []*kubeKind{crd}
}

// unrecognizedFormats lists the schema formats the apiextensions-apiserver
// does not check at the default compatibility version (kept and allowed,
// but worth a warning, as kube-apiserver gives).
func unrecognizedFormats(c *apiextensions.CustomResourceDefinition) []string {
	var out []string
	visit := func(s *apiextensions.JSONSchemaProps) {
		apiextensionsvalidation.SchemaHas(s, func(p *apiextensions.JSONSchemaProps) bool {
			if p.Format != "" {
				probe := &spec.Schema{SchemaProps: spec.SchemaProps{Format: p.Format, Type: []string{p.Type}}}
				out = append(out, apiservervalidation.GetUnrecognizedFormats(probe, environment.DefaultCompatibilityVersion())...)
			}
			return false
		})
	}
	if c.Spec.Validation != nil && c.Spec.Validation.OpenAPIV3Schema != nil {
		visit(c.Spec.Validation.OpenAPIV3Schema)
	}
	for _, v := range c.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			visit(v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

func recordStoredVersion(c *apiextensions.CustomResourceDefinition) {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			if !apiextensions.IsStoredVersion(c, v.Name) {
				c.Status.StoredVersions = append(c.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}
