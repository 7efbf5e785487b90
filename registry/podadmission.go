package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// podAdmission does on Pod create what kube-apiserver's default admission
// plugins do, so a client reads back the same Pod: ServiceAccount (the
// default account and the kube-api-access projected token volume mounted
// in every container), DefaultTolerationSeconds (not-ready and
// unreachable NoExecute tolerations for 300s) and Priority (the class's
// value and preemption policy).
type podAdmission struct {
	g *Registry
	// classes are the PriorityClasses, from the watch (nil: read live).
	classes *Cache
}

const (
	saMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// saTokenSeconds is the projected token's lifetime kube-apiserver
	// writes (an hour and seven seconds, so stale-token use is visible).
	saTokenSeconds = 3607
)

func (p podAdmission) beginCreate(ctx context.Context, obj runtime.Object, dryRun bool) (func(bool), error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return noFinish, nil
	}
	if p.g.admissionEnabled("ServiceAccount") {
		if err := p.serviceAccount(ctx, pod); err != nil {
			return nil, err
		}
	}
	if p.g.admissionEnabled("DefaultTolerationSeconds") {
		defaultTolerations(pod)
	}
	if p.g.admissionEnabled("Priority") {
		if err := p.priority(ctx, pod); err != nil {
			return nil, err
		}
	}
	return noFinish, nil
}

func (podAdmission) beginUpdate(context.Context, runtime.Object, runtime.Object, bool) (func(bool), error) {
	return noFinish, nil
}

func (podAdmission) afterDelete(context.Context, runtime.Object) {}

// admitsFirst: these are admission plugins (ServiceAccount, Priority,
// DefaultTolerationSeconds), before the webhooks.
func (podAdmission) admitsFirst() {}

var podsGR = runtimeschema.GroupResource{Resource: "pods"}

// mirrorPodReferences refuses a mirror pod that names a service account,
// a secret or a token projection, with kube's ServiceAccount admission's
// words.
func mirrorPodReferences(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return apierrors.NewForbidden(podsGR, pod.Name, errors.New("a mirror pod may not reference service accounts"))
	}
	secrets := false
	podutil.VisitPodSecretNames(pod, func(string) bool { secrets = true; return false })
	if secrets {
		return apierrors.NewForbidden(podsGR, pod.Name, errors.New("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return apierrors.NewForbidden(podsGR, pod.Name, errors.New("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

func (p podAdmission) serviceAccount(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount // as v1 conversion does
	}
	// A kubelet's mirror pod is left as the kubelet wrote it (it deletes
	// one whose spec changed), and may use no account or secret.
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return mirrorPodReferences(pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	sa, err := p.lookupServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
		}
		return err
	}
	automount := true
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil: // the Pod's preference wins
		automount = *pod.Spec.AutomountServiceAccountToken
	case sa.AutomountServiceAccountToken != nil:
		automount = *sa.AutomountServiceAccountToken
	}
	if automount {
		mountServiceAccountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		for _, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
		}
	}
	return nil
}

// lookupServiceAccount reads an account. The default one is made by a
// controller right after its namespace, so, as kube-apiserver's plugin
// does, a missing default account is looked for again for a while
// (ten tries, 100–200 ms apart) before the Pod is refused.
func (p podAdmission) lookupServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	x := p.g.MustLookup("", "v1", "serviceaccounts")
	tries := 1
	if name == "default" {
		tries = 10
	}
	wait := time.Duration(100+mrand.IntN(100)) * time.Millisecond
	for i := 0; ; i++ {
		obj, _, err := x.Get(ctx, namespace, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) || i+1 >= tries {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// mountServiceAccountToken mounts the kube-api-access projected volume
// (reusing one the Pod already has) in every init and app container that
// does not mount something at the path already.
func mountServiceAccountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = "kube-api-access-" + randomSuffix()
	}
	mounted := func(c *corev1.Container) bool {
		for _, m := range c.VolumeMounts {
			if m.Name == name || m.MountPath == saMountPath {
				return true
			}
		}
		return false
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: saMountPath}
	needed := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mounted(&cs[i]) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if hasVolume || !needed {
		return
	}
	seconds, mode := int64(saTokenSeconds), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &seconds, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}},
	}})
}

// randomSuffix is five characters of kube's name alphabet.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// defaultTolerations adds what kube's DefaultTolerationSeconds adds.
func defaultTolerations(pod *corev1.Pod) {
	seconds := int64(300)
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				tolerated = true
			}
		}
		if !tolerated {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
}

// priorityClasses are every PriorityClass, from the cache once it is
// synced (as kube's Priority admission reads its informer), else from the
// database.
func (p podAdmission) priorityClasses(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
	var out []*schedulingv1.PriorityClass
	if p.classes != nil && p.classes.Synced() {
		for _, o := range p.classes.Indexer().List() {
			out = append(out, o.(*schedulingv1.PriorityClass))
		}
		return out, nil
	}
	x := p.g.MustLookup("scheduling.k8s.io", "v1", "priorityclasses")
	res, err := x.List(ctx, kv.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, rec := range res.Items {
		obj, err := x.Decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, obj.(*schedulingv1.PriorityClass))
	}
	return out, nil
}

// priority resolves the Pod's PriorityClass (or the global default) into
// its priority and preemption policy.
func (p podAdmission) priority(ctx context.Context, pod *corev1.Pod) error {
	classes, err := p.priorityClasses(ctx)
	if err != nil {
		return err
	}
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		for _, pc := range classes {
			if pc.Name == name {
				class = pc
			}
		}
		if class == nil {
			return apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("no PriorityClass with name %s was found", name))
		}
	} else {
		for _, pc := range classes {
			if pc.GlobalDefault && (class == nil || pc.Value < class.Value) {
				class = pc
			}
		}
	}
	value := int32(0)
	policy := ptr(corev1.PreemptLowerPriority) // with no class at all
	if class != nil {
		value, policy = class.Value, class.PreemptionPolicy
		pod.Spec.PriorityClassName = class.Name
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pod.Spec.PreemptionPolicy = policy
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
