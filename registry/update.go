package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	handlerfieldmanager "k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// retryConflict says whether a write without a precondition that lost a
// race with another writer (err) is tried again on what is now current:
// for as long as its request lasts, as kube's GuaranteedUpdate retries
// it, so concurrent patches and applies never answer 409 for a race.
func retryConflict(ctx context.Context, err error) bool {
	return errors.Is(err, kv.ErrConflict) && ctx.Err() == nil
}

// MutateFunc produces the new object from a copy of the current one
// (nil when it does not exist and the update may create it). An object
// with a resourceVersion is a conditional write; without one it applies
// to whatever is current, retried when another writer gets in first.
type MutateFunc func(current runtime.Object) (runtime.Object, error)

// ErrNoChange from a MutateFunc leaves the object as it is.
var ErrNoChange = errors.New("no change")

// UpdateOptions are an update's options.
type UpdateOptions struct {
	WriteOptions
	// Subresource names the part written ("status", "finalize"); empty
	// for the main resource.
	Subresource string
	// CreateMissing creates the object when it does not exist and the
	// Type allows create on update (a PUT).
	CreateMissing bool
	// AuthorizeCreate, when set, is asked before an update creates its
	// missing object: a request allowed to update must also be allowed to
	// create, as kube-apiserver's update and patch handlers check.
	AuthorizeCreate func(context.Context) error
	// SkipValidation is for changes the server derives from a request it
	// validated itself, which kube-apiserver writes to storage without the
	// kind's update validation or field tracking (pods/binding sets the
	// immutable nodeName).
	SkipValidation bool
	// createByApply: an apply creates the object when it is missing.
	createByApply bool
	// admitted: the write was admitted as something else (a Scale), so
	// the object's own update is not admitted again.
	admitted bool
}

// Update runs read-modify-write with compare-and-swap; managedFields
// record what the write changed (opts.Manager's Update entry). created reports an
// update that created the object. An object being deleted whose last
// finalizer the update removes is deleted.
func (x *Resource) Update(ctx context.Context, namespace, name string, mutate MutateFunc, opts UpdateOptions) (res Result, created bool, err error) {
	for attempt := 0; ; attempt++ {
		res, created, retry, guessed, err := x.updateAttempt(ctx, namespace, name, mutate, opts, attempt, attempt == 0 && !opts.DryRun)
		if guessed && (err != nil || retry || res.unchanged) {
			// Decided on this replica's last write of the object, which
			// may be old: decided again from the store.
			x.g.written.drop(x.Key(namespace, name))
			continue
		}
		if retry {
			continue
		}
		if err == nil && !created {
			// A create on update was answered as stored by Create.
			res, err = x.asStored(res)
		}
		return res, created, err
	}
}

// updateAttempt is one read-modify-write; guessed reports that it started
// from this replica's last write of the object (see written) instead of
// the store.
func (x *Resource) updateAttempt(ctx context.Context, namespace, name string, mutate MutateFunc, opts UpdateOptions, attempt int, useWritten bool) (res Result, created, retry, guessed bool, err error) {
	var cur kv.Record
	var old runtime.Object
	if useWritten {
		cur, old, guessed = x.g.written.get(x.t, x.Key(namespace, name))
	}
	if !guessed {
		cur, err = x.g.store.Get(ctx, x.Key(namespace, name))
		if errors.Is(err, kv.ErrNotFound) {
			if !(x.t.AllowCreateOnUpdate && opts.CreateMissing) && !opts.createByApply {
				return Result{}, false, false, false, x.NotFound(name)
			}
			obj, err := mutate(nil)
			if err != nil {
				return Result{}, false, false, false, err
			}
			if err := checkName(obj, name); err != nil {
				return Result{}, false, false, false, err
			}
			if opts.AuthorizeCreate != nil {
				if err := opts.AuthorizeCreate(ctx); err != nil {
					return Result{}, false, false, false, err
				}
			}
			res, err := x.Create(ctx, namespace, obj, opts.WriteOptions)
			return res, err == nil, false, false, err
		}
		if err != nil {
			return Result{}, false, false, false, err
		}
		if old, err = x.Decode(cur); err != nil {
			return Result{}, false, false, false, err
		}
	}
	if want := opts.PreconditionUID; want != "" {
		if have := mustAccessor(old).GetUID(); have != want {
			return Result{}, false, false, guessed, x.PreconditionFailed(namespace, name, "UID", want, have)
		}
	}
	obj, err := mutate(old.DeepCopyObject())
	if errors.Is(err, ErrNoChange) {
		return Result{Rec: cur, Obj: old, unchanged: true}, false, false, guessed, nil
	}
	if err != nil {
		return Result{}, false, false, guessed, err
	}
	if su, ok := x.t.SubresourceUpdates[opts.Subresource]; ok {
		applied := mustAccessor(obj).GetManagedFields()
		if obj, err = su.Prepare(obj, old); err == nil && opts.fieldsTracked {
			// An apply's own record of fields stays, as kube's
			// subresource strategies keep the new managedFields
			// (ResetObjectMetaForStatus).
			mustAccessor(obj).SetManagedFields(applied)
		}
	} else {
		obj, err = x.narrowToSubresource(obj, old, opts.Subresource)
	}
	if err != nil {
		return Result{}, false, false, guessed, err
	}
	if err := checkName(obj, name); err != nil {
		return Result{}, false, false, guessed, err
	}
	if !opts.SkipValidation {
		if obj, err = x.trackFields(old, obj, opts.WriteOptions, opts.Subresource); err != nil {
			return Result{}, false, false, guessed, err
		}
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return Result{}, false, false, guessed, err
	}
	if err := x.checkNamespace(acc, namespace); err != nil {
		return Result{}, false, false, guessed, err
	}
	// A write the server derives from a request it admitted itself
	// (pods/binding) is not admitted again.
	if !opts.SkipValidation && !opts.admitted && !admittedAs(ctx) {
		if err := x.admit(ctx, admissionWrite{op: admission.Update, obj: obj, old: old, namespace: acc.GetNamespace(),
			name: name, subresource: opts.Subresource, dryRun: opts.DryRun, sent: opts.Sent, fieldsValid: x.fieldsMade(opts.WriteOptions)}); err != nil {
			return Result{}, false, false, guessed, err
		}
		DedupOwnerReferences(ctx, obj, true)
		// A subresource write keeps only its own fields of what mutating
		// webhooks and policies returned, as kube's status strategies reset
		// the rest after admission (kube's built-in plugins change nothing
		// else).
		if opts.Subresource != "" && x.g.mutationsConfigured() {
			if su, ok := x.t.SubresourceUpdates[opts.Subresource]; ok {
				obj, err = su.Prepare(obj, old)
			} else {
				obj, err = x.narrowToSubresource(obj, old, opts.Subresource)
			}
			if err != nil {
				return Result{}, false, false, guessed, err
			}
		}
	}
	// As kube's store: the resourceVersion is judged once mutating
	// admission has run (its refusal is the answer, not a conflict), and
	// an unconditional update takes the current one only then.
	acc = mustAccessor(obj)
	conditional := acc.GetResourceVersion() != ""
	if conditional {
		rv, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
		if err != nil || rv <= 0 {
			return Result{}, false, false, guessed, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a positive integer", acc.GetResourceVersion()))
		}
		if rv != cur.Rev {
			return Result{}, false, false, guessed, conflict(x.t, name)
		}
	} else {
		// Unconditional: the update applies to the current version.
		acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
	}
	// The kind's storage hooks as on create (Create explains).
	finish := noFinish
	if x.hooks != nil && opts.Subresource == "" {
		if finish, err = x.hooks.beginUpdate(ctx, obj, old, opts.DryRun); err != nil {
			return Result{}, false, false, guessed, err
		}
	}
	res, retry, err = x.storeUpdate(ctx, namespace, name, obj, old, cur, conditional, attempt, opts)
	finish(err == nil && !retry && !opts.DryRun)
	return res, false, retry, guessed, err
}

// storeUpdate validates and stores an update; retry asks for another
// attempt after losing a race.
func (x *Resource) storeUpdate(ctx context.Context, namespace, name string, obj, old runtime.Object, cur kv.Record, conditional bool, attempt int, opts UpdateOptions) (res Result, retry bool, err error) {
	acc := mustAccessor(obj)
	if err := x.prepareUpdate(obj, old, opts.Subresource); err != nil {
		return Result{}, false, err
	}
	if su, ok := x.t.SubresourceUpdates[opts.Subresource]; ok && su.Validate != nil {
		if errs := su.Validate(obj, old); len(errs) > 0 {
			return Result{}, false, apierrors.NewInvalid(runtimeschema.GroupKind{Group: x.st.Group, Kind: x.st.Kind}, name, errs)
		}
	} else if !opts.SkipValidation {
		if err := x.validate(obj, old, opts.Subresource); err != nil {
			return Result{}, false, err
		}
		if err := x.authorizeReferences(ctx, obj, old, opts.Subresource); err != nil {
			return Result{}, false, err
		}
	}
	// As kube's store: a write whose only change is managedFields' times
	// (a client writing back an older copy, or times it normalised) keeps
	// the stored times, so it changes nothing and is not stored below.
	if obj, err = handlerfieldmanager.IgnoreManagedFieldsTimestampsTransformer(ctx, obj, old); err != nil {
		return Result{}, false, err
	}
	acc = mustAccessor(obj)
	var warnings []string
	if opts.Subresource == "" {
		warnings = x.warnings(obj, old)
	} else if opts.Subresource == "status" && x.t.StatusWarnings != nil {
		warnings = x.t.StatusWarnings(obj, old)
	}
	warnNow(ctx, warnings)
	if !opts.SkipValidation && !opts.admitted && !admittedAs(ctx) {
		if err := x.admitValidate(ctx, admissionWrite{op: admission.Update, obj: obj, old: old, namespace: acc.GetNamespace(),
			name: name, subresource: opts.Subresource, dryRun: opts.DryRun, sent: opts.Sent}); err != nil {
			return Result{}, false, err
		}
	}
	if opts.DryRun {
		acc.SetResourceVersion(strconv.FormatInt(cur.Rev, 10))
		return Result{Obj: obj, Warnings: warnings}, false, nil
	}
	var rec kv.Record
	oldAcc := mustAccessor(old)
	// As kube's ShouldDeleteDuringUpdate: not while a graceful delete's
	// period runs (a terminating Pod's status updates keep it).
	grace := oldAcc.GetDeletionGracePeriodSeconds()
	deleted := acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 && (grace == nil || *grace == 0) &&
		(!x.t.RemovedByController || x.t.SpecFinalized != nil && x.t.SpecFinalized(obj))
	if deleted {
		// The last finalizer is gone: the pending delete completes. As
		// in kube, where the delete's event carries the object as etcd
		// last held it, watchers see it as it was stored, finalizers
		// and all; the writer is answered with what it sent.
		rec, err = x.g.store.Delete(ctx, x.Key(namespace, name), cur.Rev, x.encoder(old.DeepCopyObject()))
	} else {
		enc := x.encoder(obj)
		// A write that changes nothing is not stored: the resourceVersion
		// stays and watchers hear nothing, as on kube-apiserver (a no-op
		// apply or a PUT of what was read) — unless the stored form is
		// stale, where the rewrite re-encrypts it.
		if e, err := enc(cur.Rev); err == nil && !cur.Stale && bytes.Equal(e.Value, cur.Value) {
			return Result{Rec: cur, Obj: obj, Warnings: warnings, unchanged: true}, false, nil
		}
		rec, err = x.g.store.Update(ctx, x.Key(namespace, name), cur.Rev, enc)
		if dropManagedFields(err, obj, opts.WriteOptions) {
			rec, err = x.g.store.Update(ctx, x.Key(namespace, name), cur.Rev, x.encoder(obj))
		}
	}
	if !conditional && retryConflict(ctx, err) {
		return Result{}, true, nil
	}
	if err != nil {
		return Result{}, false, x.storeError(err, name)
	}
	if deleted {
		x.afterDelete(ctx, obj, acc)
	} else {
		x.g.written.put(x.t, rec, obj)
		x.g.observer.Written(x.st, acc, oldAcc)
	}
	return Result{Rec: rec, Obj: obj, Warnings: warnings, Removed: deleted}, false, nil
}

// afterDelete runs what follows an object's removal.
func (x *Resource) afterDelete(ctx context.Context, obj runtime.Object, acc metav1.Object) {
	x.g.written.drop(x.Key(acc.GetNamespace(), acc.GetName()))
	x.g.observer.Deleted(x.st, acc)
	if x.hooks != nil {
		x.hooks.afterDelete(ctx, obj)
	}
}

// CheckName refuses an object whose namespace is not the request's (when
// both name one), then one whose name is not the one on the request's
// URL, with kube-apiserver's words and in its order: its update handler
// checks a body so, and its patch handler the patched object, an applied
// one included. A missing name is refused too, not taken from the URL.
func CheckName(obj runtime.Object, namespace, name string) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if ns := acc.GetNamespace(); namespace != "" && ns != "" && ns != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	switch got := acc.GetName(); {
	case got == "":
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", name))
	case got != name:
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", got, name))
	}
	return nil
}

// checkName is CheckName for the server's own writes, which may leave the
// name to the URL.
func checkName(obj runtime.Object, name string) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if acc.GetName() == "" {
		acc.SetName(name)
	}
	return CheckName(obj, "", name)
}

// prepareUpdate carries server-owned metadata from old into obj.
func (x *Resource) prepareUpdate(obj, old runtime.Object, subresource string) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	oacc, err := meta.Accessor(old)
	if err != nil {
		return err
	}
	if acc.GetUID() == "" {
		acc.SetUID(oacc.GetUID())
	}
	acc.SetCreationTimestamp(oacc.GetCreationTimestamp())
	// As kube's rest.BeforeUpdate: an update never removes or moves a
	// deletionTimestamp, nor drops a grace period; one it sets or changes
	// is refused by the metadata validation (immutable).
	if !oacc.GetDeletionTimestamp().IsZero() {
		acc.SetDeletionTimestamp(oacc.GetDeletionTimestamp())
	}
	if oacc.GetDeletionGracePeriodSeconds() != nil && acc.GetDeletionGracePeriodSeconds() == nil {
		acc.SetDeletionGracePeriodSeconds(oacc.GetDeletionGracePeriodSeconds())
	}
	if _, own := x.t.SubresourceUpdates[subresource]; !own {
		acc.SetGeneration(oacc.GetGeneration()) // a subresource's own Prepare keeps it
	}
	acc.SetSelfLink("")
	// Subresource writes were already narrowed; the Type's hook guards
	// the main resource.
	if x.t.PrepareForUpdate != nil && subresource == "" {
		x.t.PrepareForUpdate(obj, old)
	}
	if x.t.PrepareStatus != nil && subresource == "status" {
		x.t.PrepareStatus(obj, old)
	}
	return nil
}

// narrowToSubresource builds the object a write stores: for a subresource,
// the old object with only the subresource's fields taken from obj; for
// the main resource of a Type with a status subresource, obj with the
// status kept from old.
func (x *Resource) narrowToSubresource(obj, old runtime.Object, subresource string) (runtime.Object, error) {
	from, keep := obj, old
	fields := x.t.Writes(subresource)
	if subresource == "" {
		if !x.t.HasSubresource("status") || x.t.MainWritesStatus {
			return obj, nil
		}
		from, keep, fields = old, obj, []string{"status"}
	}
	out, ok := x.narrowTyped(from, keep, subresource, fields)
	if !ok {
		var err error
		if out, err = x.narrowMaps(from, keep, subresource, fields); err != nil {
			return nil, err
		}
	}
	if subresource == "status" && x.t.StatusMetadata {
		keepMetadata(out, old, x.t.StatusKeepsMetadata)
	}
	return out, nil
}

// keepMetadata restores the named metadata fields of obj from old.
func keepMetadata(obj, old runtime.Object, fields []string) {
	acc, oacc := mustAccessor(obj), mustAccessor(old)
	for _, f := range fields {
		switch f {
		case "labels":
			acc.SetLabels(oacc.GetLabels())
		case "ownerReferences":
			acc.SetOwnerReferences(oacc.GetOwnerReferences())
		case "deletionTimestamp":
			acc.SetDeletionTimestamp(oacc.GetDeletionTimestamp())
		}
	}
}

// narrowMaps narrows through maps: any two objects, custom resources too.
func (x *Resource) narrowMaps(from, keep runtime.Object, subresource string, fields []string) (runtime.Object, error) {
	src, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err != nil {
		return nil, err
	}
	if u, ok := keep.(*unstructured.Unstructured); ok && subresource != "" {
		// The converter hands back an unstructured object's own map, and
		// here keep is the stored object the update compares against.
		keep = u.DeepCopy()
	}
	dst, err := runtime.DefaultUnstructuredConverter.ToUnstructured(keep)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		if v, ok := src[f]; ok {
			dst[f] = v
		} else {
			delete(dst, f)
		}
	}
	if subresource != "" {
		// Subresource writes may still move metadata.resourceVersion, and
		// an apply through one brings the managedFields it computed.
		if m, ok := src["metadata"].(map[string]interface{}); ok {
			if md, ok := dst["metadata"].(map[string]interface{}); ok {
				md["resourceVersion"] = m["resourceVersion"]
				if mf, ok := m["managedFields"]; ok {
					md["managedFields"] = mf
				} else {
					delete(md, "managedFields")
				}
			}
		}
	}
	out := x.t.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dst, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(x.t.GroupVersionKind())
	return out, nil
}

// narrowTyped is narrowToSubresource for built-in kinds: the top-level
// fields are moved between the Go structs directly, not through a round
// trip of both objects through maps (a status write's largest cost after
// field tracking). ok is false when the objects are not two structs of one
// type with every field (then the map path runs).
func (x *Resource) narrowTyped(from, keep runtime.Object, subresource string, fields []string) (runtime.Object, bool) {
	if _, u := keep.(*unstructured.Unstructured); u {
		return nil, false
	}
	fv, kpv := reflect.ValueOf(from), reflect.ValueOf(keep)
	if fv.Kind() != reflect.Pointer || kpv.Type() != fv.Type() || fv.IsNil() || kpv.IsNil() || fv.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	idx, ok := topFieldIndexes(fv.Elem().Type(), fields)
	if !ok {
		return nil, false
	}
	if subresource == "" {
		// keep is the new object, the caller's to change: it gets copies
		// of old's fields (old stays as stored).
		for _, i := range idx {
			f := fv.Elem().Field(i)
			c, ok := deepCopyValue(f)
			if !ok {
				return nil, false
			}
			kpv.Elem().Field(i).Set(c)
		}
		keep.GetObjectKind().SetGroupVersionKind(x.t.GroupVersionKind())
		return keep, true
	}
	// A subresource write: a copy of the stored object with the written
	// fields (the written object is dropped after, so they are shared).
	dst := keep.DeepCopyObject()
	dv := reflect.ValueOf(dst).Elem()
	for _, i := range idx {
		dv.Field(i).Set(fv.Elem().Field(i))
	}
	// It may still move metadata.resourceVersion, and an apply through it
	// brings the managedFields it computed.
	facc, err1 := meta.Accessor(from)
	dacc, err2 := meta.Accessor(dst)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	dacc.SetResourceVersion(facc.GetResourceVersion())
	dacc.SetManagedFields(facc.GetManagedFields())
	dst.GetObjectKind().SetGroupVersionKind(x.t.GroupVersionKind())
	return dst, true
}

// fieldIndexes caches, per struct type, the index of each top-level field
// by its JSON name.
var fieldIndexes sync.Map // reflect.Type -> map[string]int

func topFieldIndexes(t reflect.Type, names []string) ([]int, bool) {
	m, ok := fieldIndexes.Load(t)
	if !ok {
		byName := map[string]int{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				byName[name] = i
			}
		}
		m, _ = fieldIndexes.LoadOrStore(t, byName)
	}
	byName := m.(map[string]int)
	out := make([]int, 0, len(names))
	for _, n := range names {
		i, ok := byName[n]
		if !ok {
			return nil, false
		}
		out = append(out, i)
	}
	return out, true
}

// deepCopyValue copies a struct field with its generated DeepCopy (every
// API struct has one); values without pointers are copied as they are.
func deepCopyValue(v reflect.Value) (reflect.Value, bool) {
	if v.Kind() == reflect.Struct && v.CanAddr() {
		if m := v.Addr().MethodByName("DeepCopy"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
			out := m.Call(nil)[0]
			if out.Kind() == reflect.Pointer && out.Type().Elem() == v.Type() {
				return out.Elem(), true
			}
		}
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.String, reflect.Float64:
		return v, true
	}
	return reflect.Value{}, false
}
