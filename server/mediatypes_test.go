package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestBodyTypesAsKube: request bodies are taken in the forms kube takes:
// a YAML body only as application/yaml (text/yaml and
// application/x-yaml are 415s); a patch's type as kube's patch handler
// reads it, cut at its first ';' as written, so a different case or a
// space before the parameters is a 415. A metadata view of the wrong
// kind is refused even when a later Accept entry would do, as kube's
// conversion of the answer refuses it.
func TestBodyTypesAsKube(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", cmPath, "application/json", `{"metadata":{"name":"b"}}`, http.StatusCreated)
	for _, ct := range []string{"text/yaml", "application/x-yaml"} {
		if r := h.do("POST", cmPath, map[string]string{"Content-Type": ct}, []byte("metadata:\n  name: y\n")); r.Code != http.StatusUnsupportedMediaType {
			t.Errorf("create as %s: %d; want 415", ct, r.Code)
		}
	}
	for ct, want := range map[string]int{
		"application/merge-patch+json":                 http.StatusOK,
		"application/merge-patch+json; charset=utf-8":  http.StatusOK,
		"Application/Merge-Patch+JSON":                 http.StatusUnsupportedMediaType,
		"application/merge-patch+json ; charset=utf-8": http.StatusUnsupportedMediaType,
	} {
		if r := h.do("PATCH", cmPath+"/b", map[string]string{"Content-Type": ct}, []byte(`{"data":{"a":"b"}}`)); r.Code != want {
			t.Errorf("patch as %q: %d; want %d", ct, r.Code, want)
		}
	}
	r := h.do("GET", cmPath, map[string]string{"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"}, nil)
	if r.Code != http.StatusNotAcceptable || !strings.Contains(r.Body.String(), "you requested PartialObjectMetadata, but the requested object is a list") {
		t.Errorf("a list as PartialObjectMetadata, then JSON: %d %s; want kube's 406", r.Code, r.Body)
	}
}

// TestUnnegotiableErrorIsIndentedJSON: an error no Accept entry can carry
// (text/html; a Table alone for a missing object) is written as kube's
// WriteRawJSON writes it: JSON indented by two spaces, no final newline.
func TestUnnegotiableErrorIsIndentedJSON(t *testing.T) {
	h := refNewHarness(t)
	for accept, code := range map[string]int{
		"text/html": http.StatusNotAcceptable,
		"application/json;as=Table;v=v1;g=meta.k8s.io": http.StatusNotFound,
	} {
		rec := h.do("GET", "/api/v1/namespaces/default/configmaps/absent", map[string]string{"Accept": accept}, nil)
		b := rec.Body.String()
		if rec.Code != code || rec.Header().Get("Content-Type") != "application/json" || !strings.HasPrefix(b, "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",") || strings.HasSuffix(b, "\n") {
			t.Errorf("Accept %q: %d %s %q; want %d, indented JSON without a final newline", accept, rec.Code, rec.Header().Get("Content-Type"), b, code)
		}
	}
}
