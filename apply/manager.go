package apply

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/tabula-dev/tabula/schema"
)

// ServerSideApply is the media type of a Server-Side Apply patch (YAML,
// or JSON, which is YAML too).
const ServerSideApply Kind = "application/apply-patch+yaml"

// Manager keeps the managedFields of one kind's objects as written
// through one subresource ("" for the main resource), with kube's own
// field manager (k8s.io/apimachinery/pkg/util/managedfields) on the
// kind's structured-merge-diff types: the same ownership, conflicts and
// merges as kube-apiserver's, the same encoding of the entries.
type Manager struct {
	t  *schema.Type
	mf *schema.ManagedFields
	fm *managedfields.FieldManager
}

// NewManager returns the field manager of t written through subresource.
func NewManager(t *schema.Type, subresource string) (*Manager, error) {
	if t.ManagedFields == nil {
		return nil, fmt.Errorf("%s: no field management", t.GroupVersionKind())
	}
	mf, err := t.ManagedFields()
	if err != nil {
		return nil, err
	}
	var filters map[fieldpath.APIVersion]fieldpath.Filter
	if owned := t.OwnedPaths[subresource]; len(owned) > 0 {
		var matchers []*fieldpath.SetMatcher
		for _, f := range owned {
			matchers = append(matchers, fieldpath.MakePrefixMatcherOrDie(dotted(f)...))
		}
		filters = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(t.GroupVersion().String()): fieldpath.NewIncludeMatcherFilter(matchers...),
		}
	} else if reset := t.ResetFields(subresource); len(reset) > 0 {
		set := fieldpath.NewSet()
		for _, f := range reset {
			set.Insert(fieldpath.MakePathOrDie(dotted(f)...))
		}
		filters = fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(t.GroupVersion().String()): set,
		})
	}
	newManager := managedfields.NewDefaultFieldManager
	if mf.Custom {
		newManager = managedfields.NewDefaultCRDFieldManager
	}
	fm, err := newManager(mf.Types, mf.Convertor, mf.Defaulter, mf.Creater, t.GroupVersionKind(), mf.Hub, subresource, filters)
	if err != nil {
		return nil, err
	}
	return &Manager{t: t, mf: mf, fm: fm}, nil
}

// dotted is the path elements of a dotted field path ("spec.containers"),
// with "*" any list item (for a prefix matcher).
func dotted(path string) []interface{} {
	var parts []interface{}
	for _, name := range strings.Split(path, ".") {
		if name == "*" {
			parts = append(parts, fieldpath.MatchAnyPathElement())
		} else {
			parts = append(parts, name)
		}
	}
	return parts
}

// Update records in obj's managedFields what manager changed from live
// to obj (operation Update). live is an empty object for a create. A
// body that sets managedFields to [] or [{}] resets them; a body without
// them keeps the live ones. A built-in object is first defaulted and
// passed through kube's internal version, as kube-apiserver decodes a
// request body before its field manager sees it: the writer owns the
// defaults of what it wrote, and what the conversion moves (a Secret's
// stringData into data) where it lands. Custom resources were defaulted
// when decoded.
func (m *Manager) Update(live, obj runtime.Object, manager string) runtime.Object {
	if !m.mf.Custom {
		m.mf.Defaulter.Default(obj)
		obj = m.viaHub(obj)
	}
	return m.fm.UpdateNoErrors(live, obj, manager)
}

// viaHub converts obj to the hub version and back; on failure obj is
// kept as it is.
func (m *Manager) viaHub(obj runtime.Object) runtime.Object {
	in, err := m.mf.Convertor.ConvertToVersion(obj, m.mf.Hub)
	if err != nil {
		return obj
	}
	out, err := m.mf.Convertor.ConvertToVersion(in, m.t.GroupVersion())
	if err != nil {
		return obj
	}
	out.GetObjectKind().SetGroupVersionKind(m.t.GroupVersionKind())
	return out
}

// CanonicalFields re-encodes each entry's field set in the order the
// field manager writes sets (structured-merge-diff's). Entries that came
// by way of a map are in JSON's lexical key order instead: kube's
// ScaleHandler returns its entries through an unstructured object, so
// after a scale k:{"port":443,…} precedes k:{"port":80,…}. The next apply
// re-encodes every entry, and storing its output would then be a write
// that changes nothing but that order.
func CanonicalFields(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, error) {
	for i, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		raw, err := set.ToJSON()
		if err != nil {
			return nil, err
		}
		entries[i].FieldsV1 = &metav1.FieldsV1{Raw: raw}
	}
	return entries, nil
}

// Empty is the live object a create starts from.
func (m *Manager) Empty() runtime.Object {
	obj := m.t.New()
	obj.GetObjectKind().SetGroupVersionKind(m.t.GroupVersionKind())
	return obj
}

// Applied is what an apply made.
type Applied struct {
	// Obj is the object to store, in the Type's own form.
	Obj runtime.Object
	// Conditional: the configuration names a resourceVersion, which the
	// write must then match.
	Conditional bool
	// Warnings report duplicate fields under fieldValidation Warn.
	Warnings []string
}

// Apply merges the applied configuration patch (YAML or JSON) into live
// as manager (operation Apply). Fields other managers own with other
// values are a 409 Conflict listing each, unless force takes them over.
// Duplicate fields are judged once the apply succeeds, as kube-apiserver
// does, by fieldValidation (Strict: 400, Warn: Warnings, Ignore).
func (m *Manager) Apply(live runtime.Object, patch []byte, manager string, force bool, fieldValidation string) (Applied, error) {
	// kube's YAML reading: integers stay integers.
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(patch, &applied.Object); err != nil {
		return Applied{}, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	conditional := applied.GetResourceVersion() != ""
	obj, err := m.fm.Apply(live, applied, manager, force)
	if err != nil {
		return Applied{}, serverError(err)
	}
	// Built-in kinds come back in kube's internal version.
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != m.t.GroupVersionKind() {
		if obj, err = m.mf.Convertor.ConvertToVersion(obj, m.t.GroupVersion()); err != nil {
			return Applied{}, serverError(err)
		}
		obj.GetObjectKind().SetGroupVersionKind(m.t.GroupVersionKind())
	}
	res := Applied{Obj: obj, Conditional: conditional}
	if fieldValidation == metav1.FieldValidationStrict || fieldValidation == metav1.FieldValidationWarn {
		if err := yaml.UnmarshalStrict(patch, &map[string]interface{}{}); err != nil {
			if fieldValidation == metav1.FieldValidationStrict {
				return Applied{}, apierrors.NewBadRequest("error strict decoding YAML: " + err.Error())
			}
			res.Warnings = append(res.Warnings, err.Error())
		}
	}
	return res, nil
}

// serverError keeps the field manager's Status errors (400, 409) and
// answers anything else as kube-apiserver answers an error that is not a
// Status: 500 with the error's text and no reason.
func serverError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}
