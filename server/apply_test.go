package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// applyHeaders are what kubectl apply --server-side sends.
var applyHeaders = map[string]string{"Content-Type": "application/apply-patch+yaml"}

type managedEntry struct {
	Manager, Operation, APIVersion, Subresource string
	Time                                        *string
	FieldsV1                                    map[string]interface{}
}

type appliedObject struct {
	Metadata struct {
		ResourceVersion string
		Labels          map[string]string
		ManagedFields   []managedEntry
	}
	Data   map[string]string
	Spec   map[string]interface{}
	Status map[string]interface{}
}

func decodeApplied(t *testing.T, code int, body []byte, want int) appliedObject {
	t.Helper()
	if code != want {
		t.Fatalf("answer %d, want %d: %s", code, want, body)
	}
	var o appliedObject
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestApplyNoOpIsNotStored: an apply or a PUT that changes nothing keeps
// the resourceVersion and stores nothing (watchers hear nothing), as
// kube-apiserver skips writes that change no byte.
func TestApplyNoOpIsNotStored(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	cfg := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: noop\ndata:\n  k: v\n")
	r := h.do("PATCH", cms+"/noop?fieldManager=m", applyHeaders, cfg)
	created := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	// Every stored change of the object after its create, in order.
	createdRV, _ := strconv.ParseInt(created.Metadata.ResourceVersion, 10, 64)
	w, err := h.store.Watch(context.Background(), kv.WatchOptions{Resource: "configmaps", Namespace: "default", Name: "noop", After: createdRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r = h.do("PATCH", cms+"/noop?fieldManager=m", applyHeaders, cfg)
	again := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	if again.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
		t.Errorf("no-op apply moved resourceVersion %s → %s", created.Metadata.ResourceVersion, again.Metadata.ResourceVersion)
	}
	if *again.Metadata.ManagedFields[0].Time != *created.Metadata.ManagedFields[0].Time {
		t.Errorf("no-op apply moved the entry's time")
	}
	// A PUT of the object as read back.
	got := h.do("GET", cms+"/noop", nil, nil)
	r = h.do("PUT", cms+"/noop", map[string]string{"Content-Type": "application/json"}, got.Body.Bytes())
	put := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	if put.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
		t.Errorf("no-op PUT moved resourceVersion %s → %s", created.Metadata.ResourceVersion, put.Metadata.ResourceVersion)
	}
	// A real change is stored, and it is the first change watchers see.
	r = h.do("PATCH", cms+"/noop?fieldManager=m", applyHeaders, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: noop\ndata:\n  k: changed\n"))
	changed := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	if changed.Metadata.ResourceVersion == created.Metadata.ResourceVersion {
		t.Error("a changing apply kept the resourceVersion")
	}
	ev := <-w.Events()
	if got := strconv.FormatInt(ev.Rev, 10); ev.Type != kv.Modified || got != changed.Metadata.ResourceVersion {
		t.Errorf("first stored change after the create: %s at %s, want the changing apply at %s", ev.Type, got, changed.Metadata.ResourceVersion)
	}
}

// TestReapplyIsNotStored: applying the same configuration again stores
// nothing (same resourceVersion, no watch event) for a Service with two
// ports and a Deployment with two containers, also after a scale of the
// Deployment, whose write leaves the entries of its managedFields with
// their keys in another order (port 443's before port 80's).
func TestReapplyIsNotStored(t *testing.T) {
	h := refNewHarness(t)
	const svc = "/api/v1/namespaces/default/services/web"
	const deploy = "/apis/apps/v1/namespaces/default/deployments/web"
	svcCfg := []byte(`apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: 8443}
`)
	deployCfg := []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        ports:
        - {name: http, containerPort: 80}
        - {name: https, containerPort: 443}
      - name: sidecar
        image: busybox
`)
	// reapply applies cfg again and checks that nothing was stored: the
	// first change watchers then see is a label written afterwards.
	reapply := func(what, path, resource string, cfg []byte) {
		t.Helper()
		r := h.do("GET", path, nil, nil)
		before := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK).Metadata.ResourceVersion
		rv, _ := strconv.ParseInt(before, 10, 64)
		w, err := h.store.Watch(context.Background(), kv.WatchOptions{Resource: resource, Namespace: "default", Name: "web", After: rv})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		r = h.do("PATCH", path+"?fieldManager=kubectl", applyHeaders, cfg)
		if got := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK).Metadata.ResourceVersion; got != before {
			t.Errorf("%s: identical apply moved resourceVersion %s → %s", what, before, got)
		}
		r = h.do("PATCH", path+"?fieldManager=labeler", map[string]string{"Content-Type": "application/merge-patch+json"},
			[]byte(`{"metadata":{"labels":{"touched":"`+strconv.FormatInt(rv, 10)+`"}}}`))
		labeled := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK).Metadata.ResourceVersion
		if ev := <-w.Events(); strconv.FormatInt(ev.Rev, 10) != labeled {
			t.Errorf("%s: first stored change after the identical apply is at %d, want the label's at %s", what, ev.Rev, labeled)
		}
	}

	r := h.do("PATCH", svc+"?fieldManager=kubectl", applyHeaders, svcCfg)
	decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	reapply("service", svc, "services", svcCfg)
	r = h.do("PATCH", deploy+"?fieldManager=kubectl", applyHeaders, deployCfg)
	decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	reapply("deployment", deploy, "deployments.apps", deployCfg)

	// kubectl scale (or an HPA) writes the replicas through /scale.
	r = h.do("PATCH", deploy+"/scale?fieldManager=kubectl-scale", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"spec":{"replicas":3}}`))
	if r.Code != http.StatusOK {
		t.Fatalf("scale: %d %s", r.Code, r.Body)
	}
	reapply("deployment after a scale", deploy, "deployments.apps", deployCfg)
}

// TestApplyStatusSubresource: an apply through /status writes the status
// only, recorded with subresource "status"; the main resource's apply of
// status is ignored (and not owned), as kube-apiserver's strategies
// reset it.
func TestApplyStatusSubresource(t *testing.T) {
	h := refNewHarness(t)
	const deploy = "/apis/apps/v1/namespaces/default/deployments"
	main := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n" +
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: c, image: nginx}\nstatus:\n  replicas: 7\n"
	r := h.do("PATCH", deploy+"/web?fieldManager=user", applyHeaders, []byte(main))
	o := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	if o.Status["replicas"] != nil {
		t.Errorf("apply of the main resource set status.replicas to %v", o.Status["replicas"])
	}
	if len(o.Metadata.ManagedFields) != 1 || o.Metadata.ManagedFields[0].FieldsV1["f:status"] != nil {
		t.Errorf("main resource apply owns status: %+v", o.Metadata.ManagedFields)
	}

	status := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 9\nstatus:\n  replicas: 2\n  readyReplicas: 1\n"
	r = h.do("PATCH", deploy+"/web/status?fieldManager=ctrl", applyHeaders, []byte(status))
	o = decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	if o.Spec["replicas"] != float64(2) || o.Status["readyReplicas"] != float64(1) {
		t.Errorf("status apply: spec.replicas %v (want 2, unchanged), status.readyReplicas %v (want 1)", o.Spec["replicas"], o.Status["readyReplicas"])
	}
	var ctrl *managedEntry
	for i, e := range o.Metadata.ManagedFields {
		if e.Manager == "ctrl" {
			ctrl = &o.Metadata.ManagedFields[i]
		}
	}
	if ctrl == nil {
		t.Fatalf("no entry for ctrl: %s", r.Body)
	}
	if ctrl.Subresource != "status" || ctrl.Operation != "Apply" || ctrl.FieldsV1["f:spec"] != nil || ctrl.FieldsV1["f:status"] == nil {
		t.Errorf("status apply entry %+v", ctrl)
	}

	// Status of a missing object: 404, nothing created.
	r = h.do("PATCH", deploy+"/absent/status?fieldManager=ctrl", applyHeaders, []byte(strings.Replace(status, "name: web", "name: absent", 1)))
	if r.Code != http.StatusNotFound {
		t.Errorf("status apply of a missing object: %d %s", r.Code, r.Body)
	}
}

// TestApplyOptions: dryRun applies without storing, a stale
// resourceVersion in the configuration is a 409, CBOR is refused with
// 415 when it is off (as kube-apiserver 1.35 by default), and writes without fieldManager are recorded under the
// User-Agent's product name.
func TestApplyOptions(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	cfg := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: opts\ndata:\n  k: v\n"
	r := h.do("PATCH", cms+"/opts?fieldManager=m", applyHeaders, []byte(cfg))
	created := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)

	r = h.do("PATCH", cms+"/opts?fieldManager=m&dryRun=All", applyHeaders, []byte(strings.Replace(cfg, "k: v", "k: dry", 1)))
	if dry := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK); dry.Data["k"] != "dry" {
		t.Errorf("dry-run apply answered %v", dry.Data)
	}
	r = h.do("GET", cms+"/opts", nil, nil)
	if got := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK); got.Data["k"] != "v" ||
		got.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
		t.Errorf("dry-run apply was stored: %+v", got)
	}

	stale := strings.Replace(cfg, "name: opts", "name: opts\n  resourceVersion: \"1\"", 1)
	if r := h.do("PATCH", cms+"/opts?fieldManager=m", applyHeaders, []byte(stale)); r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), "the object has been modified") {
		t.Errorf("apply with a stale resourceVersion: %d %s", r.Code, r.Body)
	}

	if r := h.do("PATCH", cms+"/opts?fieldManager=m", map[string]string{"Content-Type": "application/apply-patch+cbor"}, []byte{0xa0}); r.Code != http.StatusUnsupportedMediaType {
		t.Errorf("apply-patch+cbor: %d %s", r.Code, r.Body)
	}
	if r := h.do("PATCH", cms+"/opts?fieldManager="+strings.Repeat("m", 129), applyHeaders, []byte(cfg)); r.Code != http.StatusUnprocessableEntity {
		t.Errorf("a 129-character field manager: %d %s", r.Code, r.Body)
	}

	// No fieldManager: the User-Agent's product, unprintable runes dropped.
	r = h.do("PATCH", cms+"/opts", map[string]string{"Content-Type": "application/merge-patch+json", "User-Agent": "my\u0007tool/2.0 (linux)"},
		[]byte(`{"data":{"ua":"x"}}`))
	o := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	found := false
	for _, e := range o.Metadata.ManagedFields {
		if e.Manager == "mytool" && e.Operation == "Update" && e.FieldsV1["f:data"] != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("no Update entry for mytool: %+v", o.Metadata.ManagedFields)
	}
}

// TestServerWritesAreManaged: objects the server writes itself carry the
// managers kube-apiserver's would: kube-apiserver for its own, and
// kube-controller-manager for what that process's controllers make.
func TestServerWritesAreManaged(t *testing.T) {
	h := refNewHarness(t)
	managers := func(path string) []string {
		t.Helper()
		r := h.do("GET", path, nil, nil)
		o := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
		var out []string
		for _, e := range o.Metadata.ManagedFields {
			out = append(out, e.Manager+"/"+e.Operation)
		}
		return out
	}
	// Aggregation runs once the bootstrap roles exist.
	h.waitFor("admin aggregated", func() bool {
		return slices.Contains(managers("/apis/rbac.authorization.k8s.io/v1/clusterroles/admin"), "clusterrole-aggregation-controller/Apply")
	})
	for path, want := range map[string]string{
		"/api/v1/namespaces/default":                                      "kube-apiserver/Update",
		"/api/v1/namespaces/default/services/kubernetes":                  "kube-apiserver/Update",
		"/api/v1/namespaces/default/configmaps/kube-root-ca.crt":          "kube-controller-manager/Update",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin":           "clusterrole-aggregation-controller/Apply",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical": "kube-apiserver/Update",
	} {
		if got := managers(path); len(got) == 0 || got[0] != want {
			t.Errorf("%s: managedFields %v, want %s", path, got, want)
		}
	}
}

// TestApplyCustomResourceVersions: appliers through two versions of a
// custom resource (the seed's "an applier can change the API version it
// uses"): each entry records its version, a conflict crosses versions,
// and reading through either version shows the same entries.
func TestApplyCustomResourceVersions(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-apply", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	const v1, beta = "/apis/test.example.com/v1/namespaces/crd-apply/gadgets/g", "/apis/test.example.com/v1beta1/namespaces/crd-apply/gadgets/g"

	r := h.do("PATCH", beta+"?fieldManager=old-client", applyHeaders, []byte("apiVersion: test.example.com/v1beta1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  name: one\n"))
	if r.Code != http.StatusCreated {
		t.Fatalf("apply through v1beta1: %d %s", r.Code, r.Body)
	}
	r = h.do("PATCH", v1+"?fieldManager=new-client", applyHeaders, []byte("apiVersion: test.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 5\n"))
	if r.Code != http.StatusOK {
		t.Fatalf("apply through v1: %d %s", r.Code, r.Body)
	}
	r = h.do("PATCH", v1+"?fieldManager=new-client", applyHeaders, []byte("apiVersion: test.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 5\n  name: two\n"))
	if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), `conflict with \"old-client\": .spec.name`) {
		t.Errorf("changing the v1beta1 applier's field through v1: %d %s", r.Code, r.Body)
	}
	for _, path := range []string{v1, beta} {
		g := h.getJSON(path)
		versions := map[string]string{}
		for _, e := range refList(refDig(g, "metadata", "managedFields")) {
			m := e.(map[string]interface{})
			versions[m["manager"].(string)] = m["apiVersion"].(string)
		}
		if versions["old-client"] != "test.example.com/v1beta1" || versions["new-client"] != "test.example.com/v1" || refDig(g, "spec", "size") != float64(5) {
			t.Errorf("read through %s: managers %v, spec %v", path, versions, g["spec"])
		}
	}
}

// TestApplyScale: an apply through /scale sees who owns the object's
// replicas (a conflict with the Deployment's applier), takes them with
// force, and is recorded on the Deployment under subresource "scale" — so
// the user can then drop replicas from the manifest without resetting
// them (the seed's handover to an autoscaler, through the subresource
// the autoscaler writes).
func TestApplyScale(t *testing.T) {
	h := refNewHarness(t)
	const deploy = "/apis/apps/v1/namespaces/default/deployments/web"
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n%s  selector:\n    matchLabels: {app: web}\n" +
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n"
	r := h.do("PATCH", deploy+"?fieldManager=user", applyHeaders, []byte(fmt.Sprintf(manifest, "  replicas: 2\n")))
	decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)

	scale := []byte("apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: web\nspec:\n  replicas: 5\n")
	r = h.do("PATCH", deploy+"/scale?fieldManager=hpa", applyHeaders, scale)
	if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), `conflict with \"user\": .spec.replicas`) {
		t.Fatalf("scale apply over the user's replicas: %d %s", r.Code, r.Body)
	}
	r = h.do("PATCH", deploy+"/scale?fieldManager=hpa&force=true", applyHeaders, scale)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"kind":"Scale"`) || !strings.Contains(r.Body.String(), `"replicas":5`) {
		t.Fatalf("forced scale apply: %d %s", r.Code, r.Body)
	}
	r = h.do("GET", deploy, nil, nil)
	d := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	var hpa, user *managedEntry
	for i, e := range d.Metadata.ManagedFields {
		switch e.Manager {
		case "hpa":
			hpa = &d.Metadata.ManagedFields[i]
		case "user":
			user = &d.Metadata.ManagedFields[i]
		}
	}
	if d.Spec["replicas"] != float64(5) || hpa == nil || hpa.Subresource != "scale" || hpa.Operation != "Apply" || hpa.APIVersion != "apps/v1" ||
		fmt.Sprint(hpa.FieldsV1) != "map[f:spec:map[f:replicas:map[]]]" {
		t.Fatalf("after the scale apply: replicas %v, hpa entry %+v", d.Spec["replicas"], hpa)
	}
	if user == nil || user.FieldsV1["f:spec"].(map[string]interface{})["f:replicas"] != nil {
		t.Errorf("the user still owns replicas: %+v", user)
	}
	r = h.do("PATCH", deploy+"?fieldManager=user", applyHeaders, []byte(fmt.Sprintf(manifest, "")))
	if d := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK); d.Spec["replicas"] != float64(5) {
		t.Errorf("the user's manifest without replicas reset them to %v; want the autoscaler's 5", d.Spec["replicas"])
	}
}

// TestApplyCustomResourceStatus: an apply through a custom resource's
// /status writes the status and records its manager under subresource
// status (the custom resource status strategy keeps the managedFields the
// apply computed).
func TestApplyCustomResourceStatus(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-status", nil)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"knobs.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"knobs","singular":"knob","kind":"Knob"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"level":{"type":"integer"}}},"status":{"type":"object","properties":{"phase":{"type":"string"}}}}}}}]}}`, http.StatusCreated)
	establish(t, h, "knobs.test.example.com")
	const knob = "/apis/test.example.com/v1/namespaces/crd-status/knobs/k"
	r := h.do("PATCH", knob+"?fieldManager=user", applyHeaders, []byte("apiVersion: test.example.com/v1\nkind: Knob\nmetadata:\n  name: k\nspec:\n  level: 1\n"))
	decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	r = h.do("PATCH", knob+"/status?fieldManager=ctrl", applyHeaders, []byte("apiVersion: test.example.com/v1\nkind: Knob\nmetadata:\n  name: k\nstatus:\n  phase: Ready\n"))
	o := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	found := false
	for _, e := range o.Metadata.ManagedFields {
		if e.Manager == "ctrl" && e.Subresource == "status" && e.Operation == "Apply" && e.FieldsV1["f:status"] != nil {
			found = true
		}
	}
	if o.Status["phase"] != "Ready" || !found {
		t.Errorf("status apply: status %v, managedFields %+v", o.Status, o.Metadata.ManagedFields)
	}
}

// TestScaleKeepsOtherVersionsEntries: a scale write through one version of
// a custom resource keeps the managedFields entries recorded through
// another (kube's ScaleHandler drops entries of versions it is not told
// about), and an apply through /scale conflicts with the other version's
// owner of the replicas.
func TestScaleKeepsOtherVersionsEntries(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-scale", nil)
	version := func(name string, storage bool) string {
		return fmt.Sprintf(`{"name":%q,"served":true,"storage":%v,"subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},`+
			`"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"},"note":{"type":"string"}}},`+
			`"status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}`, name, storage)
	}
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"dials.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"dials","singular":"dial","kind":"Dial"},
  "versions":[`+version("v1", true)+`,`+version("v2", false)+`]}}`, http.StatusCreated)
	establish(t, h, "dials.test.example.com")
	const v1, v2 = "/apis/test.example.com/v1/namespaces/crd-scale/dials/d", "/apis/test.example.com/v2/namespaces/crd-scale/dials/d"
	r := h.do("PATCH", v2+"?fieldManager=v2-user", applyHeaders, []byte("apiVersion: test.example.com/v2\nkind: Dial\nmetadata:\n  name: d\nspec:\n  replicas: 2\n  note: hi\n"))
	decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)

	r = h.do("PATCH", v1+"/scale?fieldManager=hpa", applyHeaders, []byte("apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: d\nspec:\n  replicas: 4\n"))
	if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), `conflict with \"v2-user\"`) {
		t.Errorf("scale apply through v1 over v2's replicas: %d %s", r.Code, r.Body)
	}
	r = h.do("PUT", v1+"/scale", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":4}}`))
	if r.Code != http.StatusOK {
		t.Fatalf("scale PUT: %d %s", r.Code, r.Body)
	}
	r = h.do("GET", v2, nil, nil)
	d := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusOK)
	var v2user *managedEntry
	for i, e := range d.Metadata.ManagedFields {
		if e.Manager == "v2-user" {
			v2user = &d.Metadata.ManagedFields[i]
		}
	}
	if d.Spec["replicas"] != float64(4) || v2user == nil || fmt.Sprint(v2user.FieldsV1) != "map[f:spec:map[f:note:map[]]]" {
		t.Errorf("after the scale write through v1: replicas %v, v2-user entry %+v (want it kept, owning spec.note only)", d.Spec["replicas"], v2user)
	}
}

// TestApplyDuplicateFields: duplicate fields of an applied configuration
// follow fieldValidation as on kube-apiserver: Strict refuses them (400),
// Warn sends one Warning per duplicate and applies.
func TestApplyDuplicateFields(t *testing.T) {
	h := refNewHarness(t)
	const cm = "/api/v1/namespaces/default/configmaps/dups"
	body := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dups\ndata:\n  a: \"1\"\n  a: \"1\"\n")
	r := h.do("PATCH", cm+"?fieldManager=m&fieldValidation=Strict", applyHeaders, body)
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), `error strict decoding YAML`) {
		t.Errorf("Strict: %d %s", r.Code, r.Body)
	}
	r = h.do("PATCH", cm+"?fieldManager=m&fieldValidation=Warn", applyHeaders, body)
	if w := r.Header().Values("Warning"); r.Code != http.StatusCreated || len(w) != 1 || w[0] != `299 - "line 7: key \"a\" already set in map"` {
		t.Errorf("Warn: %d, warnings %q", r.Code, w)
	}
}

// TestTooLargeWithManagedFields: an object that fits the storage limit
// alone but not with its managedFields is stored without them, as
// kube-apiserver retries such a create or update; an apply, whose
// managedFields are its point, is refused.
func TestTooLargeWithManagedFields(t *testing.T) {
	h := refNewHarness(t)
	var data strings.Builder
	for i := 0; i < 70000; i++ {
		if i > 0 {
			data.WriteByte(',')
		}
		fmt.Fprintf(&data, `"k%06d":"v"`, i)
	}
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{` + data.String() + `}}`
	r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(body))
	o := decodeApplied(t, r.Code, r.Body.Bytes(), http.StatusCreated)
	if len(o.Metadata.ManagedFields) != 0 || len(o.Data) != 70000 {
		t.Errorf("stored with %d managedFields entries and %d keys; want none and every key", len(o.Metadata.ManagedFields), len(o.Data))
	}
	r = h.do("PATCH", "/api/v1/namespaces/default/configmaps/big?fieldManager=m", applyHeaders,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{`+data.String()+`}}`))
	if r.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("apply of the same data: %d %.300s", r.Code, r.Body)
	}
}

// TestManagedFieldsTimesAloneAreNotAWrite: as kube's store, an update
// whose only change is the managedFields' times (a PUT of an older copy,
// a patch of a time) keeps the stored times and is not written: the
// resourceVersion stays.
func TestManagedFieldsTimesAloneAreNotAWrite(t *testing.T) {
	h := refNewHarness(t)
	const path = "/api/v1/namespaces/default/configmaps/times"
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"times"},"data":{"a":"b"}}`, http.StatusCreated)
	stored := h.getJSON(path)
	rv := refDig(stored, "metadata", "resourceVersion")
	entries := refDig(stored, "metadata", "managedFields").([]any)
	was := entries[0].(map[string]any)["time"]
	for _, c := range []struct{ what, method, ct, body string }{
		{"a PUT with an older time", "PUT", "application/json", func() string {
			entries[0].(map[string]any)["time"] = "2001-01-01T00:00:00Z"
			b, _ := json.Marshal(stored)
			return string(b)
		}()},
		{"a JSON patch of the time", "PATCH", "application/json-patch+json", `[{"op":"replace","path":"/metadata/managedFields/0/time","value":"2002-02-02T00:00:00Z"}]`},
	} {
		got := h.mustDo(c.method, path, c.ct, c.body, http.StatusOK)
		if refDig(got, "metadata", "resourceVersion") != rv {
			t.Errorf("%s: resourceVersion %v; want %v (nothing written)", c.what, refDig(got, "metadata", "resourceVersion"), rv)
		}
		if now := refDig(h.getJSON(path), "metadata", "managedFields").([]any)[0].(map[string]any)["time"]; now != was {
			t.Errorf("%s: stored time %v; want %v", c.what, now, was)
		}
	}
	// A real change still moves it, with its manager's time.
	if got := h.mustDo("PATCH", path, "application/merge-patch+json", `{"data":{"a":"c"}}`, http.StatusOK); refDig(got, "metadata", "resourceVersion") == rv {
		t.Errorf("a change kept the resourceVersion %v", rv)
	}
}

// TestApplyResetFieldsAsKube: what a write cannot change gives no
// ownership and no conflict, per kube's strategies' reset fields: a
// Deployment's status apply does not touch its labels, a Pod's status
// apply its owner references, a CSR's creator owns none of its spec; a
// FlowSchema's status write keeps its metadata as stored.
func TestApplyResetFieldsAsKube(t *testing.T) {
	h := refNewHarness(t)
	apply := func(path, manager, body string, force bool) *httptest.ResponseRecorder {
		t.Helper()
		q := "?fieldManager=" + manager
		if force {
			q += "&force=true"
		}
		return h.do("PATCH", path+q, map[string]string{"Content-Type": "application/apply-patch+yaml"}, []byte(body))
	}
	owns := func(path, manager, field string) bool {
		t.Helper()
		entries, _ := refDig(h.getJSON(path), "metadata", "managedFields").([]any)
		for _, e := range entries {
			m := e.(map[string]any)
			if m["manager"] == manager {
				b, _ := json.Marshal(m["fieldsV1"])
				return strings.Contains(string(b), field)
			}
		}
		return false
	}

	const deploy = "/apis/apps/v1/namespaces/default/deployments/d"
	if r := apply(deploy, "a", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"tier":"a"}},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`, false); r.Code != http.StatusCreated {
		t.Fatalf("deployment: %d %s", r.Code, r.Body)
	}
	if r := apply(deploy+"/status", "ctl", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"tier":"zz","extra":"x"}},"status":{"observedGeneration":1}}`, false); r.Code != http.StatusOK {
		t.Errorf("a Deployment status apply naming labels: %d %s; want 200 (its labels are reset)", r.Code, r.Body)
	}
	if refDig(h.getJSON(deploy), "metadata", "labels", "tier") != "a" || owns(deploy, "ctl", "f:labels") {
		t.Errorf("a Deployment status apply changed or owns its labels: %v", refDig(h.getJSON(deploy), "metadata"))
	}

	const pod = "/api/v1/namespaces/default/pods/p"
	// An owner that exists: the collector deletes a Pod whose owner does not.
	o := h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"o"}}`, http.StatusCreated)
	owner := `{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"` + refDig(o, "metadata", "uid").(string) + `"}`
	if r := apply(pod, "a", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[`+owner+`]},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, false); r.Code != http.StatusCreated {
		t.Fatalf("pod: %d %s", r.Code, r.Body)
	}
	other := strings.Replace(owner, `"name":"o"`, `"name":"other"`, 1)
	if r := apply(pod+"/status", "kubelet", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[`+other+`]},"status":{"message":"hi"}}`, false); r.Code != http.StatusOK {
		t.Errorf("a Pod status apply naming owner references: %d %s; want 200 (they are reset)", r.Code, r.Body)
	}
	if owns(pod, "kubelet", "f:ownerReferences") {
		t.Errorf("the kubelet owns owner references it cannot write")
	}

	const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	csr := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"signerName":"example.com/s","usages":["client auth"],"request":"` + typicalCSR + `"}}`
	if r := apply(csrs+"/c", "creator", csr, false); r.Code != http.StatusCreated || owns(csrs+"/c", "creator", "f:spec") {
		t.Fatalf("csr: %d %s; want created with no ownership of its spec", r.Code, r.Body)
	}
	if r := apply(csrs+"/c", "other", strings.Replace(csr, `"client auth"`, `"server auth"`, 1), false); r.Code != http.StatusOK {
		t.Errorf("another applier naming a CSR's spec: %d %s; want 200 (the spec is reset)", r.Code, r.Body)
	}

	const fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/f"
	h.mustDo("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "application/json", `{"metadata":{"name":"f","labels":{"a":"b"}},"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":5000}}`, http.StatusCreated)
	got := h.mustDo("PATCH", fs+"/status", "application/merge-patch+json", `{"metadata":{"labels":{"a":"changed","x":"y"}},"status":{"conditions":[{"type":"Dangling","status":"False"}]}}`, http.StatusOK)
	if l := refDig(got, "metadata", "labels"); !reflect.DeepEqual(l, map[string]any{"a": "b"}) {
		t.Errorf("a FlowSchema status write changed its labels to %v; kube's status strategy keeps its metadata", l)
	}
}

// TestApplyEphemeralAndResizeOwnOnlyTheirFields: as kube's include
// filters, an apply through pods/ephemeralcontainers or pods/resize is
// compared and owned only on the fields it writes.
func TestApplyEphemeralAndResizeOwnOnlyTheirFields(t *testing.T) {
	h := refNewHarness(t)
	const pod = "/api/v1/namespaces/default/pods/r"
	apply := func(sub, manager, body string) *httptest.ResponseRecorder {
		return h.do("PATCH", strings.TrimSuffix(pod+"/"+sub, "/")+"?fieldManager="+manager, map[string]string{"Content-Type": "application/apply-patch+yaml"}, []byte(body))
	}
	// Made by the resizer's manager, which then owns the resources.
	if r := apply("", "rs", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"r"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"100m"}}}]}}`); r.Code != http.StatusCreated {
		t.Fatalf("pod: %d %s", r.Code, r.Body)
	}
	r := apply("ephemeralcontainers", "dbg", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"r","labels":{"e":"x"}},`+
		`"spec":{"activeDeadlineSeconds":30,"ephemeralContainers":[{"name":"debugger","image":"busybox","targetContainerName":"c"}]},"status":{"message":"m"}}`)
	if r.Code != http.StatusOK {
		t.Fatalf("ephemeral containers apply: %d %s", r.Code, r.Body)
	}
	var fields string
	for _, e := range refDig(h.getJSON(pod), "metadata", "managedFields").([]any) {
		if m := e.(map[string]any); m["manager"] == "dbg" {
			b, _ := json.Marshal(m["fieldsV1"])
			fields = string(b)
		}
	}
	if !strings.Contains(fields, "f:ephemeralContainers") || strings.Contains(fields, "f:activeDeadlineSeconds") || strings.Contains(fields, "f:labels") || strings.Contains(fields, "f:message") {
		t.Errorf("the ephemeral containers writer owns %s; want its containers alone", fields)
	}
	// The same resources (shared, no conflict) and a status message the
	// ephemeral containers' writer sent, which the resize cannot write.
	r = apply("resize", "rs", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"r"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"100m"}}}]},"status":{"message":"other"}}`)
	if r.Code != http.StatusOK {
		t.Errorf("a resize apply naming what another subresource's writer sent: %d %s; want 200", r.Code, r.Body)
	}
}
