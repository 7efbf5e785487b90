package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// TestCustomResources drives CustomResourceDefinitions and their custom
// resources with kubectl and client-go's dynamic client: a namespaced CRD
// with two versions, status, scale, printer columns and CEL rules; a
// cluster-scoped one whose rules use every Kubernetes CEL library; and
// the CRDs of two widely used operators with sample objects.
func TestCustomResources(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		k := newKubectl(t, tg)
		e := &kubectlEnv{k: k, cs: tg.clientset(t), tg: tg}
		for _, sc := range []kubectlScenario{
			{"kubectl lifecycle", crdKubectlLifecycle},
			{"cluster-scoped with CEL libraries", crdCELLibraries},
			{"dynamic client", crdDynamicClient},
			{"operator CRDs", crdOperators},
		} {
			scenario(t, tg, sc.name, func(t *testing.T) { sc.run(t, e) })
		}
	})
}

const gadgetsCRD = "gadgets.conformance.tabula.test"

// crdFixture is a file of conformance/testdata/crds, as an absolute path
// (kubectl runs in a directory of its own).
func crdFixture(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", "crds", name))
	if err != nil {
		panic(err)
	}
	return p
}

func crdKubectlLifecycle(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.k.ok(t, "apply", "-f", crdFixture("gadgets.yaml"))
	e.k.ok(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/"+gadgetsCRD)
	if out := e.k.ok(t, "api-resources", "--api-group=conformance.tabula.test", "--namespaced=true", "-o", "name"); !strings.Contains(out, "gadgets.conformance.tabula.test\n") {
		t.Errorf("api-resources printed %q", out)
	}
	f := e.writeFile(t, "g1.yaml", "apiVersion: conformance.tabula.test/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  color: red\n  serial: S-1\n")
	e.k.ok(t, "apply", "-n", ns, "-f", f)
	e.k.ok(t, "create", "-n", ns, "-f", e.writeFile(t, "g2.yaml", "apiVersion: conformance.tabula.test/v1\nkind: Gadget\nmetadata:\n  name: g2\nspec:\n  color: blue\n"))

	// Printer columns, by short name; defaults filled in.
	out := e.k.ok(t, "get", "gdt", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME COLOR REPLICAS PHASE AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "g1 red 1 ") {
		t.Errorf("kubectl get gdt printed:\n%s", out)
	}
	// The category names the resource too.
	if out := e.k.ok(t, "get", "tabula-tests", "-n", ns, "-o", "name"); !strings.Contains(out, "gadget.conformance.tabula.test/g1") {
		t.Errorf("kubectl get tabula-tests printed:\n%s", out)
	}
	if out := e.k.ok(t, "get", "gadgets", "-n", ns, "--field-selector", "spec.color=blue", "-o", "name"); strings.TrimSpace(out) != "gadget.conformance.tabula.test/g2" {
		t.Errorf("field selector on a selectable field printed %q", out)
	}

	// scale and status subresources.
	if out := e.k.ok(t, "scale", "-n", ns, "gadget/g1", "--replicas=3"); !strings.Contains(out, "scaled") {
		t.Errorf("kubectl scale printed %q", out)
	}
	e.k.ok(t, "patch", "-n", ns, "gadget/g1", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Ready","replicas":3,"selector":"app=g1"}}`)
	got := e.k.ok(t, "get", "-n", ns, "gadget/g1", "-o", "jsonpath={.spec.replicas} {.status.phase} {.metadata.generation}")
	if got != "3 Ready 2" {
		t.Errorf("after scale and status patch: %q; want replicas 3, phase Ready, generation 2", got)
	}
	// A main-resource write cannot change status.
	e.k.ok(t, "patch", "-n", ns, "gadget/g1", "--type=merge", "-p", `{"status":{"phase":"Hacked"}}`)
	if got := e.k.ok(t, "get", "-n", ns, "gadget/g1", "-o", "jsonpath={.status.phase}"); got != "Ready" {
		t.Errorf("status after a main-resource patch: %q; want Ready", got)
	}

	// The deprecated version serves the same object, with a warning.
	r := e.k.run(t, "get", "-n", ns, "gadgets.v1beta1.conformance.tabula.test", "g1", "-o", "jsonpath={.apiVersion}")
	if r.code != 0 || r.stdout != "conformance.tabula.test/v1beta1" || !strings.Contains(r.stderr, "conformance.tabula.test/v1beta1 Gadget is deprecated; use v1") {
		t.Errorf("get through v1beta1:\n%s", r)
	}

	// Validation: a CEL rule, a transition rule, an enum; strategic
	// merge patch is not for custom resources.
	r = e.k.fails(t, runOpts{}, "patch", "-n", ns, "gadget/g1", "--type=merge", "-p", `{"spec":{"replicas":9}}`)
	if !strings.Contains(r.stderr, "replicas may not exceed maxReplicas") {
		t.Errorf("replicas above maxReplicas:\n%s", r)
	}
	r = e.k.fails(t, runOpts{}, "patch", "-n", ns, "gadget/g1", "--type=merge", "-p", `{"spec":{"serial":"S-2"}}`)
	if !strings.Contains(r.stderr, "serial is immutable") {
		t.Errorf("changing serial:\n%s", r)
	}
	r = e.k.fails(t, runOpts{}, "patch", "-n", ns, "gadget/g1", "--type=merge", "-p", `{"spec":{"color":"pink"}}`)
	if !strings.Contains(r.stderr, `Unsupported value: "pink"`) {
		t.Errorf("color outside the enum:\n%s", r)
	}
	r = e.k.fails(t, runOpts{}, "patch", "-n", ns, "gadget/g1", "-p", `{"spec":{"color":"green"}}`)
	if !strings.Contains(r.stderr, "application/strategic-merge-patch+json is not supported") {
		t.Errorf("strategic merge patch:\n%s", r)
	}

	// kubectl explain reads the CRD's schema from /openapi/v3.
	if out := e.k.ok(t, "explain", "gadget.spec.color"); !strings.Contains(out, "The gadget's color.") {
		t.Errorf("kubectl explain printed:\n%s", out)
	}

	// Deleting the CRD deletes its objects and the resource.
	e.k.ok(t, "delete", "crd", gadgetsCRD, "--timeout=60s")
	r = e.k.fails(t, runOpts{}, "get", "gadgets.conformance.tabula.test", "-n", ns)
	if !strings.Contains(r.stderr, `the server doesn't have a resource type "gadgets"`) {
		t.Errorf("get after the CRD is gone:\n%s", r)
	}
}

func crdCELLibraries(t *testing.T, e *kubectlEnv) {
	e.k.ok(t, "apply", "-f", crdFixture("cel-libraries.yaml"))
	e.k.ok(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/netpolicies.conformance.tabula.test")
	t.Cleanup(func() { e.k.run(t, "delete", "crd", "netpolicies.conformance.tabula.test", "--wait=false") })
	good := e.writeFile(t, "good.yaml", `apiVersion: conformance.tabula.test/v1
kind: NetPolicy
metadata: {name: good}
spec: {ports: [80, 443], name: web-1, endpoint: "https://example.com/x", address: 10.0.0.5, network: 10.0.0.0/16, memory: 1Gi, version: 1.2.3, level: 2, limits: {burst: 50}}
`)
	e.k.ok(t, "apply", "-f", good)
	bad := e.writeFile(t, "bad.yaml", `apiVersion: conformance.tabula.test/v1
kind: NetPolicy
metadata: {name: bad}
spec: {ports: [443, 80], name: Web_1, endpoint: "http://example.com", address: "::1", network: 10.0.0.0/28, memory: 3Gi, version: 0.9.0, limits: {burst: 500}}
`)
	r := e.k.fails(t, runOpts{}, "apply", "-f", bad)
	for _, want := range []string{
		"spec.ports: Invalid value: ports must be sorted",                                    // lists
		`spec.name: Invalid value: "Web_1": name must be a DNS label`,                        // format
		`spec.name: Invalid value: "Web_1": digits only as a suffix`,                         // regex
		`spec.endpoint: Invalid value: "http://example.com": endpoint must be an https URL`,  // URL
		`spec.address: Invalid value: "::1": address must be an IPv4 address`,                // IP
		`spec.network: Invalid value: "10.0.0.0/28": network must be a CIDR of /24 or wider`, // CIDR
		`spec.memory: Invalid value: "3Gi": memory must be under 2Gi`,                        // quantity
		`spec.version: Invalid value: "0.9.0": version must be a semver above 1.0.0`,         // semver
		"spec: Invalid value: burst is at most 100",                                          // optional types
		"spec.address: Invalid value: address must lie in network",                           // fieldPath
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("invalid NetPolicy: no %q in\n%s", want, r.stderr)
		}
	}
	// The transition rule with optionalOldSelf: level may only grow.
	r = e.k.fails(t, runOpts{}, "patch", "netpolicy/good", "--type=merge", "-p", `{"spec":{"level":1}}`)
	if !strings.Contains(r.stderr, "spec.level: Invalid value: 1: level may only grow") {
		t.Errorf("lowering level:\n%s", r)
	}
	e.k.ok(t, "patch", "netpolicy/good", "--type=merge", "-p", `{"spec":{"level":4}}`)
}

func crdDynamicClient(t *testing.T, e *kubectlEnv) {
	ctx := testContext(t, 2*waitDeadline)
	dyn, err := dynamic.NewForConfig(e.tg.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	var crd map[string]interface{}
	if err := yaml.Unmarshal([]byte(strings.NewReplacer("gadgets", "sprockets", "gadget", "sprocket", "Gadget", "Sprocket", "[gdt]", "[spk]").
		Replace(mustRead(t, crdFixture("gadgets.yaml")))), &crd); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdGVR).Delete(context.Background(), "sprockets.conformance.tabula.test", metav1.DeleteOptions{})
	})
	waitFor(t, "sprockets Established", waitDeadline, func() (bool, string) {
		c, err := dyn.Resource(crdGVR).Get(ctx, "sprockets.conformance.tabula.test", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		for _, cond := range conds {
			if m := cond.(map[string]interface{}); m["type"] == "Established" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprint(conds)
	})

	ns := e.ns(t)
	gvr := schema.GroupVersionResource{Group: "conformance.tabula.test", Version: "v1", Resource: "sprockets"}
	res := dyn.Resource(gvr).Namespace(ns)
	// The resource may take a moment to appear in this client's first
	// request after Established; the watch starts from an empty list.
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "conformance.tabula.test/v1", "kind": "Sprocket",
		"metadata": map[string]interface{}{"name": "s1", "labels": map[string]interface{}{"tier": "a"}},
		"spec":     map[string]interface{}{"color": "green"},
	}}
	created, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(created.Object, "spec", "replicas"); r != 1 {
		t.Errorf("created spec.replicas %d; want the default 1", r)
	}
	if err := unstructured.SetNestedField(created.Object, "Running", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	updated, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(updated.Object, "status", "phase"); p != "Running" || updated.GetGeneration() != 1 {
		t.Errorf("after UpdateStatus: phase %q generation %d; want Running and 1", p, updated.GetGeneration())
	}
	scale, err := res.Get(ctx, "s1", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if scale.GetKind() != "Scale" || scale.GetAPIVersion() != "autoscaling/v1" {
		t.Errorf("scale subresource answered %s %s", scale.GetAPIVersion(), scale.GetKind())
	}
	sel, err := res.List(ctx, metav1.ListOptions{LabelSelector: "tier=a"})
	if err != nil || len(sel.Items) != 1 || sel.Items[0].GetAPIVersion() != "conformance.tabula.test/v1" {
		t.Errorf("list by label: %v %v", sel, err)
	}
	if err := res.Delete(ctx, "s1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	timeout := time.After(waitDeadline)
	for len(seen) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", seen)
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", ev.Object)
			}
			seen = append(seen, string(ev.Type))
		case <-timeout:
			t.Fatalf("watch saw %v within %v; want ADDED, MODIFIED, DELETED", seen, waitDeadline)
		}
	}
	if strings.Join(seen, ",") != "ADDED,MODIFIED,DELETED" {
		t.Errorf("watch saw %v; want ADDED, MODIFIED, DELETED", seen)
	}
	if _, err := res.Get(ctx, "s1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v; want NotFound", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// operatorModules are the operators whose CRDs the suite installs, from
// their Go modules on the module proxy, with the directory holding them.
var operatorModules = []struct{ module, dir string }{
	{"github.com/cert-manager/cert-manager@v1.16.2", "deploy/crds"},
	{"github.com/prometheus-operator/prometheus-operator@v0.79.2", "example/prometheus-operator-crd"},
}

var operatorCRDs suiteArtifact

// operatorCRDDir fetches the operators' modules once and writes their
// CRDs into one directory. cert-manager's are the chart's templates: the
// lines holding template actions (labels and comments) are dropped, which
// leaves the CRDs as the chart renders them without labels.
func operatorCRDDir() (string, error) {
	return operatorCRDs.get(func(dir string) (string, error) {
		out := filepath.Join(dir, "operator-crds")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", err
		}
		for _, m := range operatorModules {
			b, err := goOutside(dir, nil, "mod", "download", "-json", m.module)
			if err != nil {
				return "", err
			}
			var info struct{ Dir string }
			if err := json.Unmarshal(b, &info); err != nil || info.Dir == "" {
				return "", fmt.Errorf("go mod download %s: no directory in %s", m.module, b)
			}
			files, err := filepath.Glob(filepath.Join(info.Dir, m.dir, "*.yaml"))
			if err != nil || len(files) == 0 {
				return "", fmt.Errorf("%s: no CRDs under %s", m.module, m.dir)
			}
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					return "", err
				}
				var kept []string
				for _, line := range strings.Split(string(src), "\n") {
					if !strings.Contains(line, "{{") {
						kept = append(kept, line)
					}
				}
				if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
					return "", err
				}
			}
		}
		return out, nil
	})
}

func crdOperators(t *testing.T, e *kubectlEnv) {
	dir, err := operatorCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	// apply --server-side, as the Prometheus operator's installation
	// says: its CRDs are larger than client-side apply's last-applied
	// annotation may be. Applied again, nothing conflicts.
	e.k.ok(t, "apply", "--server-side", "-f", dir)
	t.Cleanup(func() { e.k.run(t, "delete", "-f", dir, "--wait=false") })
	crds := []string{"crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io", "crd/clusterissuers.cert-manager.io",
		"crd/prometheuses.monitoring.coreos.com", "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com",
		"crd/alertmanagers.monitoring.coreos.com", "crd/scrapeconfigs.monitoring.coreos.com"}
	// A CRD is created with "conditions": null (v1's field has no
	// omitempty; kube-apiserver serves it so too) until its names are
	// accepted, and kubectl wait fails at once on a null rather than
	// waiting: on kube as here, the wait must follow the first condition.
	waitFor(t, "the operator CRDs' first conditions", time.Minute, func() (bool, string) {
		r := e.k.run(t, append([]string{"get", "-o", `jsonpath={range .items[*]}{.status.conditions[0].type}{"\n"}{end}`}, crds...)...)
		return strings.Count(r.stdout, "\n") == len(crds) && !strings.Contains(r.stdout, "\n\n") && !strings.HasPrefix(r.stdout, "\n"), r.stdout + r.stderr
	})
	e.k.ok(t, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
	if out := e.k.ok(t, "apply", "--server-side", "-f", dir); strings.Count(out, "serverside-applied") < 8 {
		t.Errorf("second apply --server-side of the operator CRDs:\n%s", out)
	}

	ns := e.ns(t)
	samples := e.writeFile(t, "samples.yaml", `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: selfsigned, kind: Issuer}
  privateKey: {algorithm: ECDSA, size: 256}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: metrics, interval: 30s}]
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: web}
spec:
  groups:
  - name: web
    rules:
    - {alert: WebDown, expr: 'up{job="web"} == 0', for: 5m, labels: {severity: page}}
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: main}
spec: {replicas: 2, serviceMonitorSelector: {}}
`)
	e.k.ok(t, "apply", "-n", ns, "-f", samples)
	out := e.k.ok(t, "get", "certificates", "-n", ns)
	if header := strings.Fields(strings.Split(out, "\n")[0]); strings.Join(header, " ") != "NAME READY SECRET AGE" {
		t.Errorf("kubectl get certificates printed:\n%s", out)
	}
	if got := e.k.ok(t, "get", "prometheus", "main", "-n", ns, "-o", "jsonpath={.spec.replicas} {.spec.evaluationInterval}"); got != "2 30s" {
		t.Errorf("Prometheus replicas and defaulted evaluationInterval: %q; want \"2 30s\"", got)
	}
	// kubectl scale through the Prometheus CRD's scale subresource.
	e.k.ok(t, "scale", "-n", ns, "prometheus/main", "--replicas=3")

	// What kube-apiserver rejects: an interval not matching the schema's
	// pattern, an unknown enum value, a missing required field.
	bad := e.writeFile(t, "bad.yaml", `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: bad}
spec:
  selector: {}
  endpoints: [{port: metrics, interval: soon}]
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: bad}
spec:
  dnsNames: [x.example.com]
  issuerRef: {name: selfsigned}
  privateKey: {algorithm: DSA}
`)
	r := e.k.fails(t, runOpts{}, "apply", "-n", ns, "-f", bad)
	for _, want := range []string{`spec.endpoints[0].interval: Invalid value: "soon"`, "spec.secretName: Required value", `spec.privateKey.algorithm: Unsupported value: "DSA"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("invalid operator objects: no %q in\n%s", want, r.stderr)
		}
	}
	e.k.ok(t, "delete", "-f", dir, "--timeout=120s")
}
