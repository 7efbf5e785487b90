package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The garbage collector does what kube-controller-manager's does for
// ownerReferences: dependents of a deleted owner are deleted (background),
// deleted before the owner (foreground, the foregroundDeletion finalizer),
// or released (orphan, the orphan finalizer).
//
// Dependents are found through an indexed field, ownerref.<owner uid>,
// that every write records for each of an object's owner references.

// ownerField is the selectable-field key recording one owner reference.
func ownerField(uid types.UID) string { return "ownerref." + string(uid) }

// More indexed fields for the collector (clients cannot select on them):
// gcHasOwners marks objects with owner references, gcWaiting owners being
// deleted that wait for the collector (orphan or foreground finalizer).
const (
	gcHasOwners = "tabula.gc/has-owners"
	gcWaiting   = "tabula.gc/waiting"
)

// gcDanglingScan is how often every object with owner references is
// checked for owners that no longer exist (missed while no replica was
// running, or dropped from a full queue); writes are checked at once.
const gcDanglingScan = 10 * time.Minute

// gcOwner names an owner the collector should look at.
type gcOwner struct {
	t         *schema.Type
	namespace string
	name      string
	uid       types.UID
	// checkOwners asks for the object's own owner references to be
	// verified, instead of for its dependents to be handled.
	checkOwners bool
}

// gcResync is how often the collector looks for owners waiting on it
// (objects being deleted with a GC finalizer), which survives restarts.
const gcResync = 5 * time.Second

// nudgeGC queues an owner for the collector without blocking; the resync
// catches anything dropped.
func (s *Server) nudgeGC(o gcOwner) {
	select {
	case s.gcQueue <- o:
	default:
	}
}

// written tells the collector an object was stored with owner references
// it did not have before (old is nil for a create): owners that do not
// exist make it garbage. Writes that keep the references cost nothing.
func (s *Server) written(t *schema.Type, acc, old metav1.Object) {
	refs := acc.GetOwnerReferences()
	if len(refs) == 0 || acc.GetDeletionTimestamp() != nil {
		return
	}
	if old == nil || !equality.Semantic.DeepEqual(refs, old.GetOwnerReferences()) {
		s.nudgeGC(gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID(), checkOwners: true})
	}
}

// deleted tells the collector an object is gone: its dependents may go
// now, and owners waiting in foreground deletion may be free.
func (s *Server) deleted(t *schema.Type, acc metav1.Object) {
	s.nudgeGC(gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID()})
	for _, ref := range acc.GetOwnerReferences() {
		gv, err := runtimeschema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		for _, ot := range s.reg.TypesIn(gv) {
			if ot.Kind == ref.Kind {
				ns := acc.GetNamespace()
				if !ot.Namespaced {
					ns = ""
				}
				s.nudgeGC(gcOwner{t: ot, namespace: ns, name: ref.Name, uid: ref.UID})
			}
		}
	}
}

// propagation is the effective propagation policy of a delete.
func propagation(opts *metav1.DeleteOptions) metav1.DeletionPropagation {
	switch {
	case opts.PropagationPolicy != nil:
		return *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationBackground
}

func (s *Server) gcController(ctx context.Context) error {
	t := time.NewTicker(gcResync)
	defer t.Stop()
	scan := time.NewTicker(gcDanglingScan)
	defer scan.Stop()
	if err := s.gcScan(ctx, gcHasOwners); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case o := <-s.gcQueue:
			if err := s.handle(ctx, o); err != nil {
				return err
			}
		case <-t.C:
			if err := s.gcScan(ctx, gcWaiting); err != nil {
				return err
			}
		case <-scan.C:
			if err := s.gcScan(ctx, gcHasOwners); err != nil {
				return err
			}
		}
	}
}

// handle does what a queued item asks.
func (s *Server) handle(ctx context.Context, o gcOwner) error {
	if o.checkOwners {
		return s.checkOwners(ctx, o)
	}
	return s.collect(ctx, o)
}

// gcScan visits the objects marked with an indexed collector field:
// gcWaiting owners get collected, gcHasOwners dependents get their owners
// checked. The index keeps the scan to the marked rows.
func (s *Server) gcScan(ctx context.Context, mark string) error {
	sel := fields.OneTermEqualSelector(mark, "1")
	for _, t := range s.storageTypes() {
		r := s.internal(ctx, t.Group, t.Resource, "")
		err := s.eachStored(ctx, kv.ListOptions{Resource: t.StorageResource, Pred: kv.Predicate{Field: sel}}, func(rec kv.Record) error {
			obj, err := r.decodeStored(rec)
			if err != nil {
				return err
			}
			acc, _ := meta.Accessor(obj)
			return s.handle(ctx, gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID(), checkOwners: mark == gcHasOwners})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkOwners deletes an object whose owners are all gone, or drops the
// references to the owners that are gone when others remain, as
// kube-controller-manager's collector does with dangling references.
// An owner of a kind Tabula does not serve cannot be looked up, so it
// counts as present: objects owned by, say, Deployments are kept.
func (s *Server) checkOwners(ctx context.Context, o gcOwner) error {
	r := s.internal(ctx, o.t.Group, o.t.Resource, o.namespace)
	rec, err := s.store.Get(ctx, r.key(o.name))
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	obj, err := r.decodeStored(rec)
	if err != nil {
		return err
	}
	acc, _ := meta.Accessor(obj)
	if acc.GetUID() != o.uid || acc.GetDeletionTimestamp() != nil {
		return nil
	}
	var gone []types.UID
	for _, ref := range acc.GetOwnerReferences() {
		absent, err := s.ownerAbsent(ctx, acc.GetNamespace(), ref)
		if err != nil {
			return err
		}
		if absent {
			gone = append(gone, ref.UID)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	d := dependent{r: r, obj: obj, acc: acc}
	if len(gone) == len(acc.GetOwnerReferences()) {
		policy := metav1.DeletePropagationBackground
		_, _, _, err := r.deleteOne(acc.GetName(), &metav1.DeleteOptions{PropagationPolicy: &policy})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	for _, uid := range gone {
		if err := s.dropOwnerRef(ctx, d, uid); err != nil {
			return err
		}
	}
	return nil
}

// storageTypes lists one served Type per storage resource.
func (s *Server) storageTypes() []*schema.Type {
	var out []*schema.Type
	seen := map[string]bool{}
	for _, t := range s.reg.Types() {
		if t.FromStorage == nil && !seen[t.StorageResource] {
			seen[t.StorageResource] = true
			out = append(out, t)
		}
	}
	return out
}

func hasFinalizer(acc metav1.Object, f string) bool {
	for _, x := range acc.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

// dependent is an object that names an owner.
type dependent struct {
	r   *request
	obj runtime.Object
	acc metav1.Object
}

// dependents lists the objects with an owner reference to uid: in the
// owner's namespace for a namespaced owner, everywhere otherwise.
func (s *Server) dependents(ctx context.Context, o gcOwner) ([]dependent, error) {
	sel := fields.OneTermEqualSelector(ownerField(o.uid), "1")
	holders, err := s.store.ResourcesWithField(ctx, ownerField(o.uid), "1")
	if err != nil || len(holders) == 0 {
		return nil, err
	}
	var out []dependent
	for _, t := range s.storageTypes() {
		if !slices.Contains(holders, t.StorageResource) {
			continue
		}
		ns := o.namespace
		if !t.Namespaced && ns != "" {
			continue // a namespaced owner cannot own cluster-scoped objects
		}
		res, err := s.store.List(ctx, kv.ListOptions{Resource: t.StorageResource, Namespace: ns, Pred: kv.Predicate{Field: sel}})
		if err != nil {
			return nil, err
		}
		for _, rec := range res.Items {
			r := s.internal(ctx, t.Group, t.Resource, rec.Namespace)
			obj, err := r.decodeStored(rec)
			if err != nil {
				return nil, err
			}
			acc, _ := meta.Accessor(obj)
			out = append(out, dependent{r: r, obj: obj, acc: acc})
		}
	}
	return out, nil
}

// collect acts on one owner according to its state.
func (s *Server) collect(ctx context.Context, o gcOwner) error {
	owner := s.internal(ctx, o.t.Group, o.t.Resource, o.namespace)
	rec, err := s.store.Get(ctx, owner.key(o.name))
	var acc metav1.Object
	if err == nil {
		obj, err := owner.decodeStored(rec)
		if err != nil {
			return err
		}
		acc, _ = meta.Accessor(obj)
		if acc.GetUID() != o.uid {
			acc = nil // a newer object of the same name: the owner is gone
		}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	deps, err := s.dependents(ctx, o)
	if err != nil {
		return err
	}
	switch {
	case acc == nil:
		// Background: delete dependents no other live owner holds.
		for _, d := range deps {
			if err := s.releaseOrDelete(ctx, d, o.uid, metav1.DeletePropagationBackground); err != nil {
				return err
			}
		}
	case acc.GetDeletionTimestamp() == nil:
		return nil
	case hasFinalizer(acc, metav1.FinalizerOrphanDependents):
		for _, d := range deps {
			if err := s.dropOwnerRef(ctx, d, o.uid); err != nil {
				return err
			}
		}
		return s.removeFinalizer(ctx, owner, o, metav1.FinalizerOrphanDependents)
	case hasFinalizer(acc, metav1.FinalizerDeleteDependents):
		blocked := false
		for _, d := range deps {
			if err := s.releaseOrDelete(ctx, d, o.uid, metav1.DeletePropagationForeground); err != nil {
				return err
			}
			if blocks(d.acc, o.uid) {
				blocked = true
			}
		}
		if blocked {
			return nil // the resync comes back once dependents are gone
		}
		return s.removeFinalizer(ctx, owner, o, metav1.FinalizerDeleteDependents)
	}
	return nil
}

// blocks reports whether dependent d holds up its owner's foreground
// deletion (blockOwnerDeletion on its reference).
func blocks(d metav1.Object, owner types.UID) bool {
	for _, ref := range d.GetOwnerReferences() {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// releaseOrDelete deletes a dependent whose owners are all gone or going,
// or drops the reference when another owner still lives.
func (s *Server) releaseOrDelete(ctx context.Context, d dependent, owner types.UID, policy metav1.DeletionPropagation) error {
	for _, ref := range d.acc.GetOwnerReferences() {
		if ref.UID != owner && s.ownerExists(ctx, d.acc.GetNamespace(), ref) {
			return s.dropOwnerRef(ctx, d, owner)
		}
	}
	if d.acc.GetDeletionTimestamp() != nil {
		return nil
	}
	_, _, _, err := d.r.deleteOne(d.acc.GetName(), &metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// lookupOwner reads the object an owner reference names. served is false
// when Tabula does not serve the reference's kind (it cannot be checked);
// acc is nil when no object of that name exists.
func (s *Server) lookupOwner(ctx context.Context, namespace string, ref metav1.OwnerReference) (acc metav1.Object, served bool, err error) {
	gv, err := runtimeschema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false, nil
	}
	for _, t := range s.reg.TypesIn(gv) {
		if t.Kind != ref.Kind {
			continue
		}
		if !t.Namespaced {
			namespace = ""
		}
		r := s.internal(ctx, t.Group, t.Resource, namespace)
		rec, err := s.store.Get(ctx, r.key(ref.Name))
		if errors.Is(err, kv.ErrNotFound) {
			return nil, true, nil
		}
		if err != nil {
			return nil, true, err
		}
		obj, err := r.decodeStored(rec)
		if err != nil {
			return nil, true, err
		}
		acc, err := meta.Accessor(obj)
		return acc, true, err
	}
	return nil, false, nil
}

// ownerExists reports whether the owner lives and is not being deleted.
func (s *Server) ownerExists(ctx context.Context, namespace string, ref metav1.OwnerReference) bool {
	acc, _, err := s.lookupOwner(ctx, namespace, ref)
	return err == nil && acc != nil && acc.GetUID() == ref.UID && acc.GetDeletionTimestamp() == nil
}

// ownerAbsent reports whether the owner is of a served kind and no object
// with its name and uid exists.
func (s *Server) ownerAbsent(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error) {
	acc, served, err := s.lookupOwner(ctx, namespace, ref)
	if err != nil || !served {
		return false, err
	}
	return acc == nil || acc.GetUID() != ref.UID, nil
}

// dropOwnerRef removes the reference to owner from a dependent.
func (s *Server) dropOwnerRef(ctx context.Context, d dependent, owner types.UID) error {
	return s.mutateInternal(ctx, d.r, d.acc.GetName(), func(acc metav1.Object) bool {
		var kept []metav1.OwnerReference
		for _, ref := range acc.GetOwnerReferences() {
			if ref.UID != owner {
				kept = append(kept, ref)
			}
		}
		if len(kept) == len(acc.GetOwnerReferences()) {
			return false
		}
		acc.SetOwnerReferences(kept)
		return true
	})
}

// removeFinalizer takes a GC finalizer off the owner; the update path
// deletes the owner when it was the last one.
func (s *Server) removeFinalizer(ctx context.Context, owner *request, o gcOwner, f string) error {
	return s.mutateInternal(ctx, owner, o.name, func(acc metav1.Object) bool {
		if acc.GetUID() != o.uid || !hasFinalizer(acc, f) {
			return false
		}
		var kept []string
		for _, x := range acc.GetFinalizers() {
			if x != f {
				kept = append(kept, x)
			}
		}
		acc.SetFinalizers(kept)
		return true
	})
}

// mutateInternal applies a metadata change through the update pipeline.
func (s *Server) mutateInternal(ctx context.Context, r *request, name string, change func(metav1.Object) bool) error {
	u := *r
	u.verb = "patch" // never create
	u.ri.Name = name
	_, err := u.applyUpdate(func(cur runtime.Object) (runtime.Object, error) {
		acc, err := meta.Accessor(cur)
		if err != nil {
			return nil, err
		}
		if !change(acc) {
			return nil, errNoChange
		}
		acc.SetResourceVersion("") // retried on conflict
		return cur, nil
	}, false)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
