package schema

import (
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
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
// plus reason and type (not source, which core/v1 has), maps them onto the core field set, and
// rejects everything else — including the core names involvedObject.* and
// reportingComponent ("field label not supported: involvedObject.name").
// Tabula has no label conversion step, so the keys listed here are the
// names a client sends to the events.k8s.io endpoint, and eventsV1Fields
// returns the values kube would compare them with. Both kinds store both
// sets (eventFields), so each endpoint's selectors find the Events the
// other wrote, as kube's one storage does (kubectl describe pod reads the
// scheduler's events.k8s.io Events through involvedObject.name).
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
	"type",
}

// kubeFieldLabel is kube-apiserver's field label conversion for the kind
// gvk (registered by kube's API packages in legacyscheme): it accepts the
// labels the kind supports, renames legacy ones, and words the error for
// the others as kube does ("field label not supported: …", or "… is not a
// known field selector: only …" for kinds without a conversion).
func kubeFieldLabel(gvk schema.GroupVersionKind) func(label, value string) (string, string, error) {
	return func(label, value string) (string, string, error) {
		return legacyscheme.Scheme.ConvertFieldLabel(gvk, label, value)
	}
}

// The selectable fields of the kinds whose kube registry names more than
// metadata.name and metadata.namespace (each kind's ToSelectableFields or
// GetAttrs there), computed from the served object. Values are formatted
// as kube formats them (booleans and counts as decimal text).

func podFields(obj runtime.Object) map[string]string {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return map[string]string{}
	}
	hostNetwork := p.Spec.HostNetwork
	podIP := ""
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	}
	return map[string]string{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(hostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func nodeFields(obj runtime.Object) map[string]string {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
}

func replicationControllerFields(obj runtime.Object) map[string]string {
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"status.replicas": strconv.Itoa(int(rc.Status.Replicas))}
}

func serviceFields(obj runtime.Object) map[string]string {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
}

// nameField is the "name" field kube keeps for persistent volumes and
// claims for backward compatibility.
func nameField(obj runtime.Object) map[string]string {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return map[string]string{}
	}
	return map[string]string{"name": acc.GetName()}
}

func jobFields(obj runtime.Object) map[string]string {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}
}

func csrFields(obj runtime.Object) map[string]string {
	c, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return map[string]string{}
	}
	return map[string]string{"spec.signerName": c.Spec.SignerName}
}

func resourceSliceFields(obj runtime.Object) map[string]string {
	s, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return map[string]string{}
	}
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return map[string]string{resourcev1.ResourceSliceSelectorNodeName: node, resourcev1.ResourceSliceSelectorDriver: s.Spec.Driver}
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

// eventFields are an Event's fields under both groups' names, stored
// whichever group wrote it.
func eventFields(obj runtime.Object) map[string]string {
	f := coreEventFields(obj)
	maps.Copy(f, eventsV1Fields(obj))
	return f
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
