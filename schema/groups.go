package schema

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	unversionedvalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationvalidation "k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"
	nodeapi "k8s.io/kubernetes/pkg/api/node"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	serviceapi "k8s.io/kubernetes/pkg/api/service"
	storageutil "k8s.io/kubernetes/pkg/api/storage"
	admissionregistrationvalidation "k8s.io/kubernetes/pkg/apis/admissionregistration/validation"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	authorizationvalidation "k8s.io/kubernetes/pkg/apis/authorization/validation"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	certificatesvalidation "k8s.io/kubernetes/pkg/apis/certificates/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/discovery"
	discoveryvalidation "k8s.io/kubernetes/pkg/apis/discovery/validation"
	"k8s.io/kubernetes/pkg/apis/flowcontrol"
	flowcontrolvalidation "k8s.io/kubernetes/pkg/apis/flowcontrol/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/apis/node"
	nodevalidation "k8s.io/kubernetes/pkg/apis/node/validation"
	"k8s.io/kubernetes/pkg/apis/policy"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	"k8s.io/kubernetes/pkg/apis/resource"
	resourcevalidation "k8s.io/kubernetes/pkg/apis/resource/validation"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"k8s.io/kubernetes/pkg/apis/storage"
	storagevalidation "k8s.io/kubernetes/pkg/apis/storage/validation"
	"k8s.io/kubernetes/pkg/features"
	volumevalidation "k8s.io/kubernetes/pkg/volume/validation"
)

// The built-in kinds served through kube's own packages, one entry per
// kind, grouped by API group. Names, verbs, short names and categories
// are kube-apiserver 1.35's discovery (schema/groups_test.go compares them
// with the recording); the validation functions are those kube-apiserver's
// strategies call, with the options the strategies compute.
func kubeKinds() []*kubeKind {
	var kinds []*kubeKind
	for _, g := range [][]*kubeKind{coreKinds(), appsKinds(), batchKinds(), autoscalingKinds(), networkingKinds(),
		policyKinds(), rbacKinds(), storageKinds(), schedulingKinds(), discoveryKinds(), nodeKinds(), reviewKinds(),
		certificatesKinds(), flowcontrolKinds(), admissionregistrationKinds(), resourceKinds(), apiregistrationKinds(), apiextensionsKinds()} {
		kinds = append(kinds, g...)
	}
	return kinds
}

// namespaced and cluster describe a kind's names and scope; every verb is
// served unless the entry says otherwise.
func namespaced(group, version, kind, resource string, shortNames, categories []string, subresources ...string) Type {
	return Type{Group: group, Version: version, Kind: kind, ListKind: kind + "List", Resource: resource,
		Singular: singularOf(kind), ShortNames: shortNames, Categories: categories,
		Namespaced: true, Verbs: verbsAll, Subresources: subresources}
}

func cluster(group, version, kind, resource string, shortNames, categories []string, subresources ...string) Type {
	t := namespaced(group, version, kind, resource, shortNames, categories, subresources...)
	t.Namespaced = false
	return t
}

// with describes subresources of kinds of their own.
func (t Type) with(info map[string]SubresourceInfo) Type {
	t.SubresourceInfo = info
	return t
}

// proxyVerbs are the verbs of every proxy subresource, and
// proxyMethods what it relays; a kubelet stream is opened by GET
// (WebSocket) or POST (SPDY).
var (
	proxyVerbs    = []string{"create", "delete", "get", "patch", "update"}
	proxyMethods  = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	streamMethods = []string{"GET", "POST"}
)

// podSubresources are the Pod subresources a kubelet or scheduler serves;
// server/pods.go answers them as a node-less kube-apiserver would.
var podSubresources = map[string]SubresourceInfo{
	"attach":      {Kind: "PodAttachOptions", Verbs: []string{"create", "get"}, Connect: streamMethods},
	"binding":     {Kind: "Binding", Verbs: []string{"create"}},
	"eviction":    {Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
	"exec":        {Kind: "PodExecOptions", Verbs: []string{"create", "get"}, Connect: streamMethods},
	"log":         {Kind: "Pod", Verbs: []string{"get"}},
	"portforward": {Kind: "PodPortForwardOptions", Verbs: []string{"create", "get"}, Connect: streamMethods},
	"proxy":       {Kind: "PodProxyOptions", Verbs: proxyVerbs, Connect: proxyMethods},
}

// createOnUpdate lets PUT create a missing object, as the kind's strategy
// does on kube-apiserver.
// statusWritesMetadata marks a kind whose status writes change metadata
// too (Type.StatusMetadata), but for the fields named.
func (t Type) statusWritesMetadata(keep ...string) Type {
	t.StatusMetadata, t.StatusKeepsMetadata = true, keep
	return t
}

func (t Type) createOnUpdate() Type {
	t.AllowCreateOnUpdate = true
	return t
}

// conditionalUpdates marks a kind whose strategy in kube-apiserver does
// not allow unconditional updates (AllowUnconditionalUpdate false).
func (t Type) conditionalUpdates() Type {
	t.UpdateNeedsResourceVersion = true
	return t
}

// scalable adds the scale subresource at the replica paths every
// built-in scalable kind uses.
func (t Type) scalable(form SelectorForm) Type {
	t.Subresources = append(t.Subresources, "scale")
	t.Scale = &Scale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
		LabelSelectorPath: ".spec.selector", SelectorForm: form}
	return t
}

// singularOf is the lower-cased kind, which kube-apiserver reports as the
// singular name of every built-in resource.
func singularOf(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var all = []string{"all"}

// podTemplated adapts the validation functions of a kind that embeds a
// pod template: their options come from the template, as kube's strategies
// compute them.
func podTemplated[T runtime.Object](template func(T) *core.PodTemplateSpec,
	create func(T, corevalidation.PodValidationOptions) field.ErrorList,
	update func(obj, old T, opts corevalidation.PodValidationOptions) field.ErrorList,
) (func(runtime.Object) field.ErrorList, func(obj, old runtime.Object) field.ErrorList) {
	return validator(
		func(o T) field.ErrorList {
			return create(o, podutil.GetValidationOptionsFromPodTemplate(template(o), nil))
		},
		func(o, old T) field.ErrorList {
			return update(o, old, podutil.GetValidationOptionsFromPodTemplate(template(o), template(old)))
		})
}

// alsoCreate is an update validation that runs the create validation
// first, as the strategies do for kinds whose update function checks only
// what may not change.
func alsoCreate[T, O any](create func(T, O) field.ErrorList, update func(obj, old T, opts O) field.ErrorList) func(obj, old T, opts O) field.ErrorList {
	return func(obj, old T, opts O) field.ErrorList {
		return append(create(obj, opts), update(obj, old, opts)...)
	}
}

func coreKinds() []*kubeKind {
	svc := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "Service", "services", []string{"svc"}, all, "proxy", "status").createOnUpdate().statusWritesMetadata().
		with(map[string]SubresourceInfo{"proxy": {Kind: "ServiceProxyOptions", Verbs: proxyVerbs, Connect: proxyMethods}})}
	svc.validate, svc.validateUpdate = validator(corevalidation.ValidateServiceCreate, corevalidation.ValidateServiceUpdate)
	svc.fields = serviceFields
	svc.statusValidate = statusValidator(corevalidation.ValidateServiceStatusUpdate)
	svc.statusWarnings = func(obj, _ runtime.Object) []string {
		return loadBalancerIPWarnings(obj.(*core.Service).Status.LoadBalancer.Ingress)
	}
	svc.prepareUpdate = servicePrepareForUpdate
	svc.warnings = func(obj, old runtime.Object) []string {
		s, _ := obj.(*core.Service)
		o, _ := old.(*core.Service)
		if s == nil {
			return nil
		}
		return serviceapi.GetWarningsForService(s, o)
	}

	pod := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "Pod", "pods", []string{"po"}, all,
		"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "resize", "status").
		with(podSubresources).statusWritesMetadata("deletionTimestamp", "ownerReferences"), generation: generationOnChange}
	pod.fields = podFields
	pod.statusWarnings = podStatusWarnings
	// kube's ephemeral-containers and resize strategies compare and own
	// only what they write (core/pod/strategy.go include filters).
	pod.OwnedPaths = map[string][]string{
		"ephemeralcontainers": {"spec.ephemeralContainers"},
		"resize": {"spec.containers.*.resources", "spec.containers.*.resizePolicy",
			"spec.initContainers.*.resources", "spec.initContainers.*.resizePolicy"},
	}
	pod.GracePeriod = podGracePeriod
	pod.clockCells = openPodRestarts
	pod.RowConditions = podRowConditions
	pod.validate, pod.validateUpdate = validator(
		func(p *core.Pod) field.ErrorList {
			return corevalidation.ValidatePodCreate(p, podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil))
		},
		func(p, old *core.Pod) field.ErrorList {
			return corevalidation.ValidatePodUpdate(p, old, podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta))
		})
	pod.prepareCreate = podPrepareForCreate
	pod.warnings = podWarnings
	pod.updateWarnings = warnOnCreateOnly
	pod.dropDisabled = dropDisabledPodFields
	pod.statusPrepare = podPrepareForStatus
	pod.statusValidate = statusValidator(func(p, old *core.Pod) field.ErrorList {
		return corevalidation.ValidatePodStatusUpdate(p, old, podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta))
	})
	podOptions := func(p, old *core.Pod) corevalidation.PodValidationOptions {
		opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta)
		opts.ResourceIsPod = true
		return opts
	}
	_, validateEphemeral := validator(nil, func(p, old *core.Pod) field.ErrorList {
		return corevalidation.ValidatePodEphemeralContainersUpdate(p, old, podOptions(p, old))
	})
	_, validateResize := validator(nil, func(p, old *core.Pod) field.ErrorList {
		return corevalidation.ValidatePodResize(p, old, podOptions(p, old))
	})
	pod.subresourceUpdates = map[string]kubeSubresourceUpdate{
		"ephemeralcontainers": {prepare: podKeepAllButEphemeralContainers, validate: validateEphemeral},
		"resize":              {prepare: podKeepAllButResources, validate: validateResize},
	}

	pt := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "PodTemplate", "podtemplates", nil, nil), generation: generationOnChange}
	pt.validate, pt.validateUpdate = podTemplated(func(p *core.PodTemplate) *core.PodTemplateSpec { return &p.Template },
		corevalidation.ValidatePodTemplate, corevalidation.ValidatePodTemplateUpdate)
	pt.warnings = podTemplateWarnings
	pt.updateWarnings = warnOnGenerationMoved
	pt.dropDisabled = dropDisabledTemplate(func(p *core.PodTemplate) *core.PodTemplateSpec { return &p.Template })

	rc := &kubeKind{Type: namespaced("", "v1", "ReplicationController", "replicationcontrollers", []string{"rc"}, all, "status").scalable(SelectorMap).statusWritesMetadata(), generation: generationOnChange}
	rc.fields = replicationControllerFields
	rc.OrphanByDefault = true
	rc.validate, rc.validateUpdate = podTemplated(func(c *core.ReplicationController) *core.PodTemplateSpec { return c.Spec.Template },
		corevalidation.ValidateReplicationController, corevalidation.ValidateReplicationControllerUpdate)
	rc.statusValidate = statusValidator(corevalidation.ValidateReplicationControllerStatusUpdate)
	rc.warnings = replicationControllerWarnings
	rc.updateWarnings = warnOnGenerationMoved
	rc.dropDisabled = dropDisabledTemplate(func(c *core.ReplicationController) *core.PodTemplateSpec { return c.Spec.Template })

	pvc := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", []string{"pvc"}, nil, "status").statusWritesMetadata()}
	pvc.fields = nameField
	pvc.dropDisabled = prepareClaimSpec
	pvc.warnings = claimWarnings
	pvc.validate, pvc.validateUpdate = validator(
		func(c *core.PersistentVolumeClaim) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeClaim(c, corevalidation.ValidationOptionsForPersistentVolumeClaimCreate())
		},
		claimUpdateValid)
	pvc.statusValidate = statusValidator(func(c, old *core.PersistentVolumeClaim) field.ErrorList {
		return corevalidation.ValidatePersistentVolumeClaimStatusUpdate(c, old, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, old))
	})

	pv := &kubeKind{returnsDeleted: true, Type: cluster("", "v1", "PersistentVolume", "persistentvolumes", []string{"pv"}, nil, "status").statusWritesMetadata()}
	pv.fields = nameField
	pv.dropDisabled = dropDisabledVolumeFields
	pv.warnings = volumeWarnings
	// kube's strategy also refuses mount options a volume type cannot take.
	pv.validate, pv.validateUpdate = validator(
		func(v *core.PersistentVolume) field.ErrorList {
			return append(corevalidation.ValidatePersistentVolume(v, corevalidation.ValidationOptionsForPersistentVolume(v, nil)), volumevalidation.ValidatePersistentVolume(v)...)
		},
		func(v, old *core.PersistentVolume) field.ErrorList {
			return append(alsoCreate(corevalidation.ValidatePersistentVolume, corevalidation.ValidatePersistentVolumeUpdate)(
				v, old, corevalidation.ValidationOptionsForPersistentVolume(v, old)), volumevalidation.ValidatePersistentVolume(v)...)
		})
	pv.prepareCreate = persistentVolumePrepareForCreate
	pv.statusPrepare = persistentVolumePrepareForStatus
	pv.statusValidate = statusValidator(corevalidation.ValidatePersistentVolumeStatusUpdate)

	lr := &kubeKind{Type: namespaced("", "v1", "LimitRange", "limitranges", []string{"limits"}, nil).createOnUpdate()}
	// kube's strategy names a LimitRange sent without a name.
	lr.prepareCreate = func(obj runtime.Object) {
		if l, ok := obj.(*core.LimitRange); ok && l.Name == "" {
			l.Name = uuid.NewString()
		}
	}
	lr.validate, lr.validateUpdate = validator(corevalidation.ValidateLimitRange,
		func(l, _ *core.LimitRange) field.ErrorList { return corevalidation.ValidateLimitRange(l) })

	rq := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "ResourceQuota", "resourcequotas", []string{"quota"}, nil, "status").statusWritesMetadata()}
	rq.validate, rq.validateUpdate = validator(corevalidation.ValidateResourceQuota, corevalidation.ValidateResourceQuotaUpdate)
	rq.statusValidate = statusValidator(corevalidation.ValidateResourceQuotaStatusUpdate)
	rq.warnings = resourceQuotaWarnings

	no := &kubeKind{Type: cluster("", "v1", "Node", "nodes", []string{"no"}, nil, "proxy", "status").statusWritesMetadata().
		with(map[string]SubresourceInfo{"proxy": {Kind: "NodeProxyOptions", Verbs: proxyVerbs, Connect: proxyMethods}})}
	no.validate, no.validateUpdate = validator(corevalidation.ValidateNode, corevalidation.ValidateNodeUpdate)
	no.fields = nodeFields
	no.keepsStatusOnCreate = true
	no.statusPrepare = nodePrepareForStatus
	no.prepareCreate = func(obj runtime.Object) { nodeDropDisabled(obj, nil) }
	no.prepareUpdate = nodeDropDisabled
	no.warnings = nodeWarnings

	// ComponentStatuses are computed on read (server/componentstatus.go).
	cs := &kubeKind{Type: cluster("", "v1", "ComponentStatus", "componentstatuses", []string{"cs"}, nil)}
	cs.Verbs, cs.Virtual = []string{"get", "list"}, true
	cs.Deprecation = &Deprecation{In: "1.19"}

	// The legacy bindings resource: a create binds the Pod its metadata
	// names (server/pods.go), as pods/binding does; nothing is stored.
	bind := &kubeKind{Type: namespaced("", "v1", "Binding", "bindings", nil, nil)}
	bind.Verbs, bind.Virtual, bind.NoTable = []string{"create"}, true, true

	return []*kubeKind{svc, pod, pt, rc, pvc, pv, lr, rq, no, cs, bind}
}

func appsKinds() []*kubeKind {
	deploy := &kubeKind{Type: namespaced("apps", "v1", "Deployment", "deployments", []string{"deploy"}, all, "status").scalable(SelectorLabelSelector).statusWritesMetadata("labels"),
		generation: generationOnChange, generationMeta: metav1.Object.GetAnnotations}
	deploy.validate, deploy.validateUpdate = podTemplated(func(d *apps.Deployment) *core.PodTemplateSpec { return &d.Spec.Template },
		appsvalidation.ValidateDeployment, appsvalidation.ValidateDeploymentUpdate)
	deploy.statusValidate = statusValidator(appsvalidation.ValidateDeploymentStatusUpdate)
	deploy.statusPrepare = deploymentPrepareForStatus
	deploy.conversionFails = true
	deploy.warnings = deploymentWarnings
	deploy.updateWarnings = warnOnGenerationMoved
	deploy.dropDisabled = dropDisabledTemplate(func(d *apps.Deployment) *core.PodTemplateSpec { return &d.Spec.Template })

	rs := &kubeKind{Type: namespaced("apps", "v1", "ReplicaSet", "replicasets", []string{"rs"}, all, "status").scalable(SelectorLabelSelector).statusWritesMetadata(), generation: generationOnChange}
	rs.validate, rs.validateUpdate = podTemplated(func(r *apps.ReplicaSet) *core.PodTemplateSpec { return &r.Spec.Template },
		appsvalidation.ValidateReplicaSet, appsvalidation.ValidateReplicaSetUpdate)
	rs.statusValidate = statusValidator(appsvalidation.ValidateReplicaSetStatusUpdate)
	rs.warnings = replicaSetWarnings
	rs.updateWarnings = warnOnGenerationMoved
	rs.dropDisabled = dropDisabledTemplate(func(r *apps.ReplicaSet) *core.PodTemplateSpec { return &r.Spec.Template })

	sts := &kubeKind{Type: namespaced("apps", "v1", "StatefulSet", "statefulsets", []string{"sts"}, all, "status").scalable(SelectorLabelSelector).statusWritesMetadata(), generation: generationOnChange}
	sts.validate, sts.validateUpdate = podTemplated(func(s *apps.StatefulSet) *core.PodTemplateSpec { return &s.Spec.Template },
		appsvalidation.ValidateStatefulSet, appsvalidation.ValidateStatefulSetUpdate)
	sts.statusValidate = statusValidator(appsvalidation.ValidateStatefulSetStatusUpdate)
	sts.warnings = statefulSetWarnings
	sts.dropDisabled = dropDisabledStatefulSetFields

	ds := &kubeKind{Type: namespaced("apps", "v1", "DaemonSet", "daemonsets", []string{"ds"}, all, "status").statusWritesMetadata(), generation: generationOnChange, conversionFails: true}
	ds.validate, ds.validateUpdate = podTemplated(func(d *apps.DaemonSet) *core.PodTemplateSpec { return &d.Spec.Template },
		appsvalidation.ValidateDaemonSet, func(d, old *apps.DaemonSet, opts corevalidation.PodValidationOptions) field.ErrorList {
			opts.AllowInvalidLabelValueInSelector = opts.AllowInvalidLabelValueInSelector || unversionedvalidation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
			return appsvalidation.ValidateDaemonSetUpdate(d, old, opts)
		})
	ds.prepareCreate = daemonSetPrepareForCreate
	ds.prepareUpdate = daemonSetPrepareForUpdate
	ds.statusPrepare = daemonSetPrepareForStatus
	ds.statusValidate = statusValidator(appsvalidation.ValidateDaemonSetStatusUpdate)
	ds.warnings = daemonSetWarnings
	ds.dropDisabled = dropDisabledTemplate(func(d *apps.DaemonSet) *core.PodTemplateSpec { return &d.Spec.Template })

	cr := &kubeKind{Type: namespaced("apps", "v1", "ControllerRevision", "controllerrevisions", nil, nil)}
	cr.validate, cr.validateUpdate = validator(appsvalidation.ValidateControllerRevisionCreate, appsvalidation.ValidateControllerRevisionUpdate)

	return []*kubeKind{deploy, rs, sts, ds, cr}
}

func batchKinds() []*kubeKind {
	job := &kubeKind{Type: namespaced("batch", "v1", "Job", "jobs", nil, all, "status").statusWritesMetadata(), generation: generationOnChange}
	job.fields = jobFields
	job.clockCells = openJobDuration
	job.OrphanByDefault = true
	job.OrphanWarning = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"
	job.validate, job.validateUpdate = validator(
		func(j *batch.Job) field.ErrorList {
			return batchvalidation.ValidateJob(j, jobValidationOptions(j, nil))
		},
		func(j, old *batch.Job) field.ErrorList {
			return alsoCreate(batchvalidation.ValidateJob, batchvalidation.ValidateJobUpdate)(j, old, jobValidationOptions(j, old))
		})
	job.prepareCreate = jobPrepareForCreate
	job.warnings = jobWarnings
	job.updateWarnings = warnOnGenerationMoved
	job.dropDisabled = dropDisabledTemplate(func(j *batch.Job) *core.PodTemplateSpec { return &j.Spec.Template })
	job.statusValidate = statusValidator(func(j, old *batch.Job) field.ErrorList {
		return batchvalidation.ValidateJobUpdateStatus(j, old, jobStatusValidationOptions(j, old))
	})

	cj := &kubeKind{Type: namespaced("batch", "v1", "CronJob", "cronjobs", []string{"cj"}, all, "status").statusWritesMetadata(), generation: generationOnChange}
	cj.clockCells = openCronJobLastSchedule
	cj.warnings = cronJobWarnings
	cj.dropDisabled = dropDisabledTemplate(func(c *batch.CronJob) *core.PodTemplateSpec { return &c.Spec.JobTemplate.Spec.Template })
	cj.validate, cj.validateUpdate = podTemplated(func(c *batch.CronJob) *core.PodTemplateSpec { return &c.Spec.JobTemplate.Spec.Template },
		batchvalidation.ValidateCronJobCreate, batchvalidation.ValidateCronJobUpdate)
	// kube's cronjob status strategy validates nothing.
	cj.statusValidate = func(_, _ runtime.Object) field.ErrorList { return nil }

	return []*kubeKind{job, cj}
}

func autoscalingKinds() []*kubeKind {
	hpaValidate, hpaValidateUpdate := validator(
		func(h *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, hpaValidationOptions(h, nil))
		},
		func(h, old *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerUpdate(h, old, hpaValidationOptions(h, old))
		})
	// One stored HPA (autoscaling/v2, kube-apiserver's storage version)
	// served as v2 and v1.
	hpaValidateStatus := statusValidator(autoscalingvalidation.ValidateHorizontalPodAutoscalerStatusUpdate)
	v2 := &kubeKind{Type: namespaced("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", []string{"hpa"}, all, "status").statusWritesMetadata(),
		validate: hpaValidate, validateUpdate: hpaValidateUpdate, statusValidate: hpaValidateStatus}
	// v1 carries metrics and conditions in annotations: the halves are
	// kept on the internal object, and annotations that do not parse are
	// refused when decoded.
	v1 := &kubeKind{Type: namespaced("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", []string{"hpa"}, all, "status").statusWritesMetadata(),
		validate: hpaValidate, validateUpdate: hpaValidateUpdate, statusValidate: hpaValidateStatus, storageVersion: "v2",
		prepareUpdate: hpaPrepareForUpdate, statusPrepare: hpaPrepareForStatus, conversionFails: true}
	return []*kubeKind{v2, v1}
}

// hpaValidationOptions are kube's hpa strategy's: a ReplicationController,
// the one scalable kind of the core group, may be named without a group
// (kubectl autoscale rc does), an update that keeps the target's kind and
// version does not check it again, zero replicas are allowed with
// HPAScaleToZero or when the stored HPA has them, and stored object
// metrics with a bad version stay writable.
func hpaValidationOptions(h, old *autoscaling.HorizontalPodAutoscaler) autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions {
	opts := autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound:          1,
		ObjectMetricsValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero) || (old != nil && old.Spec.MinReplicas != nil && *old.Spec.MinReplicas == 0) {
		opts.MinReplicasLowerBound = 0
	}
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == h.Spec.ScaleTargetRef.APIVersion && old.Spec.ScaleTargetRef.Kind == h.Spec.ScaleTargetRef.Kind:
		opts.ScaleTargetRefValidationOptions.AllowInvalidAPIVersion = true
	case h.Spec.ScaleTargetRef.Kind == "ReplicationController":
		opts.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscaling.ObjectMetricSourceType && m.Object != nil &&
				autoscalingvalidation.ValidateAPIVersion(m.Object.DescribedObject, opts.ObjectMetricsValidationOptions) != nil {
				opts.ObjectMetricsValidationOptions.AllowInvalidAPIVersion = true
				break
			}
		}
	}
	return opts
}

func networkingKinds() []*kubeKind {
	const g = "networking.k8s.io"
	ing := &kubeKind{Type: namespaced(g, "v1", "Ingress", "ingresses", []string{"ing"}, nil, "status").statusWritesMetadata(), generation: generationOnChange}
	ing.validate, ing.validateUpdate = validator(networkingvalidation.ValidateIngressCreate, networkingvalidation.ValidateIngressUpdate)
	ing.statusValidate = statusValidator(networkingvalidation.ValidateIngressStatusUpdate)
	ing.statusWarnings = func(obj, _ runtime.Object) []string {
		var ips []string
		for _, i := range obj.(*networking.Ingress).Status.LoadBalancer.Ingress {
			ips = append(ips, i.IP)
		}
		return ipWarnings(field.NewPath("status", "loadBalancer", "ingress"), ips, false)
	}
	ing.warnings = ingressWarnings

	ic := &kubeKind{Type: cluster(g, "v1", "IngressClass", "ingressclasses", nil, nil), generation: generationOnChange}
	ic.validate, ic.validateUpdate = validator(networkingvalidation.ValidateIngressClass, networkingvalidation.ValidateIngressClassUpdate)

	np := &kubeKind{Type: namespaced(g, "v1", "NetworkPolicy", "networkpolicies", []string{"netpol"}, nil), generation: generationOnChange}
	np.validate, np.validateUpdate = validator(
		func(p *networking.NetworkPolicy) field.ErrorList {
			return networkingvalidation.ValidateNetworkPolicy(p, networkingvalidation.ValidationOptionsForNetworking(p, nil))
		},
		func(p, old *networking.NetworkPolicy) field.ErrorList {
			// kube's update validation checks only what may not change;
			// a selector stored invalid stays writable.
			opts := networkingvalidation.ValidationOptionsForNetworking(p, old)
			return append(networkingvalidation.ValidateNetworkPolicy(p, opts), networkingvalidation.ValidateNetworkPolicyUpdate(p, old, opts)...)
		})
	np.warnings = networkPolicyWarnings

	// An IPAddress is named by its address: generateName is the name as
	// it is (kube's strategy generates nothing).
	ip := &kubeKind{Type: cluster(g, "v1", "IPAddress", "ipaddresses", []string{"ip"}, nil)}
	ip.GenerateNameAsIs = true
	ip.validate, ip.validateUpdate = validator(networkingvalidation.ValidateIPAddress, networkingvalidation.ValidateIPAddressUpdate)

	// kube's ServiceCIDR strategy resets no status: a create or a main
	// update writes the one it carries.
	cidr := &kubeKind{Type: cluster(g, "v1", "ServiceCIDR", "servicecidrs", nil, nil, "status"), keepsStatusOnCreate: true}
	cidr.MainWritesStatus = true
	cidr.validate, cidr.validateUpdate = validator(networkingvalidation.ValidateServiceCIDR, networkingvalidation.ValidateServiceCIDRUpdate)
	cidr.statusValidate = statusValidator(networkingvalidation.ValidateServiceCIDRStatusUpdate)

	return []*kubeKind{ing, ic, ip, np, cidr}
}

func policyKinds() []*kubeKind {
	pdb := &kubeKind{Type: namespaced("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", []string{"pdb"}, nil, "status").statusWritesMetadata().conditionalUpdates(), generation: generationOnChange}
	pdb.validate, pdb.validateUpdate = validator(
		func(p *policy.PodDisruptionBudget) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(p, policyvalidation.PodDisruptionBudgetValidationOptions{})
		},
		func(p, _ *policy.PodDisruptionBudget) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(p, policyvalidation.PodDisruptionBudgetValidationOptions{})
		})
	pdb.statusValidate = statusValidator(func(p, old *policy.PodDisruptionBudget) field.ErrorList {
		return policyvalidation.ValidatePodDisruptionBudgetStatusUpdate(p.Status, old.Status, field.NewPath("status"), schema.GroupVersion{Group: "policy", Version: "v1"})
	})
	return []*kubeKind{pdb}
}

func rbacKinds() []*kubeKind {
	const g = "rbac.authorization.k8s.io"
	role := &kubeKind{Type: namespaced(g, "v1", "Role", "roles", nil, nil).createOnUpdate()}
	role.validate, role.validateUpdate = validator(rbacvalidation.ValidateRole, rbacvalidation.ValidateRoleUpdate)

	rb := &kubeKind{Type: namespaced(g, "v1", "RoleBinding", "rolebindings", nil, nil).createOnUpdate()}
	rb.validate, rb.validateUpdate = validator(rbacvalidation.ValidateRoleBinding, rbacvalidation.ValidateRoleBindingUpdate)

	cr := &kubeKind{Type: cluster(g, "v1", "ClusterRole", "clusterroles", nil, nil).createOnUpdate()}
	cr.validate, cr.validateUpdate = validator(
		func(r *rbac.ClusterRole) field.ErrorList {
			return rbacvalidation.ValidateClusterRole(r, rbacvalidation.ClusterRoleValidationOptions{})
		},
		func(r, old *rbac.ClusterRole) field.ErrorList {
			return rbacvalidation.ValidateClusterRoleUpdate(r, old, rbacvalidation.ClusterRoleValidationOptions{})
		})

	crb := &kubeKind{Type: cluster(g, "v1", "ClusterRoleBinding", "clusterrolebindings", nil, nil).createOnUpdate()}
	crb.validate, crb.validateUpdate = validator(rbacvalidation.ValidateClusterRoleBinding, rbacvalidation.ValidateClusterRoleBindingUpdate)

	return []*kubeKind{cr, crb, rb, role}
}

func storageKinds() []*kubeKind {
	const g = "storage.k8s.io"
	sc := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "StorageClass", "storageclasses", []string{"sc"}, nil)}
	sc.validate, sc.validateUpdate = validator(storagevalidation.ValidateStorageClass,
		func(c, old *storage.StorageClass) field.ErrorList {
			// kube's update validation checks only what may not change.
			return append(storagevalidation.ValidateStorageClass(c), storagevalidation.ValidateStorageClassUpdate(c, old)...)
		})
	sc.warnings = func(obj, _ runtime.Object) []string {
		return storageutil.GetWarningsForStorageClass(obj.(*storage.StorageClass))
	}

	driver := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "CSIDriver", "csidrivers", nil, nil).conditionalUpdates()}
	driver.validate, driver.validateUpdate = validator(storagevalidation.ValidateCSIDriver, storagevalidation.ValidateCSIDriverUpdate)
	driver.prepareUpdate = csiDriverPrepareForUpdate
	driver.warnings = csiDriverWarnings

	csiNode := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "CSINode", "csinodes", nil, nil).conditionalUpdates()}
	// kube's csinode strategy allows node IDs of 256 characters.
	csiNodeOpts := storagevalidation.CSINodeValidationOptions{AllowLongNodeID: true}
	csiNode.validate, csiNode.validateUpdate = validator(
		func(n *storage.CSINode) field.ErrorList { return storagevalidation.ValidateCSINode(n, csiNodeOpts) },
		func(n, old *storage.CSINode) field.ErrorList {
			// kube's update checks the node, then the update, which checks
			// it again: each error is given twice.
			return append(storagevalidation.ValidateCSINode(n, csiNodeOpts), storagevalidation.ValidateCSINodeUpdate(n, old, csiNodeOpts)...)
		})

	capacity := &kubeKind{Type: namespaced(g, "v1", "CSIStorageCapacity", "csistoragecapacities", nil, nil).conditionalUpdates()}
	capacity.validate, capacity.validateUpdate = validator(
		func(c *storage.CSIStorageCapacity) field.ErrorList {
			return storagevalidation.ValidateCSIStorageCapacity(c, storagevalidation.CSIStorageCapacityValidateOptions{})
		},
		func(c, old *storage.CSIStorageCapacity) field.ErrorList {
			// An update is checked whole, as a create, with label values
			// in its selector as loose as the stored object's were.
			loose := len(unversionedvalidation.ValidateLabelSelector(old.NodeTopology, unversionedvalidation.LabelSelectorValidationOptions{}, nil)) > 0
			errs := storagevalidation.ValidateCSIStorageCapacity(c, storagevalidation.CSIStorageCapacityValidateOptions{AllowInvalidLabelValueInSelector: loose})
			return append(errs, storagevalidation.ValidateCSIStorageCapacityUpdate(c, old)...)
		})
	capacity.defaultTable = true // kube's csistoragecapacity storage
	capacity.warnings = func(obj, _ runtime.Object) []string {
		return storageutil.GetWarningsForCSIStorageCapacity(obj.(*storage.CSIStorageCapacity))
	}

	va := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "VolumeAttachment", "volumeattachments", nil, nil, "status").conditionalUpdates()}
	va.validate, va.validateUpdate = validator(
		func(a *storage.VolumeAttachment) field.ErrorList {
			// A new v1 attachment is held to the tighter checks too.
			return append(storagevalidation.ValidateVolumeAttachment(a), storagevalidation.ValidateVolumeAttachmentV1(a)...)
		}, storagevalidation.ValidateVolumeAttachmentUpdate)

	vac := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "VolumeAttributesClass", "volumeattributesclasses", []string{"vac"}, nil)}
	vac.validate, vac.validateUpdate = validator(storagevalidation.ValidateVolumeAttributesClass, storagevalidation.ValidateVolumeAttributesClassUpdate)

	return []*kubeKind{driver, csiNode, capacity, sc, va, vac}
}

func schedulingKinds() []*kubeKind {
	pc := &kubeKind{Type: cluster("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", []string{"pc"}, nil), generation: generationFixed}
	pc.validate, pc.validateUpdate = validator(schedulingvalidation.ValidatePriorityClass, schedulingvalidation.ValidatePriorityClassUpdate)
	// kube's PriorityClass storage refuses to delete the system classes
	// (priorityclass/storage/storage.go Delete).
	pc.ValidateDeleteFirst = true
	pc.ValidateDelete = func(name string) error {
		if slices.Contains(schedulingapiv1.SystemPriorityClassNames(), name) {
			return apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, name, errors.New("this is a system priority class and cannot be deleted"))
		}
		return nil
	}
	return []*kubeKind{pc}
}

func discoveryKinds() []*kubeKind {
	es := &kubeKind{Type: namespaced("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", nil, nil),
		generation: generationOnChange, generationMeta: metav1.Object.GetLabels, generationBeforeDrop: true}
	es.validate, es.validateUpdate = validator(discoveryvalidation.ValidateEndpointSliceCreate,
		func(s, old *discovery.EndpointSlice) field.ErrorList {
			return discoveryvalidation.ValidateEndpointSliceUpdate(s, old)
		})
	es.warnings = endpointSliceWarnings
	es.dropDisabled = endpointSliceDropTopology
	return []*kubeKind{es}
}

func nodeKinds() []*kubeKind {
	rc := &kubeKind{Type: cluster("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", nil, nil).createOnUpdate().conditionalUpdates()}
	rc.validate, rc.validateUpdate = validator(nodevalidation.ValidateRuntimeClass,
		func(c, old *node.RuntimeClass) field.ErrorList {
			return append(nodevalidation.ValidateRuntimeClass(c), nodevalidation.ValidateRuntimeClassUpdate(c, old)...)
		})
	rc.warnings = func(obj, _ runtime.Object) []string {
		c, _ := obj.(*node.RuntimeClass)
		return nodeapi.GetWarningsForRuntimeClass(c)
	}
	return []*kubeKind{rc}
}

// reviewKinds are the review resources: a create asks a question (who am
// I, may I, is this token valid) and answers it in the object's status;
// nothing is stored. server/reviews.go computes the answers.
func reviewKinds() []*kubeKind {
	review := func(group, kind, resource string, namespaced bool) *kubeKind {
		t := cluster(group, "v1", kind, resource, nil, nil)
		t.Namespaced, t.Verbs, t.Virtual, t.NoTable = namespaced, []string{"create"}, true, true
		return &kubeKind{Type: t}
	}
	const authn, authz = "authentication.k8s.io", "authorization.k8s.io"
	ssr := review(authn, "SelfSubjectReview", "selfsubjectreviews", false)
	tr := review(authn, "TokenReview", "tokenreviews", false)
	lsar := review(authz, "LocalSubjectAccessReview", "localsubjectaccessreviews", true)
	lsar.validate, _ = validator(authorizationvalidation.ValidateLocalSubjectAccessReview, nil)
	ssar := review(authz, "SelfSubjectAccessReview", "selfsubjectaccessreviews", false)
	ssar.validate, _ = validator(authorizationvalidation.ValidateSelfSubjectAccessReview, nil)
	ssrr := review(authz, "SelfSubjectRulesReview", "selfsubjectrulesreviews", false)
	sar := review(authz, "SubjectAccessReview", "subjectaccessreviews", false)
	sar.validate, _ = validator(authorizationvalidation.ValidateSubjectAccessReview, nil)
	return []*kubeKind{ssr, tr, lsar, ssar, ssrr, sar}
}

func certificatesKinds() []*kubeKind {
	csr := &kubeKind{Type: cluster("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", []string{"csr"}, nil, "approval", "status")}
	csr.fields = csrFields
	csr.validate, csr.validateUpdate = validator(certificatesvalidation.ValidateCertificateSigningRequestCreate, certificatesvalidation.ValidateCertificateSigningRequestUpdate)
	csr.prepareCreate = csrPrepareForCreate
	csr.requested = csrRequestedBy
	csr.prepareUpdate = csrKeepSpec
	_, approval := validator(nil, certificatesvalidation.ValidateCertificateSigningRequestApprovalUpdate)
	_, status := validator(nil, certificatesvalidation.ValidateCertificateSigningRequestStatusUpdate)
	// kube's CSR strategies reset more than whole parts of the object
	// (certificates/strategy.go GetResetFields): no writer owns the spec
	// but its creator's request, and each subresource's writer what it
	// alone may write.
	csr.ResetPaths = map[string][]string{
		"":         {"spec", "status"},
		"status":   {"spec", "status.conditions"},
		"approval": {"spec", "status.certificate"},
	}
	csr.subresourceUpdates = map[string]kubeSubresourceUpdate{
		"approval": {prepare: csrKeepAllButConditions, validate: approval},
		"status":   {prepare: csrKeepSpecAndDecisions, validate: status},
	}
	return []*kubeKind{csr}
}

func flowcontrolKinds() []*kubeKind {
	const g = "flowcontrol.apiserver.k8s.io"
	fs := &kubeKind{Type: cluster(g, "v1", "FlowSchema", "flowschemas", nil, nil, "status"), generation: generationOnChange}
	fs.validate, fs.validateUpdate = validator(flowcontrolvalidation.ValidateFlowSchema,
		func(fs, old *flowcontrol.FlowSchema) field.ErrorList {
			return flowcontrolvalidation.ValidateFlowSchemaUpdate(old, fs)
		})
	fs.statusValidate = statusValidator(func(fs, old *flowcontrol.FlowSchema) field.ErrorList {
		return flowcontrolvalidation.ValidateFlowSchemaStatusUpdate(old, fs)
	})
	// kube's printFlowSchemaList (FlowSchemaSequence).
	fs.TableOrder = func(a, b runtime.Object) int {
		x, y := a.(*flowcontrolv1.FlowSchema), b.(*flowcontrolv1.FlowSchema)
		if c := cmp.Compare(x.Spec.MatchingPrecedence, y.Spec.MatchingPrecedence); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	}
	pl := &kubeKind{Type: cluster(g, "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", nil, nil, "status"), generation: generationOnChange}
	validPL := func(pl *flowcontrol.PriorityLevelConfiguration) field.ErrorList {
		return flowcontrolvalidation.ValidatePriorityLevelConfiguration(pl, flowcontrolGV, flowcontrolvalidation.PriorityLevelValidationOptions{})
	}
	pl.validate, pl.validateUpdate = validator(validPL,
		func(pl, _ *flowcontrol.PriorityLevelConfiguration) field.ErrorList { return validPL(pl) })
	pl.statusValidate = statusValidator(func(pl, old *flowcontrol.PriorityLevelConfiguration) field.ErrorList {
		return flowcontrolvalidation.ValidatePriorityLevelConfigurationStatusUpdate(old, pl)
	})
	return []*kubeKind{fs, pl}
}

// flowcontrolGV is the version priority levels are validated as requested in.
var flowcontrolGV = schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}

// admissionregistrationKinds are the webhook configurations and admission
// policies (registry/admission*.go calls and evaluates them).
func admissionregistrationKinds() []*kubeKind {
	const g = "admissionregistration.k8s.io"
	ext := []string{"api-extensions"}
	mwc := &kubeKind{Type: cluster(g, "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", nil, ext).conditionalUpdates(), generation: generationOnChange}
	mwc.validate, mwc.validateUpdate = validator(admissionregistrationvalidation.ValidateMutatingWebhookConfiguration,
		admissionregistrationvalidation.ValidateMutatingWebhookConfigurationUpdate)
	vwc := &kubeKind{Type: cluster(g, "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", nil, ext).conditionalUpdates(), generation: generationOnChange}
	vwc.validate, vwc.validateUpdate = validator(admissionregistrationvalidation.ValidateValidatingWebhookConfiguration,
		admissionregistrationvalidation.ValidateValidatingWebhookConfigurationUpdate)
	vap := &kubeKind{Type: cluster(g, "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", nil, ext, "status").conditionalUpdates(), generation: generationOnChange}
	vap.validate, vap.validateUpdate = validator(admissionregistrationvalidation.ValidateValidatingAdmissionPolicy,
		admissionregistrationvalidation.ValidateValidatingAdmissionPolicyUpdate)
	_, vapStatus := validator(nil, admissionregistrationvalidation.ValidateValidatingAdmissionPolicyStatusUpdate)
	vap.subresourceUpdates = map[string]kubeSubresourceUpdate{"status": {prepare: keepSpec, validate: vapStatus}}
	vapb := &kubeKind{Type: cluster(g, "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", nil, ext).conditionalUpdates(), generation: generationOnChange}
	vapb.validate, vapb.validateUpdate = validator(admissionregistrationvalidation.ValidateValidatingAdmissionPolicyBinding,
		admissionregistrationvalidation.ValidateValidatingAdmissionPolicyBindingUpdate)
	// MutatingAdmissionPolicy is beta in kube 1.35, served only when
	// admissionregistration.k8s.io/v1beta1 is enabled (OptionalGroupVersions).
	map_ := &kubeKind{Type: cluster(g, "v1beta1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", nil, ext).conditionalUpdates(), generation: generationOnChange}
	map_.validate, map_.validateUpdate = validator(admissionregistrationvalidation.ValidateMutatingAdmissionPolicy,
		admissionregistrationvalidation.ValidateMutatingAdmissionPolicyUpdate)
	mapb := &kubeKind{Type: cluster(g, "v1beta1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", nil, ext).conditionalUpdates(), generation: generationOnChange}
	mapb.validate, mapb.validateUpdate = validator(admissionregistrationvalidation.ValidateMutatingAdmissionPolicyBinding,
		admissionregistrationvalidation.ValidateMutatingAdmissionPolicyBindingUpdate)
	// No deprecation: the beta version's lifecycle deprecates it in 1.37,
	// and kube 1.35 warns only of what is deprecated by its own version.
	return []*kubeKind{mwc, vap, vapb, vwc, map_, mapb}
}

// resourceKinds are dynamic resource allocation's classes, claims and
// slices. With no scheduler or drivers, claims stay unallocated. What the
// strategies drop and warn of is in dra.go; their admin-access check (a
// namespace label) is the registry's (registry/dra_admin.go).
func resourceKinds() []*kubeKind {
	const g = "resource.k8s.io"
	dc := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "DeviceClass", "deviceclasses", nil, nil), generation: generationOnChange}
	dc.validate, dc.validateUpdate = validator(resourcevalidation.ValidateDeviceClass, resourcevalidation.ValidateDeviceClassUpdate)
	dc.prepareCreate, dc.prepareUpdate = func(obj runtime.Object) { deviceClassDropDisabled(obj, nil) }, deviceClassDropDisabled
	rc := &kubeKind{returnsDeleted: true, Type: namespaced(g, "v1", "ResourceClaim", "resourceclaims", nil, nil, "status")}
	rc.validate, rc.validateUpdate = validator(resourcevalidation.ValidateResourceClaim, resourcevalidation.ValidateResourceClaimUpdate)
	_, rcStatus := validator(nil, resourcevalidation.ValidateResourceClaimStatusUpdate)
	rc.subresourceUpdates = map[string]kubeSubresourceUpdate{"status": {prepare: resourceClaimStatusPrepare, validate: rcStatus}}
	rc.prepareCreate, rc.prepareUpdate = func(obj runtime.Object) { resourceClaimDropDisabled(obj, nil) }, resourceClaimDropDisabled
	rct := &kubeKind{returnsDeleted: true, Type: namespaced(g, "v1", "ResourceClaimTemplate", "resourceclaimtemplates", nil, nil)}
	rct.validate, rct.validateUpdate = validator(resourcevalidation.ValidateResourceClaimTemplate,
		func(t, old *resource.ResourceClaimTemplate) field.ErrorList {
			return append(resourcevalidation.ValidateResourceClaimTemplate(t), resourcevalidation.ValidateResourceClaimTemplateUpdate(t, old)...)
		})
	rct.prepareCreate, rct.prepareUpdate = func(obj runtime.Object) { resourceClaimTemplateDropDisabled(obj, nil) }, resourceClaimTemplateDropDisabled
	rs := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "ResourceSlice", "resourceslices", nil, nil), generation: generationOnChange}
	rs.fields = resourceSliceFields
	rs.prepareCreate, rs.prepareUpdate = func(obj runtime.Object) { resourceSliceDropDisabled(obj, nil) }, resourceSliceDropDisabled
	rs.warnings = resourceSliceWarnings
	rs.validate, rs.validateUpdate = validator(resourcevalidation.ValidateResourceSlice, resourcevalidation.ValidateResourceSliceUpdate)
	return []*kubeKind{dc, rc, rct, rs}
}

// apiregistrationKinds is the aggregator's APIService. Each served
// group-version has a local one (controllers/ keeps them); one naming a
// Service hands its group-version to that Service (server/aggregator).
func apiregistrationKinds() []*kubeKind {
	as := &kubeKind{Type: cluster("apiregistration.k8s.io", "v1", "APIService", "apiservices", nil, []string{"api-extensions"}, "status").conditionalUpdates(),
		columns: apiServiceColumns, row: apiServiceRow}
	as.validate, as.validateUpdate = validator(apiregistrationvalidation.ValidateAPIService, apiregistrationvalidation.ValidateAPIServiceUpdate)
	as.prepareCreate = func(obj runtime.Object) {
		// A local APIService is available the moment it exists.
		if a := obj.(*apiregistration.APIService); a.Spec.Service == nil {
			apiregistration.SetAPIServiceCondition(a, apiregistration.NewLocalAvailableAPIServiceCondition())
		}
	}
	_, status := validator(nil, apiregistrationvalidation.ValidateAPIServiceStatusUpdate)
	as.subresourceUpdates = map[string]kubeSubresourceUpdate{"status": {prepare: keepSpec, validate: status}}
	return []*kubeKind{as}
}

// apiServiceColumns are the aggregator's Table columns for APIServices;
// kube's printers have none.
var apiServiceColumns = []metav1.TableColumnDefinition{
	nameColumn(0),
	column("Service", "", "The reference to the service that hosts this API endpoint.", 0),
	column("Available", "", "Whether this service is available.", 0),
	ageColumn(),
}

// apiServiceRow prints "Local" for a group served here, and the Available
// condition with its reason when it is not True.
func apiServiceRow(obj runtime.Object) []interface{} {
	a := obj.(*apiregistration.APIService)
	service := "Local"
	if s := a.Spec.Service; s != nil {
		service = s.Namespace + "/" + s.Name
	}
	available := string(apiregistration.ConditionUnknown)
	if c := apiregistration.GetAPIServiceConditionByType(a, apiregistration.Available); c != nil {
		available = string(c.Status)
		if c.Status != apiregistration.ConditionTrue && c.Reason != "" {
			available += " (" + c.Reason + ")"
		}
	}
	return []interface{}{a.Name, service, available, age(a.CreationTimestamp.Time)}
}
