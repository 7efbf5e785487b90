package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMetadataAndDeletesAsKube:
//   - owner references equal to an earlier one are dropped with kube's
//     warning: a create's and an update's body before admission, a
//     patched object after it (kube's wording for each);
//   - a kind whose own validation checks only its spec (a
//     PodDisruptionBudget) still gets the generic metadata checks on
//     create, as kube's BeforeCreate runs them;
//   - an Event's delete never waits for the garbage collector (kube's
//     Unsupported policy): it goes at once, with a Status, even when an
//     orphan delete is asked;
//   - dynamic resource allocation's kinds answer a delete with the
//     deleted object.
func TestMetadataAndDeletesAsKube(t *testing.T) {
	h := refNewHarness(t)
	const (
		js    = "application/json"
		merge = "application/merge-patch+json"
	)
	// A live owner, so the collector leaves the dependent alone.
	uid, _ := refDig(h.mustDo("POST", cmPath, js, `{"metadata":{"name":"o"}}`, http.StatusCreated), "metadata", "uid").(string)
	ref := `{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"` + uid + `"}`
	refs := func(obj map[string]interface{}) int {
		l, _ := refDig(obj, "metadata", "ownerReferences").([]interface{})
		return len(l)
	}
	decoded := func(b []byte) map[string]interface{} {
		var m map[string]interface{}
		_ = json.Unmarshal(b, &m)
		return m
	}
	warned := func(what string, hdr http.Header, want string) {
		t.Helper()
		if w := hdr.Get("Warning"); !strings.Contains(w, want) || !strings.Contains(w, "duplicate UID(s) observed: "+uid) {
			t.Errorf("%s: Warning %q; want kube's %q naming %s", what, w, want, uid)
		}
	}
	r := h.do("POST", cmPath, map[string]string{"Content-Type": js}, []byte(`{"metadata":{"name":"dup","ownerReferences":[`+ref+`,`+ref+`]}}`))
	if r.Code != http.StatusCreated || refs(decoded(r.Body.Bytes())) != 1 {
		t.Fatalf("create with a duplicate owner reference: %d %s; want 201 with one", r.Code, r.Body)
	}
	warned("create", r.Header(), ".metadata.ownerReferences contains duplicate entries; API server dedups")
	r = h.do("PUT", cmPath+"/dup", map[string]string{"Content-Type": js}, []byte(`{"metadata":{"name":"dup","ownerReferences":[`+ref+`,`+ref+`]},"data":{"a":"b"}}`))
	if r.Code != http.StatusOK || refs(decoded(r.Body.Bytes())) != 1 {
		t.Fatalf("update with a duplicate owner reference: %d %s; want 200 with one", r.Code, r.Body)
	}
	warned("update", r.Header(), ".metadata.ownerReferences contains duplicate entries; API server dedups")
	r = h.do("PATCH", cmPath+"/dup", map[string]string{"Content-Type": merge}, []byte(`{"metadata":{"ownerReferences":[`+ref+`,`+ref+`]}}`))
	if r.Code != http.StatusOK || refs(decoded(r.Body.Bytes())) != 1 {
		t.Fatalf("patch with a duplicate owner reference: %d %s; want 200 with one", r.Code, r.Body)
	}
	warned("patch", r.Header(), ".metadata.ownerReferences contains duplicate entries after mutating admission happens")

	const pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	st := h.mustDo("POST", pdbs, js, `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"pdb","labels":{"bad key!":"x"}},"spec":{"minAvailable":1}}`, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "metadata.labels: Invalid value: \"bad key!\"") {
		t.Errorf("a budget with a bad label key: %s; want kube's metadata error", msg)
	}

	const events = "/api/v1/namespaces/default/events"
	h.mustDo("POST", events, js, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev"},"involvedObject":{"kind":"ConfigMap","name":"dup","namespace":"default"},"reason":"R","message":"m"}`, http.StatusCreated)
	st = h.mustDo("DELETE", events+"/ev?propagationPolicy=Orphan", "", "", http.StatusOK)
	if st["kind"] != "Status" {
		t.Errorf("orphan delete of an Event: %v; want it gone at once, answered with a Status", st)
	}
	h.mustDo("GET", events+"/ev", "", "", http.StatusNotFound)

	const classes = "/apis/resource.k8s.io/v1/deviceclasses"
	h.mustDo("POST", classes, js, `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu"},"spec":{}}`, http.StatusCreated)
	if obj := h.mustDo("DELETE", classes+"/gpu", "", "", http.StatusOK); obj["kind"] != "DeviceClass" {
		t.Errorf("delete of a DeviceClass answered %v; want the deleted object", obj["kind"])
	}
}
