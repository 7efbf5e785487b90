package server

import (
	"errors"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

// create handles POST to a collection.
func (r *request) create() error {
	if r.ri.Subresource != "" {
		return methodNotAllowed()
	}
	obj, dryRun, err := r.readObject(r.t)
	if err != nil {
		return err
	}
	if r.t.Virtual {
		return r.review(obj, dryRun)
	}
	return r.createObject(obj, dryRun)
}

// readObject reads the object of Type t a POST or PUT carries: write
// options, a body in JSON, YAML or Protobuf (415 otherwise), an
// acceptable answer format (406 otherwise), and fieldValidation applied
// to the decoding.
//
// A body that does not decode as t may be one of the also Types, which a
// subresource takes as well (pods/eviction: policy/v1beta1 Evictions).
func (r *request) readObject(t *schema.Type, also ...*schema.Type) (obj runtime.Object, dryRun bool, err error) {
	// In kube's order: the answer's form first (406), then, for a create,
	// the body's (415) before the options (422); an update reads its
	// options first.
	if _, err := r.negotiate(false); err != nil {
		return nil, false, err
	}
	var fv fieldValidation
	if r.verb != "create" {
		if fv, dryRun, err = r.writeOptions(); err != nil {
			return nil, false, err
		}
	}
	mediaType, ok := codecs.BodyType(r.c.Request().Header.Get("Content-Type"))
	if !ok || !r.isObjectMediaType(mediaType) {
		return nil, false, r.requireBody()
	}
	if mediaType == codecs.Protobuf && t.Unstructured {
		// Custom resources have no Protobuf form. kube-apiserver tries to
		// decode one and fails with a 400; this 415 says plainly which
		// forms they take (a deliberate difference).
		return nil, false, r.unsupportedBody(codecs.Offer{CBOR: r.s.codec.CBOR()})
	}
	if r.verb == "create" {
		if fv, dryRun, err = r.writeOptions(); err != nil {
			return nil, false, err
		}
	}
	body, err := r.readBody()
	if err != nil {
		return nil, false, err
	}
	obj, err = r.decodeBody(t, body, mediaType, fv)
	var de *codecs.DecodeError
	for _, a := range also {
		if err == nil || !errors.As(err, &de) {
			break
		}
		if o, aerr := r.decodeBody(a, body, mediaType, fv); aerr == nil {
			obj, err = o, nil
		}
	}
	if err == nil {
		r.auditRequestObject(obj)
	}
	return obj, dryRun, err
}

// isObjectMediaType says whether an object body may come in mt.
func (r *request) isObjectMediaType(mt string) bool {
	return mt == codecs.JSON || mt == codecs.YAML || mt == codecs.Protobuf || (mt == codecs.CBOR && r.s.codec.CBOR())
}

// createObject creates a decoded object through the registry and answers.
func (r *request) createObject(obj runtime.Object, dryRun bool) error {
	registry.DedupOwnerReferences(r.ctx, obj, false)
	res, err := r.res.Create(r.ctx, r.ri.Namespace, obj, registry.WriteOptions{DryRun: dryRun, Manager: r.manager(), Sent: r.sentOptions()})
	if err != nil {
		return err
	}
	return r.writeResult(http.StatusCreated, res)
}

// writeResult answers with the object a write left: a dry run's object
// as it would be stored, or an update's that removed its object (as it
// was written), otherwise the stored record.
func (r *request) writeResult(code int, res registry.Result) error {
	for _, w := range res.Warnings {
		r.warn(w)
	}
	if res.Rec.Rev == 0 || res.Removed {
		out, _ := r.negotiate(false)
		return r.writeObject(code, out, res.Obj)
	}
	return r.writeStored(code, res.Rec, res.Obj)
}
