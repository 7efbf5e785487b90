package registry

import (
	"context"
	"fmt"
	"math"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/tabula-dev/tabula/apply"
	"github.com/tabula-dev/tabula/schema"
)

// The scale subresource reads and writes an object's replica count as an
// autoscaling/v1 Scale, at the paths its Type's Scale names, the way
// kube-apiserver's ScaleREST does for Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers (and for custom resources with
// a scale subresource).

// ScaleMutateFunc produces the new Scale from a copy of the current one.
type ScaleMutateFunc func(current *autoscalingv1.Scale) (*autoscalingv1.Scale, error)

// GetScale reads the Scale of one object.
func (x *Resource) GetScale(ctx context.Context, namespace, name string) (*autoscalingv1.Scale, error) {
	obj, _, err := x.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	sc, err := x.scaleOf(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return sc, nil
}

// UpdateScale changes an object's replicas through its Scale. The update
// is the object's own (its strategy runs: generation moves when the
// replicas do); the Scale's resourceVersion, when set, makes it
// conditional, and its uid is a precondition.
func (x *Resource) UpdateScale(ctx context.Context, namespace, name string, mutate ScaleMutateFunc, opts WriteOptions) (*autoscalingv1.Scale, Result, error) {
	return x.writeScale(ctx, namespace, name, opts, func(fm *apply.Manager, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		sc, err := mutate(old.DeepCopy())
		if err != nil {
			return nil, err
		}
		return fm.Update(old, sc, opts.Manager).(*autoscalingv1.Scale), nil
	})
}

// ApplyScale applies a Scale configuration to an object's replicas.
func (x *Resource) ApplyScale(ctx context.Context, namespace, name string, patch []byte, opts ApplyOptions) (*autoscalingv1.Scale, Result, error) {
	var warnings []string
	sc, res, err := x.writeScale(ctx, namespace, name, opts.WriteOptions, func(fm *apply.Manager, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		applied, err := fm.Apply(old, patch, opts.Manager, opts.Force, opts.FieldValidation)
		if err != nil {
			return nil, err
		}
		warnings = applied.Warnings
		sc := applied.Obj.(*autoscalingv1.Scale)
		if !applied.Conditional {
			sc.ResourceVersion = "" // applies to whatever is current
		}
		return sc, nil
	})
	res.Warnings = append(warnings, res.Warnings...)
	return sc, res, err
}

// scaleGVK is the kind of a scale subresource's object.
var scaleGVK = runtimeschema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// writeScale writes an object's replicas through its Scale as
// kube-apiserver does: the object's managedFields are seen as the
// Scale's (owners of the replicas path own spec.replicas), change writes
// the Scale with the Scale's field manager, and the entries go back to
// the object under subresource "scale".
func (x *Resource) writeScale(ctx context.Context, namespace, name string, opts WriteOptions,
	change func(fm *apply.Manager, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) (*autoscalingv1.Scale, Result, error) {
	fm, err := apply.NewManager(schema.ScaleKind, "scale")
	if err != nil {
		return nil, Result{}, err
	}
	// Every served version of the object: entries recorded through another
	// one keep their fields (the handler drops entries of unknown versions).
	mappings := managedfields.ResourcePathMappings{}
	for _, t := range x.g.types.ByStorage(x.t.StorageResource) {
		var path fieldpath.Path
		if t.Scale != nil {
			if path, err = fieldpath.MakePath(toInterfaces(fieldPath(t.Scale.SpecReplicasPath))...); err != nil {
				return nil, Result{}, err
			}
		}
		mappings[t.GroupVersion().String()] = path
	}
	opts.fieldsTracked = true
	res, _, err := x.Update(ctx, namespace, name, func(cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, x.NotFound(name)
		}
		old, err := x.scaleOf(cur)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		// As kube's custom resource scale: a Scale made from an object
		// without replicas carries a sentinel, and a write that leaves it
		// (a patch that sets none) is refused rather than storing 0.
		unset := x.t.Unstructured && !x.hasSpecReplicas(cur)
		if unset {
			old.Spec.Replicas = math.MinInt32
		}
		acc := mustAccessor(cur)
		handler := managedfields.NewScaleHandler(acc.GetManagedFields(), x.t.GroupVersion(), mappings)
		if old.ManagedFields, err = handler.ToSubresource(); err != nil {
			return nil, err
		}
		sc, err := change(fm, old)
		if err != nil {
			return nil, err
		}
		if unset && sc.Spec.Replicas == math.MinInt32 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", x.t.Scale.SpecReplicasPath))
		}
		if err := CheckName(sc, "", name); err != nil {
			return nil, err
		}
		if err := x.checkNamespace(sc, namespace); err != nil {
			return nil, err
		}
		// Admission sees the Scale, as kube-apiserver shows it (resource
		// <kind>/scale, kind autoscaling/v1 Scale), not the object.
		w := admissionWrite{op: admission.Update, obj: sc, old: old, namespace: namespace, name: name,
			subresource: "scale", kind: &scaleGVK, dryRun: opts.DryRun, sent: opts.Sent}
		if err := x.admitPhases(ctx, w, mutate); err != nil {
			return nil, err
		}
		if errs := validateScale(sc); len(errs) > 0 {
			return nil, apierrors.NewInvalid(runtimeschema.GroupKind{Group: autoscaling.GroupName, Kind: "Scale"}, name, errs)
		}
		if err := x.admitPhases(ctx, w, validate); err != nil {
			return nil, err
		}
		if sc.UID != "" && sc.UID != acc.GetUID() {
			return nil, apierrors.NewConflict(runtimeschema.GroupResource{Group: x.t.Group, Resource: x.t.Resource + "/scale"}, name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", sc.UID, acc.GetUID()))
		}
		entries, err := handler.ToParent(sc.ManagedFields)
		if err != nil {
			return nil, err
		}
		// kube-apiserver stores the entries in the map's order and so
		// rewrites the object on the next identical apply; this does not.
		if entries, err = apply.CanonicalFields(entries); err != nil {
			return nil, err
		}
		obj, err := x.withReplicas(cur, sc.Spec.Replicas)
		if err != nil {
			return nil, err
		}
		oacc := mustAccessor(obj)
		oacc.SetManagedFields(entries)
		oacc.SetResourceVersion(sc.ResourceVersion)
		return obj, nil
	}, UpdateOptions{WriteOptions: opts, admitted: true})
	return x.scaleAnswer(res, err)
}

// scaleAnswer is the Scale of the object an update left.
func (x *Resource) scaleAnswer(res Result, err error) (*autoscalingv1.Scale, Result, error) {
	if err != nil {
		return nil, Result{}, err
	}
	sc, err := x.scaleOf(res.Obj)
	if err != nil {
		return nil, Result{}, apierrors.NewBadRequest(err.Error())
	}
	return sc, res, nil
}

func toInterfaces(s []string) []interface{} {
	out := make([]interface{}, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// validateScale runs kube's Scale validation on the internal type.
func validateScale(sc *autoscalingv1.Scale) field.ErrorList {
	in := &autoscaling.Scale{ObjectMeta: sc.ObjectMeta, Spec: autoscaling.ScaleSpec{Replicas: sc.Spec.Replicas}}
	return autoscalingvalidation.ValidateScale(in)
}

// scaleOf builds the Scale of an object of this Type.
func (x *Resource) scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	spec := x.t.Scale
	if spec == nil {
		return nil, fmt.Errorf("%s has no scale subresource", x.t.GroupResource())
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: acc.GetName(), Namespace: acc.GetNamespace(), UID: acc.GetUID(),
			ResourceVersion: acc.GetResourceVersion(), CreationTimestamp: acc.GetCreationTimestamp(),
		},
	}
	if sc.Spec.Replicas, err = replicasAt(u, spec.SpecReplicasPath); err != nil {
		return nil, err
	}
	if sc.Status.Replicas, err = replicasAt(u, spec.StatusReplicasPath); err != nil {
		return nil, err
	}
	if sc.Status.Selector, err = selectorAt(u, spec.LabelSelectorPath, spec.SelectorForm); err != nil {
		return nil, err
	}
	return sc, nil
}

// withReplicas returns obj with the replica count at the spec path set.
func (x *Resource) withReplicas(obj runtime.Object, replicas int32) (runtime.Object, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(u, int64(replicas), fieldPath(x.t.Scale.SpecReplicasPath)...); err != nil {
		return nil, err
	}
	out := x.t.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(x.t.GroupVersionKind())
	return out, nil
}

// hasSpecReplicas says whether obj holds a value at the spec replicas path.
func (x *Resource) hasSpecReplicas(obj runtime.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return true
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, fieldPath(x.t.Scale.SpecReplicasPath)...)
	return err == nil && found && v != nil
}

// fieldPath splits ".spec.replicas" into its fields.
func fieldPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// replicasAt reads an integer at path; absent counts as 0.
func replicasAt(u map[string]interface{}, path string) (int32, error) {
	if path == "" {
		return 0, nil
	}
	v, found, err := unstructured.NestedFieldNoCopy(u, fieldPath(path)...)
	if err != nil || !found || v == nil {
		return 0, err
	}
	switch n := v.(type) {
	case int64:
		return int32(n), nil
	case float64:
		return int32(n), nil
	}
	return 0, fmt.Errorf("the value at %s is not an integer: %v", path, v)
}

// selectorAt reads the selector at path as the label selector string a
// Scale reports.
func selectorAt(u map[string]interface{}, path string, form schema.SelectorForm) (string, error) {
	if path == "" {
		return "", nil
	}
	v, found, err := unstructured.NestedFieldNoCopy(u, fieldPath(path)...)
	if err != nil || !found || v == nil {
		return "", err
	}
	switch form {
	case schema.SelectorLabelSelector:
		m, ok := v.(map[string]interface{})
		if !ok {
			return "", fmt.Errorf("the selector at %s is not a label selector", path)
		}
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
			return "", err
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return "", err
		}
		return sel.String(), nil
	case schema.SelectorMap:
		m, ok := v.(map[string]interface{})
		if !ok {
			return "", fmt.Errorf("the selector at %s is not a map of labels", path)
		}
		set := labels.Set{}
		for k, val := range m {
			set[k] = fmt.Sprint(val)
		}
		return labels.SelectorFromSet(set).String(), nil
	}
	s, _ := v.(string)
	return s, nil
}
