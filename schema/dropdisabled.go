package schema

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	pvutil "k8s.io/kubernetes/pkg/api/persistentvolume"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// Fields behind feature gates that are off are cleared on write, unless
// the stored object already uses them, as kube's strategies do with
// kube's own helpers: a Pod's and every pod template's (a container's
// stopSignal, a workload reference, …), volumes' and claims', and a
// StatefulSet's maxUnavailable.

func dropDisabledPodFields(obj, old runtime.Object) {
	var o *core.Pod
	if old != nil {
		o = old.(*core.Pod)
	}
	podutil.DropDisabledPodFields(obj.(*core.Pod), o)
}

// dropDisabledTemplate drops what a kind's pod template may not carry.
func dropDisabledTemplate[T runtime.Object](template func(T) *core.PodTemplateSpec) func(obj, old runtime.Object) {
	return func(obj, old runtime.Object) {
		var o *core.PodTemplateSpec
		if old != nil {
			o = template(old.(T))
		}
		podutil.DropDisabledTemplateFields(template(obj.(T)), o)
	}
}

func dropDisabledStatefulSetFields(obj, old runtime.Object) {
	s := obj.(*apps.StatefulSet)
	var o *apps.StatefulSet
	var oldTemplate *core.PodTemplateSpec
	if old != nil {
		o = old.(*apps.StatefulSet)
		oldTemplate = &o.Spec.Template
	}
	podutil.DropDisabledTemplateFields(&s.Spec.Template, oldTemplate)
	inUse := o != nil && o.Spec.UpdateStrategy.RollingUpdate != nil && o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil
	if !utilfeature.DefaultFeatureGate.Enabled(features.MaxUnavailableStatefulSet) && !inUse && s.Spec.UpdateStrategy.RollingUpdate != nil {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil
	}
}

func dropDisabledVolumeFields(obj, old runtime.Object) {
	var o *core.PersistentVolumeSpec
	if old != nil {
		o = &old.(*core.PersistentVolume).Spec
	}
	pvutil.DropDisabledSpecFields(&obj.(*core.PersistentVolume).Spec, o)
}

// prepareClaimSpec is what kube's claim strategy does to a claim's spec
// first: drop what is behind gates that are off, a dataSource of a kind
// no provisioner reads (neither a claim nor a VolumeSnapshot) where no
// dataSourceRef is set, and fill dataSource and dataSourceRef from each
// other (external provisioners read the latter). The stored claim is
// normalized where its update is validated (claimUpdateValid).
func prepareClaimSpec(obj, old runtime.Object) {
	spec := &obj.(*core.PersistentVolumeClaim).Spec
	var o *core.PersistentVolumeClaimSpec
	if old != nil {
		o = &old.(*core.PersistentVolumeClaim).Spec
	}
	pvcutil.DropDisabledFields(spec, o)
	pvcutil.EnforceDataSourceBackwardsCompatibility(spec, o)
	pvcutil.NormalizeDataSources(spec)
}

// claimUpdateValid validates a claim's update against the stored claim
// with its data sources normalized too, as kube's strategy normalizes
// the old object: a claim stored with only a dataSource (by an older
// Tabula) would otherwise read as having its spec changed.
func claimUpdateValid(c, old *core.PersistentVolumeClaim) field.ErrorList {
	pvcutil.NormalizeDataSources(&old.Spec)
	return corevalidation.ValidatePersistentVolumeClaimUpdate(c, old, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, old))
}
