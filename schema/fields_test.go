package schema

import (
	"reflect"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func lookupBuiltin(t *testing.T, group, version, resource string) *Type {
	t.Helper()
	typ, ok := NewBuiltin().Lookup(group, version, resource)
	if !ok {
		t.Fatalf("Lookup(%q, %q, %q): got not found, want a Type", group, version, resource)
	}
	return typ
}

func TestBuiltinFieldLabels(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		want                     []string
	}{
		{name: "namespaces", version: "v1", resource: "namespaces", want: []string{"status.phase"}},
		{name: "secrets", version: "v1", resource: "secrets", want: []string{"type"}},
		{name: "configmaps", version: "v1", resource: "configmaps"},
		{name: "serviceaccounts", version: "v1", resource: "serviceaccounts"},
		{name: "leases", group: "coordination.k8s.io", version: "v1", resource: "leases"},
		{name: "core events", version: "v1", resource: "events", want: []string{
			"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "source", "type",
		}},
		{name: "events.k8s.io events", group: "events.k8s.io", version: "v1", resource: "events", want: []string{
			"regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
			"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
			"reason", "reportingController", "type", // no "source": kube's events/v1 conversion has none
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := lookupBuiltin(t, tt.group, tt.version, tt.resource)
			if !reflect.DeepEqual(typ.FieldLabels, tt.want) {
				t.Errorf("FieldLabels: got %q, want %q", typ.FieldLabels, tt.want)
			}
			if (typ.Fields != nil) != (len(tt.want) > 0) {
				t.Errorf("Fields set: got %v, want %v", typ.Fields != nil, len(tt.want) > 0)
			}
		})
	}
}

func TestBuiltinFieldValues(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		obj                      runtime.Object
		want                     map[string]string
	}{
		{
			name: "namespace phase", version: "v1", resource: "namespaces",
			obj:  &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			want: map[string]string{"status.phase": "Terminating"},
		},
		{
			name: "secret type", version: "v1", resource: "secrets",
			obj:  &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson},
			want: map[string]string{"type": "kubernetes.io/dockerconfigjson"},
		},
		{
			name: "core event, every field", version: "v1", resource: "events",
			obj: fullCoreEvent(),
			want: map[string]string{
				"involvedObject.kind": "Pod", "involvedObject.namespace": "ns", "involvedObject.name": "p",
				"involvedObject.uid": "pu", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "7",
				"involvedObject.fieldPath": "spec.containers{c}", "reason": "Why",
				"reportingComponent": "example.com/ctl", "source": "kubelet", "type": "Warning",
			},
		},
		{
			name: "core event, source falls back to the reporting controller", version: "v1", resource: "events",
			obj: &corev1.Event{
				InvolvedObject:      corev1.ObjectReference{Kind: "ConfigMap", Name: "cm-01"},
				ReportingController: "example.com/recorder",
			},
			want: map[string]string{
				"involvedObject.kind": "ConfigMap", "involvedObject.namespace": "", "involvedObject.name": "cm-01",
				"involvedObject.uid": "", "involvedObject.apiVersion": "", "involvedObject.resourceVersion": "",
				"involvedObject.fieldPath": "", "reason": "",
				"reportingComponent": "example.com/recorder", "source": "example.com/recorder", "type": "",
			},
		},
		{
			name: "events.k8s.io event, every field", group: "events.k8s.io", version: "v1", resource: "events",
			obj: fullEventsV1Event(),
			want: map[string]string{
				"regarding.kind": "Pod", "regarding.namespace": "ns", "regarding.name": "p",
				"regarding.uid": "pu", "regarding.apiVersion": "v1", "regarding.resourceVersion": "7",
				"regarding.fieldPath": "spec.containers{c}", "reason": "Why",
				"reportingController": "example.com/ctl", "source": "kubelet", "type": "Warning",
			},
		},
		{
			name: "events.k8s.io event without deprecatedSource", group: "events.k8s.io", version: "v1", resource: "events",
			obj: &eventsv1.Event{
				Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ref", Name: "cm-a"},
				ReportingController: "example.com/recorder", Reason: "Tested", Type: "Normal",
			},
			want: map[string]string{
				"regarding.kind": "ConfigMap", "regarding.namespace": "ref", "regarding.name": "cm-a",
				"regarding.uid": "", "regarding.apiVersion": "", "regarding.resourceVersion": "",
				"regarding.fieldPath": "", "reason": "Tested",
				"reportingController": "example.com/recorder", "source": "example.com/recorder", "type": "Normal",
			},
		},
		{
			name: "events.k8s.io fields of a stored core event", group: "events.k8s.io", version: "v1", resource: "events",
			obj: fullCoreEvent(),
			want: map[string]string{
				"regarding.kind": "Pod", "regarding.namespace": "ns", "regarding.name": "p",
				"regarding.uid": "pu", "regarding.apiVersion": "v1", "regarding.resourceVersion": "7",
				"regarding.fieldPath": "spec.containers{c}", "reason": "Why",
				"reportingController": "example.com/ctl", "source": "kubelet", "type": "Warning",
			},
		},
		{
			name: "wrong object type gives no values", version: "v1", resource: "secrets",
			obj:  &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := lookupBuiltin(t, tt.group, tt.version, tt.resource)
			got := typ.Fields(tt.obj)
			compared := got
			if tt.resource == "events" {
				// Both Event kinds store both groups' fields (eventFields):
				// the case names one group's, the other's must agree.
				compared = map[string]string{}
				for k := range tt.want {
					if v, ok := got[k]; ok {
						compared[k] = v
					}
				}
				if len(tt.want) > 0 && (got["involvedObject.name"] != got["regarding.name"] || got["involvedObject.kind"] != got["regarding.kind"]) {
					t.Errorf("Fields %v: want both groups' names, agreeing", got)
				}
			}
			if !reflect.DeepEqual(compared, tt.want) {
				t.Errorf("Fields:\ngot  %v\nwant %v", got, tt.want)
			}
			for _, label := range typ.FieldLabels {
				if _, ok := got[label]; !ok && len(tt.want) > 0 {
					t.Errorf("Fields: got no value for declared label %q, want one", label)
				}
			}
		})
	}
}

// TestFieldSelectorReference checks the values behind the recorded field
// selector cases: involvedObject.name on events and type on secrets.
func TestFieldSelectorReference(t *testing.T) {
	evCase := loadReference(t, "lists/fieldselector-event-involvedobject.json")
	if evCase.Response.Status != 200 {
		t.Fatalf("reference status: got %d, want 200", evCase.Response.Status)
	}
	var evList corev1.EventList
	decodeReference(t, evCase.Response.Body, &evList)
	if len(evList.Items) == 0 {
		t.Fatalf("reference event list: got 0 items, want some")
	}
	events := lookupBuiltin(t, "", "v1", "events")
	for _, item := range evList.Items {
		if got := events.Fields(&item)["involvedObject.name"]; got != "cm-01" {
			t.Errorf("event %s involvedObject.name: got %q, want %q", item.Name, got, "cm-01")
		}
	}

	secCase := loadReference(t, "lists/fieldselector-secret-type.json")
	var secList corev1.SecretList
	decodeReference(t, secCase.Response.Body, &secList)
	if len(secList.Items) == 0 {
		t.Fatalf("reference secret list: got 0 items, want some")
	}
	secrets := lookupBuiltin(t, "", "v1", "secrets")
	for _, item := range secList.Items {
		if got := secrets.Fields(&item)["type"]; got != "kubernetes.io/dockerconfigjson" {
			t.Errorf("secret %s type: got %q, want %q", item.Name, got, "kubernetes.io/dockerconfigjson")
		}
	}
}
