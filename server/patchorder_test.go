package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPatchesAsKube: a patch's body is judged once the object is read (a
// missing object is a 404 whatever the body); a strategic merge patch's
// bad directive is kube's bare 400; any operation that changes the
// resourceVersion makes the update conditional on it.
func TestPatchesAsKube(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	for ct, body := range map[string]string{
		"application/strategic-merge-patch+json": `{bad`,
		"application/merge-patch+json":           `{bad`,
		"application/json-patch+json":            `{"op":"add"}`,
	} {
		if r := h.do("PATCH", cms+"/nope?fieldValidation=Strict", map[string]string{"Content-Type": ct}, []byte(body)); r.Code != http.StatusNotFound ||
			!strings.Contains(r.Body.String(), `configmaps \"nope\" not found`) {
			t.Errorf("%s %s on a missing object: %d %s; want 404", ct, body, r.Code, r.Body)
		}
	}
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"cm1"},"data":{"rv":"1"}}`, http.StatusCreated)
	if r := h.do("PATCH", cms+"/cm1", map[string]string{"Content-Type": "application/strategic-merge-patch+json"}, []byte(`{bad`)); r.Code != http.StatusBadRequest {
		t.Errorf("malformed strategic merge patch: %d %s; want 400", r.Code, r.Body)
	}
	r := h.do("PATCH", cms+"/cm1", map[string]string{"Content-Type": "application/json-patch+json"},
		[]byte(`[{"op":"copy","from":"/data/rv","path":"/metadata/resourceVersion"},{"op":"add","path":"/data/z","value":"copied"}]`))
	if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), "the object has been modified") {
		t.Errorf("JSON patch copying a stale resourceVersion: %d %s; want 409", r.Code, r.Body)
	}
	h.mustDo("PATCH", cms+"/cm1", "application/merge-patch+json", `{"data":{"a":"b"}}`, http.StatusOK)

	const deps = "/apis/apps/v1/namespaces/default/deployments"
	h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"d1"},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	r = h.do("PATCH", deps+"/d1", map[string]string{"Content-Type": "application/strategic-merge-patch+json"}, []byte(`{"spec":{"strategy":{"$retainKeys":"x"}}}`))
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), `"message":"invalid patch format of retainKeys"`) {
		t.Errorf("bad $retainKeys: %d %s; want 400 invalid patch format of retainKeys", r.Code, r.Body)
	}
}

// TestPatchRefusalsQuoteAsKube: a refused strategic merge patch quotes
// its numbers as written; a merge patch that changes the kind says only
// the conversion's words, as kube's patch handler does.
func TestPatchRefusalsQuoteAsKube(t *testing.T) {
	h := refNewHarness(t)
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"d1"},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	r := h.do("PATCH", deps+"/d1?fieldValidation=Strict", map[string]string{"Content-Type": "application/strategic-merge-patch+json"},
		[]byte(`{"spec":{"replicas":1000000,"foo":1}}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `map[spec:map[foo:1 replicas:1000000]]`) {
		t.Errorf("strict strategic merge patch with a large number: %d %s; want the patch quoted with replicas:1000000", r.Code, r.Body)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"cm1"}}`, http.StatusCreated)
	r = h.do("PATCH", "/api/v1/namespaces/default/configmaps/cm1", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"kind":"Secret"}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `: converting (v1.Secret) to (core.ConfigMap): unknown conversion"`) ||
		strings.Contains(r.Body.String(), "cannot be handled as") {
		t.Errorf("merge patch changing the kind: %d %s; want the conversion's words alone", r.Code, r.Body)
	}
}

// TestStrategicMergeWrongTypeAsKube: a strategic merge patch whose result
// does not fit the kind is refused in the unstructured converter's words,
// as kube's handler converts it.
func TestStrategicMergeWrongTypeAsKube(t *testing.T) {
	h := refNewHarness(t)
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"d1"},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	for patch, want := range map[string]string{
		`{"spec":{"replicas":"3"}}`:       `map[spec:map[replicas:3]]\": unrecognized type: int32`,
		`{"metadata":{"labels":{"a":1}}}`: `map[metadata:map[labels:map[a:1]]]\": cannot convert int64 to string`,
		`{"spec":{"replicas":1.5}}`:       `map[spec:map[replicas:1.5]]\": cannot convert float64 to int32`,
	} {
		r := h.do("PATCH", deps+"/d1", map[string]string{"Content-Type": "application/strategic-merge-patch+json"}, []byte(patch))
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
			t.Errorf("strategic merge patch %s: %d %s; want 422 ending %s", patch, r.Code, r.Body, want)
		}
	}
}

// TestStrategicMergeAsKubeConverts: kube quotes a refused strategic merge
// patch as its merge left it (directives taken out), and turns the result
// into the kind by its Go type, so a kind or apiVersion the patch changed
// is not read.
func TestStrategicMergeAsKubeConverts(t *testing.T) {
	h := refNewHarness(t)
	smp := map[string]string{"Content-Type": "application/strategic-merge-patch+json"}
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"d1"},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	r := h.do("PATCH", deps+"/d1?fieldValidation=Strict", smp, []byte(`{"spec":{"foo":1,"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `map[spec:map[foo:1 strategy:map[type:Recreate]]]`) {
		t.Errorf("strict patch with $retainKeys: %d %s; want the patch quoted without the directive", r.Code, r.Body)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"cm1"},"data":{"a":"b"}}`, http.StatusCreated)
	for _, patch := range []string{`{"kind":"Secret"}`, `{"apiVersion":"v2","data":{"c":"d"}}`} {
		r = h.do("PATCH", "/api/v1/namespaces/default/configmaps/cm1", smp, []byte(patch))
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"kind":"ConfigMap","apiVersion":"v1"`) {
			t.Errorf("strategic merge patch %s: %d %s; want 200, still a v1 ConfigMap", patch, r.Code, r.Body)
		}
	}
}
