package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		if !ok || !isObjectMediaType(mt) {
			return nil, requireBody(mt, false)
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
	obj, rec, gone, err := r.deleteOne(r.ri.Name, opts)
	if err != nil {
		return err
	}
	if !gone {
		out, _ := r.negotiate(false)
		return r.writeObject(http.StatusOK, out, obj)
	}
	if r.t.ReturnDeletedObject || (r.t.Resource == "namespaces" && r.t.Group == "") {
		return r.writeRecord(http.StatusOK, rec)
	}
	acc, _ := meta.Accessor(obj)
	return r.s.writeJSONStatus(r.c, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: acc.GetName(), Group: r.t.Group, Kind: r.t.Resource, UID: acc.GetUID()},
	})
}

// deleteOne deletes or starts deleting one object. gone reports whether it
// was removed now; otherwise obj is its new state (deletionTimestamp set,
// waiting for finalizers or, for namespaces, for their contents).
func (r *request) deleteOne(name string, opts *metav1.DeleteOptions) (obj runtime.Object, rec kv.Record, gone bool, err error) {
	ctx := r.ctx
	dryRun := len(opts.DryRun) > 0
	for attempt := 0; ; attempt++ {
		cur, err := r.s.store.Get(ctx, r.key(name))
		if err != nil {
			return nil, rec, false, r.storeError(err, name)
		}
		obj, err := r.decodeStored(cur)
		if err != nil {
			return nil, rec, false, err
		}
		acc, _ := meta.Accessor(obj)
		if pre := opts.Preconditions; pre != nil {
			if pre.UID != nil && *pre.UID != acc.GetUID() {
				return nil, rec, false, apierrors.NewConflict(r.t.GroupResource(), name,
					fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, acc.GetUID()))
			}
			if pre.ResourceVersion != nil && *pre.ResourceVersion != acc.GetResourceVersion() {
				return nil, rec, false, apierrors.NewConflict(r.t.GroupResource(), name,
					fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, acc.GetResourceVersion()))
			}
		}
		if v := r.t.ValidateDelete; v != nil {
			if err := v(name); err != nil {
				return nil, rec, false, err
			}
		}
		if acc.GetDeletionTimestamp() == nil {
			// Orphan and Foreground deletes wait for the garbage collector
			// through its finalizers, as on kube-apiserver.
			switch propagation(opts) {
			case metav1.DeletePropagationOrphan:
				addFinalizer(acc, metav1.FinalizerOrphanDependents)
			case metav1.DeletePropagationForeground:
				addFinalizer(acc, metav1.FinalizerDeleteDependents)
			}
		}
		graceful := len(acc.GetFinalizers()) > 0
		if ns, ok := obj.(*corev1.Namespace); ok {
			// Namespaces are removed by the namespace controller once empty.
			graceful = true
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		if !graceful {
			if dryRun {
				return obj, cur, true, nil
			}
			rec, err := r.s.store.Delete(ctx, r.key(name), cur.Rev, r.encoder(obj, nil))
			if errors.Is(err, kv.ErrConflict) && attempt < maxUpdateRetries {
				continue
			}
			if err != nil {
				return nil, rec, false, r.storeError(err, name)
			}
			r.s.deleted(r.storageType(), acc)
			return obj, rec, true, nil
		}
		if acc.GetDeletionTimestamp() != nil {
			// Already being deleted: answer with the current state.
			return obj, cur, false, nil
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		zero := int64(0)
		acc.SetDeletionTimestamp(&now)
		acc.SetDeletionGracePeriodSeconds(&zero)
		if dryRun {
			return obj, cur, false, nil
		}
		var stored runtime.Object
		rec, err := r.s.store.Update(ctx, r.key(name), cur.Rev, r.encoder(obj, &stored))
		if errors.Is(err, kv.ErrConflict) && attempt < maxUpdateRetries {
			continue
		}
		if err != nil {
			return nil, rec, false, r.storeError(err, name)
		}
		if hasFinalizer(acc, metav1.FinalizerOrphanDependents) || hasFinalizer(acc, metav1.FinalizerDeleteDependents) {
			r.s.nudgeGC(gcOwner{t: r.storageType(), namespace: acc.GetNamespace(), name: name, uid: acc.GetUID()})
		}
		return stored, rec, false, nil
	}
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
	res, err := r.s.store.List(r.ctx, kv.ListOptions{Resource: r.t.StorageResource, Namespace: r.ri.Namespace, Pred: p.pred})
	if err != nil {
		return err
	}
	var deleted []kv.Record
	for _, item := range res.Items {
		obj, rec, gone, err := r.deleteOne(item.Name, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !gone {
			b, err := r.storedBytes(obj)
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

func addFinalizer(acc metav1.Object, f string) {
	if !hasFinalizer(acc, f) {
		acc.SetFinalizers(append(acc.GetFinalizers(), f))
	}
}
