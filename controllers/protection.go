package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The storage-object-in-use protection controllers of
// kube-controller-manager: a PersistentVolumeClaim being deleted keeps
// its kubernetes.io/pvc-protection finalizer while a Pod that has not
// finished uses it, and a PersistentVolume its kubernetes.io/pv-protection
// finalizer while it is Bound. Without them a deleted claim or volume
// would wait for ever.

const (
	pvcProtection = "kubernetes.io/pvc-protection"
	pvProtection  = "kubernetes.io/pv-protection"
	vacProtection = "kubernetes.io/vac-protection"
)

// protectionResync bounds how long a release waits when a change that
// frees a claim (a Pod finishing elsewhere) was missed.
const protectionResync = 30 * time.Second

func (m *Manager) protectionController(ctx context.Context) error {
	pvcs := m.api.MustLookup("", "v1", "persistentvolumeclaims")
	pvs := m.api.MustLookup("", "v1", "persistentvolumes")
	pods := m.api.MustLookup("", "v1", "pods")
	vacs := m.api.MustLookup("storage.k8s.io", "v1", "volumeattributesclasses")
	rev, err := m.store.CurrentRev(ctx)
	if err != nil {
		return err
	}
	var watches []kv.Watcher
	for _, x := range []*registry.Resource{pvcs, pvs, pods, vacs} {
		w, err := x.Watch(ctx, kv.WatchOptions{After: rev})
		if err != nil {
			return err
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	t := time.NewTicker(protectionResync)
	defer t.Stop()
	rescan := true
	waiting := false // some protected object is still in use
	for {
		if rescan {
			if waiting, err = m.releaseProtected(ctx, pvcs, pvs, pods, vacs); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			rescan = waiting
		case ev, ok := <-watches[0].Events():
			if !ok {
				return watches[0].Err()
			}
			// A claim or volume that went may free a class.
			rescan = beingDeleted(pvcs, ev) || waiting
		case ev, ok := <-watches[1].Events():
			if !ok {
				return watches[1].Err()
			}
			rescan = beingDeleted(pvs, ev) || waiting
		case ev, ok := <-watches[3].Events():
			if !ok {
				return watches[3].Err()
			}
			rescan = beingDeleted(vacs, ev)
		case _, ok := <-watches[2].Events():
			if !ok {
				return watches[2].Err()
			}
			// A Pod that finished or went may free a claim.
			rescan = waiting
		}
	}
}

// beingDeleted reports whether a watched object waits on its deletion.
func beingDeleted(x *registry.Resource, ev kv.Event) bool {
	if ev.Type == kv.Deleted {
		return false
	}
	obj, err := x.Decode(ev.Record)
	if err != nil {
		return true // let the scan find out
	}
	acc, ok := obj.(metav1.Object)
	return ok && acc.GetDeletionTimestamp() != nil
}

// releaseProtected removes the protection finalizers that no longer
// protect anything; waiting reports objects still held because in use.
func (m *Manager) releaseProtected(ctx context.Context, pvcs, pvs, pods, vacs *registry.Resource) (waiting bool, err error) {
	// Terminating objects that still carry their protection finalizer.
	held := func(x *registry.Resource, finalizer string) ([]runtime.Object, error) {
		var out []runtime.Object
		err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
			obj, err := x.Decode(rec)
			if err != nil {
				return err
			}
			if acc := obj.(metav1.Object); acc.GetDeletionTimestamp() != nil && hasFinalizer(acc, finalizer) {
				out = append(out, obj)
			}
			return nil
		})
		return out, err
	}
	release := func(x *registry.Resource, finalizer string, obj runtime.Object) error {
		acc := obj.(metav1.Object)
		return m.mutateMeta(ctx, x, acc.GetNamespace(), acc.GetName(), "", func(cur metav1.Object) bool {
			return cur.GetUID() == acc.GetUID() && dropFinalizer(cur, finalizer)
		})
	}

	var claims, volumes []runtime.Object
	if m.enabled(PVCProtectionController) {
		if claims, err = held(pvcs, pvcProtection); err != nil {
			return false, err
		}
	}
	if len(claims) > 0 {
		inUse, err := m.claimsInUse(ctx, pods)
		if err != nil {
			return false, err
		}
		for _, obj := range claims {
			c := obj.(*corev1.PersistentVolumeClaim)
			if inUse[c.Namespace+"/"+c.Name] {
				waiting = true
				continue
			}
			if err := release(pvcs, pvcProtection, c); err != nil {
				return false, err
			}
		}
	}
	if m.enabled(PVProtectionController) {
		if volumes, err = held(pvs, pvProtection); err != nil {
			return false, err
		}
	}
	for _, obj := range volumes {
		if obj.(*corev1.PersistentVolume).Status.Phase == corev1.VolumeBound {
			waiting = true
			continue
		}
		if err := release(pvs, pvProtection, obj); err != nil {
			return false, err
		}
	}
	// A VolumeAttributesClass (kubernetes.io/vac-protection, added by
	// kube's StorageObjectInUseProtection admission) while a claim or
	// volume names it.
	var classes []runtime.Object
	if m.enabled(VACProtectionController) {
		if classes, err = held(vacs, vacProtection); err != nil {
			return false, err
		}
	}
	if len(classes) > 0 {
		inUse, err := m.classesInUse(ctx, pvcs, pvs)
		if err != nil {
			return false, err
		}
		for _, obj := range classes {
			if inUse[obj.(metav1.Object).GetName()] {
				waiting = true
				continue
			}
			if err := release(vacs, vacProtection, obj); err != nil {
				return false, err
			}
		}
	}
	return waiting, nil
}

// classesInUse names the VolumeAttributesClasses claims and volumes name.
func (m *Manager) classesInUse(ctx context.Context, pvcs, pvs *registry.Resource) (map[string]bool, error) {
	inUse := map[string]bool{}
	name := func(s *string) {
		if s != nil && *s != "" {
			inUse[*s] = true
		}
	}
	err := m.eachStored(ctx, kv.ListOptions{Resource: pvcs.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := pvcs.Decode(rec)
		if err != nil {
			return err
		}
		c := obj.(*corev1.PersistentVolumeClaim)
		name(c.Spec.VolumeAttributesClassName)
		name(c.Status.CurrentVolumeAttributesClassName)
		if c.Status.ModifyVolumeStatus != nil {
			name(&c.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = m.eachStored(ctx, kv.ListOptions{Resource: pvs.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := pvs.Decode(rec)
		if err != nil {
			return err
		}
		name(obj.(*corev1.PersistentVolume).Spec.VolumeAttributesClassName)
		return nil
	})
	return inUse, err
}

// claimsInUse names ("namespace/claim") the claims of Pods that have not
// finished.
func (m *Manager) claimsInUse(ctx context.Context, pods *registry.Resource) (map[string]bool, error) {
	inUse := map[string]bool{}
	err := m.eachStored(ctx, kv.ListOptions{Resource: pods.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := pods.Decode(rec)
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				inUse[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
			case v.Ephemeral != nil:
				// A generic ephemeral volume's claim is named after both.
				inUse[pod.Namespace+"/"+pod.Name+"-"+v.Name] = true
			}
		}
		return nil
	})
	return inUse, err
}

// dropFinalizer removes f from obj, reporting whether it was there.
func dropFinalizer(obj metav1.Object, f string) bool {
	var kept []string
	for _, x := range obj.GetFinalizers() {
		if x != f {
			kept = append(kept, x)
		}
	}
	if len(kept) == len(obj.GetFinalizers()) {
		return false
	}
	obj.SetFinalizers(kept)
	return true
}
