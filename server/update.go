package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

// update handles PUT of one object (or its status).
func (r *request) update() error {
	obj, dryRun, err := r.readObject(r.t)
	if err != nil {
		return err
	}
	// The body's namespace is checked in the registry, with the words
	// kube's update handler checks it with first.
	if err := registry.CheckName(obj, "", r.ri.Name); err != nil {
		return err
	}
	return r.updateObject(func(cur runtime.Object) (runtime.Object, error) {
		if cur != nil && r.t.UpdateNeedsResourceVersion && (r.ri.Subresource == "" || r.ri.Subresource == "status") {
			if err := needResourceVersion(obj, r.t, r.ri.Name); err != nil {
				return nil, err
			}
		}
		return obj.DeepCopyObject(), nil
	}, dryRun)
}

// needResourceVersion refuses the body of a PUT that names no
// resourceVersion for an existing object whose kind allows no
// unconditional update, with kube-apiserver's answer (its kind field
// holds the resource).
func needResourceVersion(obj runtime.Object, t *schema.Type, name string) error {
	acc, err := meta.Accessor(obj)
	if err != nil || acc.GetResourceVersion() != "" {
		return err
	}
	return apierrors.NewInvalid(runtimeschema.GroupKind{Group: t.Group, Kind: t.Resource}, name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
}

// updateObject runs the registry's read-modify-write and answers; a PUT
// of a missing object of a Type that allows it creates the object (201).
func (r *request) updateObject(mutate registry.MutateFunc, dryRun bool) error {
	opts := registry.UpdateOptions{
		WriteOptions:  registry.WriteOptions{DryRun: dryRun, Manager: r.manager()},
		Subresource:   r.ri.Subresource,
		CreateMissing: r.verb == "update",
	}
	if opts.CreateMissing {
		opts.AuthorizeCreate = r.authorizeCreate
	}
	res, created, err := r.res.Update(r.ctx, r.ri.Namespace, r.ri.Name, mutate, opts)
	if err != nil {
		return err
	}
	return r.writeUpdated(res, created)
}

// writeUpdated answers an update: 200, or 201 when it created the object.
func (r *request) writeUpdated(res registry.Result, created bool) error {
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	return r.writeResult(code, res)
}
