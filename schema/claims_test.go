package schema

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A claim stored with only a dataSource (an older Tabula filled no
// dataSourceRef) stays writable: its update fills dataSourceRef and is
// validated against the stored claim normalized the same way, as kube's
// strategy does, not refused as a spec change.
func TestClaimStoredWithDataSourceOnlyStaysWritable(t *testing.T) {
	typ, ok := NewBuiltin().Lookup("", "v1", "persistentvolumeclaims")
	if !ok {
		t.Fatal("persistentvolumeclaims not served")
	}
	made := metav1.Now().Rfc3339Copy()
	claim := func() *corev1.PersistentVolumeClaim {
		fs := corev1.PersistentVolumeFilesystem
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", ResourceVersion: "5", CreationTimestamp: made},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				DataSource:  &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"},
				VolumeMode:  &fs,
			},
		}
	}
	old, obj := claim(), claim()
	obj.Labels = map[string]string{"a": "b"}
	typ.PrepareForUpdate(obj, old)
	if obj.Spec.DataSourceRef == nil || obj.Spec.DataSourceRef.Name != "src" {
		t.Errorf("updated claim's dataSourceRef %v; want it filled in", obj.Spec.DataSourceRef)
	}
	if errs := typ.Validate(obj, old); len(errs) > 0 {
		t.Errorf("a label change on a claim stored with only a dataSource: %v", errs)
	}
}
