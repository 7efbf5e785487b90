package schema

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	jobutil "k8s.io/kubernetes/pkg/api/job"
	pvutil "k8s.io/kubernetes/pkg/api/persistentvolume"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/batch"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	"k8s.io/kubernetes/pkg/apis/storage"
	"k8s.io/kubernetes/pkg/features"
	serviceaccountadmission "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
)

// The warnings kube 1.35's workload strategies give an accepted write
// (WarningsOnCreate, WarningsOnUpdate): deprecated or surprising pod
// template fields, a name that is not a DNS label where it names Pods,
// and a few of each kind's own. An update warns about the template only
// when it changed the spec: the kinds whose rule that is (Deployments,
// ReplicaSets, ReplicationControllers, PodTemplates, Jobs) are asked only
// then (kubeKind.updateWarnings), so their functions do not check again.

// podNameWarning is kube's warning for a name its Pods' names and
// hostnames are made from.
func podNameWarning(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

var templatePath = field.NewPath("spec", "template")

// templateWarnings makes a kind's warnings from its pod template at
// path; named says the kind's name is used in its Pods'.
func templateWarnings[T interface {
	runtime.Object
	GetName() string
}](path *field.Path, template func(T) *core.PodTemplateSpec, named bool) func(obj, old runtime.Object) []string {
	return func(obj, old runtime.Object) []string {
		o := obj.(T)
		if old != nil {
			return podutil.GetWarningsForPodTemplate(context.TODO(), path, template(o), template(old.(T)))
		}
		var w []string
		if named {
			w = podNameWarning(o.GetName())
		}
		return append(w, podutil.GetWarningsForPodTemplate(context.TODO(), path, template(o), nil)...)
	}
}

var (
	deploymentWarnings  = templateWarnings(templatePath, func(d *apps.Deployment) *core.PodTemplateSpec { return &d.Spec.Template }, true)
	replicaSetWarnings  = templateWarnings(templatePath, func(r *apps.ReplicaSet) *core.PodTemplateSpec { return &r.Spec.Template }, true)
	podTemplateWarnings = templateWarnings(field.NewPath("template"), func(p *core.PodTemplate) *core.PodTemplateSpec { return &p.Template }, false)
)

// daemonSetWarnings: a DaemonSet's update warns when its template
// generation moved (not on other spec changes), as kube's strategy.
func daemonSetWarnings(obj, old runtime.Object) []string {
	d := obj.(*apps.DaemonSet)
	if old == nil {
		return podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, &d.Spec.Template, nil)
	}
	if o := old.(*apps.DaemonSet); d.Spec.TemplateGeneration != o.Spec.TemplateGeneration {
		return podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, &d.Spec.Template, &o.Spec.Template)
	}
	return nil
}

// replicationControllerWarnings: on update kube's rc strategy passes
// the old template as the new one and the other way round; so does
// this, for the same warnings.
func replicationControllerWarnings(obj, old runtime.Object) []string {
	rc := obj.(*core.ReplicationController)
	if old != nil {
		return podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, old.(*core.ReplicationController).Spec.Template, rc.Spec.Template)
	}
	return append(podNameWarning(rc.Name), podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, rc.Spec.Template, nil)...)
}

func statefulSetWarnings(obj, old runtime.Object) []string {
	s := obj.(*apps.StatefulSet)
	var w []string
	claimsPath := field.NewPath("spec", "volumeClaimTemplates")
	if old == nil {
		w = podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, &s.Spec.Template, nil)
		for i, pvc := range s.Spec.VolumeClaimTemplates {
			w = append(w, pvcutil.GetWarningsForPersistentVolumeClaimSpec(claimsPath.Index(i), pvc.Spec)...)
		}
	} else {
		if o := old.(*apps.StatefulSet); s.Generation != o.Generation {
			w = podutil.GetWarningsForPodTemplate(context.TODO(), templatePath, &s.Spec.Template, &o.Spec.Template)
		}
		// kube's update names the claim's spec with a capital S.
		for i, pvc := range s.Spec.VolumeClaimTemplates {
			w = append(w, pvcutil.GetWarningsForPersistentVolumeClaimSpec(claimsPath.Index(i).Child("Spec"), pvc.Spec)...)
		}
	}
	if s.Spec.RevisionHistoryLimit != nil && *s.Spec.RevisionHistoryLimit < 0 {
		w = append(w, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return w
}

func jobWarnings(obj, old runtime.Object) []string {
	j, path := obj.(*batch.Job), field.NewPath("spec")
	if old != nil {
		return jobutil.WarningsForJobSpec(context.TODO(), path, &j.Spec, &old.(*batch.Job).Spec)
	}
	return append(podNameWarning(j.Name), jobutil.WarningsForJobSpec(context.TODO(), path, &j.Spec, nil)...)
}

func cronJobWarnings(obj, old runtime.Object) []string {
	c, path := obj.(*batch.CronJob), field.NewPath("spec", "jobTemplate", "spec")
	if old == nil {
		return append(podNameWarning(c.Name), jobutil.WarningsForJobSpec(context.TODO(), path, &c.Spec.JobTemplate.Spec, nil)...)
	}
	var w []string
	if o := old.(*batch.CronJob); c.Generation != o.Generation {
		w = jobutil.WarningsForJobSpec(context.TODO(), path, &c.Spec.JobTemplate.Spec, &o.Spec.JobTemplate.Spec)
	}
	if strings.Contains(c.Spec.Schedule, "TZ") {
		// kube's path, as it words it.
		w = append(w, fmt.Sprintf("cannot use TZ or CRON_TZ in %s, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", field.NewPath("spec", "spec", "schedule")))
	}
	return w
}

// podWarnings: a Pod is warned about on create only (kube skips its
// frequent updates).
func podWarnings(obj, old runtime.Object) []string {
	if old != nil {
		return nil
	}
	p := obj.(*core.Pod)
	w := appArmorAnnotationWarnings(p)
	if msgs := validation.IsDNS1123Label(p.Name); len(msgs) != 0 {
		w = append(w, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(w, podutil.GetWarningsForPod(context.TODO(), p, nil)...)
}

// appArmorAnnotationWarnings: kube warns, as it creates a Pod, of each
// container's deprecated AppArmor annotation it copied into the
// container's appArmorProfile (podPrepareForCreate) or could not read as
// a profile; not of one that repeats the Pod-level profile.
func appArmorAnnotationWarnings(p *core.Pod) []string {
	if p.Spec.OS != nil && p.Spec.OS.Name == core.Windows {
		return nil
	}
	var w []string
	podutil.VisitContainers(&p.Spec, podutil.AllFeatureEnabledContainers(), func(c *core.Container, _ podutil.ContainerType) bool {
		key := core.DeprecatedAppArmorAnnotationKeyPrefix + c.Name
		a, ok := p.Annotations[key]
		if !ok {
			return true
		}
		from := podutil.ApparmorFieldForAnnotation(a)
		copied := c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil
		if copied && !equality.Semantic.DeepEqual(from, c.SecurityContext.AppArmorProfile) {
			return true // the container's own profile, not the annotation's
		}
		if !copied && from != nil && p.Spec.SecurityContext != nil && len(corevalidation.ValidateAppArmorProfileField(from, &field.Path{})) == 0 &&
			equality.Semantic.DeepEqual(from, p.Spec.SecurityContext.AppArmorProfile) {
			return true // the Pod-level profile: nothing copied
		}
		w = append(w, fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, field.NewPath("metadata", "annotations").Key(key)))
		return true
	})
	return w
}

// podStatusWarnings are kube's on a Pod's status update: Pod and host IPs
// written in a form a later release will refuse.
func podStatusWarnings(obj, _ runtime.Object) []string {
	p := obj.(*core.Pod)
	var pods, hosts []string
	for _, ip := range p.Status.PodIPs {
		pods = append(pods, ip.IP)
	}
	for _, ip := range p.Status.HostIPs {
		hosts = append(hosts, ip.IP)
	}
	return append(ipWarnings(field.NewPath("status", "podIPs"), pods, true), ipWarnings(field.NewPath("status", "hostIPs"), hosts, true)...)
}

// loadBalancerIPWarnings are kube's on a Service's status update.
func loadBalancerIPWarnings(ingress []core.LoadBalancerIngress) []string {
	var ips []string
	for _, i := range ingress {
		ips = append(ips, i.IP)
	}
	return ipWarnings(field.NewPath("status", "loadBalancer", "ingress"), ips, false)
}

// ipWarnings warns of each non-empty IP of list at path[i] (path[i].ip
// when inField), as kube's GetWarningsForIP words it.
func ipWarnings(path *field.Path, list []string, inField bool) []string {
	var w []string
	for i, ip := range list {
		if ip == "" {
			continue
		}
		p := path.Index(i)
		if inField {
			p = p.Child("ip")
		}
		w = append(w, validation.GetWarningsForIP(p, ip)...)
	}
	return w
}

// Storage kinds' warnings, as kube's strategies give them: deprecated
// volume sources, annotations and reclaim policies, fractional byte
// sizes; a CSI driver asking for tokens without keeping them in Secrets.

func volumeWarnings(obj, _ runtime.Object) []string {
	return pvutil.GetWarningsForPersistentVolume(obj.(*core.PersistentVolume))
}

// claimWarnings: kube's claim strategy warns on create and update alike.
func claimWarnings(obj, _ runtime.Object) []string {
	return pvcutil.GetWarningsForPersistentVolumeClaim(obj.(*core.PersistentVolumeClaim))
}

const tokensInSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

func csiDriverWarnings(obj, old runtime.Object) []string {
	d := obj.(*storage.CSIDriver)
	if !utilfeature.DefaultFeatureGate.Enabled(features.CSIServiceAccountTokenSecrets) || len(d.Spec.TokenRequests) == 0 || d.Spec.ServiceAccountTokenInSecrets != nil {
		return nil
	}
	if old != nil && equality.Semantic.DeepEqual(old.(*storage.CSIDriver).Spec.TokenRequests, d.Spec.TokenRequests) {
		return nil // warned when they were set
	}
	return []string{tokensInSecretsWarning}
}

// Networking kinds' warnings: an ambiguous CIDR in a NetworkPolicy (a
// host address with a prefix, "10.0.0.1/8": which was meant?), the
// deprecated ingress class annotation on a new Ingress.

func networkPolicyWarnings(obj, _ runtime.Object) []string {
	p := obj.(*networking.NetworkPolicy)
	var w []string
	block := func(path *field.Path, b *networking.IPBlock) {
		if b == nil {
			return
		}
		path = path.Child("ipBlock")
		w = append(w, validation.GetWarningsForCIDR(path.Child("cidr"), b.CIDR)...)
		for k, except := range b.Except {
			w = append(w, validation.GetWarningsForCIDR(path.Child("except").Index(k), except)...)
		}
	}
	for i, rule := range p.Spec.Ingress {
		for j, peer := range rule.From {
			block(field.NewPath("spec", "ingress").Index(i).Child("from").Index(j), peer.IPBlock)
		}
	}
	for i, rule := range p.Spec.Egress {
		for j, peer := range rule.To {
			block(field.NewPath("spec", "egress").Index(i).Child("to").Index(j), peer.IPBlock)
		}
	}
	return w
}

func ingressWarnings(obj, old runtime.Object) []string {
	ing := obj.(*networking.Ingress)
	if _, set := ing.Annotations["kubernetes.io/ingress.class"]; old == nil && set && ing.Spec.IngressClassName == nil {
		return []string{`annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`}
	}
	return nil
}

// Core kinds' warnings, as kube's strategies give them.

// serviceAccountWarnings: the mountable-secrets annotation is deprecated;
// kube warns when a write sets it anew.
func serviceAccountWarnings(obj, old runtime.Object) []string {
	const key = serviceaccountadmission.EnforceMountableSecretsAnnotation
	if o, ok := old.(*corev1.ServiceAccount); ok && o != nil {
		if _, had := o.Annotations[key]; had {
			return nil
		}
	}
	if sa, ok := obj.(*corev1.ServiceAccount); ok {
		if _, has := sa.Annotations[key]; has {
			return []string{fmt.Sprintf("metadata.annotations[%s]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets", key)}
		}
	}
	return nil
}

// secretWarnings: a TLS Secret's certificate and key must make a pair;
// kube says why not on every write.
func secretWarnings(obj, _ runtime.Object) []string {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Type != corev1.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// resourceQuotaWarnings: on create, a request quota above its limit
// quota (cpu and memory may be named bare for their requests).
func resourceQuotaWarnings(obj, old runtime.Object) []string {
	q, ok := obj.(*core.ResourceQuota)
	if !ok || old != nil {
		return nil
	}
	var w []string
	for _, r := range []core.ResourceName{core.ResourceCPU, core.ResourceMemory, core.ResourceStorage, core.ResourceEphemeralStorage} {
		reqName := core.ResourceName("requests." + r)
		req, hasReq := q.Spec.Hard[reqName]
		if !hasReq && (r == core.ResourceCPU || r == core.ResourceMemory) {
			if req, hasReq = q.Spec.Hard[r]; hasReq {
				reqName = r
			}
		}
		limName := core.ResourceName("limits." + r)
		if lim, hasLim := q.Spec.Hard[limName]; hasReq && hasLim && req.Cmp(lim) > 0 {
			w = append(w, fmt.Sprintf("ResourceQuota %s (%s) should be less than %s (%s)", reqName, req.String(), limName, lim.String()))
		}
	}
	return w
}
