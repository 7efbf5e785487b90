package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	celvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	openapibuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// A custom resource is a Type built from its CustomResourceDefinition:
// objects are unstructured, and the strategy hooks run the
// apiextensions-apiserver's structural-schema packages (pruning,
// defaulting, OpenAPI validation with ratcheting, list types, embedded
// ObjectMeta, CEL rules) the way kube-apiserver's custom resource
// strategy calls them.

// verbsCustomResource are the verbs in kube-apiserver's order for a
// custom resource.
var verbsCustomResource = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// CustomResourceTypes returns the Types serving crd's resource, one per
// served version, named by the CRD's accepted names. convert converts
// its objects between versions (apiextensions-apiserver's converter,
// which calls the CRD's conversion webhook); nil converts by apiVersion
// alone, and a CRD that needs its webhook is then served in its storage
// version only.
func CustomResourceTypes(crd *apiextensionsv1.CustomResourceDefinition, convert runtime.ObjectConvertor) ([]*Type, error) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" || names.Kind == "" {
		return nil, fmt.Errorf("%s: names not accepted", crd.Name)
	}
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	// One copy, shared by the versions' hooks (the OpenAPI builders read
	// it later): the caller may reuse its CRD.
	crd = crd.DeepCopy()
	types := customTypeConverter(crd)
	// The storage version's schema prunes what is stored and defaults what
	// is read, whichever version serves it (it may serve none).
	// Each object is read with the schema of the version it was stored
	// in, which is the storage version when it was written: every
	// version's, served or not, as a CRD's storage version may change.
	byVersion := map[string]*crStrategy{}
	for _, v := range crd.Spec.Versions {
		st := &crStrategy{preserve: crd.Spec.PreserveUnknownFields}
		var err error
		if st.structural, _, err = structuralFor(crd, v.Name); err != nil {
			return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
		byVersion[v.Name] = st
	}
	var out []*Type
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		t, err := customResourceType(crd, v, storage, byVersion, convert)
		if err == nil {
			t.ManagedFields = customManagedFields(types, t)
		}
		if err != nil {
			return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// crStrategy holds what one version's hooks share.
type crStrategy struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	// statusValidator checks status alone, as a status write does.
	statusValidator apiservervalidation.SchemaValidator
	cel             *celvalidation.Validator
	status          bool
	scale           *apiextensionsv1.CustomResourceSubresourceScale
	preserve        bool
}

func customResourceType(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, storage string, byVersion map[string]*crStrategy, convert runtime.ObjectConvertor) (*Type, error) {
	storageSt := byVersion[storage]
	names := crd.Status.AcceptedNames
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	listKind := names.ListKind
	if listKind == "" {
		listKind = names.Kind + "List"
	}
	t := &Type{
		Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind, ListKind: listKind,
		Resource: names.Plural, Singular: names.Singular, ShortNames: names.ShortNames, Categories: names.Categories,
		Namespaced:      crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		Verbs:           verbsCustomResource,
		StorageResource: names.Plural + "." + crd.Spec.Group,
		StorageVersion:  storage,
		StorageUnserved: !slices.ContainsFunc(crd.Spec.Versions, func(o apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return o.Storage && o.Served
		}),
		Unstructured:  true,
		StoresVersion: true,
		// As kube's custom resource strategy: no unconditional updates.
		UpdateNeedsResourceVersion: true,
		retired:                    make(chan struct{}),
		terminating:                new(atomic.Bool),
	}
	if t.Singular == "" {
		t.Singular = strings.ToLower(names.Kind)
	}
	t.New = func() runtime.Object {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetGroupVersionKind(gvk)
		return u
	}
	t.NewList = func() runtime.Object {
		l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(listKind))
		return l
	}

	st := &crStrategy{preserve: crd.Spec.PreserveUnknownFields}
	if err := st.compileSchema(crd, v.Name); err != nil {
		return nil, err
	}
	subs, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	if subs != nil && subs.Status != nil {
		st.status = true
		t.Subresources = append(t.Subresources, "status")
		t.SubresourceUpdates = map[string]SubresourceUpdate{"status": {Prepare: st.prepareStatus, Validate: st.validateStatus}}
	}
	if subs != nil && subs.Scale != nil {
		st.scale = subs.Scale
		t.Subresources = append(t.Subresources, "scale")
		sel := ""
		if subs.Scale.LabelSelectorPath != nil {
			sel = *subs.Scale.LabelSelectorPath
		}
		t.Scale = &Scale{SpecReplicasPath: subs.Scale.SpecReplicasPath, StatusReplicasPath: subs.Scale.StatusReplicasPath,
			LabelSelectorPath: sel, SelectorForm: SelectorString}
	}
	if v.Deprecated {
		t.Deprecation = crDeprecation(crd, v.Name, v.DeprecationWarning)
	}

	t.Coerce = st.coerce
	t.Convertor = convert
	if convert == nil {
		t.Convertor = APIVersionConvertor(crd.Spec.Group)
	}
	webhook := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	if webhook && convert == nil {
		// Another version than the one stored would need the webhook,
		// which this server cannot call: fail clearly.
		err := fmt.Errorf("conversion webhook for %s failed: webhook conversion is not supported by this server; use version %s", gvk, storage)
		if v.Name != storage {
			t.Coerce = func(runtime.Object) ([]string, error) { return nil, err }
		}
		convert = failingConvertor{err}
	}
	conv := t.Convertor
	if webhook {
		conv = convert
	}
	storageGV := schema.GroupVersion{Group: crd.Spec.Group, Version: storage}
	if v.Name != storage {
		// Objects are stored in the storage version, as kube-apiserver's
		// storage codec keeps them: converted (by the webhook, or by
		// apiVersion alone), then pruned to the storage version's schema,
		// so a field only this version has is not kept. This version's
		// defaults apply to request bodies alone, as in kube.
		t.LossyStorage = true
		t.ToStorage = func(obj runtime.Object) (runtime.Object, error) {
			out, err := conv.ConvertToVersion(obj, storageGV)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			if err := storageSt.pruneConverted(out); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			return out, nil
		}
	}
	// Read, an object is pruned and defaulted by the schema of the
	// version it was stored in (named in its stored bytes; the storage
	// version for bytes from before Tabula kept it), then converted to
	// this version and pruned to its schema, as kube's decoder does
	// (customresource_handler.go's schemaCoercingDecoder). A CRD whose
	// storage version changed reads its older objects so, and keeps
	// them as they were until they are written again.
	t.FromStorage = func(obj runtime.Object) (runtime.Object, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("custom resource: %T is not unstructured", obj)
		}
		in := storage
		if av := u.GetAPIVersion(); av != "" {
			gv, err := schema.ParseGroupVersion(av)
			if err != nil || gv.Group != crd.Spec.Group || byVersion[gv.Version] == nil {
				// A version the CRD no longer has: kube's converter
				// refuses it rather than prune it by another schema.
				return nil, apierrors.NewInternalError(fmt.Errorf("request to convert CR from an invalid group/version: %s", av))
			}
			in = gv.Version
		}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: in, Kind: t.Kind})
		if in == v.Name {
			return st.fromStorage(u)
		}
		if _, err := byVersion[in].fromStorage(u); err != nil {
			return nil, err
		}
		out := runtime.Object(u)
		if webhook {
			var err error
			if out, err = conv.ConvertToVersion(u, t.GroupVersion()); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
		} else {
			// The versions differ in apiVersion alone, and the decoded
			// object is this read's own: no copy.
			u.SetGroupVersionKind(gvk)
		}
		if err := st.pruneConverted(out); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return out, nil
	}
	t.PrepareForCreate = st.prepareForCreate
	t.PrepareForUpdate = st.prepareForUpdate
	t.Validate = st.validate
	t.Warnings = finalizerWarnings

	// The documents come from the apiextensions-apiserver's builder with
	// the options kube-apiserver's OpenAPI controllers pass.
	t.OpenAPIV3 = func() (*spec3.OpenAPI, error) {
		return openapibuilder.BuildOpenAPIV3(crd, v.Name, openapibuilder.Options{V2: false, IncludeSelectableFields: true})
	}
	t.OpenAPIV2 = func() (*spec.Swagger, error) {
		return openapibuilder.BuildOpenAPIV2(crd, v.Name, openapibuilder.Options{V2: true, IncludeSelectableFields: true})
	}

	if err := crColumns(t, v); err != nil {
		return nil, err
	}
	// Without a conversion webhook every version is the same object under
	// another apiVersion: each stores every version's selectable fields,
	// so a version selects the objects another wrote, as kube's (which
	// reads them per version at list time) does.
	stored := v.SelectableFields
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		stored = nil
		for _, other := range crd.Spec.Versions {
			stored = append(stored, other.SelectableFields...)
		}
	}
	crSelectableFields(t, v.SelectableFields, stored)
	return t, nil
}

// compileSchema builds the structural schema, the OpenAPI validator and
// the CEL rules of one version.
func (st *crStrategy) compileSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	var in *apiextensions.CustomResourceValidation
	var err error
	if st.structural, in, err = structuralFor(crd, version); err != nil || in == nil {
		return err
	}
	if st.validator, _, err = apiservervalidation.NewSchemaValidator(in.OpenAPIV3Schema); err != nil {
		return err
	}
	if status, ok := in.OpenAPIV3Schema.Properties["status"]; ok {
		if st.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&status); err != nil {
			return err
		}
	}
	st.cel = celvalidation.NewValidator(st.structural, true, celconfig.PerCallLimit)
	return nil
}

// structuralFor is the structural schema of one version, with the
// internal validation it was made from (nil when the version has no
// schema: only CRDs that preserve unknown fields may go without one).
func structuralFor(crd *apiextensionsv1.CustomResourceDefinition, version string) (*structuralschema.Structural, *apiextensions.CustomResourceValidation, error) {
	v1schema, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, nil, err
	}
	if v1schema == nil || v1schema.OpenAPIV3Schema == nil {
		return &structuralschema.Structural{Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}}, nil, nil
	}
	in := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1schema, in, nil); err != nil {
		return nil, nil, err
	}
	s, err := structuralschema.NewStructural(in.OpenAPIV3Schema)
	return s, in, err
}

// coerce is what decoding a request body does to a custom resource, in
// kube-apiserver's order: metadata is read as ObjectMeta, unknown fields
// are pruned (their paths returned for fieldValidation), nulls without a
// default dropped, embedded ObjectMeta coerced, then defaults applied.
func (st *crStrategy) coerce(obj runtime.Object) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource: %T is not unstructured", obj)
	}
	return st.coerceMap(u.Object, false)
}

func (st *crStrategy) coerceMap(obj map[string]interface{}, fromStorage bool) ([]string, error) {
	unknown, err := st.prune(obj, fromStorage)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(obj, st.structural)
	return unknown, nil
}

// pruneConverted is what kube-apiserver's converter does to a custom
// resource it converted into this version: prune to the version's schema
// and coerce embedded metadata, without defaulting.
func (st *crStrategy) pruneConverted(obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("custom resource: %T is not unstructured", obj)
	}
	_, err := st.prune(u.Object, false)
	return err
}

// prune reads metadata as ObjectMeta, prunes unknown fields, drops nulls
// without a default and coerces embedded ObjectMeta, returning the unknown
// fields' paths (none from storage, where malformed metadata is dropped).
func (st *crStrategy) prune(obj map[string]interface{}, fromStorage bool) ([]string, error) {
	om, found, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields: fromStorage, ReturnUnknownFieldPaths: !fromStorage,
	})
	if err != nil {
		return nil, err
	}
	if !st.preserve {
		pruned := structuralpruning.PruneWithOptions(obj, st.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: !fromStorage})
		unknown = append(unknown, pruned...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, st.structural)
	}
	ferr, metaUnknown := schemaobjectmeta.CoerceWithOptions(nil, obj, st.structural, false, schemaobjectmeta.CoerceOptions{
		DropInvalidFields: fromStorage, ReturnUnknownFieldPaths: !fromStorage,
	})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, metaUnknown...)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(obj, om); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// fromStorage defaults a stored object as kube-apiserver does on read,
// so defaults added to the schema later show in old objects.
func (st *crStrategy) fromStorage(obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource: %T is not unstructured", obj)
	}
	if _, err := st.coerceMap(u.Object, true); err != nil {
		return nil, err
	}
	return u, nil
}

func (st *crStrategy) prepareForCreate(obj runtime.Object) {
	u := obj.(*unstructured.Unstructured)
	if st.status {
		delete(u.Object, "status") // a create cannot set status
	}
	u.SetGeneration(1)
}

func (st *crStrategy) prepareForUpdate(obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if st.status {
		if s, ok := o.Object["status"]; ok {
			u.Object["status"] = s
		} else {
			delete(u.Object, "status")
		}
	}
	// Any change outside metadata moves the generation.
	if !equality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(o.Object)) {
		u.SetGeneration(o.GetGeneration() + 1)
	}
}

func withoutMetadata(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// validate is the custom resource strategy's validation. An update
// ratchets: errors in values it leaves unchanged do not fail it.
func (st *crStrategy) validate(obj, old runtime.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("%T is not unstructured", obj))}
	}
	var errs field.ErrorList
	var oldObj map[string]interface{}
	var correlated *common.CorrelatedObject
	if old != nil {
		oldObj = old.(*unstructured.Unstructured).Object
		correlated = common.NewCorrelatedObject(u.Object, oldObj, &model.Structural{Structural: st.structural})
	}
	if st.validator != nil {
		if old == nil {
			errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, st.validator)...)
		} else {
			errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, oldObj, st.validator,
				apiservervalidation.WithRatcheting(correlated))...)
		}
	}
	errs = append(errs, st.validateScale(u.Object, true)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, st.structural, false)...)
	if old == nil {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, st.structural, u.Object)...)
	} else if len(structurallisttype.ValidateListSetsAndMaps(nil, st.structural, oldObj)) == 0 {
		// List uniqueness ratchets as a whole: only an old object that
		// kept it must keep it.
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, st.structural, u.Object)...)
	}
	if st.cel != nil {
		if blocked := blockingError(errs); blocked != nil {
			return append(errs, blocked)
		}
		var opts []celvalidation.Option
		if correlated != nil {
			opts = append(opts, celvalidation.WithRatcheting(correlated))
		}
		celErrs, _ := st.cel.Validate(context.Background(), nil, st.structural, u.Object, oldObj, celconfig.RuntimeCELCostBudget, opts...)
		errs = append(errs, celErrs...)
	}
	return errs
}

// prepareStatus is a status write: the stored object with the request's
// status (and managedFields), nothing else.
func (st *crStrategy) prepareStatus(obj, old runtime.Object) (runtime.Object, error) {
	u, ok1 := obj.(*unstructured.Unstructured)
	o, ok2 := old.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("custom resource: %T is not unstructured", obj)
	}
	out := o.DeepCopy()
	if s, ok := u.Object["status"]; ok {
		out.Object["status"] = s
	} else {
		delete(out.Object, "status")
	}
	out.SetResourceVersion(u.GetResourceVersion())
	// An apply through status brings the managedFields it computed.
	out.SetManagedFields(u.GetManagedFields())
	return out, nil
}

// validateStatus is the status strategy's validation: status against its
// own schema (ratcheting), the scale status count, list types and CEL.
func (st *crStrategy) validateStatus(obj, old runtime.Object) field.ErrorList {
	u, ok1 := obj.(*unstructured.Unstructured)
	o, ok2 := old.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("%T is not unstructured", obj))}
	}
	correlated := common.NewCorrelatedObject(u.Object, o.Object, &model.Structural{Structural: st.structural})
	var errs field.ErrorList
	if status, ok := u.Object["status"]; ok && st.statusValidator != nil {
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, o.Object["status"], st.statusValidator,
			apiservervalidation.WithRatcheting(correlated.Key("status")))...)
	}
	errs = append(errs, st.validateScale(u.Object, false)...)
	if newErrs := structurallisttype.ValidateListSetsAndMaps(nil, st.structural, u.Object); len(newErrs) > 0 {
		if len(structurallisttype.ValidateListSetsAndMaps(nil, st.structural, o.Object)) == 0 {
			errs = append(errs, newErrs...)
		}
	}
	if st.cel != nil {
		if blocked := blockingError(errs); blocked != nil {
			return append(errs, blocked)
		}
		celErrs, _ := st.cel.Validate(context.Background(), nil, st.structural, u.Object, o.Object, celconfig.RuntimeCELCostBudget,
			celvalidation.WithRatcheting(correlated))
		errs = append(errs, celErrs...)
	}
	return errs
}

// finalizerWarnings are kube-apiserver's warnings for finalizers a custom
// resource write adds whose names other writers could collide with.
func finalizerWarnings(obj, old runtime.Object) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	had := map[string]bool{}
	if o, ok := old.(*unstructured.Unstructured); ok {
		for _, f := range o.GetFinalizers() {
			had[f] = true
		}
	}
	added := sets.New[string]()
	for _, f := range u.GetFinalizers() {
		if !had[f] {
			added.Insert(f)
		}
	}
	const path = "metadata.finalizers"
	var out []string
	for _, f := range sets.List(added) {
		for _, msg := range validation.IsQualifiedName(f) {
			out = append(out, fmt.Sprintf("%s: %q: %s", path, f, msg))
		}
		if strings.Contains(f, "/") || f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents || f == "kubernetes" {
			continue
		}
		if strings.Contains(f, ".") {
			out = append(out, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", path, f))
		} else {
			out = append(out, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", path, f))
		}
	}
	return out
}

// blockingError: CEL rules are not run on an object with values of the
// wrong type, unsupported, missing or too large, as kube-apiserver skips
// them (a rule could not be evaluated on them safely).
func blockingError(errs field.ErrorList) *field.Error {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// validateScale checks the replica counts the scale subresource reads:
// the status count, and with spec the spec count first; then its selector.
func (st *crStrategy) validateScale(obj map[string]interface{}, spec bool) field.ErrorList {
	if st.scale == nil {
		return nil
	}
	var errs field.ErrorList
	paths := []string{st.scale.StatusReplicasPath}
	if spec {
		paths = []string{st.scale.SpecReplicasPath, st.scale.StatusReplicasPath}
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		n, _, err := unstructured.NestedInt64(obj, strings.Split(strings.TrimPrefix(p, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(p), n, err.Error()))
		case n < 0:
			errs = append(errs, field.Invalid(field.NewPath(p), n, "should be a non-negative integer"))
		case n > 1<<31-1:
			errs = append(errs, field.Invalid(field.NewPath(p), n, fmt.Sprintf("should be less than or equal to %v", 1<<31-1)))
		}
	}
	// The selector the Scale reports must be a string where it is given
	// (kube's ValidateScaleStatus).
	if p := st.scale.LabelSelectorPath; p != nil && *p != "" {
		sel, _, err := unstructured.NestedString(obj, strings.Split(strings.TrimPrefix(*p, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), sel, err.Error()))
		}
	}
	return errs
}

// crColumns prints the version's additionalPrinterColumns (an Age column
// when it has none), through the apiextensions-apiserver's convertor;
// columns it refuses leave kube's default Name and Created At.
func crColumns(t *Type, v apiextensionsv1.CustomResourceDefinitionVersion) error {
	cols := v.AdditionalPrinterColumns
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
			Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}}
	}
	conv, err := tableconvertor.New(cols)
	if err != nil {
		// As kube's CRD handler: a column it cannot parse (its JSONPath
		// is only checked for a leading dot) falls back to the default
		// printing; the resource is served all the same.
		t.Cells = DefaultRow
		return nil
	}
	empty, err := conv.ConvertToTable(context.Background(), &unstructured.UnstructuredList{Object: map[string]interface{}{}}, nil)
	if err != nil {
		return err
	}
	t.Columns = empty.ColumnDefinitions
	row := func(obj runtime.Object) ([]interface{}, error) {
		tbl, err := conv.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			return nil, err
		}
		if len(tbl.Rows) != 1 {
			return nil, fmt.Errorf("custom resource table: %d rows for one object", len(tbl.Rows))
		}
		return tbl.Rows[0].Cells, nil
	}
	t.Row = row
	// A date column shows its time's age ("date" cells the convertor
	// writes at the clock): the rest of the row depends only on the object.
	// The convertor puts Name first, then a cell per column.
	var dates []int
	for i, c := range cols {
		if c.Type == "date" {
			dates = append(dates, i)
		}
	}
	if len(dates) == 0 {
		t.Cells = row
		return nil
	}
	t.Cells = func(obj runtime.Object) ([]interface{}, error) {
		cells, err := row(obj)
		if err != nil {
			return nil, err
		}
		u, ok := obj.(runtime.Unstructured)
		if !ok || len(cells) != len(cols)+1 {
			return nil, fmt.Errorf("custom resource table: %d cells for %d columns of %T", len(cells), len(cols)+1, obj)
		}
		for _, i := range dates {
			if at, ok := crDate(u.UnstructuredContent(), cols[i].JSONPath, cells[i+1]); ok {
				cells[i+1] = Since(at)
			}
		}
		return cells, nil
	}
	return nil
}

// crDate is the time a date column's cell shows the age of: the string
// at path in content that the convertor parsed (its cell a string other
// than "<invalid>"; nil when there is no value).
func crDate(content map[string]interface{}, path string, cell interface{}) (time.Time, bool) {
	if s, ok := cell.(string); !ok || s == "<invalid>" {
		return time.Time{}, false
	}
	// A JSONPath evaluates with state of its own: one per use.
	jp := jsonpath.New("date")
	if err := jp.Parse("{" + path + "}"); err != nil {
		return time.Time{}, false
	}
	jp.AllowMissingKeys(true)
	res, err := jp.FindResults(content)
	if err != nil || len(res) == 0 || len(res[0]) == 0 {
		return time.Time{}, false
	}
	v, ok := res[0][0].Interface().(string)
	if !ok {
		return time.Time{}, false
	}
	var ts metav1.Time
	if err := ts.UnmarshalQueryParameter(v); err != nil {
		return time.Time{}, false
	}
	return ts.Time, true
}

// crSelectableFields makes the version's selectableFields (sfs) usable in
// field selectors, and stores the values of stored (a superset) with each
// object: each JSONPath's value, as kube-apiserver formats it.
func crSelectableFields(t *Type, sfs, stored []apiextensionsv1.SelectableField) {
	for _, sf := range sfs {
		t.FieldLabels = append(t.FieldLabels, strings.TrimPrefix(sf.JSONPath, "."))
	}
	var names []string
	for _, sf := range stored {
		if name := strings.TrimPrefix(sf.JSONPath, "."); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	paths := make([][]string, len(names))
	for i, name := range names {
		paths[i] = strings.Split(name, ".")
	}
	t.Fields = func(obj runtime.Object) map[string]string {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		out := map[string]string{}
		for i, p := range paths {
			v, found, err := unstructured.NestedFieldNoCopy(u.Object, p...)
			if err != nil || !found {
				out[names[i]] = ""
				continue
			}
			switch x := v.(type) {
			case string:
				out[names[i]] = x
			case bool, int64, float64:
				out[names[i]] = fmt.Sprint(x)
			}
		}
		return out
	}
}

// crDeprecation is a deprecated version's warning as the custom resource
// handler writes it: the CRD's deprecationWarning (an empty one sends
// none), or "<group>/<version> <Kind> is deprecated; use <group>/<newest
// served version that is not deprecated> <Kind>".
func crDeprecation(crd *apiextensionsv1.CustomResourceDefinition, deprecated string, warning *string) *Deprecation {
	if warning != nil {
		return &Deprecation{Message: *warning, NoWarning: *warning == ""}
	}
	kind := crd.Status.AcceptedNames.Kind
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, deprecated, kind)
	newest := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 &&
			(newest == "" || version.CompareKubeAwareVersionStrings(v.Name, newest) > 0) {
			newest = v.Name
		}
	}
	if newest != "" {
		msg += fmt.Sprintf("; use %s/%s %s", crd.Spec.Group, newest, kind)
	}
	return &Deprecation{Message: msg}
}

// failingConvertor answers every conversion with err: a CRD converted by a
// webhook this server cannot call.
type failingConvertor struct{ err error }

func (f failingConvertor) Convert(in, out, context interface{}) error { return f.err }
func (f failingConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return nil, f.err
}
func (f failingConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", f.err
}
