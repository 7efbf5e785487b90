package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// TestKubectl drives kubectl 1.32 through the scenarios of CLIENTS.md,
// each in a namespace of its own, checking what kubectl prints and then
// the state the server holds.
func TestKubectl(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		k := newKubectl(t, tg)
		cs := tg.clientset(t)
		for _, sc := range kubectlScenarios {
			scenario(t, tg, sc.name, func(t *testing.T) {
				sc.run(t, &kubectlEnv{k: k, cs: cs, tg: tg})
			})
		}
	})
}

// kubectlEnv is what a kubectl scenario works with.
type kubectlEnv struct {
	k  *kubectl
	cs *kubernetes.Clientset
	tg *target
}

// ns creates a namespace for the scenario.
func (e *kubectlEnv) ns(t *testing.T) string { return newNamespace(t, e.tg) }

// createCM creates a ConfigMap through client-go.
func (e *kubectlEnv) createCM(t *testing.T, ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       data,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

// getCM reads a ConfigMap through client-go.
func (e *kubectlEnv) getCM(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

// expectGone fails t unless the ConfigMap does not exist.
func (e *kubectlEnv) expectGone(t *testing.T, ns, name string) {
	t.Helper()
	_, err := e.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("getting configmap %s/%s: got error %v, want NotFound", ns, name, err)
	}
}

// writeFile writes a manifest into the kubectl's working directory.
func (e *kubectlEnv) writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type kubectlScenario struct {
	name string
	run  func(t *testing.T, e *kubectlEnv)
}

// The scenarios, in the order of CLIENTS.md's table.
var kubectlScenarios = []kubectlScenario{
	{"version", kubectlVersionScenario},
	{"api-resources", kubectlAPIResources},
	{"create namespace", kubectlCreateNamespace},
	{"create configmap", kubectlCreateConfigMap},
	{"create secret generic", kubectlCreateSecret},
	{"get output formats", kubectlGetFormats},
	{"get -A", kubectlGetAllNamespaces},
	{"get --chunk-size", kubectlGetChunked},
	{"get -l", kubectlGetLabelSelector},
	{"get --field-selector", kubectlGetFieldSelector},
	{"get -w", kubectlGetWatch},
	{"label", kubectlLabel},
	{"annotate", kubectlAnnotate},
	{"apply lifecycle", kubectlApply},
	{"apply unknown field", kubectlApplyUnknownField},
	{"edit", kubectlEdit},
	{"patch json|merge|strategic", kubectlPatch},
	{"patch failing test op", kubectlPatchFailingTest},
	{"replace stale resourceVersion", kubectlReplace},
	{"delete", kubectlDelete},
	{"delete -l", kubectlDeleteSelector},
	{"delete namespace", kubectlDeleteNamespace},
	{"explain", kubectlExplain},
	{"describe", kubectlDescribe},
	{"events", kubectlEvents},
	{"apply an application manifest", kubectlApplyApplication},
	{"scale", kubectlScale},
	{"auth whoami and can-i", kubectlAuth},
	{"logs and exec without nodes", kubectlNodeless},
	{"delete --cascade=foreground", kubectlCascade},
	{"rollout history", kubectlRolloutHistory},
	{"apply --server-side", kubectlServerSideApply},
	{"apply client-side to server-side and back", kubectlApplyMigration},
	{"apply --server-side an application manifest", kubectlApplyApplicationServerSide},
	{"client-go Apply with applyconfigurations", clientGoApply},
}

var (
	plainSemver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\+[0-9A-Za-z.-]+)?$`)
	number      = regexp.MustCompile(`^[0-9]+$`)
)

func kubectlVersionScenario(t *testing.T, e *kubectlEnv) {
	out := e.k.ok(t, "version", "-o", "json")
	var v struct {
		ServerVersion *version.Info `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	sv := v.ServerVersion
	if sv == nil {
		t.Fatalf("kubectl version -o json printed no serverVersion:\n%s", out)
	}
	m := plainSemver.FindStringSubmatch(sv.GitVersion)
	if m == nil {
		t.Errorf("serverVersion.gitVersion = %q, want plain semver vX.Y.Z (build metadata allowed, no pre-release)", sv.GitVersion)
	}
	if !number.MatchString(sv.Major) || !number.MatchString(sv.Minor) {
		t.Errorf("serverVersion major, minor = %q, %q; want numeric strings", sv.Major, sv.Minor)
	}
	if m != nil && (m[1] != sv.Major || m[2] != sv.Minor) {
		t.Errorf("gitVersion %q disagrees with major %q, minor %q", sv.GitVersion, sv.Major, sv.Minor)
	}
}

func kubectlAPIResources(t *testing.T, e *kubectlEnv) {
	out := e.k.ok(t, "api-resources")
	header, rows := parseTable(t, out)
	if want := []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}; !slices.Equal(header, want) {
		t.Fatalf("api-resources header = %q, want %q", header, want)
	}
	type res struct{ name, short, apiVersion, namespaced, kind string }
	var got []res
	for _, r := range rows {
		got = append(got, res{r["NAME"], r["SHORTNAMES"], r["APIVERSION"], r["NAMESPACED"], r["KIND"]})
	}
	for _, want := range []res{
		{"configmaps", "cm", "v1", "true", "ConfigMap"},
		{"namespaces", "ns", "v1", "false", "Namespace"},
		{"secrets", "", "v1", "true", "Secret"},
		{"events", "ev", "v1", "true", "Event"},
		{"leases", "", "coordination.k8s.io/v1", "true", "Lease"},
		{"events", "ev", "events.k8s.io/v1", "true", "Event"},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("api-resources has no row %+v; output:\n%s", want, out)
		}
	}
}

func kubectlCreateNamespace(t *testing.T, e *kubectlEnv) {
	name := uniqueName("conf-create-ns")
	t.Cleanup(func() { deleteNamespace(t, e.tg, name) })
	expectOutput(t, e.k.ok(t, "create", "namespace", name), "namespace/"+name+" created")
	ns, err := e.cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the new namespace: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace phase = %q, want %q", ns.Status.Phase, corev1.NamespaceActive)
	}
	if ns.UID == "" || ns.ResourceVersion == "" || ns.CreationTimestamp.IsZero() {
		t.Errorf("namespace metadata incomplete: uid %q, resourceVersion %q, creationTimestamp %v", ns.UID, ns.ResourceVersion, ns.CreationTimestamp)
	}
	expectOutput(t, e.k.ok(t, "get", "namespace", name, "-o", "jsonpath={.status.phase}"), "Active")
}

func kubectlCreateConfigMap(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	expectOutput(t, e.k.ok(t, "-n", ns, "create", "configmap", "c1", "--from-literal=a=1"), "configmap/c1 created")
	expectOutput(t, e.k.ok(t, "-n", ns, "get", "cm", "c1", "-o", "jsonpath={.data.a}"), "1")
	cm := e.getCM(t, ns, "c1")
	if cm.Data["a"] != "1" || len(cm.Data) != 1 {
		t.Errorf("data = %v, want map[a:1]", cm.Data)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
		t.Errorf("metadata incomplete: uid %q, resourceVersion %q, creationTimestamp %v", cm.UID, cm.ResourceVersion, cm.CreationTimestamp)
	}
}

func kubectlCreateSecret(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	expectOutput(t, e.k.ok(t, "-n", ns, "create", "secret", "generic", "s", "--from-literal=pw=x"), "secret/s created")
	expectOutput(t, e.k.ok(t, "-n", ns, "get", "secret", "s", "-o", "jsonpath={.data.pw}"), "eA==")
	s, err := e.cs.CoreV1().Secrets(ns).Get(context.Background(), "s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["pw"]) != "x" || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret data, type = %q, %q; want pw=x, Opaque", s.Data, s.Type)
	}
}

func kubectlGetFormats(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "g1", map[string]string{"app": "web"}, map[string]string{"a": "1", "b": "2"})

	t.Run("json", func(t *testing.T) {
		var cm corev1.ConfigMap
		out := e.k.ok(t, "-n", ns, "get", "cm", "g1", "-o", "json")
		if err := json.Unmarshal([]byte(out), &cm); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Name != "g1" || cm.Data["b"] != "2" {
			t.Errorf("-o json gave kind %q apiVersion %q name %q data %v", cm.Kind, cm.APIVersion, cm.Name, cm.Data)
		}
	})
	t.Run("yaml", func(t *testing.T) {
		var cm corev1.ConfigMap
		out := e.k.ok(t, "-n", ns, "get", "cm", "g1", "-o", "yaml")
		if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
			t.Fatalf("-o yaml: %v\n%s", err, out)
		}
		if cm.Kind != "ConfigMap" || cm.Name != "g1" || cm.Labels["app"] != "web" || cm.Data["a"] != "1" {
			t.Errorf("-o yaml gave kind %q name %q labels %v data %v", cm.Kind, cm.Name, cm.Labels, cm.Data)
		}
	})
	t.Run("wide", func(t *testing.T) {
		out := e.k.ok(t, "-n", ns, "get", "cm", "g1", "-o", "wide")
		header, rows := parseTable(t, out)
		if want := []string{"NAME", "DATA", "AGE"}; !slices.Equal(header, want) {
			t.Errorf("-o wide header = %q, want %q (the server's Table columns)", header, want)
		}
		if len(rows) != 1 || rows[0]["NAME"] != "g1" || rows[0]["DATA"] != "2" {
			t.Errorf("-o wide rows = %v, want one row g1 with DATA 2", rows)
		}
	})
	t.Run("name", func(t *testing.T) {
		expectOutput(t, e.k.ok(t, "-n", ns, "get", "cm", "g1", "-o", "name"), "configmap/g1")
	})
	t.Run("empty list", func(t *testing.T) {
		r := e.k.run(t, "-n", ns, "get", "secrets")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "" || !strings.Contains(r.stderr, "No resources found in "+ns+" namespace.") {
			t.Errorf("want exit 0, no stdout and %q on stderr:\n%s", "No resources found in "+ns+" namespace.", r)
		}
	})
}

func kubectlGetAllNamespaces(t *testing.T, e *kubectlEnv) {
	ns1, ns2 := e.ns(t), e.ns(t)
	mark := map[string]string{"conformance-run": uniqueName("all")}
	e.createCM(t, ns1, "in-first", mark, nil)
	e.createCM(t, ns2, "in-second", mark, nil)
	out := e.k.ok(t, "get", "cm", "-A", "-l", "conformance-run="+mark["conformance-run"])
	header, rows := parseTable(t, out)
	if len(header) == 0 || header[0] != "NAMESPACE" {
		t.Errorf("get -A header = %q, want NAMESPACE first", header)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r["NAMESPACE"]+"/"+r["NAME"])
	}
	slices.Sort(got)
	want := []string{ns1 + "/in-first", ns2 + "/in-second"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("get -A listed %q, want %q", got, want)
	}
}

var listRequest = regexp.MustCompile(`GET https://\S+/configmaps\?\S*limit=2\S* 200 OK`)

func kubectlGetChunked(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	var want []string
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("chunk-%d", i)
		e.createCM(t, ns, name, map[string]string{"grp": "chunk"}, nil)
		want = append(want, "configmap/"+name)
	}
	r := e.k.run(t, "-n", ns, "get", "cm", "-l", "grp=chunk", "--chunk-size=2", "-o", "name", "-v=6")
	if r.code != 0 {
		t.Fatalf("got exit code %d:\n%s", r.code, r)
	}
	got := strings.Fields(r.stdout)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("get --chunk-size=2 printed %q, want each of %q once", got, want)
	}
	pages := listRequest.FindAllString(r.stderr, -1)
	continued := 0
	for _, p := range pages {
		if strings.Contains(p, "continue=") {
			continued++
		}
	}
	if len(pages) != 3 || continued != 2 {
		t.Errorf("kubectl made %d list requests with limit=2, %d of them with continue; want 3 and 2:\n%s",
			len(pages), continued, strings.Join(pages, "\n"))
	}
}

func kubectlGetLabelSelector(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "l1", map[string]string{"app": "web"}, nil)
	e.createCM(t, ns, "l2", map[string]string{"app": "db"}, nil)
	e.createCM(t, ns, "l3", map[string]string{"app": "web", "tier": "front"}, nil)
	for _, c := range []struct{ selector, want string }{
		{"app=web", "configmap/l1 configmap/l3"},
		{"app=web,tier=front", "configmap/l3"},
		{"app in (db)", "configmap/l2"},
		{"app,!tier", "configmap/l1 configmap/l2"},
		// != also matches objects without the label (here: l1, l2).
		{"app,tier!=front", "configmap/l1 configmap/l2"},
	} {
		got := strings.Fields(e.k.ok(t, "-n", ns, "get", "cm", "-l", c.selector, "-o", "name"))
		slices.Sort(got)
		if strings.Join(got, " ") != c.want {
			t.Errorf("get -l %q printed %q, want %q", c.selector, got, c.want)
		}
	}
}

func kubectlGetFieldSelector(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "f1", nil, nil)
	e.createCM(t, ns, "f2", nil, nil)
	expectOutput(t, e.k.ok(t, "-n", ns, "get", "cm", "--field-selector", "metadata.name=f2", "-o", "name"), "configmap/f2")
	got := strings.Fields(e.k.ok(t, "-n", ns, "get", "cm", "--field-selector", "metadata.name!=f2,metadata.name!=kube-root-ca.crt", "-o", "name"))
	if !slices.Equal(got, []string{"configmap/f1"}) {
		t.Errorf("get --field-selector metadata.name!=f2 printed %q, want [configmap/f1]", got)
	}
}

func kubectlGetWatch(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	labels := map[string]string{"watched": "yes"}
	e.createCM(t, ns, "w1", labels, map[string]string{"k": "v"})
	w := e.k.start(t, "-n", ns, "get", "cm", "-l", "watched=yes", "-w", "--output-watch-events")

	header := strings.Fields(w.next(t, waitDeadline))
	if want := []string{"EVENT", "NAME", "DATA", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("watch header = %q, want %q", header, want)
	}
	expect := func(event, name string) {
		t.Helper()
		for {
			f := strings.Fields(w.next(t, waitDeadline))
			if len(f) >= 2 && f[0] == "EVENT" {
				t.Errorf("a second header line in the watch output: %q (columnDefinitions belong in the first event only)", f)
				continue
			}
			if len(f) < 2 || f[0] != event || f[1] != name {
				t.Fatalf("watch printed %q, want %s %s", f, event, name)
			}
			return
		}
	}
	expect("ADDED", "w1") // from the initial list

	cm := e.getCM(t, ns, "w1")
	cm.Data["k"] = "changed"
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("MODIFIED", "w1")
	e.createCM(t, ns, "w2", labels, nil)
	expect("ADDED", "w2")
	if err := e.cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("DELETED", "w1")
}

func kubectlLabel(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "lb", nil, nil)
	expectOutput(t, e.k.ok(t, "-n", ns, "label", "cm", "lb", "tier=gold"), "configmap/lb labeled")
	if got := e.getCM(t, ns, "lb").Labels["tier"]; got != "gold" {
		t.Errorf("label tier = %q, want gold", got)
	}
	r := e.k.fails(t, runOpts{}, "-n", ns, "label", "cm", "lb", "tier=silver")
	if !strings.Contains(r.stderr, "already has a value (gold)") {
		t.Errorf("label without --overwrite: want an \"already has a value (gold)\" error:\n%s", r)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "label", "cm", "lb", "tier=silver", "--overwrite"), "configmap/lb labeled")
	if got := e.getCM(t, ns, "lb").Labels["tier"]; got != "silver" {
		t.Errorf("label tier after --overwrite = %q, want silver", got)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "label", "cm", "lb", "tier-"), "configmap/lb unlabeled")
	if got, ok := e.getCM(t, ns, "lb").Labels["tier"]; ok {
		t.Errorf("label tier = %q after tier-, want it removed", got)
	}
}

func kubectlAnnotate(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "an", nil, nil)
	expectOutput(t, e.k.ok(t, "-n", ns, "annotate", "cm", "an", "note=x"), "configmap/an annotated")
	if got := e.getCM(t, ns, "an").Annotations["note"]; got != "x" {
		t.Errorf("annotation note = %q, want x", got)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "annotate", "cm", "an", "note=y", "--overwrite"), "configmap/an annotated")
	expectOutput(t, e.k.ok(t, "-n", ns, "annotate", "cm", "an", "note-"), "configmap/an annotated")
	if got, ok := e.getCM(t, ns, "an").Annotations["note"]; ok {
		t.Errorf("annotation note = %q after note-, want it removed", got)
	}
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func configMapManifest(name, value string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  labels:
    app: conformance
data:
  key: %s
`, name, value)
}

func kubectlApply(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	first := e.writeFile(t, "cm.yaml", configMapManifest("ap1", "one"))
	second := e.writeFile(t, "cm.yaml", configMapManifest("ap1", "two"))
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "-f", first), "configmap/ap1 created")
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "-f", second), "configmap/ap1 configured")
	expectOutput(t, e.k.ok(t, "-n", ns, "apply", "-f", second), "configmap/ap1 unchanged")
	cm := e.getCM(t, ns, "ap1")
	if cm.Data["key"] != "two" || cm.Labels["app"] != "conformance" {
		t.Errorf("after apply: data %v, labels %v; want key=two, app=conformance", cm.Data, cm.Labels)
	}
	var applied corev1.ConfigMap
	if err := json.Unmarshal([]byte(cm.Annotations[lastApplied]), &applied); err != nil {
		t.Fatalf("annotation %s = %q: %v", lastApplied, cm.Annotations[lastApplied], err)
	}
	if applied.Data["key"] != "two" {
		t.Errorf("last-applied configuration has data %v, want key=two", applied.Data)
	}
}

func kubectlApplyUnknownField(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	bad := e.writeFile(t, "bad.yaml", configMapManifest("ap-bad", "x")+"bogusField: oops\n")
	r := e.k.fails(t, runOpts{}, "-n", ns, "apply", "-f", bad)
	if !strings.Contains(r.stderr, `strict decoding error: unknown field "bogusField"`) {
		t.Errorf("want a strict decoding error naming bogusField:\n%s", r)
	}
	e.expectGone(t, ns, "ap-bad")
}

func kubectlEdit(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "ed1", nil, map[string]string{"a": "before-edit"})
	editor := filepath.Join(t.TempDir(), "editor.sh")
	script := "#!/bin/sh\nexec sed -i 's/before-edit/after-edit/' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := e.k.okWith(t, runOpts{env: []string{"KUBE_EDITOR=" + editor}}, "-n", ns, "edit", "cm", "ed1")
	expectOutput(t, out, "configmap/ed1 edited")
	if got := e.getCM(t, ns, "ed1").Data["a"]; got != "after-edit" {
		t.Errorf("data a = %q after edit, want after-edit", got)
	}
}

func kubectlPatch(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "pt1", nil, map[string]string{"a": "1"})
	expectOutput(t, e.k.ok(t, "-n", ns, "patch", "cm", "pt1", "--type=json",
		"-p", `[{"op":"add","path":"/data/b","value":"2"}]`), "configmap/pt1 patched")
	expectOutput(t, e.k.ok(t, "-n", ns, "patch", "cm", "pt1", "--type=merge",
		"-p", `{"data":{"c":"3","a":null}}`), "configmap/pt1 patched")
	expectOutput(t, e.k.ok(t, "-n", ns, "patch", "cm", "pt1",
		"-p", `{"metadata":{"labels":{"patched":"strategic"}},"data":{"d":"4"}}`), "configmap/pt1 patched")
	cm := e.getCM(t, ns, "pt1")
	want := map[string]string{"b": "2", "c": "3", "d": "4"}
	if fmt.Sprint(cm.Data) != fmt.Sprint(want) || cm.Labels["patched"] != "strategic" {
		t.Errorf("after three patches: data %v, labels %v; want data %v and label patched=strategic", cm.Data, cm.Labels, want)
	}
}

var patch422 = regexp.MustCompile(`PATCH https://\S+/configmaps/pt2\S* 422 Unprocessable Entity`)

func kubectlPatchFailingTest(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	before := e.createCM(t, ns, "pt2", nil, map[string]string{"a": "1"})
	r := e.k.fails(t, runOpts{}, "-n", ns, "patch", "cm", "pt2", "--type=json", "-v=6",
		"-p", `[{"op":"test","path":"/data/a","value":"wrong"},{"op":"add","path":"/data/e","value":"5"}]`)
	if !patch422.MatchString(r.stderr) {
		t.Errorf("want the PATCH answered 422 Unprocessable Entity:\n%s", r)
	}
	after := e.getCM(t, ns, "pt2")
	if after.ResourceVersion != before.ResourceVersion || len(after.Data) != 1 {
		t.Errorf("a failed patch changed the object: resourceVersion %s → %s, data %v", before.ResourceVersion, after.ResourceVersion, after.Data)
	}
}

func kubectlReplace(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "rp1", nil, map[string]string{"a": "1"})
	stale := e.k.ok(t, "-n", ns, "get", "cm", "rp1", "-o", "json")
	withValue := func(v string) string {
		var cm map[string]any
		if err := json.Unmarshal([]byte(stale), &cm); err != nil {
			t.Fatal(err)
		}
		cm["data"] = map[string]string{"a": v}
		b, _ := json.Marshal(cm)
		return string(b)
	}
	expectOutput(t, e.k.okWith(t, runOpts{stdin: withValue("2")}, "-n", ns, "replace", "-f", "-"), "configmap/rp1 replaced")
	// The same resourceVersion again is now stale.
	r := e.k.fails(t, runOpts{stdin: withValue("3")}, "-n", ns, "replace", "-f", "-")
	if !strings.Contains(r.stderr, "(Conflict)") || !strings.Contains(r.stderr, "the object has been modified") {
		t.Errorf("want a Conflict error:\n%s", r)
	}
	if got := e.getCM(t, ns, "rp1").Data["a"]; got != "2" {
		t.Errorf("data a = %q, want 2 (the stale replace must not apply)", got)
	}
}

func kubectlDelete(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "d1", nil, nil)
	expectOutput(t, e.k.ok(t, "-n", ns, "delete", "cm", "d1"), `configmap "d1" deleted`)
	e.expectGone(t, ns, "d1")
	r := e.k.fails(t, runOpts{}, "-n", ns, "delete", "cm", "d1")
	if !strings.Contains(r.stderr, `(NotFound)`) || !strings.Contains(r.stderr, `configmaps "d1" not found`) {
		t.Errorf("deleting again: want a NotFound error:\n%s", r)
	}
}

func kubectlDeleteSelector(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "dl1", map[string]string{"grp": "x"}, nil)
	e.createCM(t, ns, "dl2", map[string]string{"grp": "x"}, nil)
	e.createCM(t, ns, "dl3", map[string]string{"grp": "y"}, nil)
	out := strings.Split(strings.TrimSpace(e.k.ok(t, "-n", ns, "delete", "cm", "-l", "grp=x")), "\n")
	slices.Sort(out)
	if want := []string{`configmap "dl1" deleted`, `configmap "dl2" deleted`}; !slices.Equal(out, want) {
		t.Errorf("delete -l printed %q, want %q", out, want)
	}
	e.expectGone(t, ns, "dl1")
	e.expectGone(t, ns, "dl2")
	e.getCM(t, ns, "dl3")
}

func kubectlDeleteNamespace(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	for i := 0; i < 3; i++ {
		e.createCM(t, ns, fmt.Sprintf("content-%d", i), nil, nil)
	}
	if _, err := e.cs.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "content-secret"}, StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectOutput(t, e.k.ok(t, "delete", "namespace", ns, "--timeout=60s"), `namespace "`+ns+`" deleted`)
	ctx := context.Background()
	waitFor(t, "namespace "+ns+" to be gone", 60*time.Second, func() (bool, string) {
		got, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %v", got.Status.Phase, got.Status.Conditions)
	})
	cms, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := e.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items)+len(secrets.Items) != 0 {
		var names []string
		for _, cm := range cms.Items {
			names = append(names, "configmap/"+cm.Name)
		}
		for _, s := range secrets.Items {
			names = append(names, "secret/"+s.Name)
		}
		t.Errorf("the deleted namespace still holds %q", names)
	}
}

func kubectlExplain(t *testing.T, e *kubectlEnv) {
	for _, c := range []struct {
		field string
		want  []*regexp.Regexp
	}{
		{"configmap.data", []*regexp.Regexp{
			regexp.MustCompile(`(?m)^KIND:\s+ConfigMap$`),
			regexp.MustCompile(`(?m)^VERSION:\s+v1$`),
			regexp.MustCompile(`(?m)^FIELD: data <map\[string\]string>$`),
			regexp.MustCompile(`(?m)^DESCRIPTION:$`),
		}},
		{"deployment.spec.template.spec.containers", []*regexp.Regexp{
			regexp.MustCompile(`(?m)^GROUP:\s+apps$`),
			regexp.MustCompile(`(?m)^KIND:\s+Deployment$`),
			regexp.MustCompile(`(?m)^FIELD: containers <\[\]Container>$`),
			regexp.MustCompile(`(?m)^\s+image\s+<string>$`),
			regexp.MustCompile(`(?m)^\s+name\s+<string> -required-$`),
		}},
		{"customresourcedefinition.spec.versions", []*regexp.Regexp{
			regexp.MustCompile(`(?m)^GROUP:\s+apiextensions\.k8s\.io$`),
			regexp.MustCompile(`(?m)^KIND:\s+CustomResourceDefinition$`),
			regexp.MustCompile(`(?m)^FIELD: versions <\[\]CustomResourceDefinitionVersion>$`),
			regexp.MustCompile(`(?m)^\s+served\s+<boolean> -required-$`),
		}},
		{"lease.spec", []*regexp.Regexp{
			regexp.MustCompile(`(?m)^GROUP:\s+coordination\.k8s\.io$`),
			regexp.MustCompile(`(?m)^KIND:\s+Lease$`),
			regexp.MustCompile(`(?m)^FIELD: spec <LeaseSpec>$`),
			regexp.MustCompile(`(?m)^\s+holderIdentity\s+<string>$`),
			regexp.MustCompile(`(?m)^\s+renewTime\s+<string>$`),
		}},
	} {
		r := e.k.run(t, "explain", c.field)
		if r.code != 0 {
			t.Errorf("explain %s: got exit code %d:\n%s", c.field, r.code, r)
			continue
		}
		for _, re := range c.want {
			if !re.MatchString(r.stdout) {
				t.Errorf("explain %s: output does not match %s:\n%s", c.field, re, r.stdout)
			}
		}
	}
}

func kubectlDescribe(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.createCM(t, ns, "ds1", map[string]string{"app": "web"}, map[string]string{"greeting": "hello"})
	out := e.k.ok(t, "-n", ns, "describe", "cm", "ds1")
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Name:\s+ds1$`),
		regexp.MustCompile(`(?m)^Namespace:\s+` + regexp.QuoteMeta(ns) + `$`),
		regexp.MustCompile(`(?m)^Labels:\s+app=web$`),
		regexp.MustCompile(`(?m)^greeting:$`),
		regexp.MustCompile(`(?m)^hello$`),
		regexp.MustCompile(`(?m)^Events:\s+<none>$`),
	} {
		if !re.MatchString(out) {
			t.Errorf("describe output does not match %s:\n%s", re, out)
		}
	}
}

func kubectlEvents(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	target := e.createCM(t, ns, "ev-target", nil, nil)
	other := e.createCM(t, ns, "ev-other", nil, nil)
	newEvent := func(name string, about *corev1.ConfigMap, reason string) {
		now := metav1.Now()
		_, err := e.cs.CoreV1().Events(ns).Create(context.Background(), &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{
				Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: about.Name, UID: about.UID,
			},
			Reason: reason, Message: "conformance event about " + about.Name, Type: corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "tabula-conformance"},
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating event %s: %v", name, err)
		}
	}
	newEvent("ev-target.1", target, "ConformanceTarget")
	newEvent("ev-other.1", other, "ConformanceOther")

	out := e.k.ok(t, "-n", ns, "events")
	if !strings.Contains(out, "ConformanceTarget") || !strings.Contains(out, "ConformanceOther") {
		t.Errorf("kubectl events does not list both events:\n%s", out)
	}
	out = e.k.ok(t, "-n", ns, "events", "--for", "configmap/ev-target")
	if !strings.Contains(out, "ConformanceTarget") || strings.Contains(out, "ConformanceOther") {
		t.Errorf("kubectl events --for configmap/ev-target: want only the target's event:\n%s", out)
	}
	expectOutput(t, e.k.ok(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.name=ev-target", "-o", "name"), "event/ev-target.1")
	expectOutput(t, e.k.ok(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=ConfigMap,reason=ConformanceOther", "-o", "name"), "event/ev-other.1")
	// describe finds events by involvedObject name, namespace, kind and uid.
	out = e.k.ok(t, "-n", ns, "describe", "cm", "ev-target")
	if !regexp.MustCompile(`(?m)^\s+Normal\s+ConformanceTarget\s+.*conformance event about ev-target$`).MatchString(out) {
		t.Errorf("describe cm ev-target does not show its event:\n%s", out)
	}
}
