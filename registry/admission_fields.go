package registry

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	handlerfieldmanager "k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	"k8s.io/apiserver/pkg/warning"
)

// fieldsGuard wraps admission as kube's handlers wrap theirs
// (handlerfieldmanager.NewManagedFieldsValidatingAdmissionController):
// managedFields that mutating admission leaves invalid are put back as
// they were, with kube's warning, instead of failing the write.
//
// It differs in one thing: entries the write's field manager has just
// made (admissionAttributes.fieldsValid) and that admission left as they
// were are not decoded again to be judged. Decoding every entry was ~3 %
// of a create's CPU, spent on entries the same decoder had just encoded.
// Entries admission changed, and entries no field manager made (a kind
// without field management keeps what the client sent), are judged as
// kube judges them; invalid ones are put back from the copy taken before
// admission where there is one, so bytes a plugin changed in place do
// not stay.
type fieldsGuard struct {
	wrap admission.Interface
}

var (
	_ admission.MutationInterface   = fieldsGuard{}
	_ admission.ValidationInterface = fieldsGuard{}
)

func (g fieldsGuard) Handles(op admission.Operation) bool { return g.wrap.Handles(op) }

func (g fieldsGuard) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := g.wrap.(admission.MutationInterface)
	if !ok {
		return nil
	}
	attrs, _ := a.(*admissionAttributes)
	acc, err := meta.Accessor(admittedObject(a, attrs))
	if err != nil {
		return m.Admit(ctx, a, o)
	}
	before := acc.GetManagedFields()
	var kept []metav1.ManagedFieldsEntry
	if attrs != nil && attrs.fieldsValid && len(before) > 0 {
		// A copy, bytes and all: a plugin may change the entries in place.
		kept = make([]metav1.ManagedFieldsEntry, len(before))
		for i := range before {
			before[i].DeepCopyInto(&kept[i])
		}
	}
	if err := m.Admit(ctx, a, o); err != nil {
		return err
	}
	// A plugin may have asked for the object since: what it changed is
	// in the copy it was given, which is converted back.
	if acc, err = meta.Accessor(admittedObject(a, attrs)); err != nil {
		return nil
	}
	after := acc.GetManagedFields()
	if kept != nil && sameEntries(kept, after) {
		return nil
	}
	if err := managedfields.ValidateManagedFields(after); err != nil {
		if kept != nil {
			// As they were before admission, even if changed in place.
			before = kept
		}
		acc.SetManagedFields(before)
		warning.AddWarning(ctx, "", fmt.Sprintf(handlerfieldmanager.InvalidManagedFieldsAfterMutatingAdmissionWarningFormat, err.Error()))
	}
	return nil
}

// admittedObject is the object as the plugins have it. Until one asks
// for it (GetObject, which converts it to kube's internal version) that
// is the written object itself: reading its entries here must not make
// the conversion — a deep copy and a conversion on every write — that
// most writes' plugins never ask for.
func admittedObject(a admission.Attributes, attrs *admissionAttributes) runtime.Object {
	if attrs != nil && !attrs.converted {
		return attrs.obj
	}
	return a.GetObject()
}

func (g fieldsGuard) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if v, ok := g.wrap.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// sameEntries says a and b are the same entries, field by field.
func sameEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.FieldsType != y.FieldsType || x.Subresource != y.Subresource {
			return false
		}
		if (x.Time == nil) != (y.Time == nil) || x.Time != nil && !x.Time.Equal(y.Time) {
			return false
		}
		if (x.FieldsV1 == nil) != (y.FieldsV1 == nil) || x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.Raw, y.FieldsV1.Raw) {
			return false
		}
	}
	return true
}
