package schema

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	// Conversions and defaults of every built-in group, registered into
	// legacyscheme as kube-apiserver registers them.
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

// The aggregator's group registers into its own scheme on kube-apiserver;
// here it joins the others.
func init() { apiregistrationinstall.Install(legacyscheme.Scheme) }

// A kubeKind is a built-in kind whose defaults, conversions, validation
// and Table come from kube's own packages (k8s.io/kubernetes/pkg/apis/...
// and pkg/printers/internalversion): the served object is converted to
// kube's internal type, validated by the function kube-apiserver's
// strategy calls, and printed by kube-apiserver's printer. The server-owned
// parts of kube's strategies (status reset, generation) are the rules
// below, written once for every kind; kube's pkg/registry strategies are
// not imported because they link the etcd client (see README, "Built-in
// kinds").
type kubeKind struct {
	Type

	// generation says how metadata.generation is kept.
	generation generationRule
	// generationMeta, when set, names metadata whose change moves the
	// generation too (Deployments: annotations, for the legacy rollback
	// annotation; EndpointSlices: labels).
	generationMeta func(metav1.Object) map[string]string

	// warnings receives kube's internal objects (old is nil on create).
	warnings func(obj, old runtime.Object) []string
	// defaultTable: kube's storage of the kind prints the default Table
	// (Name, Created At), not the printer kube's printers package has.
	defaultTable bool
	// statusWarnings receives kube's internal objects of a status update.
	statusWarnings func(obj, old runtime.Object) []string
	// updateWarnings says when an update can warn at all, so the others
	// are not converted for nothing: kube warns on no Pod update, and on
	// a workload's only when its spec (its generation) moved.
	updateWarnings updateWarningRule

	// validate and validateUpdate receive kube's internal objects.
	validate       func(obj runtime.Object) field.ErrorList
	validateUpdate func(obj, old runtime.Object) field.ErrorList

	// dropDisabled clears the fields behind feature gates that are off,
	// unless the stored object (old, nil on create) uses them already, and
	// those the served version may not write (an EndpointSlice's
	// deprecatedTopology), as the kind's strategy does first on create and
	// update (kube's internal objects).
	dropDisabled func(obj, old runtime.Object)
	// prepareCreate adds what a kind's strategy sets on create beyond the
	// generic rules (kube's internal object).
	prepareCreate func(obj runtime.Object)
	// prepareUpdate is the same for an update of the main resource.
	prepareUpdate func(obj, old runtime.Object)
	// requested records the requesting user (kube's internal object).
	requested func(obj runtime.Object, who Requester)

	// columns and row print a kind kube's printers do not know (row
	// receives kube's internal object).
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object) []interface{}
	// clockCells opens the cells of a printed row, besides Age, that
	// show the clock (Pods' restarts "3 (5m ago)", a running Job's
	// duration, a CronJob's last schedule), given the served object.
	// Every other printer in pkg/printers/internalversion reads the clock
	// only for Age, the age of metadata.creationTimestamp (checked against
	// v1.35.4's printers.go): their rows' Cells open only that.
	clockCells func(obj runtime.Object, cells []interface{}) error

	// fields gives the selectable fields of an object of the served
	// version besides metadata.name and metadata.namespace, as the
	// kind's GetAttrs in kube's registry does; the keys it returns for
	// an empty object are the kind's field labels.
	fields func(obj runtime.Object) map[string]string

	// keepsStatusOnCreate: a create keeps the status it carries, as kube's
	// node strategy does (a kubelet registers its Node with capacity,
	// allocatable, addresses and conditions); other kinds' strategies
	// reset it.
	keepsStatusOnCreate bool
	// conversionFails: the served version holds fields in annotations
	// that may not parse, so a body is converted to kube's internal
	// object when it is decoded, and one that does not convert is refused
	// there as kube's decoder refuses it (a 400; an invalid patch).
	conversionFails bool
	// generationBeforeDrop: the generation moves on what the update sent,
	// before dropDisabled drops what the version may not write
	// (EndpointSlices: kube's strategy compares first).
	generationBeforeDrop bool

	// returnsDeleted: DELETE answers with the deleted object, as
	// kube-apiserver's storage for the kind is configured to.
	returnsDeleted bool

	// storageVersion is the version objects are stored in when it is not
	// the served one (autoscaling/v1 HPAs are stored as v2).
	storageVersion string

	// statusPrepare and statusValidate are a status write's (kube's
	// internal objects), as the kind's status strategy in kube has them:
	// what it sets beyond the narrowing, and its ValidateUpdate (nil:
	// validated as the main resource).
	statusPrepare  func(obj, old runtime.Object)
	statusValidate func(obj, old runtime.Object) field.ErrorList

	// subresourceUpdates write part of the object (kube's internal
	// objects): prepare changes obj, the request's, in place.
	subresourceUpdates map[string]kubeSubresourceUpdate
}

type kubeSubresourceUpdate struct {
	prepare  func(obj, old runtime.Object)
	validate func(obj, old runtime.Object) field.ErrorList
}

// generationRule is how a kind's strategy keeps metadata.generation.
type generationRule int

const (
	// noGeneration: the kind has none.
	noGeneration generationRule = iota
	// generationFixed: 1 on create, never moved (PriorityClasses).
	generationFixed
	// generationOnChange: 1 on create, moved when anything but metadata
	// and status changes (kube's strategies compare the spec; kinds without
	// one compare the rest of the object).
	generationOnChange
)

// statusValidator is a status write's validation on kube's internal
// objects (a status strategy's ValidateUpdate).
func statusValidator[T runtime.Object](update func(obj, old T) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
	_, v := validator[T](nil, update)
	return v
}

// validator adapts kube's typed validation functions; T is the internal
// type (a pointer).
func validator[T runtime.Object](create func(T) field.ErrorList, update func(obj, old T) field.ErrorList) (func(runtime.Object) field.ErrorList, func(obj, old runtime.Object) field.ErrorList) {
	return func(obj runtime.Object) field.ErrorList {
			o, ok := obj.(T)
			if !ok {
				return unexpectedType(obj, fmt.Sprintf("%T", *new(T)))
			}
			return create(o)
		}, func(obj, old runtime.Object) field.ErrorList {
			o, ok1 := obj.(T)
			p, ok2 := old.(T)
			if !ok1 || !ok2 {
				return unexpectedType(obj, fmt.Sprintf("%T", *new(T)))
			}
			return update(o, p)
		}
}

// fromInternal makes obj what kube-apiserver holds after its strategy ran
// on in: the conversion into a fresh object, so a field of the versioned
// kind the internal one lacks (a Pod's status.podIP, autoscaling/v1's
// currentCPUUtilizationPercentage) is what in says, not what the request
// sent. obj's apiVersion and kind stay.
func fromInternal(in, obj runtime.Object) error {
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if err := legacyscheme.Scheme.Convert(in, fresh, nil); err != nil {
		return err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// tables is kube-apiserver's Table generator with every built-in printer.
var tables = sync.OnceValue(func() *printers.HumanReadableGenerator {
	return printers.NewTableGenerator().With(printersinternal.AddHandlers)
})

// build turns the description into a Type whose hooks call kube's packages.
func (k *kubeKind) build(scheme *runtime.Scheme) *Type {
	t := k.Type
	gvk := t.GroupVersionKind()
	internal := schema.GroupVersionKind{Group: t.Group, Version: runtime.APIVersionInternal, Kind: t.Kind}
	t.New = func() runtime.Object { o, _ := scheme.New(gvk); return o }
	if listGVK := gvk.GroupVersion().WithKind(t.ListKind); scheme.Recognizes(listGVK) {
		t.NewList = func() runtime.Object { o, _ := scheme.New(listGVK); return o }
	} else {
		t.ListKind = "" // reviews are never listed
	}
	if t.StorageResource == "" {
		t.StorageResource = t.GroupResource().String()
	}
	t.ValidatesMeta = true
	t.ReturnDeletedObject = k.returnsDeleted
	if k.fields != nil {
		t.Fields = k.fields
		t.FieldLabels = slices.Sorted(maps.Keys(k.fields(t.New())))
	}
	t.ConvertFieldLabel = kubeFieldLabel(gvk)
	toInternal := func(obj runtime.Object) (runtime.Object, error) {
		in, err := legacyscheme.Scheme.New(internal)
		if err != nil {
			return nil, err
		}
		if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
			return nil, err
		}
		return in, nil
	}
	hasStatus := t.hasSubresource("status")
	if k.conversionFails {
		t.Coerce = func(obj runtime.Object) ([]string, error) {
			_, err := toInternal(obj)
			return nil, err
		}
	}
	if k.storageVersion != "" {
		stored := schema.GroupVersionKind{Group: t.Group, Version: k.storageVersion, Kind: t.Kind}
		convert := func(obj runtime.Object, to schema.GroupVersionKind) (runtime.Object, error) {
			in, err := toInternal(obj)
			if err != nil {
				return nil, err
			}
			out, err := scheme.New(to)
			if err != nil {
				return nil, err
			}
			if err := legacyscheme.Scheme.Convert(in, out, nil); err != nil {
				return nil, err
			}
			out.GetObjectKind().SetGroupVersionKind(to)
			return out, nil
		}
		t.ToStorage = func(obj runtime.Object) (runtime.Object, error) { return convert(obj, stored) }
		t.FromStorage = func(obj runtime.Object) (runtime.Object, error) { return convert(obj, gvk) }
	}

	t.PrepareForCreate = func(obj runtime.Object) {
		legacyscheme.Scheme.Default(obj)
		in, err := toInternal(obj)
		if err != nil {
			return
		}
		if hasStatus && !k.keepsStatusOnCreate {
			setField(in, "Status", nil)
		}
		if k.generation != noGeneration {
			if acc, err := meta.Accessor(in); err == nil {
				acc.SetGeneration(1)
			}
		}
		if k.dropDisabled != nil {
			k.dropDisabled(in, nil)
		}
		if k.prepareCreate != nil {
			k.prepareCreate(in)
		}
		if err := fromInternal(in, obj); err != nil {
			return
		}
		// kube-apiserver defaults again when it reads the object back, so
		// what the status reset removed is defaulted in the answer.
		legacyscheme.Scheme.Default(obj)
	}
	if k.requested != nil {
		t.Requested = func(obj runtime.Object, who Requester) {
			in, err := toInternal(obj)
			if err != nil {
				return
			}
			k.requested(in, who)
			_ = fromInternal(in, obj)
		}
	}
	t.PrepareForUpdate = func(obj, old runtime.Object) {
		moveGeneration := func() {
			if k.generation != generationOnChange {
				return
			}
			acc, err1 := meta.Accessor(obj)
			oacc, err2 := meta.Accessor(old)
			if err1 == nil && err2 == nil && (!sameBesidesMeta(obj, old) ||
				k.generationMeta != nil && !equality.Semantic.DeepEqual(k.generationMeta(acc), k.generationMeta(oacc))) {
				acc.SetGeneration(oacc.GetGeneration() + 1)
			}
		}
		legacyscheme.Scheme.Default(obj)
		if hasStatus && !t.MainWritesStatus {
			setField(obj, "Status", old)
		}
		if k.generationBeforeDrop {
			moveGeneration()
		}
		if k.prepareUpdate != nil || k.dropDisabled != nil {
			in, err1 := toInternal(obj)
			oin, err2 := toInternal(old)
			if err1 == nil && err2 == nil {
				if k.dropDisabled != nil {
					k.dropDisabled(in, oin)
				}
				if k.prepareUpdate != nil {
					k.prepareUpdate(in, oin)
				}
				_ = fromInternal(in, obj)
			}
		}
		if !k.generationBeforeDrop {
			moveGeneration()
		}
	}
	if k.statusPrepare != nil {
		t.PrepareStatus = func(obj, old runtime.Object) {
			in, err1 := toInternal(obj)
			oin, err2 := toInternal(old)
			if err1 == nil && err2 == nil {
				k.statusPrepare(in, oin)
				_ = fromInternal(in, obj)
			}
		}
	}
	// onInternal runs an update's validation on kube's internal objects.
	onInternal := func(v func(obj, old runtime.Object) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
		return func(obj, old runtime.Object) field.ErrorList {
			in, err := toInternal(obj)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			oin, err := toInternal(old)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return v(in, oin)
		}
	}
	if k.statusValidate != nil {
		t.ValidateStatus = onInternal(k.statusValidate)
	}
	t.Validate = func(obj, old runtime.Object) field.ErrorList {
		in, err := toInternal(obj)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		if old == nil || k.validateUpdate == nil {
			if k.validate == nil {
				return nil
			}
			return k.validate(in)
		}
		oin, err := toInternal(old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		return k.validateUpdate(in, oin)
	}

	if k.warnings != nil {
		t.Warnings = func(obj, old runtime.Object) []string {
			if old != nil && !k.updateWarnings.may(obj, old) {
				return nil
			}
			in, err := toInternal(obj)
			if err != nil {
				return nil
			}
			var oin runtime.Object
			if old != nil {
				if oin, err = toInternal(old); err != nil {
					return nil
				}
			}
			return k.warnings(in, oin)
		}
	}

	if k.statusWarnings != nil {
		t.StatusWarnings = func(obj, old runtime.Object) []string {
			in, err := toInternal(obj)
			if err != nil {
				return nil
			}
			oin, err := toInternal(old)
			if err != nil {
				return nil
			}
			return k.statusWarnings(in, oin)
		}
	}

	for sub, su := range k.subresourceUpdates {
		if t.SubresourceUpdates == nil {
			t.SubresourceUpdates = map[string]SubresourceUpdate{}
		}
		t.SubresourceUpdates[sub] = SubresourceUpdate{
			Prepare: func(obj, old runtime.Object) (runtime.Object, error) {
				legacyscheme.Scheme.Default(obj) // as kube-apiserver defaults a decoded body
				in, err := toInternal(obj)
				if err != nil {
					return nil, err
				}
				oin, err := toInternal(old)
				if err != nil {
					return nil, err
				}
				su.prepare(in, oin)
				out, err := scheme.New(gvk)
				if err != nil {
					return nil, err
				}
				if err := legacyscheme.Scheme.Convert(in, out, nil); err != nil {
					return nil, err
				}
				out.GetObjectKind().SetGroupVersionKind(gvk)
				return out, nil
			},
			Validate: onInternal(su.validate),
		}
	}

	// The columns are those kube's printer declares for the kind.
	if k.columns != nil {
		t.Columns = k.columns
		t.Row = func(obj runtime.Object) ([]interface{}, error) {
			in, err := toInternal(obj)
			if err != nil {
				return nil, err
			}
			return k.row(in), nil
		}
	} else if empty, err := legacyscheme.Scheme.New(internal); err == nil && !k.defaultTable {
		if tbl, err := tables().GenerateTable(empty, printers.GenerateOptions{Wide: true}); err == nil {
			t.Columns = tbl.ColumnDefinitions
			t.Row = func(obj runtime.Object) ([]interface{}, error) {
				in, err := toInternal(obj)
				if err != nil {
					return nil, err
				}
				tbl, err := tables().GenerateTable(in, printers.GenerateOptions{Wide: true})
				if err != nil {
					return nil, err
				}
				if len(tbl.Rows) != 1 {
					return nil, fmt.Errorf("printer for %s made %d rows", t.Kind, len(tbl.Rows))
				}
				return tbl.Rows[0].Cells, nil
			}
		}
	}
	// A virtual kind's objects are made on read: their revision does not
	// name their content.
	if t.Row != nil && !t.Virtual {
		t.Cells = ageOpen(t.Columns, t.Row, t.New())
		if cells, open := t.Cells, k.clockCells; cells != nil && open != nil {
			t.Cells = func(obj runtime.Object) ([]interface{}, error) {
				row, err := cells(obj)
				if err != nil {
					return nil, err
				}
				return row, open(obj, row)
			}
		}
	}
	return &t
}

// hasSubresource reports whether t serves the named subresource.
func (t *Type) hasSubresource(name string) bool {
	for _, s := range t.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// setField sets the named top-level field of obj to its value in from, or
// to its zero value when from is nil.
func setField(obj runtime.Object, name string, from runtime.Object) {
	dst := reflect.ValueOf(obj).Elem().FieldByName(name)
	if !dst.IsValid() || !dst.CanSet() {
		return
	}
	if from == nil {
		dst.Set(reflect.Zero(dst.Type()))
		return
	}
	if src := reflect.ValueOf(from).Elem().FieldByName(name); src.IsValid() && src.Type() == dst.Type() {
		dst.Set(src)
	}
}

// sameBesidesMeta reports whether a and b are equal once their metadata,
// type metadata and status are set aside.
func sameBesidesMeta(a, b runtime.Object) bool {
	strip := func(o runtime.Object) runtime.Object {
		c := o.DeepCopyObject()
		setField(c, "TypeMeta", nil)
		setField(c, "ObjectMeta", nil)
		setField(c, "Status", nil)
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// updateWarningRule is when a kind's update may warn (kubeKind.updateWarnings).
type updateWarningRule int

const (
	warnOnUpdate updateWarningRule = iota
	warnOnGenerationMoved
	warnOnCreateOnly
)

func (r updateWarningRule) may(obj, old runtime.Object) bool {
	switch r {
	case warnOnCreateOnly:
		return false
	case warnOnGenerationMoved:
		acc, err1 := meta.Accessor(obj)
		oacc, err2 := meta.Accessor(old)
		return err1 != nil || err2 != nil || acc.GetGeneration() != oacc.GetGeneration()
	}
	return true
}
