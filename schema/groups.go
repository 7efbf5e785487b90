package schema

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/discovery"
	discoveryvalidation "k8s.io/kubernetes/pkg/apis/discovery/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/apis/node"
	nodevalidation "k8s.io/kubernetes/pkg/apis/node/validation"
	"k8s.io/kubernetes/pkg/apis/policy"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"k8s.io/kubernetes/pkg/apis/storage"
	storagevalidation "k8s.io/kubernetes/pkg/apis/storage/validation"
)

// The built-in kinds served through kube's own packages, one entry per
// kind, grouped by API group. Names, verbs, short names and categories
// are kube-apiserver 1.35's discovery (schema/groups_test.go compares them
// with the recording); the validation functions are those kube-apiserver's
// strategies call, with the options the strategies compute.
func kubeKinds() []*kubeKind {
	var kinds []*kubeKind
	for _, g := range [][]*kubeKind{coreKinds(), appsKinds(), batchKinds(), autoscalingKinds(), networkingKinds(),
		policyKinds(), rbacKinds(), storageKinds(), schedulingKinds(), discoveryKinds(), nodeKinds()} {
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

func podTemplateOpts(t, old *core.PodTemplateSpec) corevalidation.PodValidationOptions {
	return podutil.GetValidationOptionsFromPodTemplate(t, old)
}

func coreKinds() []*kubeKind {
	svc := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "Service", "services", []string{"svc"}, all, "status")}
	svc.validate, svc.validateUpdate = validator(corevalidation.ValidateServiceCreate, corevalidation.ValidateServiceUpdate)

	pod := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "Pod", "pods", []string{"po"}, all, "status"), generation: true}
	pod.validate, pod.validateUpdate = validator(
		func(p *core.Pod) field.ErrorList {
			return corevalidation.ValidatePodCreate(p, podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil))
		},
		func(p, old *core.Pod) field.ErrorList {
			return corevalidation.ValidatePodUpdate(p, old, podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta))
		})
	pod.prepareCreate = podPrepareForCreate

	pt := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "PodTemplate", "podtemplates", nil, nil)}
	pt.validate, pt.validateUpdate = validator(
		func(p *core.PodTemplate) field.ErrorList {
			return corevalidation.ValidatePodTemplate(p, podTemplateOpts(&p.Template, nil))
		},
		func(p, old *core.PodTemplate) field.ErrorList {
			return corevalidation.ValidatePodTemplateUpdate(p, old, podTemplateOpts(&p.Template, &old.Template))
		})

	rc := &kubeKind{Type: namespaced("", "v1", "ReplicationController", "replicationcontrollers", []string{"rc"}, all, "status"), generation: true}
	rc.validate, rc.validateUpdate = validator(
		func(c *core.ReplicationController) field.ErrorList {
			return corevalidation.ValidateReplicationController(c, podTemplateOpts(c.Spec.Template, nil))
		},
		func(c, old *core.ReplicationController) field.ErrorList {
			return corevalidation.ValidateReplicationControllerUpdate(c, old, podTemplateOpts(c.Spec.Template, old.Spec.Template))
		})

	pvc := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", []string{"pvc"}, nil, "status")}
	pvc.validate, pvc.validateUpdate = validator(
		func(c *core.PersistentVolumeClaim) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeClaim(c, corevalidation.ValidationOptionsForPersistentVolumeClaimCreate())
		},
		func(c, old *core.PersistentVolumeClaim) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeClaimUpdate(c, old, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, old))
		})

	pv := &kubeKind{returnsDeleted: true, Type: cluster("", "v1", "PersistentVolume", "persistentvolumes", []string{"pv"}, nil, "status")}
	pv.validate, pv.validateUpdate = validator(
		func(v *core.PersistentVolume) field.ErrorList {
			return corevalidation.ValidatePersistentVolume(v, corevalidation.ValidationOptionsForPersistentVolume(v, nil))
		},
		func(v, old *core.PersistentVolume) field.ErrorList {
			opts := corevalidation.ValidationOptionsForPersistentVolume(v, old)
			return append(corevalidation.ValidatePersistentVolume(v, opts), corevalidation.ValidatePersistentVolumeUpdate(v, old, opts)...)
		})
	pv.prepareCreate = persistentVolumePrepareForCreate
	pvc.prepareCreate = persistentVolumeClaimPrepareForCreate

	lr := &kubeKind{Type: namespaced("", "v1", "LimitRange", "limitranges", []string{"limits"}, nil)}
	lr.validate, lr.validateUpdate = validator(corevalidation.ValidateLimitRange,
		func(l, _ *core.LimitRange) field.ErrorList { return corevalidation.ValidateLimitRange(l) })

	rq := &kubeKind{returnsDeleted: true, Type: namespaced("", "v1", "ResourceQuota", "resourcequotas", []string{"quota"}, nil, "status")}
	rq.validate, rq.validateUpdate = validator(corevalidation.ValidateResourceQuota, corevalidation.ValidateResourceQuotaUpdate)

	no := &kubeKind{Type: cluster("", "v1", "Node", "nodes", []string{"no"}, nil, "status")}
	no.validate, no.validateUpdate = validator(corevalidation.ValidateNode, corevalidation.ValidateNodeUpdate)

	return []*kubeKind{svc, pod, pt, rc, pvc, pv, lr, rq, no}
}

func appsKinds() []*kubeKind {
	deploy := &kubeKind{Type: namespaced("apps", "v1", "Deployment", "deployments", []string{"deploy"}, all, "status"),
		generation: true, annotationsBumpGeneration: true}
	deploy.validate, deploy.validateUpdate = validator(
		func(d *apps.Deployment) field.ErrorList {
			return appsvalidation.ValidateDeployment(d, podTemplateOpts(&d.Spec.Template, nil))
		},
		func(d, old *apps.Deployment) field.ErrorList {
			return appsvalidation.ValidateDeploymentUpdate(d, old, podTemplateOpts(&d.Spec.Template, &old.Spec.Template))
		})

	rs := &kubeKind{Type: namespaced("apps", "v1", "ReplicaSet", "replicasets", []string{"rs"}, all, "status"), generation: true}
	rs.validate, rs.validateUpdate = validator(
		func(r *apps.ReplicaSet) field.ErrorList {
			return appsvalidation.ValidateReplicaSet(r, podTemplateOpts(&r.Spec.Template, nil))
		},
		func(r, old *apps.ReplicaSet) field.ErrorList {
			return appsvalidation.ValidateReplicaSetUpdate(r, old, podTemplateOpts(&r.Spec.Template, &old.Spec.Template))
		})

	sts := &kubeKind{Type: namespaced("apps", "v1", "StatefulSet", "statefulsets", []string{"sts"}, all, "status"), generation: true}
	sts.validate, sts.validateUpdate = validator(
		func(s *apps.StatefulSet) field.ErrorList {
			return appsvalidation.ValidateStatefulSet(s, podTemplateOpts(&s.Spec.Template, nil))
		},
		func(s, old *apps.StatefulSet) field.ErrorList {
			opts := podTemplateOpts(&s.Spec.Template, &old.Spec.Template)
			return append(appsvalidation.ValidateStatefulSet(s, opts), appsvalidation.ValidateStatefulSetUpdate(s, old, opts)...)
		})

	ds := &kubeKind{Type: namespaced("apps", "v1", "DaemonSet", "daemonsets", []string{"ds"}, all, "status"), generation: true}
	ds.validate, ds.validateUpdate = validator(
		func(d *apps.DaemonSet) field.ErrorList {
			return appsvalidation.ValidateDaemonSet(d, podTemplateOpts(&d.Spec.Template, nil))
		},
		func(d, old *apps.DaemonSet) field.ErrorList {
			opts := podTemplateOpts(&d.Spec.Template, &old.Spec.Template)
			return append(appsvalidation.ValidateDaemonSet(d, opts), appsvalidation.ValidateDaemonSetUpdate(d, old, opts)...)
		})

	ds.prepareCreate = daemonSetPrepareForCreate

	cr := &kubeKind{Type: namespaced("apps", "v1", "ControllerRevision", "controllerrevisions", nil, nil)}
	cr.validate, cr.validateUpdate = validator(appsvalidation.ValidateControllerRevisionCreate, appsvalidation.ValidateControllerRevisionUpdate)

	return []*kubeKind{deploy, rs, sts, ds, cr}
}

func batchKinds() []*kubeKind {
	job := &kubeKind{Type: namespaced("batch", "v1", "Job", "jobs", nil, all, "status"), generation: true}
	job.validate, job.validateUpdate = validator(
		func(j *batch.Job) field.ErrorList {
			return batchvalidation.ValidateJob(j, jobValidationOptions(j, nil))
		},
		func(j, old *batch.Job) field.ErrorList {
			opts := jobValidationOptions(j, old)
			return append(batchvalidation.ValidateJob(j, opts), batchvalidation.ValidateJobUpdate(j, old, opts)...)
		})
	job.prepareCreate = jobPrepareForCreate

	cj := &kubeKind{Type: namespaced("batch", "v1", "CronJob", "cronjobs", []string{"cj"}, all, "status"), generation: true}
	cj.validate, cj.validateUpdate = validator(
		func(c *batch.CronJob) field.ErrorList {
			return batchvalidation.ValidateCronJobCreate(c, podTemplateOpts(&c.Spec.JobTemplate.Spec.Template, nil))
		},
		func(c, old *batch.CronJob) field.ErrorList {
			return batchvalidation.ValidateCronJobUpdate(c, old, podTemplateOpts(&c.Spec.JobTemplate.Spec.Template, &old.Spec.JobTemplate.Spec.Template))
		})

	return []*kubeKind{job, cj}
}

func autoscalingKinds() []*kubeKind {
	hpaValidate, hpaValidateUpdate := validator(
		func(h *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, hpaValidationOptions())
		},
		func(h, old *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerUpdate(h, old, hpaValidationOptions())
		})
	// One stored HPA (autoscaling/v2, kube-apiserver's storage version)
	// served as v2 and v1.
	v2 := &kubeKind{Type: namespaced("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", []string{"hpa"}, all, "status"),
		validate: hpaValidate, validateUpdate: hpaValidateUpdate}
	v1 := &kubeKind{Type: namespaced("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", []string{"hpa"}, all, "status"),
		validate: hpaValidate, validateUpdate: hpaValidateUpdate, storageVersion: "v2"}
	return []*kubeKind{v2, v1}
}

func hpaValidationOptions() autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions {
	return autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound:           1,
		ScaleTargetRefValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{},
		ObjectMetricsValidationOptions:  autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
}

func networkingKinds() []*kubeKind {
	const g = "networking.k8s.io"
	ing := &kubeKind{Type: namespaced(g, "v1", "Ingress", "ingresses", []string{"ing"}, nil, "status"), generation: true}
	ing.validate, ing.validateUpdate = validator(networkingvalidation.ValidateIngressCreate, networkingvalidation.ValidateIngressUpdate)

	ic := &kubeKind{Type: cluster(g, "v1", "IngressClass", "ingressclasses", nil, nil), generation: true}
	ic.validate, ic.validateUpdate = validator(networkingvalidation.ValidateIngressClass, networkingvalidation.ValidateIngressClassUpdate)

	np := &kubeKind{Type: namespaced(g, "v1", "NetworkPolicy", "networkpolicies", []string{"netpol"}, nil), generation: true}
	np.validate, np.validateUpdate = validator(
		func(p *networking.NetworkPolicy) field.ErrorList {
			return networkingvalidation.ValidateNetworkPolicy(p, networkingvalidation.NetworkPolicyValidationOptions{})
		},
		func(p, old *networking.NetworkPolicy) field.ErrorList {
			return networkingvalidation.ValidateNetworkPolicyUpdate(p, old, networkingvalidation.NetworkPolicyValidationOptions{})
		})

	return []*kubeKind{ing, ic, np}
}

func policyKinds() []*kubeKind {
	pdb := &kubeKind{Type: namespaced("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", []string{"pdb"}, nil, "status"), generation: true}
	pdb.validate, pdb.validateUpdate = validator(
		func(p *policy.PodDisruptionBudget) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(p, policyvalidation.PodDisruptionBudgetValidationOptions{})
		},
		func(p, _ *policy.PodDisruptionBudget) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(p, policyvalidation.PodDisruptionBudgetValidationOptions{})
		})
	return []*kubeKind{pdb}
}

func rbacKinds() []*kubeKind {
	const g = "rbac.authorization.k8s.io"
	role := &kubeKind{Type: namespaced(g, "v1", "Role", "roles", nil, nil)}
	role.validate, role.validateUpdate = validator(rbacvalidation.ValidateRole, rbacvalidation.ValidateRoleUpdate)

	rb := &kubeKind{Type: namespaced(g, "v1", "RoleBinding", "rolebindings", nil, nil)}
	rb.validate, rb.validateUpdate = validator(rbacvalidation.ValidateRoleBinding, rbacvalidation.ValidateRoleBindingUpdate)

	cr := &kubeKind{Type: cluster(g, "v1", "ClusterRole", "clusterroles", nil, nil)}
	cr.validate, cr.validateUpdate = validator(
		func(r *rbac.ClusterRole) field.ErrorList {
			return rbacvalidation.ValidateClusterRole(r, rbacvalidation.ClusterRoleValidationOptions{})
		},
		func(r, old *rbac.ClusterRole) field.ErrorList {
			return rbacvalidation.ValidateClusterRoleUpdate(r, old, rbacvalidation.ClusterRoleValidationOptions{})
		})

	crb := &kubeKind{Type: cluster(g, "v1", "ClusterRoleBinding", "clusterrolebindings", nil, nil)}
	crb.validate, crb.validateUpdate = validator(rbacvalidation.ValidateClusterRoleBinding, rbacvalidation.ValidateClusterRoleBindingUpdate)

	return []*kubeKind{cr, crb, rb, role}
}

func storageKinds() []*kubeKind {
	const g = "storage.k8s.io"
	sc := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "StorageClass", "storageclasses", []string{"sc"}, nil)}
	sc.validate, sc.validateUpdate = validator(storagevalidation.ValidateStorageClass, storagevalidation.ValidateStorageClassUpdate)

	driver := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "CSIDriver", "csidrivers", nil, nil)}
	driver.validate, driver.validateUpdate = validator(storagevalidation.ValidateCSIDriver, storagevalidation.ValidateCSIDriverUpdate)

	csiNode := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "CSINode", "csinodes", nil, nil)}
	csiNodeOpts := storagevalidation.CSINodeValidationOptions{}
	csiNode.validate, csiNode.validateUpdate = validator(
		func(n *storage.CSINode) field.ErrorList { return storagevalidation.ValidateCSINode(n, csiNodeOpts) },
		func(n, old *storage.CSINode) field.ErrorList {
			return storagevalidation.ValidateCSINodeUpdate(n, old, csiNodeOpts)
		})

	capacity := &kubeKind{Type: namespaced(g, "v1", "CSIStorageCapacity", "csistoragecapacities", nil, nil)}
	capacity.validate, capacity.validateUpdate = validator(
		func(c *storage.CSIStorageCapacity) field.ErrorList {
			return storagevalidation.ValidateCSIStorageCapacity(c, storagevalidation.CSIStorageCapacityValidateOptions{})
		}, storagevalidation.ValidateCSIStorageCapacityUpdate)

	va := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "VolumeAttachment", "volumeattachments", nil, nil, "status")}
	va.validate, va.validateUpdate = validator(storagevalidation.ValidateVolumeAttachment, storagevalidation.ValidateVolumeAttachmentUpdate)

	vac := &kubeKind{returnsDeleted: true, Type: cluster(g, "v1", "VolumeAttributesClass", "volumeattributesclasses", []string{"vac"}, nil)}
	vac.validate, vac.validateUpdate = validator(storagevalidation.ValidateVolumeAttributesClass, storagevalidation.ValidateVolumeAttributesClassUpdate)

	return []*kubeKind{driver, csiNode, capacity, sc, va, vac}
}

func schedulingKinds() []*kubeKind {
	pc := &kubeKind{Type: cluster("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", []string{"pc"}, nil), generation: true}
	pc.validate, pc.validateUpdate = validator(schedulingvalidation.ValidatePriorityClass, schedulingvalidation.ValidatePriorityClassUpdate)
	return []*kubeKind{pc}
}

func discoveryKinds() []*kubeKind {
	es := &kubeKind{Type: namespaced("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", nil, nil), generation: true}
	es.validate, es.validateUpdate = validator(discoveryvalidation.ValidateEndpointSliceCreate,
		func(s, old *discovery.EndpointSlice) field.ErrorList {
			return discoveryvalidation.ValidateEndpointSliceUpdate(s, old)
		})
	return []*kubeKind{es}
}

func nodeKinds() []*kubeKind {
	rc := &kubeKind{Type: cluster("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", nil, nil)}
	rc.validate, rc.validateUpdate = validator(nodevalidation.ValidateRuntimeClass,
		func(c, old *node.RuntimeClass) field.ErrorList {
			return nodevalidation.ValidateRuntimeClassUpdate(c, old)
		})
	return []*kubeKind{rc}
}
