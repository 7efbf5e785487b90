package schema

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The generation and status rules of kube-apiserver's strategies, as the
// kube kinds apply them: kube's own strategy code is the reference
// (pkg/registry/<group>/<resource>/strategy.go).
func TestKubeKindGenerationAndStatus(t *testing.T) {
	deployment := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
				},
			},
			Status: appsv1.DeploymentStatus{Replicas: 5},
		}
	}
	// update runs a type's update hooks the way the server does: the
	// generation is carried over from the stored object first.
	update := func(typ *Type, obj, old runtime.Object, gen int64) int64 {
		obj.(metav1.Object).SetGeneration(gen)
		typ.PrepareForUpdate(obj, old)
		return obj.(metav1.Object).GetGeneration()
	}

	deploy := lookupBuiltin(t, "apps", "v1", "deployments")
	created := deployment()
	deploy.PrepareForCreate(created)
	if created.Generation != 1 || created.Status.Replicas != 0 {
		t.Fatalf("created Deployment: generation %d, status.replicas %d; want 1 and 0 (status is the controller's)", created.Generation, created.Status.Replicas)
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		want   int64
	}{
		{"spec change", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(7)) }, 2},
		{"annotation change", func(d *appsv1.Deployment) { d.Annotations = map[string]string{"a": "b"} }, 2},
		{"label change", func(d *appsv1.Deployment) { d.Labels = map[string]string{"a": "b"} }, 1},
		{"status change", func(d *appsv1.Deployment) { d.Status.Replicas = 3 }, 1},
	} {
		obj := created.DeepCopy()
		tc.change(obj)
		if got := update(deploy, obj, created, 1); got != tc.want {
			t.Errorf("Deployment %s: generation %d, want %d", tc.name, got, tc.want)
		}
		if obj.Status.Replicas != created.Status.Replicas {
			t.Errorf("Deployment %s: the main resource changed status.replicas to %d", tc.name, obj.Status.Replicas)
		}
	}

	pcType := lookupBuiltin(t, "scheduling.k8s.io", "v1", "priorityclasses")
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 10}
	pcType.PrepareForCreate(pc)
	changed := pc.DeepCopy()
	changed.Description = "now described"
	if pc.Generation != 1 || update(pcType, changed, pc, 1) != 1 {
		t.Errorf("PriorityClass generation: %d on create, %d after a change; want 1 and 1 (never moved)", pc.Generation, changed.Generation)
	}

	esType := lookupBuiltin(t, "discovery.k8s.io", "v1", "endpointslices")
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, AddressType: discoveryv1.AddressTypeIPv4}
	esType.PrepareForCreate(es)
	relabelled := es.DeepCopy()
	relabelled.Labels = map[string]string{"kubernetes.io/service-name": "web"}
	if got := update(esType, relabelled, es, 1); got != 2 {
		t.Errorf("EndpointSlice label change: generation %d, want 2", got)
	}
}

// BenchmarkKubeRow is the cost of one Table row of a kube kind: the
// conversion to kube's internal type and kube's printer.
func BenchmarkKubeRow(b *testing.B) {
	typ, _ := NewBuiltin().Lookup("apps", "v1", "deployments")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := typ.Row(d); err != nil {
			b.Fatal(err)
		}
	}
}
