package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"

	"github.com/tabula-dev/tabula/codecs"
)

// deleteOptions reads DeleteOptions as kube-apiserver's delete handlers
// do: from the body when there is one (JSON, YAML, Protobuf or CBOR, with
// meta.k8s.io's decoder: unknown fields are let through, any group's
// DeleteOptions accepted, any other kind refused), otherwise from the
// query; then validated.
func (r *request) deleteOptions() (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := r.readBody()
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		mt, ok := codecs.BodyType(r.c.Request().Header.Get("Content-Type"))
		if !ok || !r.isObjectMediaType(mt) {
			return nil, r.requireBody()
		}
		gv, err := codecs.DecodeDeleteOptions(mt, body, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		// kube's delete handlers record a sent body, in its own version:
		// its grace period and propagation are nowhere else in the event.
		if r.s.auditAt(r.c, auditinternal.LevelMetadata) {
			audit.LogRequestObject(r.ctx, opts, gv, runtimeschema.GroupVersionResource{Group: r.t.Group, Version: r.t.Version, Resource: r.t.Resource},
				r.ri.Subresource, codecs.DeleteOptionsCodecs())
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.c.QueryParams(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// kube's AllowUnsafeMalformedObjectDeletion gate is off by default:
	// the option is dropped, not refused.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// delete handles DELETE of one object.
func (r *request) delete() error {
	if r.ri.Subresource != "" {
		return methodNotAllowed()
	}
	// The answer's form is checked before the options, as kube's router
	// refuses an unacceptable one first.
	if _, err := r.negotiate(false); err != nil {
		return err
	}
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	res, err := r.res.Delete(r.ctx, r.ri.Namespace, r.ri.Name, opts)
	if err != nil {
		return err
	}
	if !res.Gone {
		// kube answers 202 to a cascading delete that asked for it with
		// orphanDependents=false and did not remove the object yet.
		code := http.StatusOK
		if opts.OrphanDependents != nil && !*opts.OrphanDependents {
			code = http.StatusAccepted
		}
		out, _ := r.negotiate(false)
		return r.writeObject(code, out, res.Obj)
	}
	if r.t.ReturnDeletedObject {
		if len(opts.DryRun) > 0 {
			// Nothing was stored: the object as the delete left it (a
			// Pod deleted at once carries its deletion marks, as kube's
			// dry run answers).
			out, _ := r.negotiate(false)
			return r.writeObject(http.StatusOK, out, res.Obj)
		}
		return r.writeRecord(http.StatusOK, res.Rec)
	}
	acc, _ := meta.Accessor(res.Obj)
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: acc.GetName(), Group: r.t.Group, Kind: r.t.Resource, UID: acc.GetUID()},
	}
	// As kube's: the answer's Status is the event's responseStatus (the
	// deleted object's uid is only there).
	r.s.auditStatus(r.c, *st)
	if out, _ := r.negotiate(false); out.View == codecs.ViewObject && (out.MediaType == codecs.CBOR || out.MediaType == codecs.Protobuf || out.MediaType == codecs.YAML) {
		// In the form the client asked for, as kube-apiserver.
		return r.writeBody(http.StatusOK, out, st)
	}
	return r.s.writeJSONStatus(r.c, http.StatusOK, st)
}

// deleteCollection handles DELETE of a collection: every matching object
// is deleted and the list of them returned.
func (r *request) deleteCollection() error {
	// kube's order: the answer's form, the list options, then the body.
	out, err := r.negotiate(true)
	if err != nil {
		return err
	}
	p, err := r.parseListParams()
	if err != nil {
		return err
	}
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	r.res.WarnOrphaning(r.ctx, opts) // whether or not anything matches
	// As kube's DeleteCollection: the page the list options name
	// (limit and continue included) is deleted, and answered as listed,
	// with its continue token, so a client can delete in chunks.
	res, err := r.listPage(p, nil, nil)
	if err != nil {
		return err
	}
	for _, item := range res.Items {
		if _, err := r.res.DeleteFromCollection(r.ctx, item.Namespace, item.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return r.writeList(out, res, p)
}

func (s *Server) writeJSONStatus(c echo.Context, code int, st *metav1.Status) error {
	return s.writeJSON(c, code, st)
}
