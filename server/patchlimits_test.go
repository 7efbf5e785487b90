package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJSONPatchOperationLimit: a JSON Patch of more than 10,000
// operations is refused as too large (413), as on kube-apiserver, and
// one of 10,000 is applied.
func TestJSONPatchOperationLimit(t *testing.T) {
	h := refNewHarness(t)
	const cm = "/api/v1/namespaces/default/configmaps/big"
	if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	ops := func(n int) []byte {
		return []byte("[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/data/k","value":"v"},`, n), ",") + "]")
	}
	ct := map[string]string{"Content-Type": "application/json-patch+json"}
	r := h.do("PATCH", cm, ct, ops(10001))
	if r.Code != http.StatusRequestEntityTooLarge || !strings.Contains(r.Body.String(), "The allowed maximum operations in a JSON patch is 10000, got 10001") ||
		!strings.Contains(r.Body.String(), `"reason":"RequestEntityTooLarge"`) {
		t.Errorf("10,001 operations: %d %s; want 413 RequestEntityTooLarge", r.Code, r.Body)
	}
	if r := h.do("PATCH", cm, ct, ops(10000)); r.Code != http.StatusOK {
		t.Errorf("10,000 operations: %d %s; want 200", r.Code, r.Body)
	}
}

// TestPatchAnswersAsKube: what kube-apiserver's patch handler answers
// where a patch goes wrong or is unusual: a patched object that does not
// decode is an invalid patch (422, quoting it) rather than a bad request;
// a JSON Patch's operations are checked for unknown and duplicate fields
// under the field validation asked; add and replace without a value set
// null, as kube's json-patch does; Server-Side Apply reaches the
// subresources a patch writes; a custom resource's 415 names what it
// takes.
func TestPatchAnswersAsKube(t *testing.T) {
	h := refNewHarness(t)
	const cm = "/api/v1/namespaces/default/configmaps/c"
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"c"},"data":{"k":"v"}}`, http.StatusCreated)
	patch := func(path, ct, body string) *httptest.ResponseRecorder {
		return h.do("PATCH", path, map[string]string{"Content-Type": ct, "Accept": "application/json"}, []byte(body))
	}
	invalidPatch := func(what string, r *httptest.ResponseRecorder, quoted, why string) {
		t.Helper()
		var st metav1.Status
		_ = json.Unmarshal(r.Body.Bytes(), &st)
		if r.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Details == nil || len(st.Details.Causes) != 1 ||
			st.Details.Causes[0].Field != "patch" || !strings.Contains(st.Details.Causes[0].Message, quoted) || !strings.Contains(st.Details.Causes[0].Message, why) {
			t.Errorf("%s: %d %s; want 422 on patch quoting %q with %q", what, r.Code, r.Body, quoted, why)
		}
	}
	invalidPatch("a merge patch that does not decode", patch(cm, "application/merge-patch+json", `{"data":{"a":1}}`), `\"a\":1`, "cannot unmarshal number")
	// kube converts a strategic merge's result with the unstructured
	// converter, whose words these are.
	invalidPatch("a strategic merge patch that does not decode", patch(cm, "application/strategic-merge-patch+json", `{"data":{"a":1}}`), "map[data:map[a:1]]", "cannot convert int64 to string")

	op := `[{"op":"add","path":"/data/x","value":"1","foo":1}]`
	invalidPatch("an unknown field in a JSON Patch operation, Strict", patch(cm+"?fieldValidation=Strict", "application/json-patch+json", op), `\"x\":\"1\"`, `json patch unknown field "[0].foo"`)
	r := patch(cm, "application/json-patch+json", op)
	if w := r.Header().Get("Warning"); r.Code != http.StatusOK || !strings.Contains(w, `json patch unknown field \"[0].foo\"`) {
		t.Errorf("an unknown field in a JSON Patch operation, Warn: %d %q %s", r.Code, w, r.Body)
	}
	if r := patch(cm+"?fieldValidation=Ignore", "application/json-patch+json", op); r.Code != http.StatusOK || r.Header().Get("Warning") != "" {
		t.Errorf("an unknown field in a JSON Patch operation, Ignore: %d %q", r.Code, r.Header().Get("Warning"))
	}
	if r := patch(cm, "application/json-patch+json", `[{"op":"add","path":"/data/y"},{"op":"replace","path":"/data/k"}]`); r.Code != http.StatusOK ||
		!strings.Contains(r.Body.String(), `"k":""`) || !strings.Contains(r.Body.String(), `"y":""`) {
		t.Errorf("add and replace without a value: %d %s; want both set to null (\"\")", r.Code, r.Body)
	}

	// kube's json-patch v4 refuses an add at the root, where RFC 6902
	// would replace the whole object.
	if r := patch(cm, "application/json-patch+json", `[{"op":"add","path":"","value":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"only":"this"}}}]`); r.Code != http.StatusUnprocessableEntity ||
		h.getJSON(cm)["data"].(map[string]any)["k"] == nil {
		t.Errorf("add at the root: %d %s; want 422 and the object kept", r.Code, r.Body)
	}
	// A body that is no patch document: kube's 400s, each in its words.
	for _, c := range []struct{ ct, body, message string }{
		{"application/merge-patch+json", `[1]`, `"message":"error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"`},
		{"application/merge-patch+json", `null`, `"message":"Invalid JSON Patch"`},
		{"application/strategic-merge-patch+json", `[1]`, `"message":"json: cannot unmarshal array into Go value of type map[string]interface {}"`},
		{"application/json-patch+json?fieldValidation=Ignore", `{}`, `"message":"json: cannot unmarshal object into Go value of type jsonpatch.Patch"`},
	} {
		ct, query, _ := strings.Cut(c.ct, "?")
		if query != "" {
			query = "?" + query
		}
		if r := patch(cm+query, ct, c.body); r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), c.message) {
			t.Errorf("%s %s: %d %s; want 400 with %s", c.ct, c.body, r.Code, r.Body, c.message)
		}
	}

	// Apply to pods/ephemeralcontainers: the container is added, owned by
	// the applier under that subresource.
	h.mustDo("POST", "/api/v1/namespaces/default/pods", "application/json", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	r = patch("/api/v1/namespaces/default/pods/p/ephemeralcontainers?fieldManager=debugger", "application/apply-patch+yaml",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox"}]}}`)
	var pod struct {
		Metadata struct {
			ManagedFields []struct{ Manager, Operation, Subresource string }
		}
		Spec struct{ EphemeralContainers []struct{ Name string } }
	}
	_ = json.Unmarshal(r.Body.Bytes(), &pod)
	applied := false
	for _, m := range pod.Metadata.ManagedFields {
		applied = applied || m.Manager == "debugger" && m.Operation == "Apply" && m.Subresource == "ephemeralcontainers"
	}
	if r.Code != http.StatusOK || len(pod.Spec.EphemeralContainers) != 1 || pod.Spec.EphemeralContainers[0].Name != "dbg" || !applied {
		t.Errorf("apply to pods/ephemeralcontainers: %d %s", r.Code, r.Body)
	}

	// A custom resource's 415 (this harness serves no CBOR, so no
	// apply-patch+cbor).
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	h.mustDo("POST", "/apis/test.example.com/v1/namespaces/default/gadgets", "application/json", `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`, http.StatusCreated)
	r = patch("/apis/test.example.com/v1/namespaces/default/gadgets/g", "application/strategic-merge-patch+json", `{}`)
	if r.Code != http.StatusUnsupportedMediaType || !strings.Contains(r.Body.String(),
		`"message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"`) ||
		strings.Contains(r.Body.String(), `"details"`) {
		t.Errorf("strategic merge patch of a custom resource: %d %s", r.Code, r.Body)
	}
}
