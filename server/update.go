package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// maxUpdateRetries bounds retries of unconditional writes that lose a
// race with another writer.
const maxUpdateRetries = 10

// update handles PUT of one object (or its status).
func (r *request) update() error {
	obj, dryRun, err := r.readObject()
	if err != nil {
		return err
	}
	return r.updateObject(func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }, dryRun)
}

// mutateFunc produces the new object from the current one.
type mutateFunc func(current runtime.Object) (runtime.Object, error)

// updateObject runs read-modify-write with compare-and-swap: it retries
// when another writer got in first, unless the client named the
// resourceVersion it expects (then the conflict is the client's).
func (r *request) updateObject(mutate mutateFunc, dryRun bool) error {
	res, err := r.applyUpdate(mutate, dryRun)
	if err != nil {
		return err
	}
	switch {
	case res.create != nil:
		return r.createObject(res.create, dryRun)
	case res.dryRun != nil:
		out, _ := r.negotiate(false)
		return r.writeObject(http.StatusOK, out, res.dryRun)
	}
	return r.writeRecord(http.StatusOK, res.rec)
}

// updateResult is what applyUpdate did.
type updateResult struct {
	rec    kv.Record      // the stored (or, for a completed delete, final) state
	dryRun runtime.Object // the would-be state of a dry run
	create runtime.Object // a PUT that creates: the object to create
}

// errNoChange from a mutateFunc leaves the object as it is.
var errNoChange = errors.New("no change")

// applyUpdate runs the update pipeline without answering, so controllers
// share it. A delete that was waiting for its last finalizer completes
// here.
func (r *request) applyUpdate(mutate mutateFunc, dryRun bool) (updateResult, error) {
	ctx := r.ctx
	name := r.ri.Name
	for attempt := 0; ; attempt++ {
		cur, err := r.s.store.Get(ctx, r.key(name))
		if errors.Is(err, kv.ErrNotFound) {
			if r.t.AllowCreateOnUpdate && r.verb == "update" {
				obj, err := mutate(nil)
				if err != nil {
					return updateResult{}, err
				}
				if err := r.checkNameOfBody(obj); err != nil {
					return updateResult{}, err
				}
				return updateResult{create: obj}, nil
			}
			return updateResult{}, r.notFound(name)
		}
		if err != nil {
			return updateResult{}, err
		}
		old, err := r.decodeStored(cur)
		if err != nil {
			return updateResult{}, err
		}
		obj, err := mutate(old.DeepCopyObject())
		if errors.Is(err, errNoChange) {
			return updateResult{rec: cur}, nil
		}
		if err != nil {
			return updateResult{}, err
		}
		if obj, err = r.applySubresource(obj, old); err != nil {
			return updateResult{}, err
		}
		if err := r.checkNameOfBody(obj); err != nil {
			return updateResult{}, err
		}
		acc, _ := meta.Accessor(obj)
		if err := r.checkNamespaceOfBody(acc); err != nil {
			return updateResult{}, err
		}
		conditional := acc.GetResourceVersion() != ""
		if conditional {
			rv, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
			if err != nil || rv <= 0 {
				return updateResult{}, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a positive integer", acc.GetResourceVersion()))
			}
			if rv != cur.Rev {
				return updateResult{}, r.storeError(kv.ErrConflict, name)
			}
		} else {
			// Unconditional: the update applies to the current version.
			acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
		}
		if err := r.prepareUpdate(obj, old); err != nil {
			return updateResult{}, err
		}
		if err := r.validate(obj, old); err != nil {
			return updateResult{}, err
		}
		if dryRun {
			acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
			return updateResult{dryRun: obj}, nil
		}
		var rec kv.Record
		if acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 && !isNamespace(r.t) {
			// The last finalizer is gone: the pending delete completes.
			rec, err = r.s.store.Delete(ctx, r.key(name), cur.Rev, r.encoder(obj, nil))
			if err == nil {
				r.s.deleted(r.storageType(), acc)
			}
		} else {
			rec, err = r.s.store.Update(ctx, r.key(name), cur.Rev, r.encoder(obj, nil))
			if err == nil {
				oldAcc, _ := meta.Accessor(old)
				r.s.written(r.storageType(), acc, oldAcc)
			}
		}
		if errors.Is(err, kv.ErrConflict) && !conditional && attempt < maxUpdateRetries {
			continue
		}
		if err != nil {
			return updateResult{}, r.storeError(err, name)
		}
		return updateResult{rec: rec}, nil
	}
}

func (r *request) checkNameOfBody(obj runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if acc.GetName() == "" {
		acc.SetName(r.ri.Name)
	}
	if acc.GetName() != r.ri.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), r.ri.Name))
	}
	return nil
}

// isNamespace: namespaces are removed by the namespace controller once
// empty, never by an update.
func isNamespace(t *schema.Type) bool { return t.Group == "" && t.Resource == "namespaces" }
