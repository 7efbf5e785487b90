package schema

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/helper/qos"
)

// The parts of kube-apiserver's create strategies that are particular to
// one kind and that clients read back. They receive kube's internal
// objects, after the generic status reset.

// podPrepareForCreate: a new Pod is Pending, with its QoS class.
func podPrepareForCreate(obj runtime.Object) {
	if p, ok := obj.(*core.Pod); ok {
		p.Status = core.PodStatus{Phase: core.PodPending, QOSClass: qos.GetPodQOS(p)}
	}
}

// persistentVolumePrepareForCreate: a new volume is Pending since now,
// and protected while in use (kube-apiserver's StorageObjectInUseProtection
// admission adds the finalizer).
func persistentVolumePrepareForCreate(obj runtime.Object) {
	if pv, ok := obj.(*core.PersistentVolume); ok {
		t := metav1.NewTime(now().Truncate(time.Second))
		pv.Status = core.PersistentVolumeStatus{Phase: core.VolumePending, LastPhaseTransitionTime: &t}
		addFinalizer(&pv.ObjectMeta, "kubernetes.io/pv-protection")
	}
}

// persistentVolumeClaimPrepareForCreate: a claim is protected while a pod
// uses it (StorageObjectInUseProtection admission).
func persistentVolumeClaimPrepareForCreate(obj runtime.Object) {
	if pvc, ok := obj.(*core.PersistentVolumeClaim); ok {
		addFinalizer(&pvc.ObjectMeta, "kubernetes.io/pvc-protection")
	}
}

// daemonSetPrepareForCreate: the first template generation is 1 (apps/v1
// carries it in the deprecated.daemonset.template.generation annotation).
func daemonSetPrepareForCreate(obj runtime.Object) {
	if ds, ok := obj.(*apps.DaemonSet); ok {
		ds.Spec.TemplateGeneration = 1
	}
}

func addFinalizer(m *metav1.ObjectMeta, f string) {
	for _, have := range m.Finalizers {
		if have == f {
			return
		}
	}
	m.Finalizers = append(m.Finalizers, f)
}

// jobPrepareForCreate: unless the Job asks for a manual selector, its pods
// are labelled with the job's name and uid and selected by the uid.
func jobPrepareForCreate(obj runtime.Object) {
	j, ok := obj.(*batch.Job)
	if !ok || j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for key, value := range map[string]string{
		batch.LegacyJobNameLabel: j.Name, batch.JobNameLabel: j.Name,
		batch.LegacyControllerUidLabel: string(j.UID), batch.ControllerUidLabel: string(j.UID),
	} {
		// A label the user set stays; validation rejects a wrong one.
		if _, set := j.Spec.Template.Labels[key]; !set {
			j.Spec.Template.Labels[key] = value
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := j.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; !set {
		j.Spec.Selector.MatchLabels[batch.ControllerUidLabel] = string(j.UID)
	}
}

// jobValidationOptions are the options kube's Job strategy validates with:
// new Jobs must carry the prefixed labels; old ones keep what they had.
func jobValidationOptions(j, old *batch.Job) batchvalidation.JobValidationOptions {
	var oldTemplate *core.PodTemplateSpec
	if old != nil {
		oldTemplate = &old.Spec.Template
	}
	opts := batchvalidation.JobValidationOptions{
		PodValidationOptions:  podutil.GetValidationOptionsFromPodTemplate(&j.Spec.Template, oldTemplate),
		RequirePrefixedLabels: true,
	}
	if old != nil {
		opts.AllowInvalidLabelValueInSelector = metav1validation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
		suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
		opts.AllowMutableSchedulingDirectives = suspended && batchvalidation.IsConditionTrue(old.Status.Conditions, batch.JobSuspended) && old.Status.Active == 0
		opts.AllowMutablePodResources = opts.AllowMutableSchedulingDirectives
		_, hadName := old.Spec.Template.Labels[batch.JobNameLabel]
		_, hadUID := old.Spec.Template.Labels[batch.ControllerUidLabel]
		opts.RequirePrefixedLabels = hadName && hadUID
	}
	return opts
}
