package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

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
	ctx := r.ctx
	name := r.ri.Name
	for attempt := 0; ; attempt++ {
		cur, err := r.s.store.Get(ctx, r.key(name))
		if errors.Is(err, kv.ErrNotFound) {
			if r.t.AllowCreateOnUpdate && r.verb == "update" {
				obj, err := mutate(nil)
				if err != nil {
					return err
				}
				if err := r.checkNameOfBody(obj); err != nil {
					return err
				}
				return r.createObject(obj, dryRun)
			}
			return r.notFound(name)
		}
		if err != nil {
			return err
		}
		old, err := r.decodeStored(cur)
		if err != nil {
			return err
		}
		obj, err := mutate(old.DeepCopyObject())
		if err != nil {
			return err
		}
		if obj, err = r.applySubresource(obj, old); err != nil {
			return err
		}
		if err := r.checkNameOfBody(obj); err != nil {
			return err
		}
		acc, _ := meta.Accessor(obj)
		if err := r.checkNamespaceOfBody(acc); err != nil {
			return err
		}
		conditional := acc.GetResourceVersion() != ""
		if conditional {
			rv, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
			if err != nil || rv <= 0 {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a positive integer", acc.GetResourceVersion()))
			}
			if rv != cur.Rev {
				return r.storeError(kv.ErrConflict, name)
			}
		} else {
			// Unconditional: the update applies to the current version.
			acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
		}
		if err := r.prepareUpdate(obj, old); err != nil {
			return err
		}
		if err := r.validate(obj, old); err != nil {
			return err
		}
		out, _ := r.negotiate(false)
		if dryRun {
			acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
			return r.writeObject(http.StatusOK, out, obj)
		}
		if acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 {
			// The last finalizer is gone: the pending delete completes.
			rec, err := r.s.store.Delete(ctx, r.key(name), cur.Rev, r.encoder(obj, nil))
			if errors.Is(err, kv.ErrConflict) && !conditional && attempt < maxUpdateRetries {
				continue
			}
			if err != nil {
				return r.storeError(err, name)
			}
			return r.writeRecord(http.StatusOK, rec)
		}
		rec, err := r.s.store.Update(ctx, r.key(name), cur.Rev, r.encoder(obj, nil))
		if errors.Is(err, kv.ErrConflict) && !conditional && attempt < maxUpdateRetries {
			continue
		}
		if err != nil {
			return r.storeError(err, name)
		}
		return r.writeRecord(http.StatusOK, rec)
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
