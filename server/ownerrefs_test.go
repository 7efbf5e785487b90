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
	// One created with the orphan finalizer goes at once too: the policy
	// takes it off.
	h.mustDo("POST", events, js, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev2","finalizers":["orphan"]},"involvedObject":{"kind":"ConfigMap","name":"dup","namespace":"default"},"reason":"R","message":"m"}`, http.StatusCreated)
	h.mustDo("DELETE", events+"/ev2", "", "", http.StatusOK)
	h.mustDo("GET", events+"/ev2", "", "", http.StatusNotFound)

	const classes = "/apis/resource.k8s.io/v1/deviceclasses"
	h.mustDo("POST", classes, js, `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu"},"spec":{}}`, http.StatusCreated)
	if obj := h.mustDo("DELETE", classes+"/gpu", "", "", http.StatusOK); obj["kind"] != "DeviceClass" {
		t.Errorf("delete of a DeviceClass answered %v; want the deleted object", obj["kind"])
	}
}

// TestRequestChecksInKubeOrder: an unacceptable answer form is refused
// before a create's body type and options and before a delete's body,
// as kube's router and handlers check them; an update reads its options
// before its body's type. A cascading delete asked with
// orphanDependents=false that leaves the object for the collector is
// answered 202, as kube's delete handler does.
func TestRequestChecksInKubeOrder(t *testing.T) {
	h := refNewHarness(t)
	code := func(method, path string, hd map[string]string, body string) int {
		t.Helper()
		return h.do(method, path, hd, []byte(body)).Code
	}
	html := map[string]string{"Accept": "text/html", "Content-Type": "text/plain"}
	if c := code("POST", cmPath+"?fieldValidation=Bogus", html, "x"); c != http.StatusNotAcceptable {
		t.Errorf("create, bad Accept, body type and option: %d; want 406", c)
	}
	if c := code("POST", cmPath+"?fieldValidation=Bogus", map[string]string{"Content-Type": "text/plain"}, "x"); c != http.StatusUnsupportedMediaType {
		t.Errorf("create, bad body type and option: %d; want 415", c)
	}
	h.mustDo("POST", cmPath, "application/json", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`, http.StatusCreated)
	if c := code("PUT", cmPath+"/held?fieldValidation=Bogus", map[string]string{"Content-Type": "text/plain"}, "x"); c != http.StatusUnprocessableEntity {
		t.Errorf("update, bad body type and option: %d; want 422", c)
	}
	if c := code("DELETE", cmPath+"/held", html, "x"); c != http.StatusNotAcceptable {
		t.Errorf("delete, bad Accept and body: %d; want 406", c)
	}
	if c := code("DELETE", cmPath+"/held?orphanDependents=false", nil, ""); c != http.StatusAccepted {
		t.Errorf("cascading delete left to its finalizer: %d; want 202", c)
	}
}

// TestViewsInYAML: a Table and object metadata are served in YAML, as
// kube allows them for JSON and YAML (a watch has no YAML form).
func TestViewsInYAML(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", cmPath, "application/json", `{"metadata":{"name":"y"},"data":{"a":"b"}}`, http.StatusCreated)
	for _, c := range []struct{ path, accept, want string }{
		{cmPath, "application/yaml;as=Table;v=v1;g=meta.k8s.io", "kind: Table"},
		{cmPath + "/y", "application/yaml;as=Table;v=v1;g=meta.k8s.io", "kind: Table"},
		{cmPath + "/y", "application/yaml;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "kind: PartialObjectMetadata"},
		{cmPath, "application/yaml;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "kind: PartialObjectMetadataList"},
	} {
		r := h.do("GET", c.path, map[string]string{"Accept": c.accept}, nil)
		if r.Code != http.StatusOK || r.Header().Get("Content-Type") != "application/yaml" || !strings.Contains(r.Body.String(), c.want) {
			t.Errorf("GET %s as %s: %d %s %q; want YAML with %q", c.path, c.accept, r.Code, r.Header().Get("Content-Type"), r.Body, c.want)
		}
	}
	if r := h.do("GET", cmPath+"?watch=1", map[string]string{"Accept": "application/yaml;as=Table;v=v1;g=meta.k8s.io"}, nil); r.Code != http.StatusNotAcceptable {
		t.Errorf("watch as a YAML Table: %d; want 406", r.Code)
	}
}

// TestListNotAcceptableNamesStreams: a list's 406 names the stream forms
// too, as kube's list route offers them (it serves watches); a get's
// does not.
func TestListNotAcceptableNamesStreams(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", cmPath, "application/json", `{"metadata":{"name":"n"}}`, http.StatusCreated)
	for path, streams := range map[string]bool{cmPath: true, cmPath + "/n": false} {
		r := h.do("GET", path, map[string]string{"Accept": "text/html"}, nil)
		if got := strings.Contains(r.Body.String(), "application/json;stream=watch"); r.Code != http.StatusNotAcceptable || got != streams {
			t.Errorf("GET %s as text/html: %d %s; want 406 naming the stream forms: %v", path, r.Code, r.Body, streams)
		}
	}
}
