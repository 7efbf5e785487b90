package server

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// create handles POST to a collection.
func (r *request) create() error {
	if r.ri.Subresource != "" {
		return methodNotAllowed()
	}
	obj, dryRun, err := r.readObject()
	if err != nil {
		return err
	}
	return r.createObject(obj, dryRun)
}

// readObject reads the object a POST or PUT carries: write options, a
// body in JSON, YAML or Protobuf (415 otherwise), an acceptable answer
// format (406 otherwise), and fieldValidation applied to the decoding.
func (r *request) readObject() (obj runtime.Object, dryRun bool, err error) {
	fv, dryRun, err := r.writeOptions()
	if err != nil {
		return nil, false, err
	}
	mediaType, ok := codecs.BodyType(r.c.Request().Header.Get("Content-Type"))
	if !ok || !isObjectMediaType(mediaType) {
		return nil, false, requireBody(mediaType, false)
	}
	if _, err := r.negotiate(false); err != nil {
		return nil, false, err
	}
	body, err := r.readBody()
	if err != nil {
		return nil, false, err
	}
	obj, err = r.decodeBody(body, mediaType, fv)
	return obj, dryRun, err
}

func isObjectMediaType(mt string) bool {
	return mt == codecs.JSON || mt == codecs.YAML || mt == codecs.Protobuf
}

// createObject runs the create pipeline for a decoded object.
func (r *request) createObject(obj runtime.Object, dryRun bool) error {
	acc, err := r.prepareCreate(obj)
	if err != nil {
		return err
	}
	if acc.GetName() == "" {
		return apierrors.NewInvalid(runtimeschema.GroupKind{Group: r.t.Group, Kind: r.t.Kind}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if err := r.validate(obj, nil); err != nil {
		return err
	}
	if err := r.namespaceAllowsCreate(acc.GetName()); err != nil {
		return err
	}
	out, _ := r.negotiate(false)
	if dryRun {
		// The store would refuse a name that is taken; so does a dry run.
		if _, err := r.s.store.Get(r.ctx, r.key(acc.GetName())); err == nil {
			return apierrors.NewAlreadyExists(r.t.GroupResource(), acc.GetName())
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		return r.writeObject(http.StatusCreated, out, obj)
	}
	rec, err := r.s.store.Create(r.ctx, r.key(acc.GetName()), r.encoder(obj, nil))
	if err != nil {
		return r.storeError(err, acc.GetName())
	}
	r.s.written(r.storageType(), acc, nil)
	return r.writeStored(http.StatusCreated, rec, obj)
}
