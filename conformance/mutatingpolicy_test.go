package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The flags that serve MutatingAdmissionPolicy, beta and off by default
// in kube-apiserver 1.35.
var mutatingPolicyFlags = []string{"--feature-gates", "MutatingAdmissionPolicy=true",
	"--runtime-config", "admissionregistration.k8s.io/v1beta1=true"}

// TestMutatingAdmissionPolicyOffByDefault: as on kube-apiserver 1.35,
// admissionregistration.k8s.io/v1beta1 and its MutatingAdmissionPolicy
// kinds are not served unless asked for.
func TestMutatingAdmissionPolicyOffByDefault(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "not-served", func(t *testing.T) {
			res := tg.clientset(t).Discovery().RESTClient().Get().AbsPath("/apis/admissionregistration.k8s.io/v1beta1").Do(context.Background())
			var code int
			res.StatusCode(&code)
			if code != http.StatusNotFound {
				t.Errorf("GET /apis/admissionregistration.k8s.io/v1beta1: %d, want 404", code)
			}
			if out := newKubectl(t, tg).ok(t, "api-resources", "--api-group", "admissionregistration.k8s.io", "-o", "name"); strings.Contains(out, "mutatingadmissionpolicies") {
				t.Errorf("kubectl api-resources lists mutatingadmissionpolicies:\n%s", out)
			}
		})
	})
}

// TestMutatingAdmissionPolicy: with the feature gate and its API on, a
// MutatingAdmissionPolicy bound to labelled namespaces mutates the
// ConfigMaps created there — an ApplyConfiguration merged with the
// served OpenAPI schema and a JSONPatch —, dry runs included, on every
// replica once the policy reaches it, and leaves other namespaces alone;
// kubectl prints policies with kube's columns.
func TestMutatingAdmissionPolicy(t *testing.T) {
	if !ownServerOnly(t, "the feature gate is a flag of servers the suite starts") {
		return
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			recordOutcome(t, scenarioRow(t, ""), b.name)
			replicas := 2
			if b.name == "sqlite" {
				replicas = 1 // one process per SQLite file
			}
			mutatingPolicyScenario(t, startReplicas(t, b, replicas, mutatingPolicyFlags...))
		})
	}
}

const mutatingPolicyManifest = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/data/added", value: "by-" + request.userInfo.username}]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  matchResources:
    namespaceSelector:
      matchLabels: {%[1]s: "on"}
`

func mutatingPolicyScenario(t *testing.T, tgs []*target) {
	ctx := context.Background()
	first, last := tgs[0], tgs[len(tgs)-1]
	k := newKubectl(t, first)
	name := uniqueName("add-label")
	r := k.runWith(t, runOpts{stdin: fmt.Sprintf(mutatingPolicyManifest, name)}, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("kubectl apply: %s", r)
	}
	// The beta version is deprecated from 1.37 on; kube-apiserver 1.35
	// does not warn of it (deprecation.IsDeprecated against its version).
	if strings.Contains(r.stderr, "deprecated") {
		t.Errorf("kubectl apply warned of a deprecation:\n%s", r.stderr)
	}
	on, off := newNamespace(t, first), newNamespace(t, first)
	cs := first.clientset(t)
	nsObj, err := cs.CoreV1().Namespaces().Get(ctx, on, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[name] = "on"
	if _, err := cs.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Through the last replica, which learns of the policy by its watch;
	// dry runs until it applies, which also shows dry runs are mutated.
	lastCS := last.clientset(t)
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"k": "v"}}
	}
	waitFor(t, "the policy to mutate a dry-run create", time.Minute, func() (bool, string) {
		got, err := lastCS.CoreV1().ConfigMaps(on).Create(ctx, cm(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return got.Labels["mutated"] == "yes", fmt.Sprintf("labels %v data %v", got.Labels, got.Data)
	})
	got, err := lastCS.CoreV1().ConfigMaps(on).Create(ctx, cm(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := cs.CoreV1().ConfigMaps(on).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*corev1.ConfigMap{got, stored} {
		if c.Labels["mutated"] != "yes" || c.Data["added"] != "by-tabula-admin" || c.Data["k"] != "v" {
			t.Errorf("the ConfigMap in the bound namespace: labels %v data %v; want mutated=yes, added=by-tabula-admin and k=v kept", c.Labels, c.Data)
		}
	}
	plain, err := lastCS.CoreV1().ConfigMaps(off).Create(ctx, cm(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Labels) != 0 || len(plain.Data) != 1 {
		t.Errorf("the ConfigMap in another namespace was changed: labels %v data %v", plain.Labels, plain.Data)
	}

	out := k.ok(t, "get", "mutatingadmissionpolicies", name)
	if f := strings.Fields(out); len(f) != 8 || strings.Join(f[:4], " ") != "NAME MUTATIONS PARAMKIND AGE" || f[4] != name || f[5] != "2" || f[6] != "<unset>" {
		t.Errorf("kubectl get mutatingadmissionpolicies:\n%s", out)
	}
	out = k.ok(t, "get", "mutatingadmissionpolicybindings", name)
	if f := strings.Fields(out); len(f) != 8 || strings.Join(f[:4], " ") != "NAME POLICYNAME PARAMREF AGE" || f[4] != name || f[5] != name || f[6] != "<unset>" {
		t.Errorf("kubectl get mutatingadmissionpolicybindings:\n%s", out)
	}
}
