package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/yaml"
)

// Server-Side Apply through kubectl and client-go's applyconfigurations.

// seedTestCM is the seed's Server-Side Apply example ConfigMap.
const seedTestCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: test-cm
  labels:
    test-label: test
data:
  key: some value
`

// entries returns a ConfigMap's managedFields as "manager/operation"
// with the fields each owns.
func entries(cm *corev1.ConfigMap) map[string]string {
	out := map[string]string{}
	for _, e := range cm.ManagedFields {
		f := ""
		if e.FieldsV1 != nil {
			f = string(e.FieldsV1.Raw)
		}
		out[e.Manager+"/"+string(e.Operation)] = f
	}
	return out
}

// kubectlServerSideApply: the seed's test-cm through kubectl apply
// --server-side, then data.key taken by another manager, a conflict
// kubectl reports, and --force-conflicts taking it back.
func kubectlServerSideApply(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	f := e.writeFile(t, "test-cm.yaml", seedTestCM)
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "--server-side", "-f", f), "configmap/test-cm serverside-applied")
	cm := e.getCM(t, ns, "test-cm")
	if got, want := entries(cm), map[string]string{
		"kubectl/Apply": `{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}`,
	}; !equalMaps(got, want) {
		t.Errorf("managedFields %v, want %v", got, want)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].APIVersion != "v1" || cm.ManagedFields[0].FieldsType != "FieldsV1" || cm.ManagedFields[0].Time == nil {
		t.Errorf("entry %+v: want apiVersion v1, fieldsType FieldsV1 and a time", cm.ManagedFields)
	}
	rv := cm.ResourceVersion
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "--server-side", "-f", f), "configmap/test-cm serverside-applied")
	if again := e.getCM(t, ns, "test-cm"); again.ResourceVersion != rv {
		t.Errorf("re-applying the same manifest moved resourceVersion %s → %s", rv, again.ResourceVersion)
	}

	// The seed's second example: kube-controller-manager's update of
	// data.key takes the field.
	cm.Data["key"] = "new value"
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	if got := entries(e.getCM(t, ns, "test-cm")); got["kube-controller-manager/Update"] != `{"f:data":{"f:key":{}}}` ||
		got["kubectl/Apply"] != `{"f:metadata":{"f:labels":{"f:test-label":{}}}}` {
		t.Errorf("after the update: %v", got)
	}
	r := e.k.fails(t, runOpts{}, "-n", ns, "apply", "--server-side", "-f", f)
	if !strings.Contains(r.stderr, `Apply failed with 1 conflict: conflict with "kube-controller-manager" using v1: .data.key`) {
		t.Errorf("want the conflict on .data.key:\n%s", r)
	}
	if got := e.getCM(t, ns, "test-cm").Data["key"]; got != "new value" {
		t.Errorf("a conflicting apply changed data.key to %q", got)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "--server-side", "--force-conflicts", "-f", f), "configmap/test-cm serverside-applied")
	cm = e.getCM(t, ns, "test-cm")
	if got := entries(cm); cm.Data["key"] != "some value" || len(got) != 1 || got["kubectl/Apply"] == "" {
		t.Errorf("after --force-conflicts: data %v, managedFields %v; want some value owned by kubectl alone", cm.Data, got)
	}

	// --show-managed-fields prints them; plain -o yaml hides them.
	if out := e.k.ok(t, "-n", ns, "get", "configmap", "test-cm", "-o", "yaml"); strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml shows managedFields:\n%s", out)
	}
	out := e.k.ok(t, "-n", ns, "get", "configmap", "test-cm", "-o", "yaml", "--show-managed-fields")
	var shown corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &shown); err != nil || len(shown.ManagedFields) != 1 || shown.ManagedFields[0].Operation != "Apply" {
		t.Errorf("get --show-managed-fields: %v\n%s", err, out)
	}

	// kubectl diff --server-side dry-runs the apply.
	changed := e.writeFile(t, "test-cm2.yaml", strings.Replace(seedTestCM, "some value", "diffed", 1))
	r = e.k.runWith(t, runOpts{}, "-n", ns, "diff", "--server-side", "-f", changed)
	if !strings.Contains(r.stdout, "+  key: diffed") || !strings.Contains(r.stdout, "-  key: some value") {
		t.Errorf("diff --server-side:\n%s", r)
	}
	if got := e.getCM(t, ns, "test-cm").Data["key"]; got != "some value" {
		t.Errorf("diff stored its dry run: key %q", got)
	}
}

// kubectlApplyMigration: client-side apply, then --server-side (fields
// the last-applied annotation still matches move to kubectl without
// conflict; the annotation is kept up to date), then client-side again.
func kubectlApplyMigration(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "-f", e.writeFile(t, "cm.yaml", configMapManifest("mig", "one"))), "configmap/mig created")
	if got := entries(e.getCM(t, ns, "mig")); got["kubectl-client-side-apply/Update"] == "" {
		t.Errorf("client-side apply recorded %v, want a kubectl-client-side-apply Update entry", got)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "--server-side", "-f", e.writeFile(t, "cm.yaml", configMapManifest("mig", "two"))),
		"configmap/mig serverside-applied")
	cm := e.getCM(t, ns, "mig")
	var last corev1.ConfigMap
	if err := json.Unmarshal([]byte(cm.Annotations[lastApplied]), &last); err != nil || last.Data["key"] != "two" {
		t.Errorf("server-side apply left the last-applied annotation at %q (%v)", cm.Annotations[lastApplied], err)
	}
	if got := entries(cm); cm.Data["key"] != "two" || !strings.Contains(got["kubectl/Apply"], `"f:key"`) {
		t.Errorf("after the migration: data %v, managedFields %v", cm.Data, got)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "-f", e.writeFile(t, "cm.yaml", configMapManifest("mig", "three"))), "configmap/mig configured")
	if got := e.getCM(t, ns, "mig").Data["key"]; got != "three" {
		t.Errorf("client-side apply after server-side: key %q, want three", got)
	}
}

// kubectlApplyApplicationServerSide: the application manifest through
// --server-side, twice (server-allocated fields such as a Service's
// cluster IP belong to nobody, so re-applying never conflicts), then
// with a change.
func kubectlApplyApplicationServerSide(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	f := e.writeFile(t, "app.yaml", applicationManifest)
	for i := 0; i < 2; i++ {
		out := e.k.ok(t, "apply", "--server-side", "-n", ns, "-f", f)
		for _, k := range applicationKinds {
			if !strings.Contains(out, k+" serverside-applied") {
				t.Errorf("apply %d did not report %s serverside-applied:\n%s", i+1, k, out)
			}
		}
	}
	edited := strings.Replace(applicationManifest, "replicas: 2", "replicas: 4", 1)
	e.k.ok(t, "apply", "--server-side", "-n", ns, "-f", e.writeFile(t, "app2.yaml", edited))
	d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 4 || d.Generation != 2 || len(d.ManagedFields) != 1 || d.ManagedFields[0].Manager != "kubectl" {
		t.Errorf("deployment: replicas %d generation %d managedFields %+v", *d.Spec.Replicas, d.Generation, d.ManagedFields)
	}
	svc, err := e.cs.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" {
		t.Fatalf("service: %v %+v", err, svc.Spec)
	}
}

// clientGoApply: client-go's typed Apply with applyconfigurations, as
// controllers write: create, a conflict between two managers, Force,
// status through ApplyStatus, and ExtractConfigMap reading back what a
// manager owns.
func clientGoApply(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Apply(ctx, corev1ac.ConfigMap("ac", ns).WithLabels(map[string]string{"app": "a"}).WithData(map[string]string{"k": "1"}),
		metav1.ApplyOptions{FieldManager: "ctrl-a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(cm); got["ctrl-a/Apply"] != `{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:app":{}}}}` {
		t.Errorf("managedFields %v", got)
	}
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("ac", ns).WithData(map[string]string{"k": "2"}), metav1.ApplyOptions{FieldManager: "ctrl-b"})
	if err == nil || !strings.Contains(err.Error(), `conflict with "ctrl-a": .data.k`) {
		t.Fatalf("conflicting apply: %v", err)
	}
	if cm, err = cms.Apply(ctx, corev1ac.ConfigMap("ac", ns).WithData(map[string]string{"k": "2"}), metav1.ApplyOptions{FieldManager: "ctrl-b", Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := entries(cm); cm.Data["k"] != "2" || got["ctrl-b/Apply"] != `{"f:data":{"f:k":{}}}` || got["ctrl-a/Apply"] != `{"f:metadata":{"f:labels":{"f:app":{}}}}` {
		t.Errorf("after Force: data %v managedFields %v", cm.Data, got)
	}
	owned, err := corev1ac.ExtractConfigMap(cm, "ctrl-a")
	if err != nil {
		t.Fatal(err)
	}
	if owned.Labels["app"] != "a" || owned.Data != nil {
		t.Errorf("ExtractConfigMap for ctrl-a: labels %v data %v; want the label only", owned.Labels, owned.Data)
	}

	// Status of a PersistentVolumeClaim through ApplyStatus.
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(ns)
	claim := corev1ac.PersistentVolumeClaim("data", ns).WithSpec(corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")})))
	if _, err := pvcs.Apply(ctx, claim, metav1.ApplyOptions{FieldManager: "user"}); err != nil {
		t.Fatal(err)
	}
	pvc, err := pvcs.ApplyStatus(ctx, corev1ac.PersistentVolumeClaim("data", ns).WithStatus(corev1ac.PersistentVolumeClaimStatus().WithPhase(corev1.ClaimBound)),
		metav1.ApplyOptions{FieldManager: "binder", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range pvc.ManagedFields {
		if m.Manager == "binder" && m.Subresource == "status" && m.Operation == "Apply" {
			found = true
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound || !found {
		t.Errorf("status apply: phase %q, managedFields %+v", pvc.Status.Phase, pvc.ManagedFields)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
