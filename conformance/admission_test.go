package conformance

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionPlugins: kube's default admission plugins run on the
// server's write path: LimitRanger fills a pod's resources from its
// namespace's LimitRange, PodSecurity refuses a privileged pod in a
// namespace labelled restricted (kube-apiserver's words) and warns in
// one labelled warn.
func TestAdmissionPlugins(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "limitranger", func(t *testing.T) { limitRangerScenario(t, tg) })
		scenario(t, tg, "podsecurity", func(t *testing.T) { podSecurityScenario(t, tg) })
	})
}

func limitRangerScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "defaulted"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	if res.Limits.Cpu().String() != "500m" || res.Limits.Memory().String() != "256Mi" || res.Requests.Cpu().String() != "100m" ||
		res.Requests.Memory().String() != "256Mi" {
		t.Errorf("resources %v, want the LimitRange's defaults (requests cpu 100m, memory 256Mi; limits cpu 500m, memory 256Mi)", res)
	}
	if want := "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"; got.Annotations["kubernetes.io/limit-ranger"] != want {
		t.Errorf("annotation kubernetes.io/limit-ranger = %q, want %q", got.Annotations["kubernetes.io/limit-ranger"], want)
	}
	// Over the maximum: kube's words.
	pod.Name = "too-big"
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if want := `pods "too-big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`; err == nil || err.Error() != want {
		t.Errorf("over the maximum: %v, want %q", err, want)
	}
}

func podSecurityScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	setLabels := func(labels map[string]string) {
		t.Helper()
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
		if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pod with no securityContext: baseline, not restricted.
	plain := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	// Unlabelled: privileged, as on kube-apiserver.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, plain("allowed"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod where no level is set: %v", err)
	}

	// warn=restricted: admitted, with kube's warning to kubectl.
	setLabels(map[string]string{"pod-security.kubernetes.io/warn": "restricted"})
	k := newKubectl(t, tg)
	r := k.runWith(t, runOpts{stdin: podYAML("warned")}, "create", "-n", ns, "-f", "-")
	if r.code != 0 || !strings.Contains(r.stderr, `Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`) {
		t.Errorf("warn=restricted:\n%s", r)
	}

	// enforce=restricted: refused, with kube's words.
	setLabels(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	_, err := cs.CoreV1().Pods(ns).Create(ctx, plain("refused"), metav1.CreateOptions{})
	want := `pods "refused" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if err == nil || err.Error() != want {
		t.Errorf("enforce=restricted:\n got %v\nwant %s", err, want)
	}
}

// podYAML is the manifest of a pod with no securityContext.
func podYAML(name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
`
}
