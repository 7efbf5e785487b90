package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
)

// TestNarrowTypedMatchesMaps: moving a write's fields between Go structs
// gives the object the map round trip gives, for a status write, a
// binding (metadata, spec and status) and a main-resource write (status
// kept from the stored object); the stored object is left unchanged.
func TestNarrowTypedMatchesMaps(t *testing.T) {
	g := mustNew(Config{Store: nil, Types: schema.NewBuiltin()})
	pods := g.MustLookup("", "v1", "pods")
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"a": "1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "old", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	written := old.DeepCopy()
	written.ResourceVersion = "8"
	written.Labels["a"] = "2"
	written.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "new", Operation: metav1.ManagedFieldsOperationUpdate}}
	written.Spec.NodeName = "n2"
	written.Status.Phase = corev1.PodRunning
	written.Status.PodIP = "10.0.0.1"
	stored := old.DeepCopy()
	for _, sub := range []string{"status", "binding", ""} {
		fields := schema.SubresourceWrites(sub)
		from, keep := runtime.Object(written.DeepCopy()), runtime.Object(old)
		if sub == "" {
			from, keep, fields = old, written.DeepCopy(), []string{"status"}
		}
		typed, ok := pods.narrowTyped(from, keep.DeepCopyObject(), sub, fields)
		if !ok {
			t.Fatalf("%q: the typed path declined a Pod", sub)
		}
		maps, err := pods.narrowMaps(from, keep.DeepCopyObject(), sub, fields)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(typed, maps) {
			t.Errorf("%q: typed %+v\nmaps %+v", sub, typed, maps)
		}
		if !apiequality.Semantic.DeepEqual(old, stored) {
			t.Fatalf("%q: the stored object changed: %+v", sub, old)
		}
	}
	// The main-resource write's status is a copy, not the stored one's.
	keep := written.DeepCopy()
	out, _ := pods.narrowTyped(old, keep, "", []string{"status"})
	out.(*corev1.Pod).Status.Conditions[0].Status = corev1.ConditionFalse
	if old.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Error("the narrowed object shares the stored object's status")
	}
}
