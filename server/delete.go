package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// deleteOptions reads DeleteOptions from the body (JSON, YAML or Protobuf)
// and the query, and validates them as kube-apiserver does.
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
		if err := r.s.codec.DecodeInto(mt, body, opts); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	q := r.c.QueryParams()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.OrphanDependents = &b
	}
	if vs, ok := q["dryRun"]; ok {
		opts.DryRun = append(opts.DryRun, vs...)
	}
	var errs field.ErrorList
	if opts.OrphanDependents != nil && opts.PropagationPolicy != nil {
		errs = append(errs, field.Invalid(field.NewPath("propagationPolicy"), *opts.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set"))
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{
				string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"}))
		}
	}
	for _, d := range opts.DryRun {
		if d != metav1.DryRunAll {
			errs = append(errs, field.NotSupported(field.NewPath("dryRun"), d, []string{metav1.DryRunAll}))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// delete handles DELETE of one object.
func (r *request) delete() error {
	if r.ri.Subresource != "" {
		return methodNotAllowed()
	}
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	if _, err := r.negotiate(false); err != nil {
		return err
	}
	res, err := r.res.Delete(r.ctx, r.ri.Namespace, r.ri.Name, opts)
	if err != nil {
		return err
	}
	if !res.Gone {
		out, _ := r.negotiate(false)
		return r.writeObject(http.StatusOK, out, res.Obj)
	}
	if r.t.ReturnDeletedObject {
		return r.writeRecord(http.StatusOK, res.Rec)
	}
	acc, _ := meta.Accessor(res.Obj)
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: acc.GetName(), Group: r.t.Group, Kind: r.t.Resource, UID: acc.GetUID()},
	}
	if out, _ := r.negotiate(false); out.View == codecs.ViewObject && (out.MediaType == codecs.CBOR || out.MediaType == codecs.Protobuf) {
		// In the binary form the client asked for, as kube-apiserver.
		return r.writeBody(http.StatusOK, out, st)
	}
	return r.s.writeJSONStatus(r.c, http.StatusOK, st)
}

// deleteCollection handles DELETE of a collection: every matching object
// is deleted and the list of them returned.
func (r *request) deleteCollection() error {
	opts, err := r.deleteOptions()
	if err != nil {
		return err
	}
	p, err := r.parseListParams()
	if err != nil {
		return err
	}
	out, err := r.negotiate(true)
	if err != nil {
		return err
	}
	res, err := r.res.List(r.ctx, kv.ListOptions{Namespace: r.ri.Namespace, Pred: p.pred})
	if err != nil {
		return err
	}
	var deleted []kv.Record
	for _, item := range res.Items {
		d, err := r.res.Delete(r.ctx, item.Namespace, item.Name, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		rec := d.Rec
		if !d.Gone {
			b, err := r.res.Encode(d.Obj)
			if err != nil {
				return err
			}
			rec = kv.Record{Key: item.Key, Rev: rec.Rev, Value: b}
		}
		deleted = append(deleted, rec)
	}
	res.Items = deleted
	res.More = false
	return r.writeList(out, res, p)
}

func (s *Server) writeJSONStatus(c echo.Context, code int, st *metav1.Status) error {
	return s.writeJSON(c, code, st)
}
