package controllers

import (
	"context"
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

	"github.com/tabula-dev/tabula/registry"
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

// The indexed fields are written by the registry (registry.OwnerField,
// registry.FieldHasOwners, registry.FieldWaitingForGC).

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
// (objects being deleted with a GC finalizer, which survives restarts)
// while it has work: it found some last time or was nudged since. An
// idle collector looks every gcQuietResync: deletions made by this
// replica nudge it at once, and every replica's collector handles its
// own; the look is for what a replica that stopped left half done.
// (Every 5 s on an idle server, the look was an eighth of its CPU.)
const (
	gcResync      = 5 * time.Second
	gcQuietResync = time.Minute
)

// nudgeGC queues an owner for the collector without blocking; the resync
// catches anything dropped.
func (m *Manager) nudgeGC(o gcOwner) {
	select {
	case m.gcQueue <- o:
	default:
	}
}

// gcObserver hears of the registry's writes for the collector.
type gcObserver struct{ m *Manager }

func (o gcObserver) Written(t *schema.Type, obj, old metav1.Object) {
	o.m.written(t, obj, old)
	o.m.quotaWritten(t, obj, old)
}
func (o gcObserver) Deleted(t *schema.Type, obj metav1.Object) {
	o.m.deleted(t, obj)
	o.m.quotaDeleted(t, obj)
}
func (o gcObserver) Deleting(t *schema.Type, obj metav1.Object) {
	o.m.nudgeGC(gcOwner{t: t, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()})
}

// written tells the collector an object was stored with owner references
// it did not have before (old is nil for a create): owners that do not
// exist make it garbage. Writes that keep the references cost nothing.
func (m *Manager) written(t *schema.Type, acc, old metav1.Object) {
	refs := acc.GetOwnerReferences()
	if len(refs) == 0 || acc.GetDeletionTimestamp() != nil {
		return
	}
	if old == nil || !equality.Semantic.DeepEqual(refs, old.GetOwnerReferences()) {
		m.nudgeGC(gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID(), checkOwners: true})
	}
}

// deleted tells the collector an object is gone: its dependents may go
// now, and owners waiting in foreground deletion may be free.
func (m *Manager) deleted(t *schema.Type, acc metav1.Object) {
	m.nudgeGC(gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID()})
	for _, ref := range acc.GetOwnerReferences() {
		gv, err := runtimeschema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		for _, ot := range m.types.TypesIn(gv) {
			if ot.Kind == ref.Kind {
				ns := acc.GetNamespace()
				if !ot.Namespaced {
					ns = ""
				}
				m.nudgeGC(gcOwner{t: ot, namespace: ns, name: ref.Name, uid: ref.UID})
			}
		}
	}
}

func (m *Manager) gcController(ctx context.Context) error {
	// The first look for waiting owners is at once (after a restart).
	resync := time.NewTimer(0)
	defer resync.Stop()
	quiet := false
	scan := time.NewTicker(gcDanglingScan)
	defer scan.Stop()
	if _, err := m.gcScan(ctx, registry.FieldHasOwners); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case o := <-m.gcQueue:
			if quiet {
				resync.Reset(gcResync)
				quiet = false
			}
			if err := m.handle(ctx, o); err != nil {
				return err
			}
		case <-resync.C:
			found, err := m.gcScan(ctx, registry.FieldWaitingForGC)
			if err != nil {
				return err
			}
			quiet = !found
			if quiet {
				resync.Reset(gcQuietResync)
			} else {
				resync.Reset(gcResync)
			}
		case <-scan.C:
			if _, err := m.gcScan(ctx, registry.FieldHasOwners); err != nil {
				return err
			}
		}
	}
}

// handle does what a queued item asks.
func (m *Manager) handle(ctx context.Context, o gcOwner) error {
	if o.checkOwners {
		return m.checkOwners(ctx, o)
	}
	return m.collect(ctx, o)
}

// gcScan visits the objects marked with an indexed collector field:
// registry.FieldWaitingForGC owners get collected, registry.FieldHasOwners dependents get their owners
// checked. The index keeps the scan to the marked rows.
func (m *Manager) gcScan(ctx context.Context, mark string) (found bool, err error) {
	sel := fields.OneTermEqualSelector(mark, "1")
	// One indexed query says which resources hold a marked object; only
	// those are listed (usually none: the resync is then one query, not
	// one per kind).
	marked, err := m.store.ResourcesWithField(ctx, mark, "1")
	if err != nil || len(marked) == 0 {
		return false, err
	}
	for _, t := range m.storageTypes() {
		if !slices.Contains(marked, t.StorageResource) {
			continue
		}
		x := m.api.For(t)
		err := m.eachStored(ctx, kv.ListOptions{Resource: t.StorageResource, Pred: kv.Predicate{Field: sel}}, func(rec kv.Record) error {
			obj, err := x.Decode(rec)
			if err != nil {
				return err
			}
			acc, _ := meta.Accessor(obj)
			return m.handle(ctx, gcOwner{t: t, namespace: acc.GetNamespace(), name: acc.GetName(), uid: acc.GetUID(), checkOwners: mark == registry.FieldHasOwners})
		})
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// checkOwners looks at an object whose owner references changed: one
// whose owners are gone is collected (attemptToDelete).
func (m *Manager) checkOwners(ctx context.Context, o gcOwner) error {
	x := m.api.For(o.t)
	obj, _, err := x.Get(ctx, o.namespace, o.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	acc, _ := meta.Accessor(obj)
	if acc.GetUID() != o.uid {
		return nil
	}
	return m.attemptToDelete(ctx, dependent{x: x, obj: obj, acc: acc})
}

// storageTypes lists one served Type per storage resource (virtual
// types store nothing), one that reads the stored form as it is where
// there is one: a custom resource converts on read in every version, so
// for it any served version does, its storage version first.
func (m *Manager) storageTypes() []*schema.Type {
	readsStored := func(t *schema.Type) bool {
		return t.FromStorage == nil || (t.StorageVersion != "" && t.Version == t.StorageVersion)
	}
	var out []*schema.Type
	at := map[string]int{}
	for _, t := range m.types.Types() {
		if t.Virtual {
			continue
		}
		i, seen := at[t.StorageResource]
		switch {
		case !seen && (readsStored(t) || t.StorageVersion != ""):
			at[t.StorageResource] = len(out)
			out = append(out, t)
		case seen && readsStored(t) && !readsStored(out[i]):
			out[i] = t
		}
	}
	return out
}

func hasFinalizer(acc metav1.Object, f string) bool { return registry.HasFinalizer(acc, f) }

// dependent is an object that names an owner.
type dependent struct {
	x   *registry.Resource
	obj runtime.Object
	acc metav1.Object
}

// dependents lists the objects with an owner reference to uid: in the
// owner's namespace for a namespaced owner, everywhere otherwise.
func (m *Manager) dependents(ctx context.Context, o gcOwner) ([]dependent, error) {
	sel := fields.OneTermEqualSelector(registry.OwnerField(o.uid), "1")
	holders, err := m.store.ResourcesWithField(ctx, registry.OwnerField(o.uid), "1")
	if err != nil || len(holders) == 0 {
		return nil, err
	}
	var out []dependent
	for _, t := range m.storageTypes() {
		if !slices.Contains(holders, t.StorageResource) {
			continue
		}
		ns := o.namespace
		if !t.Namespaced && ns != "" {
			continue // a namespaced owner cannot own cluster-scoped objects
		}
		x := m.api.For(t)
		res, err := x.List(ctx, kv.ListOptions{Namespace: ns, Pred: kv.Predicate{Field: sel}})
		if err != nil {
			return nil, err
		}
		for _, rec := range res.Items {
			obj, err := x.Decode(rec)
			if err != nil {
				return nil, err
			}
			acc, _ := meta.Accessor(obj)
			out = append(out, dependent{x: x, obj: obj, acc: acc})
		}
	}
	return out, nil
}

// collect acts on one owner according to its state.
func (m *Manager) collect(ctx context.Context, o gcOwner) error {
	owner := m.api.For(o.t)
	obj, _, err := owner.Get(ctx, o.namespace, o.name)
	var acc metav1.Object
	if err == nil {
		acc, _ = meta.Accessor(obj)
		if acc.GetUID() != o.uid {
			acc = nil // a newer object of the same name: the owner is gone
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	deps, err := m.dependents(ctx, o)
	if err != nil {
		return err
	}
	switch {
	case acc == nil:
		// Background: delete dependents no other live owner holds.
		for _, d := range deps {
			if err := m.attemptToDelete(ctx, d); err != nil {
				return err
			}
		}
	case acc.GetDeletionTimestamp() == nil:
		return nil
	case hasFinalizer(acc, metav1.FinalizerOrphanDependents):
		for _, d := range deps {
			if err := m.dropOwnerRef(ctx, d, o.uid); err != nil {
				return err
			}
		}
		return m.removeFinalizer(ctx, owner, o, metav1.FinalizerOrphanDependents)
	case hasFinalizer(acc, metav1.FinalizerDeleteDependents):
		blocked := false
		for _, d := range deps {
			if err := m.attemptToDelete(ctx, d); err != nil {
				return err
			}
			if blocks(d.acc, o.uid) {
				blocked = true
			}
		}
		if blocked {
			return nil // the resync comes back once dependents are gone
		}
		return m.removeFinalizer(ctx, owner, o, metav1.FinalizerDeleteDependents)
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

// attemptToDelete judges a dependent by its owners, as
// kube-controller-manager's collector does (attemptToDeleteItem): each
// owner is solid (it exists and is not being deleted in the
// foreground), dangling (gone, or another object of its name), or
// waiting (being deleted in the foreground). A dependent with a solid
// owner stays, without its references to the others; one whose owners
// wait for it and that has dependents of its own goes in the
// foreground; any other goes as its own finalizers say (orphan,
// foregroundDeletion), in the background otherwise. A dependent with an
// owner that cannot be looked up (a kind not served, or a namespaced
// owner of a cluster-scoped object, which kube leaves alone too) stays
// as it is.
//
// The delete carries the uid and resourceVersion judged; a dependent
// changed meanwhile is read and judged again.
func (m *Manager) attemptToDelete(ctx context.Context, d dependent) error {
	for range 3 {
		if d.acc.GetDeletionTimestamp() != nil {
			// Already going; one deleting its own dependents is handled
			// as an owner (collect).
			return nil
		}
		refs := d.acc.GetOwnerReferences()
		if len(refs) == 0 {
			return nil
		}
		var solid, gone []types.UID
		waiting := false
		for _, ref := range refs {
			state, err := m.ownerState(ctx, d.x.Type(), d.acc.GetNamespace(), ref)
			if err != nil || state == ownerUnknown {
				return err
			}
			switch state {
			case ownerSolid:
				solid = append(solid, ref.UID)
			case ownerWaiting:
				waiting = true
				gone = append(gone, ref.UID)
			default:
				gone = append(gone, ref.UID)
			}
		}
		if len(solid) > 0 {
			// A waiting owner's reference goes too, or the owner would
			// wait for this dependent for ever.
			for _, uid := range gone {
				if err := m.dropOwnerRef(ctx, d, uid); err != nil {
					return err
				}
			}
			return nil
		}
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(d.acc, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(d.acc, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		if waiting {
			below, err := m.dependents(ctx, gcOwner{t: d.x.Type(), namespace: d.acc.GetNamespace(), name: d.acc.GetName(), uid: d.acc.GetUID()})
			if err != nil {
				return err
			}
			if len(below) > 0 {
				policy = metav1.DeletePropagationForeground
				// A dependent of its own already being deleted in the
				// foreground may close a cycle of owners, each waiting
				// for the next: this one's references stop blocking, so
				// the cycle comes apart.
				if slices.ContainsFunc(below, func(b dependent) bool {
					return b.acc.GetDeletionTimestamp() != nil && hasFinalizer(b.acc, metav1.FinalizerDeleteDependents)
				}) {
					if err := m.unblockOwners(ctx, d); err != nil {
						return err
					}
					if d, err = m.reread(ctx, d); err != nil || d.obj == nil {
						return err
					}
				}
			}
		}
		uid, rv := d.acc.GetUID(), d.acc.GetResourceVersion()
		judged := d.acc.GetOwnerReferences()
		_, err := d.x.Delete(ctx, d.acc.GetNamespace(), d.acc.GetName(), &metav1.DeleteOptions{
			PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		if !apierrors.IsConflict(err) {
			return ignoreGone(err)
		}
		if d, err = m.reread(ctx, d); err != nil || d.obj == nil {
			return err
		}
		if d.acc.GetDeletionTimestamp() == nil && equality.Semantic.DeepEqual(d.acc.GetOwnerReferences(), judged) {
			// As kube's collector: what changed meanwhile was not the
			// owners, so the judgement stands and the delete goes on
			// without the resourceVersion, lest a busy object starve it.
			_, err := d.x.Delete(ctx, d.acc.GetNamespace(), d.acc.GetName(), &metav1.DeleteOptions{
				PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
			return ignoreGone(err)
		}
	}
	return nil // its owners keep changing: the owner's next look (or the scan) judges it again
}

// ignoreGone: a dependent gone, or replaced by another of its name, needs
// nothing more.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// reread reads d again; its obj is nil when it is gone or another object
// has its name now.
func (m *Manager) reread(ctx context.Context, d dependent) (dependent, error) {
	obj, _, err := d.x.Get(ctx, d.acc.GetNamespace(), d.acc.GetName())
	if apierrors.IsNotFound(err) {
		return dependent{}, nil
	}
	if err != nil {
		return dependent{}, err
	}
	acc, _ := meta.Accessor(obj)
	if acc.GetUID() != d.acc.GetUID() {
		return dependent{}, nil
	}
	return dependent{x: d.x, obj: obj, acc: acc}, nil
}

// unblockOwners sets blockOwnerDeletion to false on d's references.
func (m *Manager) unblockOwners(ctx context.Context, d dependent) error {
	return m.mutateMeta(ctx, d.x, d.acc.GetNamespace(), d.acc.GetName(), "", func(acc metav1.Object) bool {
		refs := acc.GetOwnerReferences()
		changed := false
		for i := range refs {
			if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
				refs[i].BlockOwnerDeletion = new(bool)
				changed = true
			}
		}
		acc.SetOwnerReferences(refs)
		return changed
	})
}

// ownerStates: how a dependent's owner stands (attemptToDelete).
type ownerStateKind int

const (
	ownerUnknown ownerStateKind = iota
	ownerSolid
	ownerDangling
	ownerWaiting
)

// ownerState looks up the owner ref names for a dependent of type t in
// namespace. It is unknown when Tabula does not serve the reference's
// kind, or when a cluster-scoped dependent names a namespaced owner.
func (m *Manager) ownerState(ctx context.Context, t *schema.Type, namespace string, ref metav1.OwnerReference) (ownerStateKind, error) {
	gv, err := runtimeschema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerUnknown, nil
	}
	for _, ot := range m.types.TypesIn(gv) {
		if ot.Kind != ref.Kind {
			continue
		}
		switch {
		case !ot.Namespaced:
			namespace = ""
		case !t.Namespaced:
			return ownerUnknown, nil
		}
		obj, _, err := m.api.For(ot).Get(ctx, namespace, ref.Name)
		if apierrors.IsNotFound(err) {
			return ownerDangling, nil
		}
		if err != nil {
			return ownerUnknown, err
		}
		acc, err := meta.Accessor(obj)
		switch {
		case err != nil:
			return ownerUnknown, err
		case acc.GetUID() != ref.UID:
			return ownerDangling, nil
		case acc.GetDeletionTimestamp() != nil && hasFinalizer(acc, metav1.FinalizerDeleteDependents):
			return ownerWaiting, nil
		}
		return ownerSolid, nil
	}
	return ownerUnknown, nil
}

// dropOwnerRef removes the reference to owner from a dependent.
func (m *Manager) dropOwnerRef(ctx context.Context, d dependent, owner types.UID) error {
	return m.mutateMeta(ctx, d.x, d.acc.GetNamespace(), d.acc.GetName(), "", func(acc metav1.Object) bool {
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
func (m *Manager) removeFinalizer(ctx context.Context, owner *registry.Resource, o gcOwner, f string) error {
	return m.mutateMeta(ctx, owner, o.namespace, o.name, "", func(acc metav1.Object) bool {
		return acc.GetUID() == o.uid && dropFinalizer(acc, f)
	})
}

// mutateMeta applies a change to a stored object (or its subresource)
// through the registry's update; change reports whether it changed
// anything. A missing object is left alone.
func (m *Manager) mutateMeta(ctx context.Context, x *registry.Resource, namespace, name, subresource string, change func(metav1.Object) bool) error {
	_, _, err := x.Update(ctx, namespace, name, func(cur runtime.Object) (runtime.Object, error) {
		acc, err := meta.Accessor(cur)
		if err != nil {
			return nil, err
		}
		if !change(acc) {
			return nil, registry.ErrNoChange
		}
		acc.SetResourceVersion("") // retried on conflict
		return cur, nil
	}, registry.UpdateOptions{Subresource: subresource, WriteOptions: registry.WriteOptions{Manager: registry.ManagerControllerManager}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
