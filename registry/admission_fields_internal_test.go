package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
)

// mutator is a mutating plugin that runs fn on the object's metadata.
type mutator struct{ fn func(metav1.Object) }

func (mutator) Handles(admission.Operation) bool { return true }
func (m mutator) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	m.fn(mustAccessor(a.GetObject()))
	return nil
}

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

// createAttributes are the attributes of a create of ConfigMap cm, as
// admitPhases makes them.
func createAttributes(cm *corev1.ConfigMap, fieldsValid bool) *admissionAttributes {
	return &admissionAttributes{
		Attributes: admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, cm.Namespace, cm.Name,
			schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", admission.Create, &metav1.CreateOptions{}, false, nil),
		obj: cm, fieldsValid: fieldsValid,
	}
}

// TestFieldsGuard: entries admission leaves invalid are put back with
// kube's warning, whether a plugin replaced them or changed their bytes in
// place; entries left as the field manager made them stay, unwarned; and
// entries no field manager made are judged as kube judges them.
func TestFieldsGuard(t *testing.T) {
	valid := func() []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}}
	}
	invalid := func() []metav1.ManagedFieldsEntry {
		e := valid()
		e[0].FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"x":`)}
		return e
	}
	for _, c := range []struct {
		name        string
		start       func() []metav1.ManagedFieldsEntry
		fieldsValid bool
		mutate      func(metav1.Object)
		want        string // the entries' bytes after admission
		warned      bool
	}{
		{"unchanged", valid, true, func(metav1.Object) {}, `{"f:data":{"f:k":{}}}`, false},
		{"other fields changed", valid, true, func(o metav1.Object) { o.SetLabels(map[string]string{"a": "b"}) }, `{"f:data":{"f:k":{}}}`, false},
		{"replaced with invalid", valid, true, func(o metav1.Object) { o.SetManagedFields(invalid()) }, `{"f:data":{"f:k":{}}}`, true},
		{"changed in place", valid, true, func(o metav1.Object) { copy(o.GetManagedFields()[0].FieldsV1.Raw, `{"x":`) }, `{"f:data":{"f:k":{}}}`, true},
		{"replaced with valid", valid, true, func(o metav1.Object) {
			e := valid()
			e[0].FieldsV1.Raw = []byte(`{"f:data":{}}`)
			o.SetManagedFields(e)
		}, `{"f:data":{}}`, false},
		{"client's invalid entries", invalid, false, func(metav1.Object) {}, `{"x":`, true},
		// None before: none after, as kube puts back (not an empty list).
		{"invalid added to none", func() []metav1.ManagedFieldsEntry { return nil }, true, func(o metav1.Object) { o.SetManagedFields(invalid()) }, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ManagedFields: c.start()}}
			a := createAttributes(cm, c.fieldsValid)
			var w warnings
			ctx := warning.WithWarningRecorder(context.Background(), &w)
			if err := (fieldsGuard{wrap: mutator{c.mutate}}).Admit(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			entries := mustAccessor(a.GetObject()).GetManagedFields()
			got := ""
			if entries != nil {
				got = string(entries[0].FieldsV1.Raw)
			}
			if got != c.want {
				t.Errorf("entries after admission: %q, want %q", got, c.want)
			}
			warned := len(w) == 1 && strings.Contains(w[0], ".metadata.managedFields was in an invalid state after admission")
			if warned != c.warned || len(w) > 1 {
				t.Errorf("warnings %q, want a managedFields warning: %v", w, c.warned)
			}
		})
	}
}

// passer is a mutating plugin that never asks for the object, as most of
// kube's plugins do not for most kinds (they look at the resource first).
type passer struct{}

func (passer) Handles(admission.Operation) bool { return true }
func (passer) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// TestFieldsGuardLeavesObjectVersioned: reading the entries to guard them
// does not convert the object to kube's internal version (a deep copy and
// a conversion) when no plugin asks for it; the entries are judged all
// the same, from the written object.
func TestFieldsGuardLeavesObjectVersioned(t *testing.T) {
	for _, c := range []struct {
		name        string
		raw         string
		fieldsValid bool
		warned      bool
	}{
		{"field manager's entries", `{"f:data":{"f:k":{}}}`, true, false},
		{"client's invalid entries", `{"x":`, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(c.raw)}}}}}
			a := createAttributes(cm, c.fieldsValid)
			var w warnings
			ctx := warning.WithWarningRecorder(context.Background(), &w)
			if err := (fieldsGuard{wrap: passer{}}).Admit(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			if a.converted || a.internal != nil {
				t.Errorf("the object was converted for the guard alone (internal %T)", a.internal)
			}
			if got := string(cm.ManagedFields[0].FieldsV1.Raw); got != c.raw {
				t.Errorf("entries after admission: %q, want %q", got, c.raw)
			}
			warned := len(w) == 1 && strings.Contains(w[0], ".metadata.managedFields was in an invalid state after admission")
			if warned != c.warned || len(w) > 1 {
				t.Errorf("warnings %q, want a managedFields warning: %v", w, c.warned)
			}
		})
	}
}
