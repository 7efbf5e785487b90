package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The CRD tests run on the reference harness (an in-process server with
// its controllers); crds/ in the reference replay covers one CRD's
// validation, defaults, subresources and Table against kube-apiserver's
// recorded answers, these the lifecycle around it.

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// gadgetsCRD has two versions: v1 stored, v1beta1 served and deprecated.
const gadgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced",
  "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","shortNames":["gd"]},
  "versions":[
   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
     "name":{"type":"string","maxLength":8},"size":{"type":"integer","default":2}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"deprecated":true,"deprecationWarning":"gadgets v1beta1 is going away",
    "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
     "name":{"type":"string","maxLength":8},"size":{"type":"integer","default":2}}}}}}}]}}`

func establish(t *testing.T, h *refHarness, name string) {
	t.Helper()
	h.waitFor(name+" Established", func() bool {
		return crdCondition(h, name, "Established") == "True"
	})
}

func crdCondition(h *refHarness, name, typ string) string {
	rec := h.do("GET", crdPath+"/"+name, nil, nil)
	if rec.Code != http.StatusOK {
		return ""
	}
	var crd map[string]interface{}
	_ = json.Unmarshal(rec.Body.Bytes(), &crd)
	for _, c := range refList(refDig(crd, "status", "conditions")) {
		if m, _ := c.(map[string]interface{}); m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// TestCRDVersionsAndDeletion: a CR written in one version reads in the
// other with its apiVersion rewritten; the deprecated version warns;
// deleting the CRD waits for a CR's finalizer, then removes the CRs and
// stops serving the resource.
func TestCRDVersionsAndDeletion(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-life", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")

	beta := "/apis/test.example.com/v1beta1/namespaces/crd-life/gadgets"
	rec := h.do("POST", beta, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"test.example.com/v1beta1","kind":"Gadget","metadata":{"name":"g1","finalizers":["test.example.com/hold"]},"spec":{"name":"one"}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create through v1beta1: %d %s", rec.Code, rec.Body)
	}
	if w := rec.Header().Values("Warning"); len(w) != 1 || !strings.Contains(w[0], "gadgets v1beta1 is going away") {
		t.Errorf("Warning %q; want the CRD's deprecationWarning", w)
	}
	g := h.getJSON("/apis/test.example.com/v1/namespaces/crd-life/gadgets/g1")
	if g["apiVersion"] != "test.example.com/v1" || refDig(g, "spec", "size") != float64(2) {
		t.Errorf("read through v1: apiVersion %v, spec.size %v; want test.example.com/v1 and the default 2", g["apiVersion"], refDig(g, "spec", "size"))
	}

	h.mustDo("DELETE", crdPath+"/gadgets.test.example.com", "", "", http.StatusOK)
	h.waitFor("Terminating condition", func() bool { return crdCondition(h, "gadgets.test.example.com", "Terminating") == "True" })
	// The CR's own finalizer holds it, and so the CRD, which keeps
	// serving so the finalizer's owner can let go.
	h.waitFor("g1 marked for deletion", func() bool {
		return refDig(h.getJSON("/apis/test.example.com/v1/namespaces/crd-life/gadgets/g1"), "metadata", "deletionTimestamp") != nil
	})
	if rec := h.do("GET", crdPath+"/gadgets.test.example.com", nil, nil); rec.Code != http.StatusOK {
		t.Fatalf("CRD gone while a CR is held by its finalizer: %d", rec.Code)
	}
	// Discovery lists the verbs a terminating resource still serves.
	for _, r := range refList(h.getJSON("/apis/test.example.com/v1")["resources"]) {
		if m := r.(map[string]interface{}); m["name"] == "gadgets" {
			if got := fmt.Sprint(m["verbs"]); got != "[delete deletecollection get list watch]" {
				t.Errorf("terminating gadgets' verbs in discovery: %s; want delete, deletecollection, get, list, watch", got)
			}
		}
	}
	h.waitFor("Terminating: InstanceDeletionInProgress", func() bool {
		for _, c := range refList(refDig(h.getJSON(crdPath+"/gadgets.test.example.com"), "status", "conditions")) {
			if m := c.(map[string]interface{}); m["type"] == "Terminating" {
				return m["reason"] == "InstanceDeletionInProgress" && m["message"] == "CustomResource deletion is in progress"
			}
		}
		return false
	})
	h.mustDo("PATCH", "/apis/test.example.com/v1/namespaces/crd-life/gadgets/g1", "application/merge-patch+json",
		`{"metadata":{"finalizers":null}}`, http.StatusOK)
	h.waitFor("CRD gone", func() bool {
		return h.do("GET", crdPath+"/gadgets.test.example.com", nil, nil).Code == http.StatusNotFound
	})
	h.waitFor("resource unserved", func() bool {
		return h.do("GET", "/apis/test.example.com/v1/namespaces/crd-life/gadgets", nil, nil).Code == http.StatusNotFound
	})
	// Created again, the resource starts empty.
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	list := h.getJSON("/apis/test.example.com/v1/namespaces/crd-life/gadgets")
	if items := refList(list["items"]); len(items) != 0 {
		t.Errorf("recreated CRD lists %d old objects; want none", len(items))
	}
}

// TestCRDDiscoveryVersionOrder: the versions of every CRD in a group are
// listed, and the preferred one chosen, by kube's version priority (GA,
// then beta, then alpha, higher numbers first), whatever the order the
// CRDs declare them in, in legacy and in aggregated discovery.
func TestCRDDiscoveryVersionOrder(t *testing.T) {
	h := refNewHarness(t)
	crd := func(plural, kind, storage string, versions ...string) string {
		var vs []string
		for _, v := range versions {
			vs = append(vs, fmt.Sprintf(`{"name":%q,"served":true,"storage":%t,
			 "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, v, v == storage))
		}
		return fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		 "metadata":{"name":"%s.order.example.com"},
		 "spec":{"group":"order.example.com","scope":"Namespaced","names":{"plural":%q,"kind":%q},
		  "versions":[%s]}}`, plural, plural, kind, strings.Join(vs, ","))
	}
	h.mustDo("POST", crdPath, "application/json", crd("widgets", "Widget", "v1", "v1beta1", "v1alpha1", "v1"), http.StatusCreated)
	h.mustDo("POST", crdPath, "application/json", crd("sprockets", "Sprocket", "v1beta2", "v2alpha1", "v1beta2"), http.StatusCreated)
	establish(t, h, "widgets.order.example.com")
	establish(t, h, "sprockets.order.example.com")
	const want = "v1,v1beta2,v1beta1,v2alpha1,v1alpha1"

	check := func(where string, g metav1.APIGroup) {
		t.Helper()
		var got []string
		for _, v := range g.Versions {
			got = append(got, v.Version)
		}
		if strings.Join(got, ",") != want || g.PreferredVersion.Version != "v1" {
			t.Errorf("%s: versions %v, preferred %q; want %s, preferred v1", where, got, g.PreferredVersion.Version, want)
		}
	}
	var group metav1.APIGroup
	if err := json.Unmarshal(h.do("GET", "/apis/order.example.com", nil, nil).Body.Bytes(), &group); err != nil {
		t.Fatal(err)
	}
	check("/apis/order.example.com", group)
	var groups metav1.APIGroupList
	if err := json.Unmarshal(h.do("GET", "/apis", nil, nil).Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "order.example.com" {
			check("/apis", g)
		}
	}

	rec := h.do("GET", "/apis", map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}, nil)
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &agg); err != nil {
		t.Fatalf("aggregated discovery: %v: %s", err, rec.Body)
	}
	found := false
	for _, g := range agg.Items {
		if g.Name != "order.example.com" {
			continue
		}
		found = true
		var got []string
		for _, v := range g.Versions {
			got = append(got, v.Version)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("aggregated discovery: versions %v; want %s", got, want)
		}
	}
	if !found {
		t.Errorf("aggregated discovery has no order.example.com: %s", rec.Body)
	}
}

// TestCRDNameConflict: a CRD asking for a kind another CRD of its group
// holds is not accepted, is not established and is not served.
func TestCRDNameConflict(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	other := strings.NewReplacer("gadgets.test", "gizmos.test", `"plural":"gadgets","singular":"gadget"`, `"plural":"gizmos","singular":"gizmo"`, `"shortNames":["gd"]`, `"shortNames":["gz"]`).Replace(gadgetsCRD)
	h.mustDo("POST", crdPath, "application/json", other, http.StatusCreated)
	h.waitFor("gizmos NamesAccepted False", func() bool { return crdCondition(h, "gizmos.test.example.com", "NamesAccepted") == "False" })
	crd := h.getJSON(crdPath + "/gizmos.test.example.com")
	var reason, msg interface{}
	for _, c := range refList(refDig(crd, "status", "conditions")) {
		if m := c.(map[string]interface{}); m["type"] == "NamesAccepted" {
			reason, msg = m["reason"], m["message"]
		}
	}
	// kube-apiserver checks kind, then listKind, and reports the last
	// conflict found: the defaulted listKind GadgetList.
	if reason != "ListKindConflict" || msg != `"GadgetList" is already in use` {
		t.Errorf("NamesAccepted reason %v message %v; want ListKindConflict, \"GadgetList\" is already in use", reason, msg)
	}
	if s := crdCondition(h, "gizmos.test.example.com", "Established"); s != "False" {
		t.Errorf("Established %q; want False", s)
	}
	if rec := h.do("GET", "/apis/test.example.com/v1/gizmos", nil, nil); rec.Code != http.StatusNotFound {
		t.Errorf("conflicting CRD served: %d", rec.Code)
	}
}

// TestCRValidationRatcheting: after the schema tightens, an update that
// leaves an invalid value as it is succeeds; changing it to another
// invalid value fails; a transition rule runs on every update.
func TestCRValidationRatcheting(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-ratchet", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	items := "/apis/test.example.com/v1/namespaces/crd-ratchet/gadgets"
	h.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"name":"longname"}}`, http.StatusCreated)

	// maxLength 8 → 4, and size may only grow.
	tight := strings.Replace(strings.Replace(gadgetsCRD, `"maxLength":8`, `"maxLength":4`, 1),
		`"size":{"type":"integer","default":2}`, `"size":{"type":"integer","default":2,"x-kubernetes-validations":[{"rule":"self >= oldSelf","message":"size may not shrink"}]}`, 1)
	cur := h.getJSON(crdPath + "/gadgets.test.example.com")
	rv, _ := refDig(cur, "metadata", "resourceVersion").(string)
	tight = strings.Replace(tight, `"metadata":{"name":"gadgets.test.example.com"}`, `"metadata":{"name":"gadgets.test.example.com","resourceVersion":"`+rv+`"}`, 1)
	h.mustDo("PUT", crdPath+"/gadgets.test.example.com", "application/json", tight, http.StatusOK)
	h.waitFor("tightened schema served", func() bool {
		rec := h.do("POST", items+"?dryRun=All", map[string]string{"Content-Type": "application/json"},
			[]byte(`{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"probe"},"spec":{"name":"toolong"}}`))
		return rec.Code == http.StatusUnprocessableEntity
	})

	h.mustDo("PATCH", items+"/g", "application/merge-patch+json", `{"spec":{"size":5}}`, http.StatusOK)
	rec := h.do("PATCH", items+"/g", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"spec":{"name":"othername"}}`))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "spec.name: Too long") {
		t.Errorf("changing an invalid value to another: %d %s; want 422 spec.name Too long", rec.Code, rec.Body)
	}
	rec = h.do("PATCH", items+"/g", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"spec":{"size":3}}`))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "size may not shrink") {
		t.Errorf("shrinking size: %d %s; want 422 size may not shrink", rec.Code, rec.Body)
	}
}

// TestCRDWebhookConversion: a version served through a conversion
// webhook that cannot be reached answers 500 with apiextensions-apiserver's
// words; the storage version is read without it. (Conformance
// TestAdmissionWebhooks converts through a working one.)
func TestCRDWebhookConversion(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-webhook", nil)
	crd := strings.Replace(gadgetsCRD, `"scope":"Namespaced",`, `"scope":"Namespaced","conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:1/convert"}}},`, 1)
	h.mustDo("POST", crdPath, "application/json", crd, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	h.mustDo("POST", "/apis/test.example.com/v1/namespaces/crd-webhook/gadgets", "application/json",
		`{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"name":"n"}}`, http.StatusCreated)
	h.mustDo("GET", "/apis/test.example.com/v1/namespaces/crd-webhook/gadgets/g", "", "", http.StatusOK)
	rec := h.do("GET", "/apis/test.example.com/v1beta1/namespaces/crd-webhook/gadgets/g", nil, nil)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "conversion webhook for test.example.com/v1, Kind=Gadget failed") ||
		!strings.Contains(rec.Body.String(), "connection refused") {
		t.Errorf("GET through the converted version: %d %s; want 500 naming the conversion webhook", rec.Code, rec.Body)
	}
}

// TestCustomResourcesCollected: the garbage collector and namespace
// deletion treat custom resources like built-in objects.
func TestCustomResourcesCollected(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-gc", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	items := "/apis/test.example.com/v1/namespaces/crd-gc/gadgets"

	owner := h.mustDo("POST", "/api/v1/namespaces/crd-gc/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner"}}`, http.StatusCreated)
	uid, _ := refDig(owner, "metadata", "uid").(string)
	h.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"owned",
		"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"`+uid+`"}]}}`, http.StatusCreated)
	h.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"free"}}`, http.StatusCreated)

	h.mustDo("DELETE", "/api/v1/namespaces/crd-gc/configmaps/owner", "", "", http.StatusOK)
	h.waitFor("the owned Gadget collected", func() bool { return h.do("GET", items+"/owned", nil, nil).Code == http.StatusNotFound })
	if rec := h.do("GET", items+"/free", nil, nil); rec.Code != http.StatusOK {
		t.Errorf("a Gadget without owners: %d after its neighbour's owner went", rec.Code)
	}

	h.mustDo("DELETE", "/api/v1/namespaces/crd-gc", "", "", http.StatusOK)
	h.waitFor("namespace gone", func() bool { return h.do("GET", "/api/v1/namespaces/crd-gc", nil, nil).Code == http.StatusNotFound })
	if rec := h.do("GET", "/apis/test.example.com/v1/gadgets", nil, nil); !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Errorf("Gadgets left after their namespace was deleted: %s", rec.Body)
	}
}

// TestCRDServedByEveryReplica: replicas on one database each serve a CRD
// created through another, and each stops when it is deleted.
func TestCRDServedByEveryReplica(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"), sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the replicas' controllers are cancelled (cleanups run
	// last-registered first).
	t.Cleanup(func() { st.Close() })
	a := &refHarness{t: t, h: runningReplica(t, st, quiet), state: map[string]string{}}
	b := &refHarness{t: t, h: runningReplica(t, st, quiet), state: map[string]string{}}
	a.waitFor("namespace default", func() bool { return a.do("GET", "/api/v1/namespaces/default", nil, nil).Code == http.StatusOK })

	a.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	items := "/apis/test.example.com/v1/namespaces/default/gadgets"
	b.waitFor("replica B serves gadgets", func() bool { return b.do("GET", items, nil, nil).Code == http.StatusOK })
	// Each replica serves the CRD once its own watch brings it.
	a.waitFor("replica A serves gadgets", func() bool { return a.do("GET", items, nil, nil).Code == http.StatusOK })
	b.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"name":"x"}}`, http.StatusCreated)
	if g := a.getJSON(items + "/g"); refDig(g, "spec", "size") != float64(2) {
		t.Errorf("replica A reads %v; want the Gadget with its default size 2", g)
	}
	b.mustDo("DELETE", crdPath+"/gadgets.test.example.com", "", "", http.StatusOK)
	a.waitFor("replica A stops serving gadgets", func() bool { return a.do("GET", items, nil, nil).Code == http.StatusNotFound })
	b.waitFor("replica B stops serving gadgets", func() bool { return b.do("GET", items, nil, nil).Code == http.StatusNotFound })
}

// runningReplica is a server on st with its controllers running until the
// test ends.
func runningReplica(t *testing.T, st server.Store, log *slog.Logger) http.Handler {
	t.Helper()
	srv, err := server.New(server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := srv.RunControllers(ctx); err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}

// TestCRDWarnings: kube-apiserver's strategy warnings: a CRD schema format
// it does not check, and a custom resource finalizer name that other
// writers could collide with.
func TestCRDWarnings(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-warn", nil)
	crd := strings.Replace(gadgetsCRD, `"name":{"type":"string","maxLength":8}`, `"name":{"type":"string","maxLength":8,"format":"gadget-code"}`, 1)
	rec := h.do("POST", crdPath, map[string]string{"Content-Type": "application/json"}, []byte(crd))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if w := rec.Header().Values("Warning"); len(w) != 1 || !strings.Contains(w[0], `unrecognized format \"gadget-code\"`) {
		t.Errorf("CRD create warnings %q; want one for the unrecognized format", w)
	}
	establish(t, h, "gadgets.test.example.com")
	rec = h.do("POST", "/apis/test.example.com/v1/namespaces/crd-warn/gadgets", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g","finalizers":["hold","example.com/ok"]}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create gadget: %d %s", rec.Code, rec.Body)
	}
	want := `metadata.finalizers: \"hold\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`
	if w := rec.Header().Values("Warning"); len(w) != 1 || !strings.Contains(w[0], want) {
		t.Errorf("custom resource warnings %q; want one about the finalizer \"hold\"", w)
	}
	// An update warns only of what it adds.
	rec = h.do("PATCH", "/apis/test.example.com/v1/namespaces/crd-warn/gadgets/g", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"spec":{"name":"x"}}`))
	if w := rec.Header().Values("Warning"); rec.Code != http.StatusOK || len(w) != 0 {
		t.Errorf("update keeping the finalizers: %d, warnings %q; want none", rec.Code, w)
	}
}

// TestCRDNamesRace: CRDs of one group asking for the same names, created
// back to back, get them once: the names a status write gave one count
// for the next before the watch brings the write back.
func TestCRDNamesRace(t *testing.T) {
	h := refNewHarness(t)
	crd := func(plural string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.race.example.com"},
 "spec":{"group":"race.example.com","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"Thing","shortNames":["th"]},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	}
	for round := 0; round < 5; round++ {
		names := []string{fmt.Sprintf("things%d", round), fmt.Sprintf("thingies%d", round)}
		for _, n := range names {
			h.mustDo("POST", crdPath, "application/json", crd(n), http.StatusCreated)
		}
		accepted := 0
		for _, n := range names {
			name := n + ".race.example.com"
			h.waitFor(name+" NamesAccepted", func() bool { return crdCondition(h, name, "NamesAccepted") != "" })
			if crdCondition(h, name, "NamesAccepted") == "True" {
				accepted++
			}
		}
		if accepted != 1 {
			t.Fatalf("round %d: %d CRDs got kind Thing and short name th; want 1", round, accepted)
		}
		for _, n := range names {
			h.mustDo("DELETE", crdPath+"/"+n+".race.example.com", "", "", http.StatusOK)
		}
		for _, n := range names {
			name := n + ".race.example.com"
			h.waitFor(name+" gone", func() bool { return h.do("GET", crdPath+"/"+name, nil, nil).Code == http.StatusNotFound })
		}
	}
}

// TestCRDAPIServices: a CRD's served group-versions get APIServices as
// kube-apiserver's crdregistration controller makes them (automanaged
// "true", priorities 1000/100, Local and Available), and lose them with
// the CRD.
func TestCRDAPIServices(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	const base = "/apis/apiregistration.k8s.io/v1/apiservices/"
	for _, v := range []string{"v1", "v1beta1"} {
		var s struct {
			Metadata metav1.ObjectMeta
			Spec     struct {
				Group                                 string
				GroupPriorityMinimum, VersionPriority int32
			}
			Status struct {
				Conditions []struct{ Type, Status, Reason string }
			}
		}
		h.waitFor("the APIService of "+v, func() bool { return h.do("GET", base+v+".test.example.com", nil, nil).Code == http.StatusOK })
		if err := json.Unmarshal(h.do("GET", base+v+".test.example.com", nil, nil).Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Metadata.Labels["kube-aggregator.kubernetes.io/automanaged"] != "true" || s.Spec.Group != "test.example.com" ||
			s.Spec.GroupPriorityMinimum != 1000 || s.Spec.VersionPriority != 100 ||
			len(s.Status.Conditions) != 1 || s.Status.Conditions[0].Type != "Available" || s.Status.Conditions[0].Status != "True" {
			t.Errorf("%s.test.example.com: %+v", v, s)
		}
	}
	h.mustDo("DELETE", crdPath+"/gadgets.test.example.com", "", "", http.StatusOK)
	h.waitFor("the APIServices removed with the CRD", func() bool {
		return h.do("GET", base+"v1.test.example.com", nil, nil).Code == http.StatusNotFound &&
			h.do("GET", base+"v1beta1.test.example.com", nil, nil).Code == http.StatusNotFound
	})
}

// TestCRScaleAdmission: an admission policy on a custom resource's /scale
// sees the autoscaling/v1 Scale (kube's built-in kind, whatever the
// resource) and refuses what it should.
func TestCRScaleAdmission(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("cr-scale", nil)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"knobs.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"knobs","singular":"knob","kind":"Knob"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
    "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`, http.StatusCreated)
	establish(t, h, "knobs.test.example.com")
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", "application/json",
		`{"metadata":{"name":"few-knobs"},"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":["test.example.com"],
		"apiVersions":["v1"],"operations":["UPDATE"],"resources":["knobs/scale"]}]},
		"validations":[{"expression":"object.spec.replicas <= 5","message":"at most five"}]}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", "application/json",
		`{"metadata":{"name":"few-knobs"},"spec":{"policyName":"few-knobs","validationActions":["Deny"]}}`, http.StatusCreated)
	const knob = "/apis/test.example.com/v1/namespaces/cr-scale/knobs/k"
	h.mustDo("POST", "/apis/test.example.com/v1/namespaces/cr-scale/knobs", "application/json",
		`{"apiVersion":"test.example.com/v1","kind":"Knob","metadata":{"name":"k"},"spec":{"replicas":1}}`, http.StatusCreated)
	ct := map[string]string{"Content-Type": "application/merge-patch+json"}
	// The policy applies once the replica's caches have it.
	h.waitFor("the policy to refuse a scale to 9", func() bool {
		r := h.do("PATCH", knob+"/scale?dryRun=All", ct, []byte(`{"spec":{"replicas":9}}`))
		return r.Code == http.StatusUnprocessableEntity
	})
	r := h.do("PATCH", knob+"/scale", ct, []byte(`{"spec":{"replicas":9}}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `ValidatingAdmissionPolicy 'few-knobs' with binding 'few-knobs' denied request: at most five`) {
		t.Errorf("scale to 9: %d %s", r.Code, r.Body)
	}
	if r := h.do("PATCH", knob+"/scale", ct, []byte(`{"spec":{"replicas":3}}`)); r.Code != http.StatusOK {
		t.Errorf("scale to 3: %d %s", r.Code, r.Body)
	}
	// Printed with apiextensions' scale columns (kube's
	// getScaleColumnsForVersion), not the built-in printer's.
	r = h.do("GET", knob+"/scale", map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil)
	var tbl struct {
		ColumnDefinitions []struct{ Name, Type, Format, Description string }
		Rows              []struct{ Cells []interface{} }
	}
	_ = json.Unmarshal(r.Body.Bytes(), &tbl)
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name+":"+c.Type+":"+c.Format)
	}
	if got := strings.Join(cols, ","); r.Code != http.StatusOK || got != "Name:string:name,Desired:integer:,Available:integer:,Age:date:" ||
		len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells[:3]) != "[k 3 0]" {
		t.Errorf("a custom resource's scale as a Table: %d columns %s rows %v", r.Code, got, tbl.Rows)
	}
}

// TestCRUpdateNeedsResourceVersion: as kube's custom resource strategy
// allows no unconditional update, a PUT of a custom resource or its
// status without a resourceVersion is refused and changes nothing; its
// scale, which reads the live object's, is not.
func TestCRUpdateNeedsResourceVersion(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("cr-rv", nil)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"dials.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"dials","singular":"dial","kind":"Dial"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
    "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`, http.StatusCreated)
	establish(t, h, "dials.test.example.com")
	const dial = "/apis/test.example.com/v1/namespaces/cr-rv/dials/d"
	h.mustDo("POST", "/apis/test.example.com/v1/namespaces/cr-rv/dials", "application/json",
		`{"apiVersion":"test.example.com/v1","kind":"Dial","metadata":{"name":"d"},"spec":{"replicas":1}}`, http.StatusCreated)
	ct := map[string]string{"Content-Type": "application/json"}
	const want = `dials.test.example.com \"d\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`
	for _, path := range []string{dial, dial + "/status"} {
		r := h.do("PUT", path, ct, []byte(`{"apiVersion":"test.example.com/v1","kind":"Dial","metadata":{"name":"d"},"spec":{"replicas":7},"status":{"replicas":7}}`))
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
			t.Errorf("PUT %s without resourceVersion: %d %s; want 422 %s", path, r.Code, r.Body, want)
		}
	}
	var d struct {
		Metadata struct{ ResourceVersion string }
		Spec     struct{ Replicas int }
		Status   struct{ Replicas int }
	}
	if err := json.Unmarshal(h.do("GET", dial, nil, nil).Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas != 1 || d.Status.Replicas != 0 {
		t.Fatalf("after the refused updates: %+v; want replicas 1 and no status", d)
	}
	if r := h.do("PUT", dial, ct, []byte(`{"apiVersion":"test.example.com/v1","kind":"Dial","metadata":{"name":"d","resourceVersion":"`+d.Metadata.ResourceVersion+`"},"spec":{"replicas":2}}`)); r.Code != http.StatusOK {
		t.Errorf("PUT with the resourceVersion: %d %s", r.Code, r.Body)
	}
	if r := h.do("PUT", dial+"/scale", ct, []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d","namespace":"cr-rv"},"spec":{"replicas":3}}`)); r.Code != http.StatusOK {
		t.Errorf("PUT scale without resourceVersion: %d %s", r.Code, r.Body)
	}
	// A patch that takes the resourceVersion out asks for an unconditional
	// update too: refused here, let through for a kind that allows it.
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	if r := h.do("PATCH", dial, merge, []byte(`{"metadata":{"resourceVersion":null},"spec":{"replicas":8}}`)); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
		t.Errorf("PATCH removing the resourceVersion: %d %s; want 422 %s", r.Code, r.Body, want)
	}
	h.mustDo("POST", "/api/v1/namespaces/cr-rv/configmaps", "application/json", `{"metadata":{"name":"c"}}`, http.StatusCreated)
	if r := h.do("PATCH", "/api/v1/namespaces/cr-rv/configmaps/c", merge, []byte(`{"metadata":{"resourceVersion":null},"data":{"k":"v"}}`)); r.Code != http.StatusOK {
		t.Errorf("PATCH of a ConfigMap removing the resourceVersion: %d %s; want 200", r.Code, r.Body)
	}
}

// TestCRRefusesProtobufBodies: custom resources have no Protobuf form, so
// a body in it is an unsupported media type (415) offering the others,
// as on kube-apiserver, not a decoding failure.
func TestCRRefusesProtobufBodies(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	r := h.do("POST", "/apis/test.example.com/v1/namespaces/default/gadgets",
		map[string]string{"Content-Type": "application/vnd.kubernetes.protobuf"}, []byte("k8s\x00\x0a\x00"))
	const want = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
	if r.Code != http.StatusUnsupportedMediaType || !strings.Contains(r.Body.String(), want) || strings.Contains(r.Body.String(), "protobuf") {
		t.Errorf("a Protobuf body: %d %s; want 415 %q", r.Code, r.Body, want)
	}
}

// TestCRWatchEndsWithItsCRD: a watch of custom resources ends when their
// CRD is deleted, or rebuilt by a change of its spec, as kube-apiserver
// tears the CRD's storage down; it does not go on to deliver objects of
// a CRD made again under the same names.
func TestCRWatchEndsWithItsCRD(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-watch", nil)
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	items := "/apis/test.example.com/v1/namespaces/crd-watch/gadgets"
	// open watches from a new Gadget's revision and reads its ADDED.
	open := func() (*bufio.Reader, io.Closer) {
		t.Helper()
		g := h.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"generateName":"g-"}}`, http.StatusCreated)
		rv, _ := refDig(g, "metadata", "resourceVersion").(string)
		h.mustDo("POST", items, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"generateName":"g-"}}`, http.StatusCreated)
		resp, err := http.Get(hs.URL + items + "?watch=true&timeoutSeconds=600&resourceVersion=" + rv)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %v %v", resp, err)
		}
		r := bufio.NewReader(resp.Body)
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"type":"ADDED"`) {
			t.Fatalf("first event: %q %v", line, err)
		}
		return r, resp.Body
	}
	ends := func(what string, r *bufio.Reader) {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if strings.Contains(line, `"type":"ADDED"`) {
				t.Fatalf("%s: the watch went on with %s", what, line)
			}
		}
	}

	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	r, body := open()
	defer body.Close()
	// A change of spec rebuilds what serves the CRD.
	h.mustDo("PATCH", crdPath+"/gadgets.test.example.com", "application/merge-patch+json",
		`{"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, http.StatusOK)
	ends("a watch across the CRD's change", r)

	h.waitFor("the changed CRD served", func() bool {
		return h.do("GET", "/apis/test.example.com/v1beta1/namespaces/crd-watch/gadgets", nil, nil).Code == http.StatusNotFound
	})
	r, body2 := open()
	defer body2.Close()
	h.mustDo("DELETE", crdPath+"/gadgets.test.example.com", "", "", http.StatusOK)
	ends("a watch across the CRD's deletion", r)
}

// TestCRDEdgesAsKube: what kube-apiserver's CRD handler does at the edges:
// a printer column it cannot parse falls back to the default columns and
// the resource is served; a scale write that leaves an absent replicas
// unset is refused, not stored as 0; a YAML body with a duplicate key is
// a strict decoding problem; and no object is created while the CRD is
// Terminating.
func TestCRDEdgesAsKube(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("edges", nil)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"cogs.test.example.com"},
	 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"cogs","singular":"cog","kind":"Cog"},
	  "versions":[{"name":"v1","served":true,"storage":true,
	   "subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"},"status":{}},
	   "additionalPrinterColumns":[{"name":"Bad","type":"string","jsonPath":".spec[?(@.x"}],
	   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"},"size":{"type":"integer"}}},
	    "status":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"replicas":{"type":"integer"}}}}}}}]}}`, http.StatusCreated)
	establish(t, h, "cogs.test.example.com")
	const cogs = "/apis/test.example.com/v1/namespaces/edges/cogs"
	h.mustDo("POST", cogs, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Cog","metadata":{"name":"c1","finalizers":["test.example.com/hold"]},"spec":{"size":1}}`, http.StatusCreated)

	// The default columns.
	r := h.do("GET", cogs, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `{"name":"Name","type":"string","format":"name"`) || !strings.Contains(r.Body.String(), `"name":"Created At"`) {
		t.Errorf("Table of a CRD with a bad column: %d %s", r.Code, r.Body)
	}

	// Scale without replicas.
	scale := cogs + "/c1/scale"
	if r := h.do("PATCH", scale, map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{}`)); r.Code != http.StatusBadRequest ||
		!strings.Contains(r.Body.String(), `the spec replicas field \".spec.replicas\" cannot be empty`) {
		t.Errorf("scale patch leaving replicas unset: %d %s", r.Code, r.Body)
	}
	if got := refDig(h.getJSON(cogs+"/c1"), "spec", "replicas"); got != nil {
		t.Errorf("spec.replicas after the refused patch: %v; want none", got)
	}
	if r := h.do("PATCH", scale, map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"spec":{"replicas":3}}`)); r.Code != http.StatusOK {
		t.Errorf("scale patch setting replicas: %d %s", r.Code, r.Body)
	}

	// The selector the Scale reports must be a string.
	if r := h.do("PATCH", cogs+"/c1/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"selector":5}}`)); r.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body.String(), ".status.selector") {
		t.Errorf("a selector that is no string: %d %s", r.Code, r.Body)
	}

	// YAML with a duplicate key.
	yamlBody := "apiVersion: test.example.com/v1\nkind: Cog\nmetadata:\n  name: c2\nspec:\n  size: 2\n  size: 3\n"
	r = h.do("POST", cogs+"?fieldValidation=Strict", map[string]string{"Content-Type": "application/yaml"}, []byte(yamlBody))
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), `key \"size\" already set in map`) {
		t.Errorf("YAML with a duplicate key, Strict: %d %s", r.Code, r.Body)
	}
	r = h.do("POST", cogs, map[string]string{"Content-Type": "application/yaml"}, []byte(yamlBody))
	if w := r.Header().Get("Warning"); r.Code != http.StatusCreated || !strings.Contains(w, "already set in map") {
		t.Errorf("YAML with a duplicate key, Warn: %d %q %s", r.Code, w, r.Body)
	}

	// Terminating: no new objects.
	h.mustDo("DELETE", crdPath+"/cogs.test.example.com", "", "", http.StatusOK)
	h.waitFor("Terminating True", func() bool { return crdCondition(h, "cogs.test.example.com", "Terminating") == "True" })
	h.waitFor("creates refused while Terminating", func() bool {
		r := h.do("POST", cogs, map[string]string{"Content-Type": "application/json"}, []byte(`{"apiVersion":"test.example.com/v1","kind":"Cog","metadata":{"name":"late"}}`))
		return r.Code == http.StatusForbidden && strings.Contains(r.Body.String(), "create not allowed while custom resource definition is terminating")
	})
	h.mustDo("PATCH", cogs+"/c1", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`, http.StatusOK)
	h.waitFor("CRD gone", func() bool {
		return h.do("GET", crdPath+"/cogs.test.example.com", nil, nil).Code == http.StatusNotFound
	})
}

// TestCRSelectableFieldsAcrossVersions: a version's selectable fields
// select the objects written through another version, and a field made
// selectable after objects exist selects them too, as kube-apiserver's
// (which reads the fields at list time) does.
func TestCRSelectableFieldsAcrossVersions(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("sel", nil)
	crd := func(v1Fields string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"blocks.test.example.com"},
	 "spec":{"group":"test.example.com","scope":"Namespaced","names":{"plural":"blocks","singular":"block","kind":"Block"},
	  "versions":[
	   {"name":"v1","served":true,"storage":true,"selectableFields":[` + v1Fields + `],
	    "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"color":{"type":"string"},"size":{"type":"integer"},"shape":{"type":"string"}}}}}}},
	   {"name":"v2","served":true,"storage":false,"selectableFields":[{"jsonPath":".spec.size"}],
	    "schema":{"openAPIV3Schema":{"type":"object","description":"v2","properties":{"spec":{"type":"object","properties":{"color":{"type":"string"},"size":{"type":"integer"},"shape":{"type":"string"}}}}}}}]}}`
	}
	h.mustDo("POST", crdPath, "application/json", crd(`{"jsonPath":".spec.color"}`), http.StatusCreated)
	establish(t, h, "blocks.test.example.com")
	const v1, v2 = "/apis/test.example.com/v1/namespaces/sel/blocks", "/apis/test.example.com/v2/namespaces/sel/blocks"
	h.mustDo("POST", v1, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Block","metadata":{"name":"b1"},"spec":{"color":"red","size":1,"shape":"round"}}`, http.StatusCreated)
	h.mustDo("POST", v2, "application/json", `{"apiVersion":"test.example.com/v2","kind":"Block","metadata":{"name":"b2"},"spec":{"color":"blue","size":2,"shape":"square"}}`, http.StatusCreated)
	for _, c := range []struct{ path, sel, want string }{
		{v2, "spec.size=1", "b1"},
		{v1, "spec.color=blue", "b2"},
	} {
		if got := strings.Join(names(t, h, c.path, c.sel), ","); got != c.want {
			t.Errorf("%s ?fieldSelector=%s: [%s]; want [%s]", c.path, c.sel, got, c.want)
		}
	}
	// spec.shape becomes selectable in v1 after b1 and b2 were stored.
	cur := h.getJSON(crdPath + "/blocks.test.example.com")
	rv, _ := refDig(cur, "metadata", "resourceVersion").(string)
	body := strings.Replace(crd(`{"jsonPath":".spec.color"},{"jsonPath":".spec.shape"}`), `"name":"blocks.test.example.com"`, `"name":"blocks.test.example.com","resourceVersion":"`+rv+`"`, 1)
	h.mustDo("PUT", crdPath+"/blocks.test.example.com", "application/json", body, http.StatusOK)
	h.waitFor("spec.shape selecting b1", func() bool {
		r := h.do("GET", v1+"?fieldSelector=spec.shape%3Dround", nil, nil)
		return r.Code == http.StatusOK && strings.Join(itemNames(t, r.Body.Bytes()), ",") == "b1"
	})
}

// TestCRDAPIApprovalCondition: a CRD of the community's protected groups
// carries kube's KubernetesAPIApprovalPolicyConformant condition, read
// from its api-approved.kubernetes.io annotation, and follows it; and a
// CRD's own names count against a new short name.
func TestCRDAPIApprovalCondition(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"foos.x.k8s.io","annotations":{"api-approved.kubernetes.io":"unapproved, experimental"}},
	 "spec":{"group":"x.k8s.io","scope":"Namespaced","names":{"plural":"foos","singular":"foo","kind":"Foo"},
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`, http.StatusCreated)
	condition := func() (status, reason string) {
		for _, c := range refList(refDig(h.getJSON(crdPath+"/foos.x.k8s.io"), "status", "conditions")) {
			if m := c.(map[string]interface{}); m["type"] == "KubernetesAPIApprovalPolicyConformant" {
				return m["status"].(string), m["reason"].(string)
			}
		}
		return "", ""
	}
	h.waitFor("UnapprovedAnnotation", func() bool { s, r := condition(); return s == "False" && r == "UnapprovedAnnotation" })
	h.mustDo("PATCH", crdPath+"/foos.x.k8s.io", "application/merge-patch+json",
		`{"metadata":{"annotations":{"api-approved.kubernetes.io":"https://github.com/kubernetes/enhancements/pull/1111"}}}`, http.StatusOK)
	h.waitFor("ApprovedAnnotation", func() bool { s, r := condition(); return s == "True" && r == "ApprovedAnnotation" })
	// A short name may not be one of the CRD's own other names (kube's
	// naming controller counts them).
	h.mustDo("PATCH", crdPath+"/foos.x.k8s.io", "application/merge-patch+json", `{"spec":{"names":{"shortNames":["foo"]}}}`, http.StatusOK)
	h.waitFor("ShortNamesConflict", func() bool {
		for _, c := range refList(refDig(h.getJSON(crdPath+"/foos.x.k8s.io"), "status", "conditions")) {
			if m := c.(map[string]interface{}); m["type"] == "NamesAccepted" {
				return m["status"] == "False" && m["reason"] == "ShortNamesConflict" && m["message"] == `"foo" is already in use`
			}
		}
		return false
	})
	// Other groups have none.
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	for _, c := range refList(refDig(h.getJSON(crdPath+"/gadgets.test.example.com"), "status", "conditions")) {
		if m := c.(map[string]interface{}); m["type"] == "KubernetesAPIApprovalPolicyConformant" {
			t.Errorf("a CRD of test.example.com has %v", m)
		}
	}
}

// TestCRVersionsStoredInStorageVersion: without a conversion webhook a
// custom resource written in a version other than the storage version is
// stored as kube-apiserver stores it: pruned to the storage version's
// schema, defaulted on read by the storage version's and pruned to the
// version read. A field only the written version has is not kept, and
// the write's answer, a dry run's too, shows what was stored.
func TestCRVersionsStoredInStorageVersion(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-prune", nil)
	h.mustDo("POST", crdPath, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"tools.test.example.com"},
 "spec":{"group":"test.example.com","scope":"Namespaced",
  "names":{"plural":"tools","singular":"tool","kind":"Tool"},
  "versions":[
   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
     "a":{"type":"string"},"b":{"type":"string","default":"b1"}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
     "a":{"type":"string"},"c":{"type":"string"},"d":{"type":"string","default":"d-beta"}}}}}}}]}}`, http.StatusCreated)
	establish(t, h, "tools.test.example.com")
	v1 := "/apis/test.example.com/v1/namespaces/crd-prune/tools"
	beta := "/apis/test.example.com/v1beta1/namespaces/crd-prune/tools"
	spec := func(obj map[string]interface{}) string {
		b, _ := json.Marshal(obj["spec"])
		return string(b)
	}
	body := func(name string) string {
		return `{"apiVersion":"test.example.com/v1beta1","kind":"Tool","metadata":{"name":"` + name + `"},"spec":{"a":"x","c":"y"}}`
	}

	// The request is defaulted in v1beta1 (d), stored in v1 (c and d
	// pruned), read back defaulted in v1 (b) and pruned to v1beta1 (b).
	if got := spec(h.mustDo("POST", beta+"?dryRun=All", "application/json", body("dry"), http.StatusCreated)); got != `{"a":"x"}` {
		t.Errorf("dry-run create through v1beta1 answered spec %s; want {\"a\":\"x\"}", got)
	}
	if got := spec(h.mustDo("POST", beta, "application/json", body("t1"), http.StatusCreated)); got != `{"a":"x"}` {
		t.Errorf("create through v1beta1 answered spec %s; want {\"a\":\"x\"}", got)
	}
	if got := spec(h.getJSON(beta + "/t1")); got != `{"a":"x"}` {
		t.Errorf("read through v1beta1: spec %s; want {\"a\":\"x\"}", got)
	}
	if got := spec(h.getJSON(v1 + "/t1")); got != `{"a":"x","b":"b1"}` {
		t.Errorf("read through v1: spec %s; want {\"a\":\"x\",\"b\":\"b1\"}", got)
	}
	items := refList(h.getJSON(beta)["items"])
	if len(items) != 1 || spec(items[0].(map[string]interface{})) != `{"a":"x"}` {
		t.Errorf("list through v1beta1: %v; want t1 with spec {\"a\":\"x\"}", items)
	}
	// An update through v1beta1 starts from the object read in v1beta1,
	// which lacks b: b set through v1 is lost and reads as its default
	// again, as with kube-apiserver's None conversion.
	h.mustDo("POST", v1, "application/json",
		`{"apiVersion":"test.example.com/v1","kind":"Tool","metadata":{"name":"t2"},"spec":{"a":"x","b":"set"}}`, http.StatusCreated)
	if got := spec(h.mustDo("PATCH", beta+"/t2", "application/merge-patch+json", `{"spec":{"a":"z","c":"w"}}`, http.StatusOK)); got != `{"a":"z"}` {
		t.Errorf("patch through v1beta1 answered spec %s; want {\"a\":\"z\"}", got)
	}
	if got := spec(h.getJSON(v1 + "/t2")); got != `{"a":"z","b":"b1"}` {
		t.Errorf("read through v1 after the v1beta1 patch: spec %s; want {\"a\":\"z\",\"b\":\"b1\"}", got)
	}
}

// TestCRKindMismatchIsInvalid: a custom resource body of the right
// group-version but another kind is kube's 422 on field kind (its
// ValidateTypeMeta), named by the body's kind, from a create, an update
// and a patch alike.
func TestCRKindMismatchIsInvalid(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-kind", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	gadgets := "/apis/test.example.com/v1/namespaces/crd-kind/gadgets"
	rv := refDig(h.mustDo("POST", gadgets, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`, http.StatusCreated), "metadata", "resourceVersion")
	const want = `Other.test.example.com "g" is invalid: kind: Invalid value: "Other": must be Gadget`
	other := `{"apiVersion":"test.example.com/v1","kind":"Other","metadata":{"name":"g"}}`
	for _, c := range []struct{ method, path, ct, body string }{
		{"POST", gadgets, "application/json", other},
		{"PUT", gadgets + "/g", "application/json", `{"apiVersion":"test.example.com/v1","kind":"Other","metadata":{"name":"g","resourceVersion":"` + rv.(string) + `"}}`},
		{"PATCH", gadgets + "/g", "application/merge-patch+json", `{"kind":"Other"}`},
	} {
		st := h.mustDo(c.method, c.path, c.ct, c.body, http.StatusUnprocessableEntity)
		if st["reason"] != "Invalid" || st["message"] != want || refDig(st, "details", "kind") != "Other" {
			t.Errorf("%s %s: %v; want 422 Invalid %q", c.method, c.path, st, want)
		}
	}
}

// TestCRDConflictingUpdateKeepsServing: a served CRD updated to a short
// name another CRD holds keeps NamesAccepted False and its old short
// names, stays served, and shows its new categories (always accepted) in
// discovery, as kube's naming and discovery controllers do.
func TestCRDConflictingUpdateKeepsServing(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	widgets := strings.NewReplacer("gadgets.test", "widgets.test", `"plural":"gadgets","singular":"gadget","kind":"Gadget"`, `"plural":"widgets","singular":"widget","kind":"Widget"`, `"shortNames":["gd"]`, `"shortNames":["wd"]`).Replace(gadgetsCRD)
	h.mustDo("POST", crdPath, "application/json", widgets, http.StatusCreated)
	establish(t, h, "widgets.test.example.com")
	h.mustDo("PATCH", crdPath+"/gadgets.test.example.com", "application/merge-patch+json",
		`{"spec":{"names":{"shortNames":["gd","wd"],"categories":["probe"]}}}`, http.StatusOK)
	h.waitFor("gadgets NamesAccepted False", func() bool { return crdCondition(h, "gadgets.test.example.com", "NamesAccepted") == "False" })
	h.waitFor("gadgets' new category in discovery", func() bool {
		for _, r := range refList(h.getJSON("/apis/test.example.com/v1")["resources"]) {
			if m := r.(map[string]interface{}); m["name"] == "gadgets" {
				return fmt.Sprint(m["categories"]) == "[probe]" && fmt.Sprint(m["shortNames"]) == "[gd]"
			}
		}
		return false
	})
	if s := crdCondition(h, "gadgets.test.example.com", "Established"); s != "True" {
		t.Errorf("Established %q; want True kept", s)
	}
	h.mustDo("GET", "/apis/test.example.com/v1/gadgets", "", "", http.StatusOK)
}

// TestCRDUnservedStorageVersionHash: with its storage version not
// served, a CRD's resource names no storageVersionHash in discovery, as
// kube's CRD discovery names none then.
func TestCRDUnservedStorageVersionHash(t *testing.T) {
	h := refNewHarness(t)
	crd := strings.Replace(gadgetsCRD, `{"name":"v1","served":true,"storage":true`, `{"name":"v1","served":false,"storage":true`, 1)
	h.mustDo("POST", crdPath, "application/json", crd, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	for _, r := range refList(h.getJSON("/apis/test.example.com/v1beta1")["resources"]) {
		if m := r.(map[string]interface{}); m["name"] == "gadgets" && m["storageVersionHash"] != nil {
			t.Errorf("gadgets' storageVersionHash %v with its storage version unserved; want none", m["storageVersionHash"])
		}
	}
}

// TestCRNotAcceptable: a custom resource's 406 is its handler's, as kube
// serves custom resources outside its router: the forms of its
// serializers, Protobuf among them, or their stream forms for a watch,
// with no details.
func TestCRNotAcceptable(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("crd-406", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	const gadgets = "/apis/test.example.com/v1/namespaces/crd-406/gadgets"
	for _, c := range []struct{ path, accept, want string }{
		{gadgets, "text/html", "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{gadgets + "?watch=1", "text/html", "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"},
		{gadgets, "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
	} {
		r := h.do("GET", c.path, map[string]string{"Accept": c.accept}, nil)
		var st map[string]interface{}
		_ = json.Unmarshal(r.Body.Bytes(), &st)
		if r.Code != http.StatusNotAcceptable || !strings.HasPrefix(fmt.Sprint(st["message"]), c.want) || st["details"] != nil {
			t.Errorf("GET %s as %s: %d %s; want 406 %q without details", c.path, c.accept, r.Code, r.Body, c.want)
		}
	}
}

// TestCRStorageVersionChange: an object keeps the version it was stored
// in, so after a CRD's storage version changes it is read as kube reads
// it: pruned and defaulted by that version's schema, then converted. It
// used to be read as if stored in the new version, which lost the fields
// only the old one has.
func TestCRStorageVersionChange(t *testing.T) {
	h := refNewHarness(t)
	schema := func(field, def string) string {
		d := ""
		if def != "" {
			d = `,"default":"` + def + `"`
		}
		return `{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"` + field + `":{"type":"string"` + d + `},"keep":{"type":"string"}}}}}}`
	}
	crd := func(storage string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"pairs.p.example.com"},"spec":{"group":"p.example.com","scope":"Namespaced",
			"names":{"plural":"pairs","singular":"pair","kind":"Pair","listKind":"PairList"},"versions":[
			{"name":"v1","served":true,"storage":` + fmt.Sprint(storage == "v1") + `,"schema":` + schema("a", "") + `},
			{"name":"v2","served":true,"storage":` + fmt.Sprint(storage == "v2") + `,"schema":` + schema("b", "bd") + `}]}}`
	}
	h.mustDo("POST", crdPath, "application/json", crd("v1"), http.StatusCreated)
	establish(t, h, "pairs.p.example.com")
	const v1, v2 = "/apis/p.example.com/v1/namespaces/default/pairs", "/apis/p.example.com/v2/namespaces/default/pairs"
	h.mustDo("POST", v1, "application/json", `{"apiVersion":"p.example.com/v1","kind":"Pair","metadata":{"name":"i1"},"spec":{"a":"x","keep":"k"}}`, http.StatusCreated)

	live := h.getJSON(crdPath + "/pairs.p.example.com")
	var body map[string]any
	_ = json.Unmarshal([]byte(crd("v2")), &body)
	body["metadata"] = map[string]any{"name": "pairs.p.example.com", "resourceVersion": refDig(live, "metadata", "resourceVersion")}
	b, _ := json.Marshal(body)
	h.mustDo("PUT", crdPath+"/pairs.p.example.com", "application/json", string(b), http.StatusOK)
	spec := func(path string) map[string]any {
		t.Helper()
		var got map[string]any
		h.waitFor("the "+path+" read", func() bool {
			r := h.do("GET", path, nil, nil)
			if r.Code != http.StatusOK || json.Unmarshal(r.Body.Bytes(), &got) != nil {
				return false
			}
			return true
		})
		s, _ := got["spec"].(map[string]any)
		return s
	}
	// Read through either version, i1 is still the v1 object it was
	// stored as: v1 shows it whole; v2 drops what v2 lacks and adds no v2
	// default (defaults come from the schema it was stored with).
	// The new storage version is in force once a v2 object keeps its v2
	// field (before, it was stored as v1, without it).
	n := 0
	h.waitFor("v2 the storage version", func() bool {
		n++
		name := fmt.Sprintf("probe-%d", n)
		h.mustDo("POST", v2, "application/json", `{"apiVersion":"p.example.com/v2","kind":"Pair","metadata":{"name":"`+name+`"},"spec":{"b":"y"}}`, http.StatusCreated)
		return refDig(h.getJSON(v2+"/"+name), "spec", "b") == "y"
	})
	h.mustDo("POST", v2, "application/json", `{"apiVersion":"p.example.com/v2","kind":"Pair","metadata":{"name":"i2"},"spec":{"b":"y","keep":"k2"}}`, http.StatusCreated)
	if got := spec(v1 + "/i1"); !reflect.DeepEqual(got, map[string]any{"a": "x", "keep": "k"}) {
		t.Errorf("i1 read as v1 after the storage version changed: %v; want {a:x keep:k}", got)
	}
	if got := spec(v2 + "/i1"); !reflect.DeepEqual(got, map[string]any{"keep": "k"}) {
		t.Errorf("i1 read as v2: %v; want {keep:k}", got)
	}
	// i2, stored as v2: its v2 fields, and as v1 without them.
	if got := spec(v2 + "/i2"); !reflect.DeepEqual(got, map[string]any{"b": "y", "keep": "k2"}) {
		t.Errorf("i2 read as v2: %v", got)
	}
	if got := spec(v1 + "/i2"); !reflect.DeepEqual(got, map[string]any{"keep": "k2"}) {
		t.Errorf("i2 read as v1: %v; want {keep:k2}", got)
	}
}

// TestCRNotFoundShapes: what kube's custom resource handler does not
// serve goes to the server's last handler, a plain-text 404 (a resource no
// CRD defines in a CRD group-version, a custom resource in the wrong
// scope); a subresource its CRD lacks is the handler's own 404 naming the
// object.
func TestCRNotFoundShapes(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	const base = "/apis/test.example.com/v1"
	h.waitFor("gadgets served", func() bool { return h.do("GET", base+"/namespaces/default/gadgets", nil, nil).Code == http.StatusOK })
	for _, path := range []string{base + "/namespaces/default/nothings", base + "/gadgets/g1", base + "/gadgets/g1/bogus", base + "/namespaces/default/gadgets/g1/status"} {
		r := h.do("GET", path, nil, nil)
		want := "404 page not found\n"
		if strings.HasSuffix(path, "/status") {
			want = `"message":"gadgets.test.example.com \"g1\" not found"`
		}
		if r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), want) {
			t.Errorf("GET %s: %d %q; want 404 with %q", path, r.Code, r.Body, want)
		}
	}
	// Discovery of a version no CRD serves is the handler's plain 404
	// too; below a built-in group it is the router's Status.
	if r := h.do("GET", "/apis/test.example.com/v9", nil, nil); r.Code != http.StatusNotFound || r.Body.String() != "404 page not found\n" {
		t.Errorf("GET /apis/test.example.com/v9: %d %q; want the plain-text 404", r.Code, r.Body)
	}
	if r := h.do("GET", "/apis/apps/v9", nil, nil); r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), `"kind":"Status"`) {
		t.Errorf("GET /apis/apps/v9: %d %q; want a 404 Status", r.Code, r.Body)
	}
	// kube's custom resource handler reads HEAD as a get (a built-in
	// kind's routes have no HEAD): the GET's code (net/http drops the body).
	for path, code := range map[string]int{base + "/namespaces/default/gadgets": http.StatusOK, base + "/namespaces/default/gadgets/g1": http.StatusNotFound} {
		if r := h.do("HEAD", path, nil, nil); r.Code != code {
			t.Errorf("HEAD %s: %d %.200q; want %d", path, r.Code, r.Body, code)
		}
	}
}

// TestCRBytesWithoutVersion: a custom resource stored before objects
// named their version is in the storage version, and is converted from it
// when read through another (it was read as if stored in that one).
func TestCRBytesWithoutVersion(t *testing.T) {
	h := refNewHarness(t)
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"olds.p.example.com"},"spec":{"group":"p.example.com","scope":"Namespaced",
		"names":{"plural":"olds","singular":"old","kind":"Old","listKind":"OldList"},"versions":[
		{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"},"keep":{"type":"string"}}}}}}},
		{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"b":{"type":"string","default":"bd"},"keep":{"type":"string"}}}}}}}]}}`
	h.mustDo("POST", crdPath, "application/json", crd, http.StatusCreated)
	establish(t, h, "olds.p.example.com")
	h.waitFor("olds served", func() bool {
		return h.do("GET", "/apis/p.example.com/v2/namespaces/default/olds", nil, nil).Code == http.StatusOK
	})
	stored := []byte(`{"metadata":{"name":"o","namespace":"default","uid":"6a0f6c4e-0000-4000-8000-000000000001","creationTimestamp":"2020-01-02T03:04:05Z"},"spec":{"a":"x","keep":"k"}}`)
	if _, err := h.store.Create(context.Background(), kv.Key{Resource: "olds.p.example.com", Namespace: "default", Name: "o"},
		func(int64) (kv.Entry, error) { return kv.Entry{Value: stored}, nil }); err != nil {
		t.Fatal(err)
	}
	for version, want := range map[string]map[string]any{"v1": {"a": "x", "keep": "k"}, "v2": {"keep": "k"}} {
		got := h.getJSON("/apis/p.example.com/" + version + "/namespaces/default/olds/o")
		if spec := got["spec"]; !reflect.DeepEqual(spec, want) || got["apiVersion"] != "p.example.com/"+version {
			t.Errorf("read as %s: %v %v; want %v", version, got["apiVersion"], spec, want)
		}
	}
}

// lockedBuffer is a log sink the test reads while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCRDBurstKeepsTheControllerWatching: an operator's CRDs, large and
// applied back to back, are named and established while the CRD
// controller keeps its watch. It used to write each CRD's status from the
// loop that reads the watch, fell a buffer behind on such a burst, had its
// watch closed as a slow consumer and restarted late, while kubectl wait
// read conditions still null.
func TestCRDBurstKeepsTheControllerWatching(t *testing.T) {
	ctx := context.Background()
	var logged lockedBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	// A watcher may fall 256 KiB behind: two of these CRDs' events.
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"), sqlstore.Options{Logger: log, WatchBufferBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &refHarness{t: t, h: runningReplica(t, st, log), state: map[string]string{}}

	// About 100 KB each, as the larger operator CRDs' schemas are.
	props := map[string]interface{}{}
	for i := range 400 {
		props[fmt.Sprintf("field%03d", i)] = map[string]interface{}{"type": "string",
			"description": strings.Repeat("A field of the burst's CRDs, described at length as generated CRDs are. ", 3)}
	}
	schemaJSON, err := json.Marshal(map[string]interface{}{"type": "object", "properties": map[string]interface{}{
		"spec": map[string]interface{}{"type": "object", "properties": props}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"bursts%d.burst.example.com"},
 "spec":{"group":"burst.example.com","scope":"Namespaced",
  "names":{"plural":"bursts%d","singular":"burst%d","kind":"Burst%d"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":%s}}]}}`, i, i, i, i, schemaJSON)
		h.mustDo("POST", crdPath, "application/json", crd, http.StatusCreated)
	}
	for i := range n {
		establish(t, h, fmt.Sprintf("bursts%d.burst.example.com", i))
	}
	if strings.Contains(logged.String(), "controller=customresourcedefinitions") {
		t.Errorf("the CRD controller restarted during the burst:\n%s", logged.String())
	}
}
