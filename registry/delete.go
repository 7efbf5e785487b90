package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// DeleteResult is what a delete did: Gone reports the object removed now;
// otherwise Obj is its new state (deletionTimestamp set, waiting for
// finalizers or for the controller that removes it). Rec is the record
// written (the final state when Gone).
type DeleteResult struct {
	Result
	Gone bool
}

// Delete deletes or starts deleting one object: with finalizers (and the
// orphan or foreground finalizer its propagation adds) it only gets a
// deletionTimestamp; the last finalizer's removal completes it.
func (x *Resource) Delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (DeleteResult, error) {
	return x.delete(ctx, namespace, name, opts, name)
}

// DeleteFromCollection is Delete for one item of a deletecollection:
// admission sees the collection's request, which names no object (kube's
// attributes for it have no name; the item is the old object).
func (x *Resource) DeleteFromCollection(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (DeleteResult, error) {
	return x.delete(ctx, namespace, name, opts, "")
}

func (x *Resource) delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions, admitName string) (DeleteResult, error) {
	dryRun := len(opts.DryRun) > 0
	x.WarnOrphaning(ctx, opts)
	if v := x.t.ValidateDelete; v != nil && x.t.ValidateDeleteFirst {
		if err := v(name); err != nil {
			return DeleteResult{}, err
		}
	}
	for {
		obj, cur, err := x.Get(ctx, namespace, name)
		if err != nil {
			return DeleteResult{}, err
		}
		acc, _ := meta.Accessor(obj)
		if err := x.checkPreconditions(acc, opts.Preconditions); err != nil {
			return DeleteResult{}, err
		}
		if acc.GetDeletionTimestamp() != nil && (x.t.GracePeriod != nil && gracePending(acc, opts) || x.t.SpecFinalized != nil && !x.t.SpecFinalized(obj)) {
			// A delete that can change nothing is answered with the object
			// before admission, as kube's stores answer it: a graceful
			// delete under way that is not shortened, a Namespace whose
			// spec finalizers remain.
			return DeleteResult{Result: Result{Rec: cur, Obj: obj}}, nil
		}
		if !admittedAs(ctx) {
			if err := x.admitPhases(ctx, admissionWrite{op: admission.Delete, old: obj, namespace: namespace, name: admitName,
				options: opts, dryRun: dryRun}, mutate|validate); err != nil {
				return DeleteResult{}, err
			}
		}
		if v := x.t.ValidateDelete; v != nil && !x.t.ValidateDeleteFirst {
			if err := v(name); err != nil {
				return DeleteResult{}, err
			}
		}
		deleting := acc.GetDeletionTimestamp() != nil
		// Kinds deleted gracefully (Pods) stay, marked, for their grace
		// period; a pending one is left as it is.
		graceful, period := false, int64(0)
		if x.t.GracePeriod != nil {
			var pending bool
			if graceful, pending, period = x.beforeGracefulDelete(obj, acc, opts); pending {
				return DeleteResult{Result: Result{Rec: cur, Obj: obj}}, nil
			}
		}
		// Orphan and Foreground deletes wait for the garbage collector
		// through its finalizers, as on kube-apiserver; a later delete
		// may switch between them (a Namespace under way keeps its own).
		gcChanged := false
		marksOnly := !deleting && x.t.FirstDeleteMarksOnly
		if (!deleting || !x.t.RemovedByController) && !marksOnly {
			var finalizers []string
			if gcChanged, finalizers = x.gcFinalizers(acc, opts); gcChanged {
				acc.SetFinalizers(finalizers)
			}
		}
		if !deleting && x.t.PrepareForDelete != nil {
			x.t.PrepareForDelete(obj)
		}
		waits := len(acc.GetFinalizers()) > 0 || x.t.RemovedByController || graceful && period > 0
		if !waits {
			if dryRun {
				return DeleteResult{Result: Result{Rec: cur, Obj: obj}, Gone: true}, nil
			}
			from := cur
			if graceful {
				// kube's store writes the deletion timestamp and the zero
				// grace period before it deletes (its
				// updateForGracefulDeletionAndFinalizers): watchers see
				// the Pod MODIFIED, then DELETED. Should the delete fail,
				// the next one finds the zero period and deletes at once.
				if from, err = x.g.store.Update(ctx, cur.Key, cur.Rev, x.encoder(obj)); err != nil {
					if retryConflict(ctx, err) {
						continue
					}
					return DeleteResult{}, x.storeError(err, name)
				}
				x.g.written.drop(cur.Key)
			}
			rec, err := x.g.store.Delete(ctx, from.Key, from.Rev, x.encoder(obj))
			if retryConflict(ctx, err) {
				continue
			}
			if err != nil {
				return DeleteResult{}, x.storeError(err, name)
			}
			x.afterDelete(ctx, obj, acc)
			return DeleteResult{Result: Result{Rec: rec, Obj: obj}, Gone: true}, nil
		}
		if deleting && !graceful && !gcChanged {
			// Already being deleted: answer with the current state, but
			// for kube's markAsDeleting, which gives an object its
			// finalizers hold a zero grace period on any later delete
			// (one a kind's own storage marked first, a CRD or Namespace,
			// has none).
			if acc.GetDeletionGracePeriodSeconds() != nil || len(acc.GetFinalizers()) == 0 {
				return DeleteResult{Result: Result{Rec: cur, Obj: obj}}, nil
			}
			zero := int64(0)
			acc.SetDeletionGracePeriodSeconds(&zero)
		}
		if !graceful && !deleting {
			// kube's markAsDeleting: the spec's generation moves on.
			if g := acc.GetGeneration(); g > 0 && !marksOnly {
				acc.SetGeneration(g + 1)
			}
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			acc.SetDeletionTimestamp(&now)
			if !x.t.RemovedByController && !marksOnly {
				// kube's generic store; its namespace storage sets no grace period.
				zero := int64(0)
				acc.SetDeletionGracePeriodSeconds(&zero)
			}
		}
		if dryRun {
			return DeleteResult{Result: Result{Rec: cur, Obj: obj}}, nil
		}
		rec, err := x.g.store.Update(ctx, cur.Key, cur.Rev, x.encoder(obj))
		if retryConflict(ctx, err) {
			continue
		}
		if err != nil {
			return DeleteResult{}, x.storeError(err, name)
		}
		x.g.written.put(x.t, rec, obj)
		if hasFinalizer(acc, metav1.FinalizerOrphanDependents) || hasFinalizer(acc, metav1.FinalizerDeleteDependents) {
			x.g.observer.Deleting(x.st, acc)
		}
		return DeleteResult{Result: Result{Rec: rec, Obj: obj}}, nil
	}
}

// WarnOrphaning gives the kind's warning to a delete that names no
// propagation where the kind orphans by default (Jobs), as kube's
// storage does for a delete or a deletecollection, whatever it matches.
func (x *Resource) WarnOrphaning(ctx context.Context, opts *metav1.DeleteOptions) {
	if opts.PropagationPolicy == nil && opts.OrphanDependents == nil && x.t.OrphanByDefault && x.t.OrphanWarning != "" {
		warning.AddWarning(ctx, "", x.t.OrphanWarning)
	}
}

// gcFinalizers is kube's deletionFinalizersForGarbageCollection: the
// orphan or foregroundDeletion finalizer a delete asks for — by its
// options, else by the one the object carries, else by the kind's
// default — in place of the other; changed reports a different set.
func (x *Resource) gcFinalizers(acc metav1.Object, opts *metav1.DeleteOptions) (changed bool, finalizers []string) {
	old := acc.GetFinalizers()
	var orphan, foreground bool
	switch {
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
		foreground = !orphan && x.t.ForegroundOnOrphanFalse
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	case slices.Contains(old, metav1.FinalizerOrphanDependents):
		orphan = true
	case slices.Contains(old, metav1.FinalizerDeleteDependents):
		foreground = true
	default:
		orphan = x.t.OrphanByDefault
	}
	if x.t.NoGCFinalizers {
		// kube's Unsupported policy: neither is added, and one the
		// object carries is taken off.
		orphan, foreground = false, false
	}
	for _, f := range old {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			finalizers = append(finalizers, f)
		}
	}
	if orphan {
		finalizers = append(finalizers, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		finalizers = append(finalizers, metav1.FinalizerDeleteDependents)
	}
	if sets.New(old...).Equal(sets.New(finalizers...)) {
		return false, old
	}
	return true, finalizers
}

// beforeGracefulDelete is kube's rest.BeforeDelete for a kind deleted
// gracefully: the first delete marks the object to go in the kind's
// grace period (deletionTimestamp that far ahead, the period in
// deletionGracePeriodSeconds, the generation moved on); a later one may
// only shorten it (to 0: delete now), otherwise the deletion is pending
// and nothing changes. graceful says the object was marked (again).
// gracePending: a graceful delete under way that this one would not
// shorten (kube's BeforeDelete answers "pending").
func gracePending(acc metav1.Object, opts *metav1.DeleteOptions) bool {
	cur := acc.GetDeletionGracePeriodSeconds()
	if cur == nil || *cur <= 0 {
		return false
	}
	requested := requestedGrace(opts)
	return requested == nil || *requested >= *cur
}

// requestedGrace is the grace period a delete asks for, nil for none;
// kube reads a negative one as 1.
func requestedGrace(opts *metav1.DeleteOptions) *int64 {
	if r := opts.GracePeriodSeconds; r != nil && *r < 0 {
		one := int64(1)
		return &one
	}
	return opts.GracePeriodSeconds
}

func (x *Resource) beforeGracefulDelete(obj runtime.Object, acc metav1.Object, opts *metav1.DeleteOptions) (graceful, pending bool, period int64) {
	requested := requestedGrace(opts)
	if ts := acc.GetDeletionTimestamp(); ts != nil {
		cur := acc.GetDeletionGracePeriodSeconds()
		switch {
		case cur == nil || *cur <= 0:
			return false, false, 0
		case gracePending(acc, opts):
			return false, true, 0
		}
		period = *requested
		shorter := metav1.NewTime(ts.Add(time.Duration(period-*cur) * time.Second))
		if now := metav1.NewTime(time.Now().Truncate(time.Second)); shorter.Before(&now) {
			// Not into the past: a graceful delete whose whole period
			// has gone by keeps one second, so the object's owner (the
			// kubelet) still makes the final delete, as in kube.
			shorter = now
			if period != 0 {
				period = 1
			}
		}
		acc.SetDeletionTimestamp(&shorter)
		acc.SetDeletionGracePeriodSeconds(&period)
		return true, false, period
	}
	period = x.t.GracePeriod(obj, requested)
	at := metav1.NewTime(time.Now().Add(time.Duration(period) * time.Second).Truncate(time.Second))
	acc.SetDeletionTimestamp(&at)
	acc.SetDeletionGracePeriodSeconds(&period)
	if g := acc.GetGeneration(); g > 0 {
		acc.SetGeneration(g + 1)
	}
	return true, false, period
}

// checkPreconditions is kube's BeforeDelete check, whose conflict names
// the object's kind where other conflicts name its resource; a kind whose
// storage checks them itself (DeletePreconditionsOwn) names its resource,
// in that storage's words.
func (x *Resource) checkPreconditions(acc metav1.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	gr := runtimeschema.GroupResource{Group: x.st.Group, Resource: x.st.Kind}
	uidMsg := "the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated"
	rvMsg := "the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified"
	if x.t.DeletePreconditionsOwn {
		gr = x.t.GroupResource()
		uidMsg = "Precondition failed: UID in precondition: %s, UID in object meta: %s"
		rvMsg = "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
	}
	if pre.UID != nil && *pre.UID != acc.GetUID() {
		return apierrors.NewConflict(gr, acc.GetName(), fmt.Errorf(uidMsg, *pre.UID, acc.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != acc.GetResourceVersion() {
		return apierrors.NewConflict(gr, acc.GetName(), fmt.Errorf(rvMsg, *pre.ResourceVersion, acc.GetResourceVersion()))
	}
	return nil
}

// Remove deletes the object stored as rec if it is still at rec's
// revision: the controller that finishes an object's deletion (a
// namespace once empty, an expired Event) removes it this way. A newer
// write or an earlier removal leaves it alone (removed is false).
func (x *Resource) Remove(ctx context.Context, rec kv.Record) (removed bool, err error) {
	obj, err := x.Decode(rec)
	if err != nil {
		return false, err
	}
	_, err = x.g.store.Delete(ctx, rec.Key, rec.Rev, x.encoder(obj))
	if errors.Is(err, kv.ErrConflict) || errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	x.afterDelete(ctx, obj, mustAccessor(obj))
	return true, nil
}

// HasFinalizer reports whether obj carries finalizer f.
func HasFinalizer(obj metav1.Object, f string) bool { return hasFinalizer(obj, f) }
