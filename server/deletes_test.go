package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
)

// TestDeletesAsKube: a dry-run delete of a Pod answers it with the marks
// the delete would give it; a delete's Status comes in the YAML asked
// for; a namespace deleted with orphanDependents=false waits in the
// foreground; a CRD's delete checks preconditions in its own words; a
// system PriorityClass is refused before its preconditions are read.
func TestDeletesAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	const pods = "/api/v1/namespaces/default/pods"
	h.mustDo("POST", pods, "application/json", `{"metadata":{"name":"p0"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, http.StatusCreated)
	rec := h.do("DELETE", pods+"/p0?dryRun=All", hd, nil)
	var pod struct {
		Metadata struct {
			DeletionTimestamp          string
			DeletionGracePeriodSeconds *int64
			Generation                 int64
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &pod); rec.Code != http.StatusOK || err != nil || pod.Metadata.DeletionTimestamp == "" ||
		pod.Metadata.DeletionGracePeriodSeconds == nil || *pod.Metadata.DeletionGracePeriodSeconds != 0 || pod.Metadata.Generation != 2 {
		t.Errorf("dry-run delete of an unscheduled pod: %d %s; want the pod marked: deletionTimestamp, grace 0, generation 2", rec.Code, rec.Body)
	}
	h.mustDo("GET", pods+"/p0", "", "", http.StatusOK) // still there

	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"c"}}`, http.StatusCreated)
	rec = h.do("DELETE", "/api/v1/namespaces/default/configmaps/c", map[string]string{"Accept": "application/yaml"}, nil)
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "application/yaml" || !strings.Contains(rec.Body.String(), "kind: Status") {
		t.Errorf("delete asking for YAML: %d %s %s; want the Status in YAML", rec.Code, ct, rec.Body)
	}

	h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"nsa"}}`, http.StatusCreated)
	rec = h.do("DELETE", "/api/v1/namespaces/nsa?orphanDependents=false", hd, nil)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"finalizers":["foregroundDeletion"]`) {
		t.Errorf("namespace delete with orphanDependents=false: %d %s; want 202 with the foregroundDeletion finalizer", rec.Code, rec.Body)
	}

	crd := h.mustDo("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", `{"metadata":{"name":"things.ex.com"},
	  "spec":{"group":"ex.com","names":{"plural":"things","singular":"thing","kind":"Thing","listKind":"ThingList"},"scope":"Namespaced",
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`, http.StatusCreated)
	uid := crd["metadata"].(map[string]interface{})["uid"].(string)
	rec = h.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.ex.com", hd, []byte(`{"preconditions":{"uid":"x"}}`))
	if want := `Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io \"things.ex.com\": Precondition failed: UID in precondition: x, UID in object meta: ` + uid; rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("CRD delete with another uid: %d %s; want 409 %s", rec.Code, rec.Body, want)
	}

	rec = h.do("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", hd, []byte(`{"preconditions":{"uid":"x"}}`))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "this is a system priority class and cannot be deleted") {
		t.Errorf("system priority class delete with another uid: %d %s; want 403", rec.Code, rec.Body)
	}
}

// TestCertificateSigningRequestExtra: a request records its requester's
// extra attributes as well as the name, uid and groups, as kube's
// strategy does.
func TestCertificateSigningRequestExtra(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{})
	hd := as("tok-root")
	hd["Impersonate-User"] = "bob"
	hd["Impersonate-Group"] = "system:masters"
	hd["Impersonate-Extra-Foo-Bar"] = "v1"
	r := h.do("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", hd, []byte(`{"metadata":{"name":"c1"},
	  "spec":{"signerName":"example.com/s","usages":["client auth"],"request":"`+typicalCSR+`"}}`))
	if r.Code != http.StatusCreated || !strings.Contains(r.Body.String(), `"extra":{"foo-bar":["v1"]}`) || !strings.Contains(r.Body.String(), `"username":"bob"`) {
		t.Errorf("CSR by an impersonated user with extra: %d %s; want spec.extra recorded", r.Code, r.Body)
	}
}

// TestCRDFirstDeleteMarksOnly: kube's CRD storage answers a CRD's first
// delete by marking it for its cleanup alone: no propagation finalizer,
// grace period or new generation.
func TestCRDFirstDeleteMarksOnly(t *testing.T) {
	h := refNewHarness(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	h.mustDo("POST", crds, "application/json", `{"metadata":{"name":"gadgets.ex.com"},
	  "spec":{"group":"ex.com","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},"scope":"Namespaced",
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`, http.StatusCreated)
	rec := h.do("DELETE", crds+"/gadgets.ex.com?propagationPolicy=Foreground&dryRun=All", map[string]string{"Accept": "application/json"}, nil)
	var got struct {
		Metadata struct {
			DeletionTimestamp          string
			DeletionGracePeriodSeconds *int64
			Generation                 int64
			Finalizers                 []string
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil || got.Metadata.DeletionTimestamp == "" ||
		got.Metadata.DeletionGracePeriodSeconds != nil || got.Metadata.Generation != 1 ||
		len(got.Metadata.Finalizers) != 1 || got.Metadata.Finalizers[0] != "customresourcecleanup.apiextensions.k8s.io" {
		t.Errorf("first CRD delete, foreground: %d %s; want marked with the cleanup finalizer alone, generation 1, no grace period", rec.Code, rec.Body)
	}
}
