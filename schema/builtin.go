package schema

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

var (
	verbsAll        = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNamespaces = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// OptionalGroupVersions are served only when enabled, as kube-apiserver
// serves its beta APIs introduced after 1.24 only with --runtime-config:
// admissionregistration.k8s.io/v1beta1 (MutatingAdmissionPolicy, which
// also needs its feature gate).
var OptionalGroupVersions = []schema.GroupVersion{{Group: "admissionregistration.k8s.io", Version: "v1beta1"}}

// NewScheme returns a scheme holding the Go types of every built-in kind
// Tabula serves, plus the meta.k8s.io types (Status, DeleteOptions, Table,
// WatchEvent, …) that travel with them.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme,
		appsv1.AddToScheme, authenticationv1.AddToScheme, certificatesv1.AddToScheme, flowcontrolv1.AddToScheme, authorizationv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		discoveryv1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme, policyv1.AddToScheme,
		rbacv1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme, admissionregistrationv1.AddToScheme, admissionregistrationv1beta1.AddToScheme, resourcev1.AddToScheme, apiregistrationv1.AddToScheme,
		apiextensionsv1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	// pods/eviction also takes policy/v1beta1 bodies, as kube's does.
	s.AddKnownTypes(policyv1beta1.SchemeGroupVersion, &policyv1beta1.Eviction{})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	return s
}

// NewBuiltin returns a registry with every built-in type Tabula serves,
// and those of the optional group-versions named in enable (kube's
// --runtime-config).
func NewBuiltin(enable ...schema.GroupVersion) *Registry {
	r := NewRegistry(NewScheme())
	for _, t := range builtinTypes() {
		decorate(t)
		t.ManagedFields = builtinManagedFields(t)
		defaultCells(t)
		r.Add(t)
	}
	for _, k := range kubeKinds() {
		if gv := k.GroupVersion(); slices.Contains(OptionalGroupVersions, gv) && !slices.Contains(enable, gv) {
			continue
		}
		t := k.build(r.Scheme)
		if !t.Virtual {
			t.ManagedFields = builtinManagedFields(t)
		}
		defaultCells(t)
		r.Add(t)
	}
	return r
}

// defaultCells gives a stored kind no printer prints (Roles, ClusterRoles,
// LimitRanges, CustomResourceDefinitions) the default row for its Cells:
// it reads no clock, so it can be kept by revision too.
func defaultCells(t *Type) {
	if t.Row == nil && t.Cells == nil && !t.Virtual && !t.NoTable {
		t.Cells = DefaultRow
	}
}

func builtinTypes() []*Type {
	return []*Type{
		{
			Version: "v1", Kind: "Namespace", ListKind: "NamespaceList",
			Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Verbs:                   verbsNamespaces,
			New:                     func() runtime.Object { return &corev1.Namespace{} },
			NewList:                 func() runtime.Object { return &corev1.NamespaceList{} },
			Subresources:            []string{"status", "finalize"},
			StatusMetadata:          true,
			InOwnNamespace:          true,
			ValidateDelete:          namespaceValidateDelete,
			DeletePreconditionsOwn:  true,
			ForegroundOnOrphanFalse: true,
			ValidateStatus:          withKubeFinalizers(validateNamespaceStatus),
			NameIsDNSLabel:          true,
			// The namespace controller removes a namespace once it is
			// empty; DELETE answers with the Terminating namespace.
			PrepareForDelete:    namespaceBeginDelete,
			RemovedByController: true,
			SpecFinalized:       namespaceFinalized,
			FieldLabels:         []string{"status.phase"},
			Fields:              namespaceFields,
			ConvertFieldLabel:   kubeFieldLabel(gvkNamespace),
		},
		{
			Version: "v1", Kind: "ConfigMap", ListKind: "ConfigMapList",
			Resource: "configmaps", Singular: "configmap", ShortNames: []string{"cm"},
			Namespaced: true, Verbs: verbsAll,
			New:     func() runtime.Object { return &corev1.ConfigMap{} },
			NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		},
		{
			Version: "v1", Kind: "Secret", ListKind: "SecretList",
			Resource: "secrets", Singular: "secret",
			Namespaced: true, Verbs: verbsAll,
			FieldLabels: []string{"type"}, Fields: secretFields, ConvertFieldLabel: kubeFieldLabel(gvkSecret),
			Warnings: secretWarnings,
			New:      func() runtime.Object { return &corev1.Secret{} },
			NewList:  func() runtime.Object { return &corev1.SecretList{} },
		},
		{
			Version: "v1", Kind: "ServiceAccount", ListKind: "ServiceAccountList",
			Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true, Verbs: verbsAll,
			Subresources: []string{"token"},
			SubresourceInfo: map[string]SubresourceInfo{
				"token": {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"}},
			},
			ReturnDeletedObject: true,
			Warnings:            serviceAccountWarnings,
			New:                 func() runtime.Object { return &corev1.ServiceAccount{} },
			NewList:             func() runtime.Object { return &corev1.ServiceAccountList{} },
		},
		{
			Version: "v1", Kind: "Event", ListKind: "EventList",
			Resource: "events", Singular: "event", ShortNames: []string{"ev"},
			Namespaced: true, Verbs: verbsAll,
			AllowCreateOnUpdate: true,
			Expiring:            true,
			NoGCFinalizers:      true,
			// Validate checks the metadata (validateCoreEvent).
			ValidatesMeta: true,
			FieldLabels:   coreEventFieldLabels,
			Fields:        eventFields,
			New:           func() runtime.Object { return &corev1.Event{} },
			NewList:       func() runtime.Object { return &corev1.EventList{} },
		},
		{
			Version: "v1", Kind: "Endpoints", ListKind: "EndpointsList",
			Resource: "endpoints", Singular: "endpoints", ShortNames: []string{"ep"},
			Namespaced: true, Verbs: verbsAll,
			AllowCreateOnUpdate: true,
			New:                 func() runtime.Object { return &corev1.Endpoints{} },
			NewList:             func() runtime.Object { return &corev1.EndpointsList{} },
			Deprecation:         &Deprecation{In: "1.33", Replacement: "discovery.k8s.io/v1 EndpointSlice"},
			// kube's validation checks the metadata (validateEndpoints).
			ValidatesMeta: true,
			Warnings:      endpointsWarnings,
		},
		{
			Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", ListKind: "LeaseList",
			Resource: "leases", Singular: "lease",
			Namespaced: true, Verbs: verbsAll,
			AllowCreateOnUpdate:        true,
			UpdateNeedsResourceVersion: true,
			New:                        func() runtime.Object { return &coordinationv1.Lease{} },
			NewList:                    func() runtime.Object { return &coordinationv1.LeaseList{} },
		},
		{
			Group: "events.k8s.io", Version: "v1", Kind: "Event", ListKind: "EventList",
			Resource: "events", Singular: "event", ShortNames: []string{"ev"},
			Namespaced: true, Verbs: verbsAll,
			// Stored as core/v1 Events, like kube-apiserver does.
			StorageResource:     "events",
			AllowCreateOnUpdate: true,
			NoGCFinalizers:      true,
			// Validate checks the metadata (validateEventsV1Event).
			ValidatesMeta: true,
			FieldLabels:   eventsV1FieldLabels,
			Fields:        eventFields,
			New:           func() runtime.Object { return &eventsv1.Event{} },
			NewList:       func() runtime.Object { return &eventsv1.EventList{} },
			ToStorage:     eventToCore,
			FromStorage:   eventFromCore,
		},
	}
}

// decorate fills the per-kind hooks (defaults, validation, fields, columns)
// that live in their own files.
func decorate(t *Type) {
	if t.StorageResource == "" {
		t.StorageResource = t.GroupResource().String()
	}
	t.Columns, t.Cells = builtinColumns(t)
	if t.Cells != nil {
		t.Row = withAges(t.Cells)
	}
	t.PrepareForCreate, t.PrepareForUpdate, t.Validate = builtinStrategy(t)
}
