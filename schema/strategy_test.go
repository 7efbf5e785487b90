package schema

import (
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ptr[T any](v T) *T { return &v }

func errorStrings(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// statusCause is an error as it appears in a Status's details.causes.
type statusCause struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

func causesOf(errs field.ErrorList) []statusCause {
	out := []statusCause{}
	for _, e := range errs {
		out = append(out, statusCause{Reason: string(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	return out
}

func TestBuiltinStrategyHooksSet(t *testing.T) {
	for _, typ := range NewBuiltin().Types() {
		t.Run(typ.GroupVersionKind().String(), func(t *testing.T) {
			if typ.PrepareForCreate == nil || typ.PrepareForUpdate == nil || typ.Validate == nil {
				t.Errorf("hooks: got create %v, update %v, validate %v set; want all set",
					typ.PrepareForCreate != nil, typ.PrepareForUpdate != nil, typ.Validate != nil)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		obj                      runtime.Object
		want                     runtime.Object
	}{
		{
			name: "namespace gets Active, kubernetes finalizer and name label", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b"}}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b", "kubernetes.io/metadata.name": "ns"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "namespace status sent by the client is replaced", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"kubernetes.io/metadata.name": "other"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x"}},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
					{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue},
				}},
			},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"kubernetes.io/metadata.name": "ns"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x", "kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "namespace keeps an existing kubernetes finalizer once", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"kubernetes.io/metadata.name": "ns"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "namespace without a name yet gets no label", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ns-"}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "ns-"},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "secret stringData merged into data, type defaulted", version: "v1", resource: "secrets",
			obj: &corev1.Secret{
				Data:       map[string][]byte{"password": []byte("s3cr3t"), "user": []byte("old")},
				StringData: map[string]string{"user": "admin", "extra": "x"},
			},
			want: &corev1.Secret{
				Data: map[string][]byte{"password": []byte("s3cr3t"), "user": []byte("admin"), "extra": []byte("x")},
				Type: corev1.SecretTypeOpaque,
			},
		},
		{
			name: "secret stringData without data", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{StringData: map[string]string{"username": "admin"}, Type: corev1.SecretTypeBasicAuth},
			want: &corev1.Secret{Data: map[string][]byte{"username": []byte("admin")}, Type: corev1.SecretTypeBasicAuth},
		},
		{
			name: "service account secret references reduced to names", version: "v1", resource: "serviceaccounts",
			obj: &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{
				{Kind: "Secret", Namespace: "ns", Name: "tok", UID: "u", APIVersion: "v1"},
			}},
			want: &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{{Name: "tok"}}},
		},
		{
			name: "lease strategy and preferredHolder dropped", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr("h"), Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("p"),
			}},
			want: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("h")}},
		},
		{
			name: "configmap unchanged", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
			want: &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookupBuiltin(t, tt.group, tt.version, tt.resource).PrepareForCreate(tt.obj)
			if !reflect.DeepEqual(tt.obj, tt.want) {
				t.Errorf("PrepareForCreate:\ngot  %#v\nwant %#v", tt.obj, tt.want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		obj, old                 runtime.Object
		want                     runtime.Object
	}{
		{
			name: "namespace keeps stored status and finalizers", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"extra": "label"}},
				Spec:       corev1.NamespaceSpec{Finalizers: nil},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			old: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns"},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"extra": "label", "kubernetes.io/metadata.name": "ns"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "secret stringData merged and type defaulted on update", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{StringData: map[string]string{"k": "v"}},
			old:  &corev1.Secret{Type: corev1.SecretTypeOpaque},
			want: &corev1.Secret{Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque},
		},
		{
			name: "service account secret references reduced on update", version: "v1", resource: "serviceaccounts",
			obj:  &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{{Kind: "Secret", Name: "a"}, {Name: "b", FieldPath: "x"}}},
			old:  &corev1.ServiceAccount{},
			want: &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{{Name: "a"}, {Name: "b"}}},
		},
		{
			name: "lease strategy dropped when the stored lease has none", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("p")}},
			old:  &coordinationv1.Lease{},
			want: &coordinationv1.Lease{},
		},
		{
			name: "lease strategy kept when the stored lease has one", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("p")}},
			old:  &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.OldestEmulationVersion)}},
			want: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.OldestEmulationVersion)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookupBuiltin(t, tt.group, tt.version, tt.resource).PrepareForUpdate(tt.obj, tt.old)
			if !reflect.DeepEqual(tt.obj, tt.want) {
				t.Errorf("PrepareForUpdate:\ngot  %#v\nwant %#v", tt.obj, tt.want)
			}
		})
	}
}

// keyError is the error kube reports for a key IsConfigMapKey rejects.
func keyError(path, key string) string {
	return path + "[" + key + "]: Invalid value: \"" + key + "\": " + validation.IsConfigMapKey(key)[0]
}

func newEventsV1(mod func(*eventsv1.Event)) *eventsv1.Event {
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "ev1-a", Namespace: "ref-crud"},
		EventTime:           microTime("2020-01-02T03:04:05.123456Z"),
		ReportingController: "example.com/recorder",
		ReportingInstance:   "recorder-1",
		Action:              "Testing",
		Reason:              "Tested",
		Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ref-crud", Name: "cm-a", APIVersion: "v1"},
		Note:                "hello from events.k8s.io",
		Type:                "Normal",
	}
	if mod != nil {
		mod(e)
	}
	return e
}

func newCoreEvent(mod func(*corev1.Event)) *corev1.Event {
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "event-a", Namespace: "ref-crud"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ref-crud", Name: "cm-a", APIVersion: "v1"},
		Reason:         "Testing",
		Message:        "hello from the recorder",
		Type:           "Normal",
		Source:         corev1.EventSource{Component: "recorder"},
		FirstTimestamp: metaTime("2020-01-02T03:04:05Z"),
		LastTimestamp:  metaTime("2020-01-02T03:04:05Z"),
		Count:          1,
	}
	if mod != nil {
		mod(e)
	}
	return e
}

func TestValidate(t *testing.T) {
	big := strings.Repeat("x", maxDataSize/2+1)
	emptyControllerErrs := []string{"reportingComponent: Required value"}
	for _, msg := range content.IsQualifiedName("") {
		emptyControllerErrs = append(emptyControllerErrs, "reportingComponent: Invalid value: \"\": "+msg)
	}

	tests := []struct {
		name                     string
		group, version, resource string
		obj, old                 runtime.Object
		want                     []string
	}{
		// Namespace
		{
			name: "namespace with standard and qualified finalizers", version: "v1", resource: "namespaces",
			obj:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/x"}}},
			want: []string{},
		},
		{
			name: "namespace with an unqualified custom finalizer", version: "v1", resource: "namespaces",
			obj:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"custom"}}},
			want: []string{`spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified`},
		},
		{
			name: "namespace update keeping its finalizers does not recheck them", version: "v1", resource: "namespaces",
			obj:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"custom"}}},
			old:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"custom"}}},
			want: []string{},
		},
		{
			// Through finalize: kube's ValidateNamespaceFinalizeUpdate.
			name: "namespace update changing its finalizers checks them by index", version: "v1", resource: "namespaces",
			obj:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "custom"}}},
			old:  &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}},
			want: []string{`spec.finalizers[1]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified`},
		},

		// ConfigMap
		{
			name: "configmap valid", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"a.b": "1", "C_D-e": "2"}, BinaryData: map[string][]byte{"bin": {0}}},
			want: []string{},
		},
		{
			name: "configmap invalid keys, sorted", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"z z": "1", "a/b": "2"}, BinaryData: map[string][]byte{"b!n": {0}}},
			want: []string{keyError("data", "a/b"), keyError("data", "z z"), keyError("binaryData", "b!n")},
		},
		{
			name: "configmap key in data and binaryData", version: "v1", resource: "configmaps",
			obj: &corev1.ConfigMap{Data: map[string]string{"k": "1"}, BinaryData: map[string][]byte{"k": {0}}},
			want: []string{
				// kube checks the other map from data's side only.
				`data[k]: Invalid value: "k": duplicate of key present in binaryData`,
			},
		},
		{
			name: "configmap too large across data and binaryData", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"a": big}, BinaryData: map[string][]byte{"b": []byte(big)}},
			want: []string{"[]: Too long: may not be more than 1048576 bytes"},
		},
		{
			name: "configmap exactly 1 MiB", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", maxDataSize)}},
			want: []string{},
		},
		{
			name: "immutable configmap: data, binaryData and immutable changed", version: "v1", resource: "configmaps",
			obj: &corev1.ConfigMap{Data: map[string]string{"k": "changed"}, Immutable: ptr(false)},
			old: &corev1.ConfigMap{Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {1}}, Immutable: ptr(true)},
			want: []string{
				"immutable: Forbidden: field is immutable when `immutable` is set",
				"data: Forbidden: field is immutable when `immutable` is set",
				"binaryData: Forbidden: field is immutable when `immutable` is set",
			},
		},
		{
			name: "immutable configmap: immutable unset", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"k": "v"}},
			old:  &corev1.ConfigMap{Data: map[string]string{"k": "v"}, Immutable: ptr(true)},
			want: []string{"immutable: Forbidden: field is immutable when `immutable` is set"},
		},
		{
			name: "immutable configmap: empty and missing data are equal", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{}, Immutable: ptr(true), ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"new": "label"}}},
			old:  &corev1.ConfigMap{Immutable: ptr(true)},
			want: []string{},
		},
		{
			name: "mutable configmap may become immutable with new data", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{Data: map[string]string{"k": "new"}, Immutable: ptr(true)},
			old:  &corev1.ConfigMap{Data: map[string]string{"k": "v"}},
			want: []string{},
		},

		// Secret
		{
			name: "opaque secret valid", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil}},
			want: []string{},
		},
		{
			name: "secret invalid key in data and in stringData", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Data: map[string][]byte{"bad key": nil}, StringData: map[string]string{"x/y": ""}},
			want: []string{keyError("data", "bad key"), keyError("data", "x/y")},
		},
		{
			name: "secret too large", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Data: map[string][]byte{"a": []byte(big), "b": []byte(big)}},
			want: []string{"data: Too long: may not be more than 1048576 bytes"},
		},
		{
			name: "service account token secret needs the account name", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			want: []string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"},
		},
		{
			name: "service account token secret with the account name", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken, ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/service-account.name": "default"}}},
			want: []string{},
		},
		{
			name: "dockercfg secret without .dockercfg", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeDockercfg},
			want: []string{"data[.dockercfg]: Required value"},
		},
		{
			name: "dockercfg secret with bad JSON", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{".dockercfg": []byte("{nope")}},
			want: []string{`data[.dockercfg]: Invalid value: "<secret contents redacted>": invalid character 'n' looking for beginning of object key string`},
		},
		{
			name: "dockerconfigjson secret valid", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}},
			want: []string{},
		},
		{
			name: "dockerconfigjson secret with a JSON array", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`[]`)}},
			want: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}`},
		},
		{
			name: "basic-auth secret with neither key", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeBasicAuth},
			want: []string{"data[username]: Required value", "data[password]: Required value"},
		},
		{
			name: "basic-auth secret with an empty username only", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": {}}},
			want: []string{},
		},
		{
			name: "ssh-auth secret with an empty key", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeSSHAuth, Data: map[string][]byte{"ssh-privatekey": {}}},
			want: []string{"data[ssh-privatekey]: Required value"},
		},
		{
			name: "tls secret missing the key", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {}}},
			want: []string{"data[tls.key]: Required value"},
		},
		{
			name: "secret of an unknown type", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: "example.com/custom"},
			want: []string{},
		},
		{
			name: "immutable secret: data changed and immutable unset", version: "v1", resource: "secrets",
			obj: &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("2")}},
			old: &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("1")}, Immutable: ptr(true)},
			want: []string{
				"immutable: Forbidden: field is immutable when `immutable` is set",
				"data: Forbidden: field is immutable when `immutable` is set",
			},
		},

		// core/v1 Event
		{
			name: "core event valid", version: "v1", resource: "events",
			obj:  newCoreEvent(nil),
			want: []string{},
		},
		{
			name: "core event in another namespace than its object", version: "v1", resource: "events",
			obj:  newCoreEvent(func(e *corev1.Event) { e.InvolvedObject.Namespace = "elsewhere" }),
			want: []string{`involvedObject.namespace: Invalid value: "elsewhere": does not match event.namespace`},
		},
		{
			name: "core event about a cluster-scoped object outside default", version: "v1", resource: "events",
			obj:  newCoreEvent(func(e *corev1.Event) { e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "n"} }),
			want: []string{`involvedObject.namespace: Invalid value: "": does not match event.namespace`},
		},
		{
			name: "core event about a cluster-scoped object in default", version: "v1", resource: "events",
			obj: newCoreEvent(func(e *corev1.Event) {
				e.Namespace = "default"
				e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "n"}
			}),
			want: []string{},
		},
		{
			name: "core event with eventTime needs the reporting fields", version: "v1", resource: "events",
			obj: newCoreEvent(func(e *corev1.Event) {
				e.EventTime = microTime("2020-01-02T03:04:05.5Z")
				e.Reason = ""
			}),
			want: append(append([]string{}, emptyControllerErrs...),
				"reportingInstance: Required value", "action: Required value", "reason: Required value"),
		},
		{
			name: "core event with eventTime and too long fields", version: "v1", resource: "events",
			obj: newCoreEvent(func(e *corev1.Event) {
				e.EventTime = microTime("2020-01-02T03:04:05.5Z")
				e.ReportingController = "example.com/c"
				e.ReportingInstance = strings.Repeat("i", 129)
				e.Action = strings.Repeat("a", 129)
				e.Reason = strings.Repeat("r", 129)
				e.Message = strings.Repeat("m", 1025)
			}),
			want: []string{
				`reportingInstance: Invalid value: "": can have at most 128 characters`,
				`action: Invalid value: "": can have at most 128 characters`,
				`reason: Invalid value: "": can have at most 128 characters`,
				`message: Invalid value: "": can have at most 1024 characters`,
			},
		},
		{
			name: "core event update is not checked for immutability", version: "v1", resource: "events",
			obj:  newCoreEvent(func(e *corev1.Event) { e.Message = "hello again"; e.Count = 2 }),
			old:  newCoreEvent(nil),
			want: []string{},
		},

		// events.k8s.io/v1 Event
		{
			name: "events.k8s.io event valid", group: "events.k8s.io", version: "v1", resource: "events",
			obj:  newEventsV1(nil),
			want: []string{},
		},
		{
			name: "events.k8s.io event without eventTime, with a bad type and legacy fields", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.EventTime = metav1.MicroTime{}
				e.Type = "Info"
				e.DeprecatedFirstTimestamp = metaTime("2020-01-02T03:04:05Z")
				e.DeprecatedLastTimestamp = metaTime("2020-01-02T03:04:05Z")
				e.DeprecatedCount = 1
				e.DeprecatedSource = corev1.EventSource{Host: "h"}
			}),
			want: []string{
				"eventTime: Required value",
				`type: Invalid value: "": has invalid value: Info`,
				`firstTimestamp: Invalid value: "": needs to be unset`,
				`lastTimestamp: Invalid value: "": needs to be unset`,
				`count: Invalid value: "": needs to be unset`,
				`source: Invalid value: "": needs to be unset`,
			},
		},
		{
			name: "events.k8s.io event reporting fields use events.k8s.io names", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.ReportingController = "Not A Name!"
				e.Regarding.Namespace = ""
			}),
			want: append([]string{`involvedObject.namespace: Invalid value: "": does not match event.namespace`},
				prefixed(`reportingController: Invalid value: "Not A Name!": `, content.IsQualifiedName("Not A Name!"))...),
		},
		{
			name: "events.k8s.io event with a short series", group: "events.k8s.io", version: "v1", resource: "events",
			obj:  newEventsV1(func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 1} }),
			want: []string{`series.count: Invalid value: "": should be at least 2`, "series.lastObservedTime: Required value"},
		},
		{
			name: "events.k8s.io update adding a series", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: microTime("2020-01-02T03:04:06Z")}
			}),
			old:  newEventsV1(nil),
			want: []string{},
		},
		{
			name: "events.k8s.io update changing immutable fields", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.Note = "updated note"
				e.Reason = "Other"
				e.Action = "Other"
				e.ReportingInstance = "recorder-2"
			}),
			old: newEventsV1(nil),
			want: []string{
				`reason: Invalid value: "Other": field is immutable`,
				`message: Invalid value: "updated note": field is immutable`,
				`reason: Invalid value: "Other": field is immutable`,
				`action: Invalid value: "Other": field is immutable`,
				`reportingInstance: Invalid value: "recorder-2": field is immutable`,
			},
		},
		{
			name: "events.k8s.io update moving eventTime below a microsecond", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.EventTime = metav1.NewMicroTime(e.EventTime.Add(400 * time.Nanosecond))
			}),
			old:  newEventsV1(nil),
			want: []string{},
		},
		{
			name: "events.k8s.io update moving eventTime", group: "events.k8s.io", version: "v1", resource: "events",
			obj: newEventsV1(func(e *eventsv1.Event) {
				e.EventTime = microTime("2020-01-02T03:04:06.123456Z")
			}),
			old:  newEventsV1(nil),
			want: []string{`eventTime: Invalid value: "2020-01-02T03:04:06.123456Z": field is immutable`},
		},

		// Lease
		{
			name: "lease valid", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr(int32(15)), LeaseTransitions: ptr(int32(0))}},
			want: []string{},
		},
		{
			name: "lease zero duration and negative transitions", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr(int32(0)), LeaseTransitions: ptr(int32(-1))}},
			old: &coordinationv1.Lease{},
			want: []string{
				"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
				"spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
			},
		},
		{
			name: "lease preferredHolder without strategy", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{PreferredHolder: ptr("p")}},
			want: []string{"spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"},
		},

		// ServiceAccount
		{
			name: "service account has no kind-specific checks", version: "v1", resource: "serviceaccounts",
			obj:  &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{{Name: "x"}}},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := lookupBuiltin(t, tt.group, tt.version, tt.resource)
			got := errorStrings(typ.Validate(tt.obj, tt.old))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func prefixed(prefix string, msgs []string) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, prefix+m)
	}
	return out
}

func TestValidateWrongType(t *testing.T) {
	for _, typ := range NewBuiltin().Types() {
		if typ.GroupVersionKind() == gvkServiceAccount {
			continue // nothing to validate, nothing to reject
		}
		t.Run(typ.GroupVersionKind().String(), func(t *testing.T) {
			errs := typ.Validate(&metav1.Status{}, nil)
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
				t.Errorf("Validate(Status): got %q, want one internal error", errorStrings(errs))
			}
		})
	}
}

// TestValidateMatchesReference replays recorded 422 responses: the causes
// our validators produce must equal the ones kube-apiserver sent (metadata
// causes excluded, the generic path produces those).
func TestValidateMatchesReference(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		file                     string
		// build returns the new object (usually decoded from the
		// recorded request) and the stored object, nil for a create.
		build func(t *testing.T, c referenceCase) (obj, old runtime.Object)
	}{
		{
			name: "immutable configmap data", version: "v1", resource: "configmaps",
			file: "errors/immutable-configmap-update-data.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var cm corev1.ConfigMap
				decodeReference(t, c.Request.Body, &cm)
				return &cm, &corev1.ConfigMap{Data: map[string]string{"k": "v"}, Immutable: ptr(true)}
			},
		},
		{
			name: "configmap too large", version: "v1", resource: "configmaps",
			file: "errors/object-too-large-for-etcd.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				// The 1.6 MiB body is elided in the case file.
				return &corev1.ConfigMap{Data: map[string]string{"mid": strings.Repeat("y", 1677760)}}, nil
			},
		},
		{
			name: "secret type change", version: "v1", resource: "secrets",
			file: "errors/secret-type-change.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				old := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}
				obj := old.DeepCopy()
				obj.Type = corev1.SecretTypeTLS // the merge patch in the request
				return obj, old
			},
		},
		{
			name: "lease spec causes", group: "coordination.k8s.io", version: "v1", resource: "leases",
			file: "errors/invalid-many-causes.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var l coordinationv1.Lease
				decodeReference(t, c.Request.Body, &l)
				return &l, nil
			},
		},
		{
			name: "events.k8s.io note is immutable", group: "events.k8s.io", version: "v1", resource: "events",
			file: "crud/events.k8s.io-update-immutable-note.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var ev eventsv1.Event
				decodeReference(t, c.Request.Body, &ev)
				stored := loadReference(t, "crud/events.k8s.io-create.json")
				var old eventsv1.Event
				decodeReference(t, stored.Request.Body, &old)
				old.Namespace = "ref-crud"
				return &ev, &old
			},
		},
		{
			name: "events.k8s.io create accepted", group: "events.k8s.io", version: "v1", resource: "events",
			file: "crud/events.k8s.io-create.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var ev eventsv1.Event
				decodeReference(t, c.Request.Body, &ev)
				ev.Namespace = "ref-crud"
				return &ev, nil
			},
		},
		{
			name: "events.k8s.io update with series accepted", group: "events.k8s.io", version: "v1", resource: "events",
			file: "crud/events.k8s.io-update.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var ev eventsv1.Event
				decodeReference(t, c.Request.Body, &ev)
				stored := loadReference(t, "crud/events.k8s.io-create.json")
				var old eventsv1.Event
				decodeReference(t, stored.Request.Body, &old)
				old.Namespace = "ref-crud"
				return &ev, &old
			},
		},
		{
			name: "core event create accepted", version: "v1", resource: "events",
			file: "crud/events-create.json",
			build: func(t *testing.T, c referenceCase) (runtime.Object, runtime.Object) {
				var ev corev1.Event
				decodeReference(t, c.Request.Body, &ev)
				ev.Namespace = "ref-crud"
				return &ev, nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadReference(t, tt.file)
			want := []statusCause{}
			if c.Response.Status == 422 {
				var status metav1.Status
				decodeReference(t, c.Response.Body, &status)
				if status.Details == nil {
					t.Fatalf("reference status: got no details, want causes")
				}
				for _, cause := range status.Details.Causes {
					if strings.HasPrefix(cause.Field, "metadata.") {
						continue
					}
					want = append(want, statusCause{Reason: string(cause.Type), Message: cause.Message, Field: cause.Field})
				}
			} else if c.Response.Status >= 300 {
				t.Fatalf("reference status: got %d, want 2xx or 422", c.Response.Status)
			}
			obj, old := tt.build(t, c)
			typ := lookupBuiltin(t, tt.group, tt.version, tt.resource)
			if old != nil {
				typ.PrepareForUpdate(obj, old)
			} else {
				typ.PrepareForCreate(obj)
			}
			got := causesOf(typ.Validate(obj, old))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("causes:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}
