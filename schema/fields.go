package schema

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group-version-kinds of the built-in kinds that have kind-specific hooks.
var (
	gvkNamespace      = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	gvkConfigMap      = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gvkSecret         = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	gvkServiceAccount = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	gvkCoreEvent      = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	gvkEventsV1Event  = schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}
	gvkEndpoints      = schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"}
	gvkLease          = schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
)

// Field selector keys of core/v1 Events, in the order kube-apiserver's field
// label conversion lists them.
var coreEventFieldLabels = []string{
	"involvedObject.kind",
	"involvedObject.namespace",
	"involvedObject.name",
	"involvedObject.uid",
	"involvedObject.apiVersion",
	"involvedObject.resourceVersion",
	"involvedObject.fieldPath",
	"reason",
	"reportingComponent",
	"source",
	"type",
}

// Field selector keys of events.k8s.io/v1 Events.
//
// kube-apiserver serves both groups from the same storage, but field labels
// are converted per group-version before matching: events.k8s.io/v1 has its
// own label conversion (pkg/apis/events/v1 AddFieldLabelConversionsForEvent)
// which accepts the events.k8s.io names (regarding.*, reportingController)
// plus reason, source and type, maps them onto the core field set, and
// rejects everything else — including the core names involvedObject.* and
// reportingComponent ("field label not supported: involvedObject.name").
// Tabula has no label conversion step, so the keys listed here are the
// names a client sends to the events.k8s.io endpoint, and eventsV1Fields
// returns the values kube would compare them with.
var eventsV1FieldLabels = []string{
	"regarding.kind",
	"regarding.namespace",
	"regarding.name",
	"regarding.uid",
	"regarding.apiVersion",
	"regarding.resourceVersion",
	"regarding.fieldPath",
	"reason",
	"reportingController",
	"source",
	"type",
}

// builtinFields returns the field selector keys a built-in kind supports
// besides metadata.name and metadata.namespace, and a function giving
// their values for an object of the Type's Go type. Kinds with no extra
// selectable fields (ConfigMap, ServiceAccount, Lease) get nil, nil.
func builtinFields(t *Type) ([]string, func(runtime.Object) map[string]string) {
	switch t.GroupVersionKind() {
	case gvkNamespace:
		return []string{"status.phase"}, namespaceFields
	case gvkSecret:
		return []string{"type"}, secretFields
	case gvkCoreEvent:
		return append([]string(nil), coreEventFieldLabels...), coreEventFields
	case gvkEventsV1Event:
		return append([]string(nil), eventsV1FieldLabels...), eventsV1Fields
	}
	return nil, nil
}

func namespaceFields(obj runtime.Object) map[string]string {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"status.phase": string(ns.Status.Phase)}
}

func secretFields(obj runtime.Object) map[string]string {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"type": string(s.Type)}
}

// eventSource is the value of the "source" field label: the legacy
// source.component, or the reporting controller for events written through
// events.k8s.io (which leave source empty).
func eventSource(component, reportingController string) string {
	if component != "" {
		return component
	}
	return reportingController
}

func coreEventFields(obj runtime.Object) map[string]string {
	e, ok := asCoreEvent(obj)
	if !ok {
		return map[string]string{}
	}
	ref := e.InvolvedObject
	return map[string]string{
		"involvedObject.kind":            ref.Kind,
		"involvedObject.namespace":       ref.Namespace,
		"involvedObject.name":            ref.Name,
		"involvedObject.uid":             string(ref.UID),
		"involvedObject.apiVersion":      ref.APIVersion,
		"involvedObject.resourceVersion": ref.ResourceVersion,
		"involvedObject.fieldPath":       ref.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         eventSource(e.Source.Component, e.ReportingController),
		"type":                           e.Type,
	}
}

func eventsV1Fields(obj runtime.Object) map[string]string {
	var e *eventsv1.Event
	switch o := obj.(type) {
	case *eventsv1.Event:
		e = o
	case *corev1.Event:
		v, err := eventFromCore(o)
		if err != nil {
			return map[string]string{}
		}
		e = v.(*eventsv1.Event)
	default:
		return map[string]string{}
	}
	ref := e.Regarding
	return map[string]string{
		"regarding.kind":            ref.Kind,
		"regarding.namespace":       ref.Namespace,
		"regarding.name":            ref.Name,
		"regarding.uid":             string(ref.UID),
		"regarding.apiVersion":      ref.APIVersion,
		"regarding.resourceVersion": ref.ResourceVersion,
		"regarding.fieldPath":       ref.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"source":                    eventSource(e.DeprecatedSource.Component, e.ReportingController),
		"type":                      e.Type,
	}
}
