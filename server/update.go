package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/registry"
)

// update handles PUT of one object (or its status).
func (r *request) update() error {
	obj, dryRun, err := r.readObject(r.t)
	if err != nil {
		return err
	}
	return r.updateObject(func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }, dryRun)
}

// updateObject runs the registry's read-modify-write and answers; a PUT
// of a missing object of a Type that allows it creates the object (201).
func (r *request) updateObject(mutate registry.MutateFunc, dryRun bool) error {
	res, created, err := r.res.Update(r.ctx, r.ri.Namespace, r.ri.Name, mutate, registry.UpdateOptions{
		WriteOptions:  registry.WriteOptions{DryRun: dryRun, Manager: r.manager()},
		Subresource:   r.ri.Subresource,
		CreateMissing: r.verb == "update",
	})
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
