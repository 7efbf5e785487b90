package schema

import (
	corev1 "k8s.io/api/core/v1"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/certificates"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/helper/qos"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/discovery"
	"k8s.io/kubernetes/pkg/apis/storage"
	"k8s.io/kubernetes/pkg/features"
	utilptr "k8s.io/utils/ptr"
)

// The parts of kube-apiserver's create strategies that are particular to
// one kind and that clients read back. They receive kube's internal
// objects, after the generic status reset.

// podPrepareForCreate: a new Pod is Pending, with its QoS class; one
// held by scheduling gates says so in its PodScheduled condition; its
// affinity terms' and spread constraints' matchLabelKeys (and
// mismatchLabelKeys) are merged into their selectors with the Pod's own
// values, which kube-scheduler 1.35 relies on; a container's deprecated
// AppArmor annotation becomes its appArmorProfile.
func podPrepareForCreate(obj runtime.Object) {
	p, ok := obj.(*core.Pod)
	if !ok {
		return
	}
	p.Status = core.PodStatus{Phase: core.PodPending, QOSClass: qos.GetPodQOS(p)}
	if len(p.Spec.SchedulingGates) > 0 {
		podutil.UpdatePodCondition(&p.Status, &core.PodCondition{Type: core.PodScheduled, Status: core.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"})
	}
	mergeLabelKeys(p)
	podutil.VisitContainers(&p.Spec, podutil.AllFeatureEnabledContainers(), func(c *core.Container, _ podutil.ContainerType) bool {
		if profile, ok := appArmorFromAnnotation(p, c); ok && profile != nil {
			if c.SecurityContext == nil {
				c.SecurityContext = &core.SecurityContext{}
			}
			c.SecurityContext.AppArmorProfile = profile
		}
		return true
	})
}

// mergeLabelKeys adds to each selector of the Pod's affinity terms (with
// MatchLabelKeysInPodAffinity) and topology spread constraints (with
// MatchLabelKeysInPodTopologySpread and its SelectorMerge) a requirement
// per listed key the Pod has a label for: In (its value) for
// matchLabelKeys, NotIn for mismatchLabelKeys. A nil selector matches
// nothing and stays nil.
func mergeLabelKeys(p *core.Pod) {
	add := func(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, k := range keys {
			if v, ok := p.Labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	term := func(t *core.PodAffinityTerm) {
		if t.LabelSelector != nil {
			add(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
			add(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
		}
	}
	gate := utilfeature.DefaultFeatureGate.Enabled
	if a := p.Spec.Affinity; a != nil && gate(features.MatchLabelKeysInPodAffinity) {
		if a.PodAffinity != nil {
			for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
			for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
		if a.PodAntiAffinity != nil {
			for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
			for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
	}
	if gate(features.MatchLabelKeysInPodTopologySpread) && gate(features.MatchLabelKeysInPodTopologySpreadSelectorMerge) {
		for i := range p.Spec.TopologySpreadConstraints {
			if c := &p.Spec.TopologySpreadConstraints[i]; c.LabelSelector != nil {
				add(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
			}
		}
	}
}

// appArmorFromAnnotation reads container c's deprecated AppArmor
// annotation on a new non-Windows Pod that gives c no profile of its own:
// ok says the annotation is there; profile is the field it stands for,
// nil when it names no valid profile or the Pod-level one (nothing to
// copy then).
func appArmorFromAnnotation(p *core.Pod, c *core.Container) (profile *core.AppArmorProfile, ok bool) {
	if p.Spec.OS != nil && p.Spec.OS.Name == core.Windows {
		return nil, false
	}
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return nil, false
	}
	a, ok := p.Annotations[core.DeprecatedAppArmorAnnotationKeyPrefix+c.Name]
	if !ok {
		return nil, false
	}
	profile = podutil.ApparmorFieldForAnnotation(a)
	if profile != nil && len(corevalidation.ValidateAppArmorProfileField(profile, &field.Path{})) > 0 {
		profile = nil
	}
	var podProfile *core.AppArmorProfile
	if p.Spec.SecurityContext != nil {
		podProfile = p.Spec.SecurityContext.AppArmorProfile
	}
	if profile != nil && equality.Semantic.DeepEqual(profile, podProfile) {
		return nil, true
	}
	return profile, true
}

// persistentVolumePrepareForCreate: a new volume is Pending since now.
// (Its protection finalizer, like a claim's, is added by kube's
// StorageObjectInUseProtection admission plugin in the registry.)
func persistentVolumePrepareForCreate(obj runtime.Object) {
	if pv, ok := obj.(*core.PersistentVolume); ok {
		t := metav1.NewTime(now().Truncate(time.Second))
		pv.Status = core.PersistentVolumeStatus{Phase: core.VolumePending, LastPhaseTransitionTime: &t}
	}
}

// daemonSetPrepareForCreate: the first template generation is at least 1 (apps/v1
// carries it in the deprecated.daemonset.template.generation annotation).
func daemonSetPrepareForCreate(obj runtime.Object) {
	if ds, ok := obj.(*apps.DaemonSet); ok && ds.Spec.TemplateGeneration < 1 {
		ds.Spec.TemplateGeneration = 1
	}
}

// daemonSetPrepareForUpdate: an update cannot set the template
// generation; a changed template moves it on (kube's daemonset strategy).
func daemonSetPrepareForUpdate(obj, old runtime.Object) {
	ds, ok1 := obj.(*apps.DaemonSet)
	o, ok2 := old.(*apps.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	ds.Spec.TemplateGeneration = o.Spec.TemplateGeneration
	if !equality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template) {
		ds.Spec.TemplateGeneration++
	}
}

// daemonSetPrepareForStatus: a status write keeps the spec, the template
// generation (apps/v1's annotation) with it.
func daemonSetPrepareForStatus(obj, old runtime.Object) {
	if ds, ok := obj.(*apps.DaemonSet); ok {
		if o, ok := old.(*apps.DaemonSet); ok {
			ds.Spec.TemplateGeneration = o.Spec.TemplateGeneration
		}
	}
}

// deploymentPrepareForStatus: a status write keeps the spec, with the
// rollback apps/v1 carries in the deprecated.deployment.rollback.to
// annotation (kube's status strategy sets the spec back whole).
func deploymentPrepareForStatus(obj, old runtime.Object) {
	if d, ok := obj.(*apps.Deployment); ok {
		if o, ok := old.(*apps.Deployment); ok {
			d.Spec.RollbackTo = o.Spec.RollbackTo
		}
	}
}

// hpaPrepareForUpdate and hpaPrepareForStatus: an autoscaling/v1 update
// keeps the status and a status write the spec, judged on kube's internal
// object, since v1 carries metrics and conditions in annotations that a
// write through the other half must not change (v2's halves are its
// fields, which the generic narrowing keeps).
func hpaPrepareForUpdate(obj, old runtime.Object) {
	if h, ok := obj.(*autoscaling.HorizontalPodAutoscaler); ok {
		if o, ok := old.(*autoscaling.HorizontalPodAutoscaler); ok {
			h.Status = o.Status
		}
	}
}

func hpaPrepareForStatus(obj, old runtime.Object) {
	if h, ok := obj.(*autoscaling.HorizontalPodAutoscaler); ok {
		if o, ok := old.(*autoscaling.HorizontalPodAutoscaler); ok {
			h.Spec = o.Spec
		}
	}
}

// podPrepareForStatus: a status write keeps the QoS class set at create
// and the observed generations it leaves unset, in the status and in
// each condition (the first old condition of the same type), and drops
// fields of gates that are off, as kube's pod status strategy does.
func podPrepareForStatus(obj, old runtime.Object) {
	p, ok1 := obj.(*core.Pod)
	o, ok2 := old.(*core.Pod)
	if !ok1 || !ok2 {
		return
	}
	if p.Status.QOSClass == "" {
		p.Status.QOSClass = o.Status.QOSClass
	}
	if p.Status.ObservedGeneration == 0 {
		p.Status.ObservedGeneration = o.Status.ObservedGeneration
	}
	was := map[core.PodConditionType][]int64{}
	for _, c := range o.Status.Conditions {
		was[c.Type] = append(was[c.Type], c.ObservedGeneration)
	}
	for i, c := range p.Status.Conditions {
		var g int64
		if gens := was[c.Type]; len(gens) > 0 {
			g, was[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			p.Status.Conditions[i].ObservedGeneration = g
		}
	}
	// And, as every Pod write, clears what gates that are off guard.
	dropDisabledPodFields(p, o)
}

// persistentVolumePrepareForStatus: a phase change is stamped with its
// time unless the write set another, and a write that leaves the phase
// and the time out keeps the time (kube's persistentvolume status
// strategy).
func persistentVolumePrepareForStatus(obj, old runtime.Object) {
	pv, ok1 := obj.(*core.PersistentVolume)
	o, ok2 := old.(*core.PersistentVolume)
	if !ok1 || !ok2 {
		return
	}
	switch at := pv.Status.LastPhaseTransitionTime; {
	case pv.Status.Phase == o.Status.Phase && at == nil:
		pv.Status.LastPhaseTransitionTime = o.Status.LastPhaseTransitionTime
	case pv.Status.Phase != o.Status.Phase && (at == nil || at.Equal(o.Status.LastPhaseTransitionTime)):
		t := metav1.NewTime(now().Truncate(time.Second))
		pv.Status.LastPhaseTransitionTime = &t
	}
}

// servicePrepareForUpdate: a Service that is no longer a LoadBalancer
// loses its load balancer status (kube's dropTypeDependentFields; the
// registry's Service allocator drops the rest a type change leaves).
func servicePrepareForUpdate(obj, _ runtime.Object) {
	if s, ok := obj.(*core.Service); ok && s.Spec.Type != core.ServiceTypeLoadBalancer {
		s.Status.LoadBalancer = core.LoadBalancerStatus{}
	}
}

// nodePrepareForStatus: status.config (the retired dynamic kubelet
// configuration) is kept only by a Node that already has one, as kube's
// node status strategy keeps it.
func nodePrepareForStatus(obj, old runtime.Object) {
	if n, ok := obj.(*core.Node); ok {
		if o, ok := old.(*core.Node); ok && o.Status.Config == nil {
			n.Status.Config = nil
		}
	}
}

// nodeDropDisabled drops what kube's node strategy drops from a written
// Node (old is nil on create): the retired dynamic kubelet configuration
// (spec.configSource unless the Node had one, status.config on create)
// and status fields of features switched off that the Node did not have.
func nodeDropDisabled(obj, old runtime.Object) {
	n, ok := obj.(*core.Node)
	if !ok {
		return
	}
	o, _ := old.(*core.Node)
	if o == nil {
		n.Status.Config = nil
	}
	if o == nil || o.Spec.ConfigSource == nil {
		n.Spec.ConfigSource = nil
	}
	gate := utilfeature.DefaultFeatureGate.Enabled
	if !gate(features.RecursiveReadOnlyMounts) && !gate(features.UserNamespacesSupport) {
		n.Status.RuntimeHandlers = nil
	}
	if !gate(features.SupplementalGroupsPolicy) && (o == nil || o.Status.Features == nil) {
		n.Status.Features = nil
	}
	if !gate(features.NodeDeclaredFeatures) && (o == nil || o.Status.DeclaredFeatures == nil) {
		n.Status.DeclaredFeatures = nil
	}
}

// nodeWarnings are kube's on a Node's create and update: the removed
// configSource, the unused externalID, pod CIDRs written ambiguously.
func nodeWarnings(obj, _ runtime.Object) []string {
	n, ok := obj.(*core.Node)
	if !ok {
		return nil
	}
	var w []string
	if n.Spec.ConfigSource != nil {
		w = append(w, "spec.configSource: the feature is removed")
	}
	if n.Spec.DoNotUseExternalID != "" {
		w = append(w, "spec.externalID: this field is deprecated, and is unused by Kubernetes")
	}
	for i, c := range n.Spec.PodCIDRs {
		w = append(w, validation.GetWarningsForCIDR(field.NewPath("spec", "podCIDRs").Index(i), c)...)
	}
	return w
}

// endpointSliceWarnings are kube's: FQDN slices are deprecated (said on
// create), and addresses written in a form a later release will refuse
// are named, except in slices kube's own controllers wrote.
func endpointSliceWarnings(obj, old runtime.Object) []string {
	s, ok := obj.(*discovery.EndpointSlice)
	if !ok {
		return nil
	}
	var warnings []string
	if old == nil && s.AddressType == discovery.AddressTypeFQDN {
		warnings = append(warnings, field.NewPath("spec", "addressType").String()+": FQDN endpoints are deprecated")
	}
	switch s.Labels[discoveryv1.LabelManagedBy] {
	case "endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io":
		return warnings
	}
	for i, ep := range s.Endpoints {
		for j, addr := range ep.Addresses {
			warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), addr)...)
		}
	}
	return warnings
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
// jobStatusValidationOptions are the status checks kube's job status
// strategy turns on (JobManagedBy is GA): counters may not go down
// (succeeded may for an indexed Job whose completions equal its
// parallelism), a terminal condition may not be undone, completionTime
// not changed once set; the others only when the status fields they look
// at change, so a controller catching up after a spec change is not
// refused for what it has not fixed yet.
func jobStatusValidationOptions(j, old *batch.Job) batchvalidation.JobStatusValidationOptions {
	st, ost := &j.Status, &old.Status
	condChanged := func(t batch.JobConditionType) bool {
		return batchvalidation.IsConditionTrue(ost.Conditions, t) != batchvalidation.IsConditionTrue(st.Conditions, t)
	}
	finished := batchvalidation.IsJobFinished(old) != batchvalidation.IsJobFinished(j)
	complete := batchvalidation.IsJobComplete(old) != batchvalidation.IsJobComplete(j)
	failed := batchvalidation.IsJobFailed(old) != batchvalidation.IsJobFailed(j)
	completedIndexes := ost.CompletedIndexes != st.CompletedIndexes
	failedIndexes := !utilptr.Equal(ost.FailedIndexes, st.FailedIndexes)
	active := ost.Active != st.Active
	startTime := !utilptr.Equal(ost.StartTime, st.StartTime)
	completionTime := !utilptr.Equal(ost.CompletionTime, st.CompletionTime)
	indexed := utilptr.Deref(j.Spec.CompletionMode, batch.NonIndexedCompletion) == batch.IndexedCompletion
	suspendedEmpty := utilptr.Deref(j.Spec.Suspend, false) && j.Spec.Completions != nil && *j.Spec.Completions == 0
	// A resume shows as JobSuspended going from True to False.
	resuming := batchvalidation.IsConditionTrue(ost.Conditions, batch.JobSuspended) && batchvalidation.IsConditionFalse(st.Conditions, batch.JobSuspended)
	return batchvalidation.JobStatusValidationOptions{
		RejectDecreasingSucceededCounter:             !indexed || !utilptr.Equal(j.Spec.Completions, j.Spec.Parallelism),
		RejectDecreasingFailedCounter:                true,
		RejectDisablingTerminalCondition:             true,
		RejectMutatingCompletionTime:                 true,
		AllowForSuccessCriteriaMetInExtendedScope:    true,
		RejectInvalidCompletedIndexes:                completedIndexes,
		RejectCompletedIndexesForNonIndexedJob:       completedIndexes,
		RejectInvalidFailedIndexes:                   failedIndexes,
		RejectFailedIndexesForNoBackoffLimitPerIndex: failedIndexes,
		RejectFailedIndexesOverlappingCompleted:      failedIndexes || completedIndexes,
		RejectFailedJobWithoutFailureTarget:          failed || failedIndexes,
		RejectCompleteJobWithoutSuccessCriteriaMet:   complete || condChanged(batch.JobSuccessCriteriaMet),
		RejectFinishedJobWithActivePods:              finished || active,
		RejectFinishedJobWithoutStartTime:            (finished || startTime) && !suspendedEmpty,
		RejectFinishedJobWithUncountedTerminatedPods: finished || !equality.Semantic.DeepEqual(ost.UncountedTerminatedPods, st.UncountedTerminatedPods),
		RejectStartTimeUpdateForUnsuspendedJob:       startTime && !resuming,
		RejectCompletionTimeBeforeStartTime:          startTime || completionTime,
		RejectNotCompleteJobWithCompletionTime:       complete || completionTime,
		RejectCompleteJobWithoutCompletionTime:       complete || completionTime,
		RejectCompleteJobWithFailedCondition:         complete || failed,
		RejectCompleteJobWithFailureTargetCondition:  complete || condChanged(batch.JobFailureTarget),
		RejectMoreReadyThanActivePods:                active || !utilptr.Equal(ost.Ready, st.Ready),
		RejectFinishedJobWithTerminatingPods:         finished || !utilptr.Equal(ost.Terminating, st.Terminating),
	}
}

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
		// A suspended Job that never started may have its scheduling
		// directives changed (Kueue does so); the rules for one that ran
		// and was suspended are behind gates off by default in kube 1.35.
		suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
		stopped := batchvalidation.IsConditionTrue(old.Status.Conditions, batch.JobSuspended) && old.Status.Active == 0
		opts.AllowMutableSchedulingDirectives = suspended && old.Status.StartTime == nil
		if utilfeature.DefaultFeatureGate.Enabled(features.MutablePodResourcesForSuspendedJobs) {
			opts.AllowMutablePodResources = stopped
		}
		if utilfeature.DefaultFeatureGate.Enabled(features.MutableSchedulingDirectivesForSuspendedJobs) {
			opts.AllowMutableSchedulingDirectives = suspended && stopped
		}
		_, hadName := old.Spec.Template.Labels[batch.JobNameLabel]
		_, hadUID := old.Spec.Template.Labels[batch.ControllerUidLabel]
		opts.RequirePrefixedLabels = hadName && hadUID
	}
	return opts
}

// podKeepAllButEphemeralContainers is what pods/ephemeralcontainers
// writes: the stored Pod with the request's ephemeral containers (kube's
// ephemeral-containers strategy); the generation moves with the spec.
func podKeepAllButEphemeralContainers(obj, old runtime.Object) {
	p, o := obj.(*core.Pod), old.(*core.Pod)
	ephemeral, rv := p.Spec.EphemeralContainers, p.ResourceVersion
	*p = *o.DeepCopy()
	p.Spec.EphemeralContainers, p.ResourceVersion = ephemeral, rv
	bumpPodGeneration(p, o)
}

// podKeepAllButResources is what pods/resize writes: the stored Pod with
// the request's container resources and resize policies. A request that
// adds, removes, reorders or renames containers is kept as it is, for
// validation to refuse (kube's resize strategy does the same).
func podKeepAllButResources(obj, old runtime.Object) {
	p, o := obj.(*core.Pod), old.(*core.Pod)
	resized := func(req, stored []core.Container) ([]core.Container, bool) {
		if len(req) != len(stored) {
			return nil, false
		}
		out := make([]core.Container, len(stored))
		for i := range stored {
			if req[i].Name != stored[i].Name {
				return nil, false
			}
			out[i] = *stored[i].DeepCopy()
			out[i].Resources, out[i].ResizePolicy = req[i].Resources, req[i].ResizePolicy
		}
		return out, true
	}
	containers, ok1 := resized(p.Spec.Containers, o.Spec.Containers)
	inits, ok2 := resized(p.Spec.InitContainers, o.Spec.InitContainers)
	if !ok1 || !ok2 {
		return
	}
	rv := p.ResourceVersion
	*p = *o.DeepCopy()
	p.ResourceVersion = rv
	p.Spec.Containers, p.Spec.InitContainers = containers, inits
	bumpPodGeneration(p, o)
}

// bumpPodGeneration moves a Pod's generation when its spec changed.
func bumpPodGeneration(p, o *core.Pod) {
	if !equality.Semantic.DeepEqual(p.Spec, o.Spec) {
		p.Generation = o.Generation + 1
	}
}

// csrPrepareForCreate: a new request carries no decision and no
// client-written requester (csrRequestedBy records the real one).
func csrPrepareForCreate(obj runtime.Object) {
	csr := obj.(*certificates.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	csr.Status = certificates.CertificateSigningRequestStatus{Conditions: []certificates.CertificateSigningRequestCondition{}}
}

// csrKeepSpec: a request is immutable after creation except through its
// subresources.
func csrKeepSpec(obj, old runtime.Object) {
	obj.(*certificates.CertificateSigningRequest).Spec = old.(*certificates.CertificateSigningRequest).Spec
}

// csrKeepAllButConditions is what approval writes: the decision
// conditions, timestamped.
func csrKeepAllButConditions(obj, old runtime.Object) {
	n, o := obj.(*certificates.CertificateSigningRequest), old.(*certificates.CertificateSigningRequest)
	conditions := stampConditions(n.Status.Conditions, o.Status.Conditions)
	n.Spec, n.Status = o.Spec, o.Status
	n.Status.Conditions = conditions
}

// csrKeepSpecAndDecisions is what status writes (a signer's
// certificate): the Approved and Denied conditions stay as they were
// unless the write adds or removes one, which validation then refuses.
func csrKeepSpecAndDecisions(obj, old runtime.Object) {
	n, o := obj.(*certificates.CertificateSigningRequest), old.(*certificates.CertificateSigningRequest)
	n.Spec = o.Spec
	for _, typ := range []certificates.RequestConditionType{certificates.CertificateApproved, certificates.CertificateDenied} {
		var ni, oi []int
		for i, c := range n.Status.Conditions {
			if c.Type == typ {
				ni = append(ni, i)
			}
		}
		for i, c := range o.Status.Conditions {
			if c.Type == typ {
				oi = append(oi, i)
			}
		}
		if len(ni) == len(oi) {
			for k := range ni {
				n.Status.Conditions[ni[k]] = o.Status.Conditions[oi[k]]
			}
		}
	}
	n.Status.Conditions = stampConditions(n.Status.Conditions, o.Status.Conditions)
}

// stampConditions fills the times of changed conditions, as kube's
// strategy does: now, or the old transition time when the status stayed.
func stampConditions(conditions, old []certificates.CertificateSigningRequestCondition) []certificates.CertificateSigningRequestCondition {
	now := metav1.Now()
	for i := range conditions {
		c := &conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
			for _, o := range old {
				if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
					c.LastTransitionTime = o.LastTransitionTime
				}
			}
		}
	}
	return conditions
}

// csrRequestedBy records who asked for the certificate.
func csrRequestedBy(obj runtime.Object, who Requester) {
	csr := obj.(*certificates.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = who.Name, who.UID, who.Groups
	if len(who.Extra) > 0 {
		csr.Spec.Extra = map[string]certificates.ExtraValue{}
		for k, v := range who.Extra {
			csr.Spec.Extra[k] = v
		}
	}
}

// keepSpec is a status write of a kind whose strategy has a status
// validation of its own: the spec and the metadata a status write may not
// touch stay as stored.
func keepSpec(obj, old runtime.Object) {
	setField(obj, "Spec", old)
	if n, ok := obj.(metav1.Object); ok {
		if o, ok := old.(metav1.Object); ok {
			metav1.ResetObjectMetaForStatus(n, o)
		}
	}
}

// csiDriverPrepareForUpdate: a spec change moves the generation on (kube's
// csidriver strategy; a new driver has none).
func csiDriverPrepareForUpdate(obj, old runtime.Object) {
	d, o := obj.(*storage.CSIDriver), old.(*storage.CSIDriver)
	if !equality.Semantic.DeepEqual(d.Spec, o.Spec) {
		d.Generation = o.Generation + 1
	}
}

// endpointSliceDropTopology is kube's dropTopologyOnV1: a discovery/v1
// write keeps no endpoint's deprecatedTopology. An update that leaves
// the endpoints as they were keeps what is stored; one that changes
// them moves a hostname the stored slice named there into nodeName.
func endpointSliceDropTopology(obj, old runtime.Object) {
	s := obj.(*discovery.EndpointSlice)
	var known map[string]bool
	if old != nil {
		o := old.(*discovery.EndpointSlice)
		if equality.Semantic.DeepEqual(o.Endpoints, s.Endpoints) {
			return
		}
		known = map[string]bool{}
		for _, ep := range o.Endpoints {
			if n, ok := ep.DeprecatedTopology[corev1.LabelHostname]; ok {
				known[n] = true
			}
		}
	}
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		if n, ok := ep.DeprecatedTopology[corev1.LabelHostname]; ep.NodeName == nil && ok && known[n] && len(corevalidation.ValidateNodeName(n, false)) == 0 {
			ep.NodeName = &n
		}
		ep.DeprecatedTopology = nil
	}
}
