package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/registry"
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
	registry.DedupOwnerReferences(r.ctx, obj, false)
	return r.updateObject(func(cur runtime.Object) (runtime.Object, error) {
		if cur != nil {
			if err := r.needResourceVersion(obj); err != nil {
				return nil, err
			}
		}
		return obj.DeepCopyObject(), nil
	}, registry.WriteOptions{DryRun: dryRun, PreconditionUID: uidOf(obj)})
}

// uidOf is the uid an object names, if it can name one.
func uidOf(obj runtime.Object) types.UID {
	if acc, err := meta.Accessor(obj); err == nil {
		return acc.GetUID()
	}
	return ""
}

// needResourceVersion refuses an update of an existing object (a PUT's
// body, a patched object) that names no resourceVersion, where the kind
// allows no unconditional update, with kube-apiserver's answer (its kind
// field holds the resource). The scale subresource reads the live
// object's, as kube's does.
func (r *request) needResourceVersion(obj runtime.Object) error {
	if !r.t.UpdateNeedsResourceVersion || r.ri.Subresource != "" && r.ri.Subresource != "status" {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil || acc.GetResourceVersion() != "" {
		return err
	}
	return apierrors.NewInvalid(runtimeschema.GroupKind{Group: r.t.Group, Kind: r.t.Resource}, r.ri.Name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
}

// updateObject runs the registry's read-modify-write and answers; a PUT
// of a missing object of a Type that allows it creates the object (201).
func (r *request) updateObject(mutate registry.MutateFunc, wo registry.WriteOptions) error {
	wo.Manager, wo.Sent = r.manager(), r.sentOptions()
	opts := registry.UpdateOptions{
		WriteOptions:  wo,
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
