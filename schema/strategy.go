package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corehelper "k8s.io/kubernetes/pkg/apis/core/helper"
)

// maxDataSize is the limit on the summed value sizes of a ConfigMap or a
// Secret (kube's MaxSecretSize, 1 MiB).
const maxDataSize = 1 << 20

// Length limits kube-apiserver applies to events carrying eventTime.
const (
	eventReportingInstanceMax = 128
	eventActionMax            = 128
	eventReasonMax            = 128
	eventNoteMax              = 1024
)

const immutableWhenSetMsg = "field is immutable when `immutable` is set"

// builtinStrategy returns the kind-specific create defaults, update
// carry-overs and validation kube-apiserver applies to a built-in kind.
// ObjectMeta (name, labels, annotations, …) is validated by the generic
// path, not here. Every built-in kind gets non-nil functions; unknown kinds
// get nil.
func builtinStrategy(t *Type) (func(runtime.Object), func(obj, old runtime.Object), func(obj, old runtime.Object) field.ErrorList) {
	switch t.GroupVersionKind() {
	case gvkNamespace:
		return namespacePrepareForCreate, namespacePrepareForUpdate, withKubeFinalizers(validateNamespace)
	case gvkConfigMap:
		return noPrepareForCreate, noPrepareForUpdate, withKubeFinalizers(validateConfigMap)
	case gvkSecret:
		return secretPrepareForCreate, secretPrepareForUpdate, withKubeFinalizers(validateSecret)
	case gvkServiceAccount:
		return serviceAccountPrepareForCreate, serviceAccountPrepareForUpdate, withKubeFinalizers(noValidate)
	case gvkCoreEvent:
		// kube validates a core/v1 Event's metadata only with the
		// generic checks after its own (any path segment is a name:
		// client-go names events after their objects, "system:…" too).
		return noPrepareForCreate, noPrepareForUpdate, validateCoreEvent
	case gvkEventsV1Event:
		return noPrepareForCreate, noPrepareForUpdate, validateEventsV1Event
	case gvkEndpoints:
		return endpointsPrepare, endpointsPrepareForUpdate, validateEndpoints
	case gvkLease:
		return leasePrepareForCreate, leasePrepareForUpdate, validateLease
	}
	return nil, nil, nil
}

// withKubeFinalizers adds to v the check core kinds' metadata validation
// makes beyond the generic one (kube's core ValidateObjectMeta): a
// finalizer without a domain must be one of kube's standard names.
func withKubeFinalizers(v func(obj, old runtime.Object) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
	return func(obj, old runtime.Object) field.ErrorList {
		errs := v(obj, old)
		acc, err := meta.Accessor(obj)
		if err != nil {
			return errs
		}
		for i, f := range acc.GetFinalizers() {
			if !strings.Contains(f, "/") && !corehelper.IsStandardFinalizerName(f) {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "finalizers").Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
			}
		}
		return errs
	}
}

func noPrepareForCreate(runtime.Object)              {}
func noPrepareForUpdate(_, _ runtime.Object)         {}
func noValidate(_, _ runtime.Object) field.ErrorList { return nil }

// unexpectedType reports an object of the wrong Go type as an internal error.
func unexpectedType(obj runtime.Object, want string) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("expected %s, got %T", want, obj))}
}

// sortedKeys returns the keys of m in order, so that errors come out in a
// stable order (kube-apiserver walks maps in random order).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isTrue(b *bool) bool { return b != nil && *b }

// ---------------------------------------------------------------- Namespace

// namespacePrepareForCreate: a new namespace is Active (any status sent is
// replaced), always carries the "kubernetes" finalizer in spec.finalizers,
// and is labelled kubernetes.io/metadata.name=<name>.
func namespacePrepareForCreate(obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns == nil {
		return
	}
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	hasKube := false
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			hasKube = true
			break
		}
	}
	if !hasKube {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNamespaceNameLabel(ns)
}

// namespacePrepareForUpdate: status and spec.finalizers are owned by the
// status and finalize subresources, so a main-resource update keeps the
// stored values.
func namespacePrepareForUpdate(obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	oldNS, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 || ns == nil || oldNS == nil {
		return
	}
	ns.Spec.Finalizers = append([]corev1.FinalizerName(nil), oldNS.Spec.Finalizers...)
	ns.Status = *oldNS.Status.DeepCopy()
	setNamespaceNameLabel(ns)
}

// namespaceFinalized: no spec finalizer holds the namespace any more.
func namespaceFinalized(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) == 0
}

// setNamespaceNameLabel sets kubernetes.io/metadata.name to the name, as
// kube's namespace defaulting does on every write. A namespace created with
// generateName only gets it once its name is known.
func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// immortalNamespaces may never be deleted: kube-apiserver's
// NamespaceLifecycle admission refuses them. kube-node-lease is not among
// them there either; it is recreated once its deletion completes.
var immortalNamespaces = map[string]bool{
	metav1.NamespaceDefault: true,
	metav1.NamespaceSystem:  true,
	metav1.NamespacePublic:  true,
}

func namespaceValidateDelete(name string) error {
	if immortalNamespaces[name] {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// namespaceBeginDelete marks a namespace Terminating; the namespace
// controller empties and then removes it.
func namespaceBeginDelete(obj runtime.Object) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
}

func validateNamespace(obj, old runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns == nil {
		return unexpectedType(obj, "*v1.Namespace")
	}
	// kube reports spec.finalizers problems without an index on create,
	// and with one through the finalize subresource (the only update that
	// changes them: a main update keeps the stored ones).
	path := field.NewPath("spec", "finalizers")
	if old != nil {
		if o, ok := old.(*corev1.Namespace); ok && slices.Equal(o.Spec.Finalizers, ns.Spec.Finalizers) {
			return nil
		}
	}
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		name, at := string(f), path
		if old != nil {
			at = path.Index(i)
		}
		errs = append(errs, apivalidation.ValidateFinalizerName(name, at)...)
		if !strings.Contains(name, "/") && !standardFinalizers[name] {
			errs = append(errs, field.Invalid(at, name, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// validateNamespaceStatus is kube's ValidateNamespaceStatusUpdate: the
// phase goes with the deletionTimestamp (an empty one is defaulted to
// Active on decode). A namespace not being deleted cannot be set
// Terminating, which would refuse every create in it.
func validateNamespaceStatus(obj, old runtime.Object) field.ErrorList {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns == nil {
		return unexpectedType(obj, "*v1.Namespace")
	}
	phase := ns.Status.Phase
	if phase == "" {
		phase = corev1.NamespaceActive
	}
	path := field.NewPath("status", "Phase")
	switch deleting := !ns.DeletionTimestamp.IsZero(); {
	case !deleting && phase != corev1.NamespaceActive:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
	case deleting && phase != corev1.NamespaceTerminating:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// ---------------------------------------------------------------- ConfigMap

func validateConfigMap(obj, old runtime.Object) field.ErrorList {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm == nil {
		return unexpectedType(obj, "*v1.ConfigMap")
	}
	var errs field.ErrorList
	if old != nil {
		oldCM, ok := old.(*corev1.ConfigMap)
		if !ok || oldCM == nil {
			return unexpectedType(old, "*v1.ConfigMap")
		}
		if isTrue(oldCM.Immutable) {
			if !isTrue(cm.Immutable) {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
			}
			// Semantic equality: a missing map and an empty one are the
			// same (storage does not keep the difference).
			if !equality.Semantic.DeepEqual(cm.Data, oldCM.Data) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
			}
			if !equality.Semantic.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
				errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableWhenSetMsg))
			}
		}
	}

	total := 0
	dataPath := field.NewPath("data")
	for _, k := range sortedKeys(cm.Data) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, msg))
		}
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[k])
	}
	binPath := field.NewPath("binaryData")
	for _, k := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(binPath.Key(k), k, msg))
		}
		total += len(cm.BinaryData[k])
	}
	if total > maxDataSize {
		// The whole object is meant: kube reports the field as "[]".
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

// ------------------------------------------------------------------- Secret

// secretPrepareForCreate and secretPrepareForUpdate do what kube-apiserver
// does while decoding a Secret: stringData is merged into data (stringData
// wins) and dropped, and an empty type becomes Opaque.
func secretPrepareForCreate(obj runtime.Object) {
	if s, ok := obj.(*corev1.Secret); ok && s != nil {
		normalizeSecret(s)
	}
}

func secretPrepareForUpdate(obj, _ runtime.Object) {
	if s, ok := obj.(*corev1.Secret); ok && s != nil {
		normalizeSecret(s)
	}
}

func normalizeSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

func validateSecret(obj, old runtime.Object) field.ErrorList {
	s, ok := obj.(*corev1.Secret)
	if !ok || s == nil {
		return unexpectedType(obj, "*v1.Secret")
	}
	// Validate the data as it will be stored, even if stringData was not
	// merged yet.
	data := s.Data
	if len(s.StringData) > 0 {
		data = make(map[string][]byte, len(s.Data)+len(s.StringData))
		for k, v := range s.Data {
			data[k] = v
		}
		for k, v := range s.StringData {
			data[k] = []byte(v)
		}
	}

	var errs field.ErrorList
	if old != nil {
		oldS, ok := old.(*corev1.Secret)
		if !ok || oldS == nil {
			return unexpectedType(old, "*v1.Secret")
		}
		errs = append(errs, apivalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))...)
		if isTrue(oldS.Immutable) {
			if !isTrue(s.Immutable) {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
			}
			if !equality.Semantic.DeepEqual(data, oldS.Data) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
			}
		}
	}

	dataPath := field.NewPath("data")
	total := 0
	for _, k := range sortedKeys(data) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(dataPath.Key(k), k, msg))
		}
		total += len(data[k])
	}
	if total > maxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxDataSize))
	}

	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the service account name is required; the token controller
		// fills in the uid annotation and the token data later.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		errs = append(errs, requireJSONKey(data, dataPath, corev1.DockerConfigKey)...)
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, requireJSONKey(data, dataPath, corev1.DockerConfigJsonKey)...)
	case corev1.SecretTypeBasicAuth:
		// Either key may be empty or missing, but not both missing.
		_, hasUser := data[corev1.BasicAuthUsernameKey]
		_, hasPassword := data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			errs = append(errs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		// The keys must exist; their content is not checked.
		if _, ok := data[corev1.TLSCertKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := data[corev1.TLSPrivateKeyKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

// requireJSONKey checks that data[key] exists and holds a JSON object.
func requireJSONKey(data map[string][]byte, dataPath *field.Path, key string) field.ErrorList {
	raw, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(raw, &map[string]interface{}{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// ----------------------------------------------------------- ServiceAccount

// serviceAccountPrepareForCreate and serviceAccountPrepareForUpdate reduce
// each secrets[] reference to its name, as kube-apiserver does.
func serviceAccountPrepareForCreate(obj runtime.Object) {
	if sa, ok := obj.(*corev1.ServiceAccount); ok && sa != nil {
		cleanSecretRefs(sa)
	}
}

func serviceAccountPrepareForUpdate(obj, _ runtime.Object) {
	if sa, ok := obj.(*corev1.ServiceAccount); ok && sa != nil {
		cleanSecretRefs(sa)
	}
}

func cleanSecretRefs(sa *corev1.ServiceAccount) {
	for i := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: sa.Secrets[i].Name}
	}
}

// ------------------------------------------------------------------- Events

// validateCoreEvent checks an Event written through core/v1: only the
// legacy checks, for backwards compatibility.
func validateCoreEvent(obj, _ runtime.Object) field.ErrorList {
	e, ok := asCoreEvent(obj)
	if !ok {
		return unexpectedType(obj, "*v1.Event")
	}
	return legacyEventChecks(e, corev1.SchemeGroupVersion)
}

// validateEventsV1Event checks an Event written through events.k8s.io/v1:
// the legacy checks plus the strict ones. Like kube-apiserver, it validates
// the core form, so errors name core fields (message, involvedObject, …)
// except reportingController.
func validateEventsV1Event(obj, old runtime.Object) field.ErrorList {
	e, ok := asCoreEvent(obj)
	if !ok {
		return unexpectedType(obj, "*v1.Event (events.k8s.io)")
	}
	gv := eventsv1.SchemeGroupVersion
	errs := legacyEventChecks(e, gv)

	if old == nil {
		// kube's strict checks start with the core metadata checks: the
		// name a DNS subdomain, finalizers kube's or qualified.
		errs = append(errs, withKubeFinalizers(func(runtime.Object, runtime.Object) field.ErrorList {
			return apivalidation.ValidateObjectMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
		})(obj, nil)...)
		errs = append(errs, eventSeriesChecks(e)...)
		if e.EventTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
		}
		if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
			errs = append(errs, field.Invalid(field.NewPath("type"), "", "has invalid value: "+e.Type))
		}
		if !e.FirstTimestamp.IsZero() {
			errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
		}
		if !e.LastTimestamp.IsZero() {
			errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
		}
		if e.Count != 0 {
			errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
		}
		if e.Source.Component != "" || e.Source.Host != "" {
			errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
		}
		return errs
	}

	o, ok := asCoreEvent(old)
	if !ok {
		return unexpectedType(old, "*v1.Event (events.k8s.io)")
	}
	if !equality.Semantic.DeepEqual(e.Series, o.Series) {
		errs = append(errs, eventSeriesChecks(e)...)
	}
	immutable := func(newVal, oldVal interface{}, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
	}
	// kube validates its internal types, whose struct fields carry no json
	// tags: a changed reference or source is printed with Go's names.
	immutable(*internalRef(&e.InvolvedObject), *internalRef(&o.InvolvedObject), "involvedObject")
	immutable(e.Reason, o.Reason, "reason")
	immutable(e.Message, o.Message, "message")
	immutable(core.EventSource{Component: e.Source.Component, Host: e.Source.Host}, core.EventSource{Component: o.Source.Component, Host: o.Source.Host}, "source")
	immutable(e.FirstTimestamp, o.FirstTimestamp, "firstTimestamp")
	immutable(e.LastTimestamp, o.LastTimestamp, "lastTimestamp")
	immutable(e.Count, o.Count, "count")
	// kube-apiserver checks reason a second time here, so a changed reason
	// is reported twice; kept for identical error lists.
	immutable(e.Reason, o.Reason, "reason")
	immutable(e.Type, o.Type, "type")
	// eventTime only has to agree to the microsecond: clients that
	// serialise it at microsecond precision must be able to write back.
	if !e.EventTime.Time.Truncate(time.Microsecond).Equal(o.EventTime.Time.Truncate(time.Microsecond)) {
		errs = append(errs, field.Invalid(field.NewPath("eventTime"), e.EventTime, apivalidation.FieldImmutableErrorMsg))
	}
	immutable(e.Action, o.Action, "action")
	immutable(internalRef(e.Related), internalRef(o.Related), "related")
	immutable(e.ReportingController, o.ReportingController, "reportingController")
	immutable(e.ReportingInstance, o.ReportingInstance, "reportingInstance")
	return errs
}

// internalRef is r as kube's internal ObjectReference (nil stays nil).
func internalRef(r *corev1.ObjectReference) *core.ObjectReference {
	if r == nil {
		return nil
	}
	return &core.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
		APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
}

func eventSeriesChecks(e *corev1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// legacyEventChecks are the checks every Event write gets. Events without
// eventTime (the old style) only need their namespace to agree with
// involvedObject.namespace; events with eventTime need the reporting
// fields, action and reason, within length limits. requestGV decides how
// the reporting controller field is named in errors.
func legacyEventChecks(e *corev1.Event, requestGV schema.GroupVersion) field.ErrorList {
	var errs field.ErrorList
	reportingField := "reportingController"
	if requestGV == corev1.SchemeGroupVersion {
		reportingField = "reportingComponent"
	}
	nsPath := field.NewPath("involvedObject", "namespace")
	const nsMismatch = "does not match event.namespace"

	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			// About a cluster-scoped object: the event must be in no
			// namespace or in "default" (old clients).
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, nsMismatch))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, nsMismatch))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, nsMismatch))
		}
		rcPath := field.NewPath(reportingField)
		if e.ReportingController == "" {
			errs = append(errs, field.Required(rcPath, ""))
		}
		for _, msg := range content.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(rcPath, e.ReportingController, msg))
		}
		errs = append(errs, requiredLimited(e.ReportingInstance, "reportingInstance", eventReportingInstanceMax)...)
		errs = append(errs, requiredLimited(e.Action, "action", eventActionMax)...)
		errs = append(errs, requiredLimited(e.Reason, "reason", eventReasonMax)...)
		if len(e.Message) > eventNoteMax {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %d characters", eventNoteMax)))
		}
	}
	for _, msg := range content.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

func requiredLimited(value, name string, limit int) field.ErrorList {
	var errs field.ErrorList
	if value == "" {
		errs = append(errs, field.Required(field.NewPath(name), ""))
	}
	if len(value) > limit {
		errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %d characters", limit)))
	}
	return errs
}

// -------------------------------------------------------------------- Lease

// Lease spec.strategy and spec.preferredHolder belong to the
// CoordinatedLeaderElection feature, which is off by default in
// kube-apiserver v1.35 (beta, default false): they are dropped on create,
// and on update unless the stored object already has them.
func leasePrepareForCreate(obj runtime.Object) {
	if l, ok := obj.(*coordinationv1.Lease); ok && l != nil {
		l.Spec.Strategy = nil
		l.Spec.PreferredHolder = nil
	}
}

func leasePrepareForUpdate(obj, old runtime.Object) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l == nil {
		return
	}
	oldL, _ := old.(*coordinationv1.Lease)
	if oldL == nil || oldL.Spec.Strategy == nil {
		l.Spec.Strategy = nil
	}
	if oldL == nil || oldL.Spec.PreferredHolder == nil {
		l.Spec.PreferredHolder = nil
	}
}

func validateLease(obj, _ runtime.Object) field.ErrorList {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l == nil {
		return unexpectedType(obj, "*v1.Lease")
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if n := l.Spec.LeaseTransitions; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *n, "must be greater than or equal to 0"))
	}
	if s := l.Spec.Strategy; s != nil {
		// A strategy is either one Kubernetes defines or a domain-prefixed
		// qualified name.
		path := spec.Child("strategy")
		if !strings.Contains(string(*s), "/") {
			if *s != coordinationv1.OldestEmulationVersion {
				errs = append(errs, field.NotSupported(path, *s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
			}
		} else {
			for _, msg := range content.IsQualifiedName(string(*s)) {
				errs = append(errs, field.Invalid(path, *s, msg))
			}
		}
	}
	if p := l.Spec.PreferredHolder; p != nil && *p != "" && (l.Spec.Strategy == nil || *l.Spec.Strategy == "") {
		errs = append(errs, field.Forbidden(spec.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
