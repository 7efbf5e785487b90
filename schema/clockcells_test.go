package schema

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
)

// A Pod's row conditions are those kube's printer gives its row, in every
// phase.
func TestPodRowConditionsAsPrinted(t *testing.T) {
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
		in := &api.Pod{}
		if err := legacyscheme.Scheme.Convert(pod, in, nil); err != nil {
			t.Fatal(err)
		}
		tbl, err := tables().GenerateTable(in, printers.GenerateOptions{Wide: true})
		if err != nil || len(tbl.Rows) != 1 {
			t.Fatalf("%s: printer: %v", phase, err)
		}
		if got, want := podRowConditions(pod), tbl.Rows[0].Conditions; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: conditions %+v; the printer's %+v", phase, got, want)
		}
	}
}
